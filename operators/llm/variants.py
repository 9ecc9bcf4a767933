"""Prompt variants that evolve with the population: system-prompt mutations as a gene.

A variant is a set of at most :data:`MAX_HINTS` hints from :data:`HINTS`, each one
line that points the model at one kind of improvement; the base prompt is the empty
variant. With ``[llm] prompt_mutation = p > 0`` a proposal inherits its parent's
variant (the tag ``[prompt 1.4]`` in the note of the parent's newest LLM edit; K0 and
rule-made parents have the base) and, with probability ``p``, mutates it (adds a hint,
drops one or swaps one, drawn with the proposal's seeded ``Random``); the variant's
hints are the request's last system block, and its tag goes into the note of every edit
the proposal returns. Selection does the rest: variants that led to fitter individuals
are inherited more often, because those individuals are chosen as parents more often.

With ``p = 0`` (the default) nothing is drawn and nothing is added: the prompts are
the base ones, byte for byte. The tag is part of the note, which is not part of an
edit's key, so a variant never changes what a candidate is.
"""
from __future__ import annotations

import random
import re

MAX_HINTS = 3

HINTS = (
    "Look first for address arithmetic that a memory instruction's own addressing (an SGPR "
    "base, an immediate offset) can absorb.",
    "Look for s_waitcnt that wait for more than the next use needs, and for loads that can "
    "be issued earlier to hide their latency.",
    "Look for values computed again in every iteration that could be computed once, in "
    "SGPRs or before the loop.",
    "Prefer fewer instructions: fold moves into their uses, use the shorter encodings, merge "
    "adjacent loads or stores into wider ones where alignment is known.",
    "Look for s_nop and chains of dependent instructions that independent instructions could "
    "fill.",
    "Use scalar (SALU, SMEM) instructions for values that are the same in every lane.",
    "Look at LDS traffic: fewer, wider ds_read/ds_write, fewer bank conflicts, fewer barriers.",
    "In MFMA code, interleave independent MFMAs with their loads so the matrix pipe never "
    "waits.",
    "Be conservative: one small change that is certainly correct is worth more than a large "
    "risky one.",
    "Be ambitious: rewrite the whole window if its dependences allow a better schedule.",
)

_TAG = re.compile(r"\[prompt ([0-9.]*|-)\]")


def tag(variant: tuple[int, ...]) -> str:
    """The note tag of a variant (``[prompt -]``: the base)."""
    return "[prompt " + (".".join(map(str, variant)) or "-") + "]"


def of_edits(edits) -> tuple[int, ...]:
    """The variant the newest tagged edit of ``edits`` names (the base when none does;
    unknown hint numbers are dropped)."""
    for e in reversed(tuple(edits)):
        m = _TAG.search(e.note or "")
        if m:
            nums = [int(x) for x in m.group(1).split(".") if x.isdigit()]
            return tuple(sorted({n for n in nums if n < len(HINTS)}))[:MAX_HINTS]
    return ()


def mutate(variant: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """Add a hint, drop one or swap one (what is possible), chosen by ``rng``."""
    absent = [h for h in range(len(HINTS)) if h not in variant]
    moves = (["add"] if len(variant) < MAX_HINTS and absent else []) + \
        (["drop"] if variant else []) + (["swap"] if variant and absent else [])
    move = rng.choice(moves)
    v = list(variant)
    if move == "drop":
        v.pop(rng.randrange(len(v)))
    elif move == "add":
        v.append(rng.choice(absent))
    else:
        v[rng.randrange(len(v))] = rng.choice(absent)
    return tuple(sorted(v))


def inherit(edits, rate: float, rng: random.Random) -> tuple[int, ...] | None:
    """The variant of a proposal on an individual with ``edits``: its parent's, mutated
    with probability ``rate``; None when variants are off (``rate`` 0: nothing drawn)."""
    if rate <= 0:
        return None
    variant = of_edits(edits)
    return mutate(variant, rng) if rng.random() < rate else variant


def block(variant: tuple[int, ...] | None) -> list[dict]:
    """The variant's system block (none for the base or when variants are off)."""
    if not variant:
        return []
    text = "# Emphasis for this proposal\n" + "\n".join(f"- {HINTS[h]}" for h in variant)
    return [{"type": "text", "text": text}]
