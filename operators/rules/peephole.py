"""``peephole``: one exact local rewrite, chosen at random among those that apply.

One operator with four rules (``rules=`` picks a subset, for ablations):

- ``dce``: delete an ALU instruction none of whose results (flags included:
  SCC, VCC) is ever read. Never a memory op, an EXEC writer, a fixed point or
  an unknown instruction. A dead VGPR result must be overwritten later in the
  same block under the same EXEC (no EXEC write between; not by DPP/SDWA), or
  never be read anywhere: a write under a narrower EXEC keeps the other
  lanes, which liveness (LLVM-style, a VALU def is a full def) does not see.
- ``nop``: delete one ``s_nop`` (or shorten it) when the hazard checker needs
  fewer wait states there; the block is re-padded minimally and must come out
  with fewer wait states than before.
- ``strength``: an integer multiply by a power of two as a shift --
  ``v_mul_lo_u32 vD, vS, 2^k`` -> ``v_lshlrev_b32 vD, k, vS`` (the low 32 bits
  of x*2^k are x<<k for every x), ``v_mul_hi_u32 vD, vS, 2^k`` ->
  ``v_lshrrev_b32 vD, 32-k, vS``, multiply by 1 -> ``v_mov_b32``; and
  ``s_mul_i32 sD, sS, 2^k`` -> ``s_lshl_b32 sD, sS, k`` only when SCC is dead
  after it (``s_lshl`` writes SCC, ``s_mul`` does not).
- ``cse``: an instruction recomputing exactly what an earlier one in the block
  computed (same text but the destination; sources, the first destination and
  EXEC unchanged in between) is deleted and its readers (up to where its
  destination dies) read the first result instead.

Preserves: bit-identical register and memory state wherever it is observed
(no float rewrite, no reassociation). Why faster: fewer instructions, quarter-
rate ``v_mul_lo_u32`` replaced by a full-rate shift, fewer NOP wait states.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG
from asmevo.targets.amdgpu.analysis.effects import Effects, effects, split_operands
from asmevo.targets.amdgpu.analysis.hazards import wait_states
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import (SealError, candidate_windows, is_fixed_point,
                                    is_nop, liveness_of, option_subset, pad_hazards,
                                    positive, seal)

RULES = ("dce", "nop", "strength", "cse")
_ALU = ("SALU", "VALU", "VALU_TRANS", "DOT", "MFMA")
_PLAIN_REGS = ((1 << 102) - 1) | R.VGPR_MASK | R.AGPR_MASK   # s0-s101, v, a


@dataclass(frozen=True)
class Rewrite:
    """New text for block piece ``[a, b)``; ``rule`` and ``note`` say what it is."""

    rule: str
    a: int
    b: int
    lines: tuple[str, ...]
    note: str


@dataclass
class Facts:
    """The analyses every rule of one call shares."""

    program: object
    fn: object
    cfg: CFG
    live: Liveness

    def texts(self, a: int, b: int) -> list[str]:
        return list(self.cfg.texts[a:b])


# --- helpers ------------------------------------------------------------------------------

def _pure_alu(e: Effects) -> bool:
    return (e.klass in _ALU and not e.unknown and not e.mem and not e.counters
            and not e.writes & R.EXEC_MASK and not is_fixed_point(e.text) and e.writes != 0)


def _vector_dead(f: Facts, i: int, regs: int) -> bool:
    """Vector registers ``regs`` written at ``i`` (already not live after it) are
    surely dead: fully overwritten later in the block before any EXEC change
    (DPP/SDWA writes do not count), or never read by any instruction at all."""
    b = f.cfg.blocks[f.cfg.block_of[i]]
    rem = regs
    for k in range(i + 1, b.end):
        e = f.cfg.effects[k]
        if e.reads & rem or e.unknown or e.writes & R.EXEC_MASK:
            break
        if not (e.dpp or e.sdwa):
            rem &= ~e.kills
        if not rem:
            return True
    return not any(e.reads & rem for e in f.cfg.effects)


def dead(f: Facts, i: int) -> bool:
    """Whether every result of instruction ``i`` is never observed."""
    e = f.cfg.effects[i]
    if f.live.after(i) & e.writes:
        return False
    vec = e.writes & R.VECTOR_MASK
    return not vec or _vector_dead(f, i, vec)


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _log2(v: int | None) -> int | None:
    if v is None or v <= 0 or v & (v - 1) or v >= 1 << 32:
        return None
    return v.bit_length() - 1


def render(mnemonic: str, ops: list[str], mods: list[str] | tuple[str, ...]) -> str:
    text = mnemonic + (" " + ", ".join(ops) if ops else "")
    return text + (" " + " ".join(mods) if mods else "")


# --- rules --------------------------------------------------------------------------------

def rule_dce(f: Facts, a: int, b: int) -> list[Rewrite]:
    out = []
    for i in range(a, b):
        e = f.cfg.effects[i]
        if _pure_alu(e) and dead(f, i):
            lines = f.texts(a, b)
            del lines[i - a]
            out.append(Rewrite("dce", a, b, tuple(lines), f"delete dead #{i} {e.text}"))
    return out


def _wait_state_total(lines) -> int:
    return sum(wait_states(effects(t)) for t in lines if is_nop(t))


def rule_nop(f: Facts, a: int, b: int) -> list[Rewrite]:
    out = []
    base = f.texts(a, b)
    have = _wait_state_total(base)
    for i in range(a, b):
        if not is_nop(f.cfg.texts[i]):
            continue
        lines = base[:i - a] + base[i - a + 1:]
        try:
            padded = pad_hazards(f.program, f.fn.name, a, b, lines)
        except SealError:
            continue
        if _wait_state_total(padded) < have:
            out.append(Rewrite("nop", a, b, tuple(padded),
                               f"#{i} {f.cfg.texts[i]}: {have} -> "
                               f"{_wait_state_total(padded)} NOP wait states"))
    return out


def strength_reduce(text: str, scc_dead: bool) -> str | None:
    """The exact shift form of a multiply by a power of two, or None."""
    e = effects(text)
    m = e.mnemonic
    ops = list(e.operands)
    if e.modifiers or len(ops) != 3:
        return None
    d, x, y = ops
    if _log2(_int(x)) is not None and _int(y) is None:
        x, y = y, x
    k = _log2(_int(y))
    xm = R.operand_mask(x)
    if k is None or not xm or _int(x) is not None:
        return None
    if m in ("v_mul_lo_u32", "v_mul_lo_i32"):
        if k == 0:
            return f"v_mov_b32_e32 {d}, {x}" if xm & _PLAIN_REGS == xm else None
        form = "_e32" if xm & R.VGPR_MASK == xm else "_e64"
        return f"v_lshlrev_b32{form} {d}, {k}, {x}"
    if m == "v_mul_hi_u32" and k >= 1:
        form = "_e32" if xm & R.VGPR_MASK == xm else "_e64"
        return f"v_lshrrev_b32{form} {d}, {32 - k}, {x}"
    if m == "s_mul_i32" and xm & R.SGPR_MASK == xm:
        if k == 0:
            return f"s_mov_b32 {d}, {x}"
        return f"s_lshl_b32 {d}, {x}, {k}" if scc_dead else None
    return None


def rule_strength(f: Facts, a: int, b: int) -> list[Rewrite]:
    out = []
    for i in range(a, b):
        t = f.cfg.texts[i]
        if not t.startswith(("v_mul_lo_", "v_mul_hi_u32", "s_mul_i32")):
            continue
        new = strength_reduce(t, not f.live.after(i) & R.SCC_MASK)
        if new is None:
            continue
        lines = f.texts(a, b)
        lines[i - a] = new
        out.append(Rewrite("strength", a, b, tuple(lines), f"#{i} {t} -> {new}"))
    return out


def _split(text: str) -> tuple[str, list[str], list[str]] | None:
    """(mnemonic, operands, modifiers) when ``render`` gives the text back exactly."""
    m, _, rest = text.partition(" ")
    ops, mods = split_operands(rest.strip()) if rest else ([], [])
    if render(m, ops, mods) != text:
        return None
    return m, ops, mods


def _rename_reads(text: str, old: int, new_text: str) -> str | None:
    """``text`` reading ``new_text`` wherever it read exactly the registers ``old``
    as a source operand; None when it reads part of them or implicitly."""
    e = effects(text)
    parts = _split(text)
    if parts is None or e.unknown:
        return None
    m, ops, mods = parts
    masks = [R.operand_mask(o) for o in ops]
    explicit = 0
    for k in range(e.ndefs, len(ops)):
        if masks[k] & old:
            if masks[k] != old:
                return None
            ops[k] = new_text
            explicit |= masks[k]
    if e.reads & old & ~explicit:
        return None                   # an implicit read (or a def read back)
    return render(m, ops, mods)


_LANE_READERS = ("v_readlane", "v_permlane", "ds_permute", "ds_bpermute", "ds_swizzle")


def _cse_pair(f: Facts, a: int, b: int, i: int, j: int) -> Rewrite | None:
    ei, ej = f.cfg.effects[i], f.cfg.effects[j]
    if ei.ndefs != 1 or ej.ndefs != 1 or ei.dpp or ei.sdwa:
        return None
    d1, d2 = ei.op_masks[0], ej.op_masks[0]
    if d1 & ~_PLAIN_REGS or d2 & ~_PLAIN_REGS or d1 & ei.reads:
        return None
    if ej.writes & ~d2 & f.live.after(j):
        return None                   # side writes (SCC, VCC) only when dead
    srcs = ei.reads
    for k in range(i + 1, j):
        e = f.cfg.effects[k]
        if e.writes & (srcs | d1) or e.unknown:
            return None
    lines = f.texts(a, b)
    if d1 == d2:
        del lines[j - a]
        return Rewrite("cse", a, b, tuple(lines), f"#{j} recomputes #{i}: delete it")
    if d1 & d2:
        return None
    vector = bool(d2 & R.VECTOR_MASK)
    d1_text = ei.operands[0]
    end = None
    for k in range(j + 1, b):
        e = f.cfg.effects[k]
        if e.unknown or (vector and e.writes & R.EXEC_MASK):
            return None
        if e.reads & d2:
            if vector and (e.dpp or e.mnemonic.startswith(_LANE_READERS)):
                return None           # reads lanes outside EXEC, where d1 and d2 differ
            new = _rename_reads(f.cfg.texts[k], d2, d1_text)
            if new is None:
                return None
            lines[k - a] = new
        full_kill = e.kills & d2 == d2 and not (e.dpp or e.sdwa)
        if e.writes & d2 and not full_kill:
            return None
        if e.writes & d1 and not full_kill:
            return None               # the first result dies while the copy is in use
        if full_kill:
            end = k
            break
    if end is None:
        # d2 leaves the block: dead there, and (VGPRs) read nowhere else
        if f.live.after(b - 1) & d2:
            return None
        if vector and any(x.reads & d2 for n, x in enumerate(f.cfg.effects)
                          if not j <= n < b):
            return None
    del lines[j - a]
    return Rewrite("cse", a, b, tuple(lines),
                   f"#{j} recomputes #{i}: read {d1_text} instead of {ej.operands[0]}")


def rule_cse(f: Facts, a: int, b: int) -> list[Rewrite]:
    out = []
    seen: dict[tuple, int] = {}
    for j in range(a, b):
        e = f.cfg.effects[j]
        if not _pure_alu(e) or e.ndefs != 1 or e.dpp or e.sdwa:
            continue
        key = (e.mnemonic, e.operands[1:], e.modifiers)
        i = seen.get(key)
        seen[key] = j
        if i is None:
            continue
        rw = _cse_pair(f, a, b, i, j)
        if rw is not None:
            out.append(rw)
    return out


_RULES = {"dce": rule_dce, "nop": rule_nop, "strength": rule_strength, "cse": rule_cse}


@mutation("peephole", targets=("amdgpu",))
class Peephole:
    """One exact local rewrite in a hot block (see the module doc for the rules)."""

    def __init__(self, rules: tuple[str, ...] = RULES, top_windows: int = 8, tries: int = 6):
        self.tries, self.top_windows = positive(tries=tries, top_windows=top_windows)
        self.rules = option_subset(rules, RULES, "rules")

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        cfg, live = liveness_of(fn)
        facts = Facts(program, fn, cfg, live)
        found: list[Rewrite] = []
        for _, a, b in candidate_windows(context, individual, top=self.top_windows, min_len=1):
            for rule in self.rules:
                found += _RULES[rule](facts, a, b)
        if not found:
            return context.reject(f"no {'/'.join(self.rules)} rewrite applies in the hot blocks")
        reasons = []
        for _ in range(self.tries):
            if not found:
                break
            rw = found.pop(context.rng.randrange(len(found)))
            result = seal(program, fn.name, rw.a, rw.b, rw.lines, operator=self.name,
                          note=f"{rw.rule}: {rw.note}")
            if isinstance(result, Edit):
                return result
            reasons.append(f"{rw.rule} {rw.note}: {result}")
        return context.reject("; ".join(reasons[:3]))
