"""Registers read and written by one SASS instruction, parsed from nvdisasm's text.

Covers what legality needs: general (``R``), uniform (``UR``), predicate (``P``)
and uniform-predicate (``UP``) registers, register pairs and quads implied by
width modifiers (``.64``, ``.128``, ``.WIDE``, F64 arithmetic), memory operands
(``[R2.64+0x10]``, ``desc[UR4][R2.64]``, ``[R7+UR4]``), the guard (``@P0``,
``@!PT``) and ``.reuse``. Where an opcode is not in the tables below, every
register operand is taken as read *and* written, four registers wide: an
unknown instruction can only make legality more conservative, never wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from asmevo.targets.syntax import comma_fields

# Instructions nothing moves across (control flow, synchronisation, fences, async
# tensor-core and copy machinery, clocks). They end a movable region.
FENCES = frozenset({
    "BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BPT", "KILL", "BREAK", "BSSY",
    "BSYNC", "WARPSYNC", "BAR", "DEPBAR", "LDGDEPBAR", "MEMBAR", "ERRBAR", "CCTL", "CCTLL",
    "FENCE", "YIELD", "NANOSLEEP", "SYNCS", "ARRIVES", "WARPGROUP", "HGMMA", "IGMMA", "QGMMA",
    "BGMMA", "UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL", "UBLKCP", "UBLKRED", "UBLKPF",
    "ACQBULK", "B2R", "R2B", "BMOV", "ELECT", "PMTRIG", "SETCTAID", "SETLMEMBASE", "VOTEU",
    "ATOM", "ATOMG", "ATOMS", "RED", "REDG", "REDAS", "REDUX", "MATCH", "LDGSTS", "STSM",
    "UCGABAR_ARV", "UCGABAR_WAIT", "ENDCOLLECTIVE", "CGAERRBAR", "PREEXIT",
})
# Memory instructions a move operator may move (CuAsmRL moves LDG/STG/LDS).
MOVABLE = frozenset({"LDG", "STG", "LDS", "STS", "LDSM", "LD", "ST", "LDL", "STL", "LDC"})
LOADS = frozenset({"LDG", "LDS", "LDSM", "LD", "LDL", "LDC", "ULDC"})
STORES = frozenset({"STG", "STS", "ST", "STL"})
SPACE = {"LDG": "global", "STG": "global", "LDS": "shared", "STS": "shared", "LDSM": "shared",
         "LD": "generic", "ST": "generic", "LDL": "local", "STL": "local", "LDC": "const",
         "ULDC": "const"}
# Ordinary instructions whose operand roles follow the default rule: operand 0 is
# written, a run of predicates right after it is written (carry/compare outputs),
# everything else is read.
KNOWN = frozenset({
    "IADD3", "IMAD", "IMADSP", "IMUL", "LOP3", "LEA", "SHF", "SHL", "SHR", "SEL", "FSEL",
    "MOV", "IABS", "IMNMX", "VIMNMX", "VIMNMX3", "VIADD", "VIADDMNMX", "FADD", "FMUL", "FFMA",
    "FMNMX", "FSWZADD", "FRND", "FCHK", "MUFU", "HADD2", "HMUL2", "HFMA2", "HMNMX2", "F2F",
    "F2I", "I2F", "I2FP", "F2IP", "I2I", "I2IP", "F2FP", "PRMT", "POPC", "FLO", "BREV",
    "BMSK", "SGXT", "IDP", "IDP4A", "DADD", "DMUL", "DFMA", "DMNMX", "LDS", "LDG", "LD",
    "LDL", "LDC", "LDSM", "ULDC", "S2R", "S2UR", "CS2R", "R2UR", "UMOV", "UIADD3", "UIMAD",
    "ULEA", "ULOP3", "USHF", "USEL", "USGXT", "UPRMT", "UFLO", "UPOPC", "UBREV", "UBMSK",
    "ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "PLOP3", "UISETP", "UPLOP3", "UPSETP",
    "SHFL", "VOTE", "P2R", "R2P", "NOP", "STG", "STS", "ST", "STL", "HMMA", "IMMA", "DMMA",
    "UP2UR", "UR2UP", "FMUL32I", "FADD32I", "FFMA32I", "IADD32I", "IMUL32I",
    "LOP32I", "ISCADD", "LEPC",
})
# Compare-like instructions: exactly the first two operands are outputs.
TWO_DESTS = frozenset({"ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "PLOP3", "UISETP",
                       "UPLOP3", "UPSETP", "SHFL", "VOTE"})
NO_DEST = STORES | frozenset({"NOP"})
ZERO = frozenset({"RZ", "URZ", "PT", "UPT", "SRZ"})

_REG = re.compile(r"\b(UR|R|UP|P)(\d+|Z|T)\b|\b(U?PR)\b")
_GUARD = re.compile(r"^@(!?)(U?P[T0-9])\s+")


@dataclass(frozen=True)
class MemAccess:
    kind: str       # load | store
    space: str      # global | shared | local | generic | const


@dataclass(frozen=True)
class Operands:
    opcode: str                  # full mnemonic with modifiers, e.g. LDG.E.128
    base: str                    # LDG
    guard: str | None            # P0 (for @P0 / @!P0), None when unguarded or @PT
    reads: frozenset[str]
    writes: frozenset[str]
    mem: MemAccess | None
    fence: bool
    known: bool
    reuse: tuple[int, ...]       # operand indices (0 = first operand) printed with .reuse

    @property
    def movable(self) -> bool:
        return self.base in MOVABLE and not self.fence and self.known


def split_operands(rest: str) -> list[str]:
    """Split on commas outside brackets (an empty last field dropped)."""
    head, tail = comma_fields(rest)
    return head + [tail] if tail else head


def _width_of(mods: list[str]) -> int:
    if "128" in mods or "U.128" in mods:
        return 4
    if any(m in ("64", "U64", "S64", "F64", "WIDE") for m in mods):
        return 2
    return 1


def _expand(token: str, width: int) -> set[str]:
    """``R4`` at width 2 -> {R4, R5}; zero registers -> {}; PR -> P0..P6."""
    if token in ZERO:
        return set()
    if token == "PR":
        return {f"P{i}" for i in range(7)}
    if token == "UPR":
        return {f"UP{i}" for i in range(7)}
    m = re.fullmatch(r"(UR|R|UP|P)(\d+)", token)
    if not m:
        return set()
    kind, n = m.group(1), int(m.group(2))
    w = width if kind in ("R", "UR") else 1
    return {f"{kind}{n + i}" for i in range(w)}


def _regs_in(operand: str, width: int) -> set[str]:
    """Registers named by one operand; memory addresses use their own widths."""
    regs: set[str] = set()
    if "[" in operand:     # memory: desc[URx] is a 64-bit descriptor, Rn.64 a pair
        for m in re.finditer(r"\b(U?R)(\d+|Z)(\.64)?", operand):
            tok = m.group(1) + m.group(2)
            w = 2 if m.group(3) or operand[:m.start()].rstrip().endswith("desc[") else 1
            regs |= _expand(tok, w)
        return regs
    for m in _REG.finditer(operand):
        tok = m.group(3) or (m.group(1) + m.group(2))
        regs |= _expand(tok, width)
    return regs


def _is_pred(operand: str) -> bool:
    return re.fullmatch(r"!?(U?P[T0-9]|U?PR)", operand.strip()) is not None


def parse(text: str) -> Operands:
    """Operands of one instruction's text (as nvdisasm prints it, without ';')."""
    text = text.strip()
    guard = None
    reads: set[str] = set()
    m = _GUARD.match(text)
    if m:
        if m.group(2) not in ("PT", "UPT"):
            guard = m.group(2)
            reads.add(guard)
        text = text[m.end():]
    mnemonic, _, rest = text.partition(" ")
    parts = mnemonic.split(".")
    base, mods = parts[0], parts[1:]
    ops = split_operands(rest)
    reuse = tuple(i for i, o in enumerate(ops) if ".reuse" in o)
    ops = [o.replace(".reuse", "") for o in ops]
    clock = any("SR_CLOCK" in o or "SR_GLOBALTIMER" in o for o in ops)
    fence = base in FENCES or clock
    known = base in KNOWN and not fence
    mem = None
    if base in SPACE:
        mem = MemAccess("load" if base in LOADS else "store", SPACE[base])
    writes: set[str] = set()
    if not known:
        # Unknown or fence: every register operand read and written, four wide.
        for o in ops:
            rs = _regs_in(o, 4)
            reads |= rs
            writes |= rs
        return Operands(mnemonic, base, guard, frozenset(reads), frozenset(writes), mem,
                        fence, known, reuse)
    data_w = _width_of(mods)
    if base in ("LDSM",):
        data_w = 4 if mods and mods[-1] == "4" else 2 if mods and mods[-1] == "2" else 1
    if base in ("HMMA", "IMMA", "DMMA"):
        data_w = 4
    if base == "CS2R" and "32" not in mods:
        data_w = 2
    if base in ("IMAD", "UIMAD") and "WIDE" in mods:
        for i, o in enumerate(ops):
            (writes if i == 0 else reads).update(_regs_in(o, 2 if i in (0, 3) else 1))
        return Operands(mnemonic, base, guard, frozenset(reads), frozenset(writes), mem,
                        fence, known, reuse)
    if base in ("F2F", "F2I", "I2F", "I2I", "FRND", "F2IP", "I2IP") and any("64" in x for x in mods):
        data_w = 2
    if base in NO_DEST:
        n_dest = 0
    elif base in TWO_DESTS:
        n_dest = 2
    else:
        n_dest = 1
        while n_dest < len(ops) and _is_pred(ops[n_dest]) and base not in ("P2R",):
            n_dest += 1
    for i, o in enumerate(ops):
        if base in ("LDG", "LDS", "LD", "LDL", "LDC", "ULDC", "LDSM", "STG", "STS", "ST",
                    "STL"):
            w = data_w if "[" not in o else 1
        elif base in ("IMAD", "UIMAD", "IADD3", "UIADD3", "LEA", "ULEA", "LOP3", "ULOP3",
                      "SHF", "USHF", "PRMT", "UPRMT", "F2FP", "SEL", "USEL", "FSEL", "MOV",
                      "UMOV", "ISETP", "UISETP", "FSETP", "P2R", "R2P", "SHFL", "VOTE"):
            w = 1 if not (set(mods) & {"64", "U64", "S64", "WIDE"}) else 2
        else:
            w = data_w
        (writes if i < n_dest else reads).update(_regs_in(o, w))
    if base in ("R2P", "UR2UP"):
        writes |= {f"P{i}" for i in range(7)} if base == "R2P" else {f"UP{i}" for i in range(7)}
    return Operands(mnemonic, base, guard, frozenset(reads), frozenset(writes), mem, fence,
                    known, reuse)
