"""What the ``llm_agent`` conversation says: its system block, its tools, its messages.

A conversation's request is tools + system + the messages so far. The tools
and the two system blocks (agent notes, the kernel block) are the same for
every turn and every conversation on a kernel, and carry ``cache_control``; so
does the last block of the newest user message, so each turn reads the
previous turns from the cache and writes only what is new (Anthropic allows
four breakpoints; this uses three). The machine notes and the rules are the
single-shot operators' own text (:mod:`asmevo.operators.llm.prompts`), so both kinds
of operator tell the model the same facts.
"""
from __future__ import annotations

import copy
from typing import Sequence

from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.prompts import (COMMON_RULES, MACHINE_NOTES, RULES_HEAD, Note,
                                   WindowProfile, notes_section, one_line, system_blocks,
                                   window_section)
from asmevo.targets.amdgpu.processors import DEFAULT

_AGENT_INTRO = f"""\
You are an expert AMD GPU assembly optimizer working with tools on one compiled kernel for \
{DEFAULT} (CDNA3: MI300X / MI300A / MI308X). You look at the code and its profile (show, profile, \
next_window), ask for facts about a window (analyze), have the harness verify and time \
candidate edits (try_edit), and finish (submit). The harness rebuilds the code object, \
checks it statically, runs it against the original on several input sets and accepts an edit \
only when every output is bit-identical; then it times it. Wrong code is always caught; a \
correct, faster edit is the only useful result.

"""

_AGENT_REPLY_RULE = """\
- Every reply calls at least one tool. An edit replaces instructions [start, end) of the \
kernel (indices as show lists them) with `replacement`: instruction lines in the LLVM AMDGPU \
syntax of the listing, one instruction per string.
"""

_AGENT_METHOD = """\
- If you find no safe improvement, submit the window unchanged and say so in the rationale.

# How to work
- Edits stack: a try that is bit-equal and faster than the best so far is accepted, and \
every later try_edit, show, analyze, profile and next_window works on the program with it \
(the result says how far the instructions after it moved). A try that fails, or is not \
faster, is not applied. Each try costs one try of a small budget; one already tried (the \
same lines, up to case and spacing) is refused without costing one.
- Read the verdict: a mismatch names the first differing element and its expected and \
actual bits, a hazard names the rule and the two instructions, a fault the address. Fix \
the cause, then try again.
- When a window is done, ask next_window for the next hottest one (by its share of the \
modeled time) or profile for all of them, and go on.
- The harness recomputes s_waitcnt in your lines (each wait is weakened to what its uses need, \
a missing one is added) and says so in the try's result; hazards' s_nop are yours to keep.
- submit ends the conversation and keeps every accepted edit; give it an edit only for an \
untried final one (verified later like any candidate). If you run out of turns, the \
accepted edits are kept.
"""

AGENT_NOTES = (_AGENT_INTRO + MACHINE_NOTES + RULES_HEAD + _AGENT_REPLY_RULE + COMMON_RULES
               + _AGENT_METHOD)

_WINDOW = {"start": {"type": "integer", "minimum": 0,
                     "description": "first instruction index of the window"},
           "end": {"type": "integer", "minimum": 0,
                   "description": "one past the last instruction index"}}
_LINES = {"type": "array", "items": {"type": "string"},
          "description": "the new instruction lines for [start, end), in order; no "
                         "directives, labels or comments"}


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"name": name, "description": description,
            "input_schema": {"type": "object", "properties": properties, "required": required,
                             "additionalProperties": False}}


TOOLS = [
    _tool("show", "List instructions [start, end) of a function of the candidate, labels "
          "included, each with its index and, where the profile knows it, its executions, "
          "cycles and stall cycles (modeled by the timing model, or measured).",
          {"function": {"type": "string", "description": "function name (the kernel's)"},
           **_WINDOW}, ["function", "start", "end"]),
    _tool("analyze", "Facts about the kernel's instructions [start, end): registers live in "
          "and out, registers free inside it, the memory operations outstanding at its start "
          "and end (what s_waitcnt must still cover), and the hazard wait states required "
          "between producers and consumers in and around it.", dict(_WINDOW),
          ["start", "end"]),
    _tool("try_edit", "Have the harness verify and time one edit of the candidate: it is "
          "sanitized, its waits recomputed, statically gated, rebuilt, run against the "
          "original on several input sets (bit-equality) and timed. Returns the verdict with "
          "its details and the speedup over the original kernel. Costs one try.",
          {**_WINDOW, "replacement": _LINES}, ["start", "end", "replacement"]),
    _tool("profile", "The current best candidate's hot windows, hottest first, each with "
          "its share of the modeled time, and its speedup over the original kernel.", {}, []),
    _tool("next_window", "The next hottest window of the current best candidate that this "
          "conversation has not been shown yet, with its per-line profile.", {}, []),
    _tool("submit", "End the conversation, keeping every accepted edit, with a one-line "
          "rationale; start, end and replacement (together) add an untried final edit on top.",
          {**_WINDOW, "replacement": _LINES,
           "rationale": {"type": "string", "description": "one line: why it is correct and "
                                                          "faster"}},
          ["rationale"]),
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def request(config: LLMConfig, kernel_text: str, messages: Sequence[dict],
            variant: tuple[int, ...] | None = None) -> dict:
    """One turn's Messages-API body: the static parts cached (the prompt variant's hints
    after them), and the transcript so far with a cache breakpoint on its newest block."""
    cache = {"cache_control": {"type": "ephemeral"}} if config.prompt_cache else {}
    sampling = {} if config.temperature is None else {"temperature": config.temperature}
    msgs = copy.deepcopy(list(messages))
    if cache and msgs and isinstance(msgs[-1].get("content"), list) and msgs[-1]["content"]:
        msgs[-1]["content"][-1].update(cache)
    return {
        "model": config.model,
        "max_tokens": config.max_tokens,
        **sampling,
        "system": system_blocks(AGENT_NOTES, kernel_text, config, variant),
        "tools": TOOLS,
        "tool_choice": {"type": "any" if config.force_tools else "auto"},
        "messages": msgs,
    }


def lineage_section(notes: Sequence[Note]) -> str:
    if not notes:
        return "### Tried before on this lineage\n(nothing yet)"
    return ("### Tried before on this lineage (newest first; each window indexes the program "
            "it was tried on, which earlier accepted edits may have shifted)\n"
            + "\n".join(n.render() for n in notes))


def first_message(config: LLMConfig, *, function, start: int, end: int,
                  profile: WindowProfile | None, edits_so_far: int, speedup: float,
                  lineage: Sequence[Note], notes: Sequence[Note], inspirations: str = "") -> str:
    """The task: the hottest window with its profile, what was tried, what worked
    elsewhere, the budget."""
    return "\n\n".join(x for x in [
        "## Task: make this kernel faster, with tools",
        f"The candidate is K0 plus {edits_so_far} accepted edit(s) and runs at "
        f"{speedup:.3f}x of K0. Its hot window is below. Find edits that compute exactly "
        f"the same results faster; you may edit anywhere in `{function.name}` (one window "
        "a try; accepted tries stack), but this is where its time goes.",
        window_section(function, start, end, config, profile, "Hot window"),
        lineage_section(lineage),
        notes_section(notes),
        inspirations,
        f"### Your budget\n{config.max_turns} turns, {config.max_tries} tries (try_edit) and "
        f"${config.max_conversation_dollars:.2f} for this conversation.",
    ] if x)


def turn_note(*, turn: int, config: LLMConfig, tries_left: int, spent: float,
              stacked: int = 0, best: float = 1.0) -> str:
    """What is left, after each turn's tool results, and what is stacked."""
    left = config.max_turns - turn
    text = (f"[{turn} of {config.max_turns} turns used; {left} turns and {tries_left} tries "
            f"left; ${spent:.4f} of ${config.max_conversation_dollars:.2f} spent"
            + (f"; {stacked} accepted edit(s) stacked, {best:.4f}x of K0" if stacked else "")
            + "]")
    if left == 1:
        text += " This is your last turn: call submit."
    return text


def lineage_note(attempt) -> Note:
    """A lineage try as a prompt quotes it."""
    return Note(f"gen {attempt.generation} {attempt.operator}", one_line(attempt.summary, 160),
                attempt.status, attempt.reason, attempt.speedup)
