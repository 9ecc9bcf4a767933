"""Value ranges of 32-bit registers: what an LDS address can be, proved from the code.

An operator that shrinks or re-lays a workgroup's LDS must know every byte the code
can touch there. Compiler and hand-written code computes LDS addresses from the
work-item id, the wave id (``v_readfirstlane`` of it), constants and shifts, so a
forward interval analysis over the CFG bounds them: every 32-bit register holds an
unsigned interval ``[lo, hi]`` (no wraparound: an operation that could wrap gives
the whole range), joined at merges and widened to the whole range in loops that
keep growing it.

Vector registers are per lane, and a VALU write under EXEC keeps the lanes EXEC
leaves off. The analysis keeps two intervals per VGPR: over the lanes the launch
started (``launched``) and over the other lanes of a partial wave (``extra``), and an
abstract EXEC: exactly the launched lanes (the state at entry), a subset of them, all
64 lanes (``s_mov_b64 exec, -1``), or a subset of all. A write under exactly-launched
or all-lanes EXEC replaces the interval of those lanes; under a subset it joins. A
read under a subset of the launched lanes sees the launched interval; otherwise both.
The extra lanes of a partial wave start with no defined value (the hardware
initializes nothing there), so until code writes them under an all-lanes EXEC they
add nothing to a read's interval: an access at such an address is one the ISA leaves
undefined in K0 already (any launch relying on it gives K0 undefined results).

The launch state: the work-item id in v0 (packed X | Y << 10 | Z << 20 on
gfx90a/gfx942), X below the kernel's ``max_flat_workgroup_size`` (the runtime
refuses larger workgroups) and every field below 1024; every other register
(SGPRs from the kernarg segment, workgroup ids, loaded values) is unknown.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg
from asmevo.targets.amdgpu.analysis.dominance import reverse_postorder
from asmevo.targets.amdgpu.analysis.effects import Effects

MAX = 0xFFFFFFFF
TOP = (0, MAX)
WIDEN_AFTER = 4          # joins at a block before a still-growing interval is widened
# the abstract EXEC values
ENTRY, SUB, ALL, SUBALL = "entry", "sub", "all", "suball"


@dataclass(frozen=True)
class Tid:
    """The packed work-item id shifted right by ``shift`` (v0 at launch), its X field at
    most ``xmax``."""

    shift: int = 0
    xmax: int = 1023


def interval(v) -> tuple[int, int]:
    if isinstance(v, Tid):
        return 0, MAX >> v.shift
    return v


def join(a, b):
    if a == b:
        return a
    a, b = interval(a), interval(b)
    return min(a[0], b[0]), max(a[1], b[1])


def join_exec(a: str, b: str) -> str:
    if a == b:
        return a
    return SUB if {a, b} <= {ENTRY, SUB} else SUBALL


@dataclass
class State:
    """Registers (bit index -> value) at one program point; a missing key is TOP."""

    s: dict[int, object] = field(default_factory=dict)       # scalar registers, M0
    v: dict[int, object] = field(default_factory=dict)       # VGPRs, launched lanes
    x: dict[int, object] = field(default_factory=dict)       # VGPRs, extra lanes (missing:
    #                                                          no defined value yet)
    exec: str = ENTRY
    saved: dict[int, str] = field(default_factory=dict)      # SGPR pair -> EXEC it holds

    def copy(self) -> "State":
        return State(dict(self.s), dict(self.v), dict(self.x), self.exec, dict(self.saved))

    def key(self):
        return (self.s, self.v, self.x, self.exec, self.saved)


def _join_maps(a: dict, b: dict) -> dict:
    return {k: join(a[k], b[k]) for k in a.keys() & b.keys() if join(a[k], b[k]) != TOP}


def _union_maps(a: dict, b: dict) -> dict:
    """The join of maps whose missing keys are the bottom (no defined value)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = join(out[k], v) if k in out else v
    return out


def join_states(a: State | None, b: State) -> State:
    if a is None:
        return b.copy()
    saved = {k: join_exec(a.saved[k], b.saved[k]) for k in a.saved.keys() & b.saved.keys()}
    return State(_join_maps(a.s, b.s), _join_maps(a.v, b.v), _union_maps(a.x, b.x),
                 join_exec(a.exec, b.exec), saved)


def widen(old: State, new: State) -> State:
    """``new`` with every value that changed since ``old`` made TOP."""
    def keep(o: dict, n: dict) -> dict:
        return {k: v for k, v in n.items() if o.get(k) == v}
    return State(keep(old.s, new.s), keep(old.v, new.v),
                 {k: (v if old.x.get(k) == v else TOP) for k, v in new.x.items()},
                 join_exec(old.exec, new.exec),
                 {k: v for k, v in new.saved.items() if old.saved.get(k) == v})


def launch_state(fn, packed: bool) -> State:
    """Registers at the kernel's first instruction (module doc)."""
    kd = fn.kernel.descriptor if fn.kernel is not None else None
    flat = fn.kernel.meta.max_flat_workgroup_size if fn.kernel and fn.kernel.meta else 0
    xmax = min(1023, flat - 1) if flat else 1023
    st = State()
    if packed:
        st.v[R.VGPR_BASE] = Tid(0, xmax)
    else:
        ids = kd.enable_vgpr_workitem_id if kd is not None else 0
        st.v[R.VGPR_BASE] = (0, xmax)
        for k in range(1, ids + 1):
            st.v[R.VGPR_BASE + k] = (0, 1023)
    return st


def _tid_field(v: Tid, mask: int) -> tuple[int, int] | None:
    """``v & mask`` for a packed-id value, when the mask selects inside one 10-bit field."""
    if v.shift == 0 and mask <= 0x3FF:
        return 0, min(mask, v.xmax)
    if v.shift in (10, 20) and mask <= 0x3FF:
        return 0, mask
    return None


class ValueRanges:
    """Forward interval analysis of one function (module doc); :meth:`before` gives the
    state in front of an instruction, :meth:`operand` an operand's interval there."""

    def __init__(self, fn, packed_tid: bool = True, cfg: CFG | None = None):
        self.fn = fn
        self.cfg = cfg or build_cfg(fn)
        self.entry = self._fixed_point(launch_state(fn, packed_tid))
        self._before: dict[int, list[State]] = {}

    def _fixed_point(self, start: State) -> list[State | None]:
        cfg = self.cfg
        entry: list[State | None] = [None] * len(cfg.blocks)
        if not cfg.blocks:
            return entry
        entry[0] = start
        order = reverse_postorder(cfg)
        rank = {b: k for k, b in enumerate(order)}
        visits = [0] * len(cfg.blocks)
        dirty = {0}
        while dirty:
            bi = min(dirty, key=lambda b: rank.get(b, len(rank)))
            dirty.discard(bi)
            out = entry[bi].copy()
            for i in range(cfg.blocks[bi].start, cfg.blocks[bi].end):
                transfer(out, cfg.effects[i])
            for s in cfg.succs[bi]:
                new = join_states(entry[s], out)
                if entry[s] is not None and new.key() == entry[s].key():
                    continue
                visits[s] += 1
                if entry[s] is not None and visits[s] > WIDEN_AFTER:
                    new = widen(entry[s], new)
                entry[s] = new
                dirty.add(s)
        return entry

    def before(self, i: int) -> State | None:
        """The state in front of instruction ``i`` (None: unreachable)."""
        bi = self.cfg.block_of[i]
        if self.entry[bi] is None:
            return None
        states = self._before.get(bi)
        if states is None:
            st = self.entry[bi].copy()
            states = []
            for k in range(self.cfg.blocks[bi].start, self.cfg.blocks[bi].end):
                states.append(st.copy())
                transfer(st, self.cfg.effects[k])
            self._before[bi] = states
        return states[i - self.cfg.blocks[bi].start]

    def operand(self, i: int, text: str) -> tuple[int, int] | None:
        """The interval of operand ``text`` in front of instruction ``i`` (None:
        unreachable)."""
        st = self.before(i)
        return None if st is None else interval(read(st, text))


# --- reading operands -------------------------------------------------------------------

def _reg32(text: str) -> tuple[str, int] | None:
    """('s'|'v', bit index) of a plain 32-bit register operand, else None."""
    t = text.strip()
    if t == "m0":
        return "s", R.M0
    mask = R.operand_mask(t)
    if not mask or mask & (mask - 1) or R.count(mask) != 1 or not _plain(t):
        return None
    bit = mask.bit_length() - 1
    if bit >= R.VGPR_BASE:
        return ("v", bit) if bit < R.AGPR_BASE else None
    return "s", bit


def _plain(t: str) -> bool:
    return (t[0] in "sv" and t[1:].isdigit()) or t in ("vcc_lo", "vcc_hi", "exec_lo", "exec_hi")


def _const(text: str) -> int | None:
    t = text.strip()
    try:
        v = int(t, 0)
    except ValueError:
        return None
    if not -(1 << 31) <= v <= MAX:
        return None
    return v & MAX


def read(st: State, text: str):
    """The abstract value of one source operand."""
    c = _const(text)
    if c is not None:
        return (c, c)
    r = _reg32(text)
    if r is None:
        return TOP
    kind, bit = r
    if kind == "s":
        return st.s.get(bit, TOP)
    if st.exec in (ENTRY, SUB):
        return st.v.get(bit, TOP)
    return _with_extra(st, bit)


def _with_extra(st: State, bit: int):
    v = st.v.get(bit, TOP)
    return join(v, st.x[bit]) if bit in st.x else v


def read_all_lanes(st: State, text: str):
    r = _reg32(text)
    if r is not None and r[0] == "v":
        return _with_extra(st, r[1])
    return read(st, text)


# --- the transfer function --------------------------------------------------------------

def _fit(lo: int, hi: int):
    return (lo, hi) if 0 <= lo <= hi <= MAX else TOP


def _add(a, b):
    (a0, a1), (b0, b1) = interval(a), interval(b)
    return _fit(a0 + b0, a1 + b1)


def _sub(a, b):
    (a0, a1), (b0, b1) = interval(a), interval(b)
    return _fit(a0 - b1, a1 - b0)


def _mul(a, b, limit: int = MAX):
    (a0, a1), (b0, b1) = interval(a), interval(b)
    return (a0 * b0, a1 * b1) if a1 * b1 <= limit else TOP


def _shl(a, s):
    (a0, a1), (s0, s1) = interval(a), interval(s)
    if s1 > 31:
        return TOP
    return _fit(a0 << s0, a1 << s1)


def _shr(a, s):
    s0, s1 = interval(s)
    if s1 > 31:
        return TOP
    if isinstance(a, Tid) and s0 == s1:
        return Tid(a.shift + s0, a.xmax)
    a0, a1 = interval(a)
    return a0 >> s1, a1 >> s0


def _and(a, b):
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Tid) and interval(y)[0] == interval(y)[1]:
            got = _tid_field(x, interval(y)[0])
            if got is not None:
                return got
    return 0, min(interval(a)[1], interval(b)[1])


def _or(a, b):
    (a0, a1), (b0, b1) = interval(a), interval(b)
    return max(a0, b0), (1 << max(a1, b1).bit_length()) - 1


def _xor(a, b):
    return 0, _or(a, b)[1]


def _bfe(a, off, width):
    (o0, o1), (w0, w1) = interval(off), interval(width)
    if o0 != o1 or w0 != w1:
        return TOP
    o, w = o0 & 31, w0 & 31
    if isinstance(a, Tid) and o in (0, 10, 20) and w <= 10:
        return _and(_shr(a, (o, o)), ((1 << w) - 1,) * 2)
    a0, a1 = interval(a)
    return (0, min((1 << w) - 1, a1 >> o)) if w else (0, 0)


def _i24(a):
    a0, a1 = interval(a)
    return a1 < (1 << 23)


def _u24(a):
    return interval(a)[1] < (1 << 24)


def _lshl_add(x, s, y):
    return _add(_shl(x, s), y)


def _value(m: str, src: list):
    """The result of mnemonic ``m`` (suffix-free) on source values, or None when
    the operation is not modelled."""
    n = len(src)
    if m in ("v_mov_b32", "s_mov_b32", "v_readfirstlane_b32") and n == 1:
        return src[0]
    if m == "s_movk_i32" and n == 1 and interval(src[0])[0] == interval(src[0])[1]:
        c = interval(src[0])[0] & 0xFFFF                   # simm16, sign-extended
        c = c | 0xFFFF0000 if c & 0x8000 else c
        return (c, c)
    if m in ("v_add_u32", "v_add_co_u32", "s_add_u32", "s_add_i32", "v_add_i32") and n == 2:
        return _add(*src)
    if m == "v_add3_u32" and n == 3:
        return _add(_add(src[0], src[1]), src[2])
    if m in ("v_sub_u32", "v_sub_co_u32", "s_sub_u32", "s_sub_i32", "v_sub_i32") and n == 2:
        return _sub(*src)
    if m in ("v_subrev_u32", "v_subrev_co_u32") and n == 2:
        return _sub(src[1], src[0])
    if m in ("v_mul_lo_u32", "s_mul_i32") and n == 2:
        return _mul(*src)
    if m == "v_mul_u32_u24" and n == 2 and _u24(src[0]) and _u24(src[1]):
        return _mul(*src)
    if m == "v_mul_i32_i24" and n == 2 and _i24(src[0]) and _i24(src[1]):
        return _mul(*src, limit=(1 << 31) - 1)
    if m == "v_mad_u32_u24" and n == 3 and _u24(src[0]) and _u24(src[1]):
        return _add(_mul(src[0], src[1]), src[2])
    if m == "v_lshlrev_b32" and n == 2:
        return _shl(src[1], src[0])
    if m == "s_lshl_b32" and n == 2:
        return _shl(src[0], src[1])
    if m == "v_lshrrev_b32" and n == 2:
        return _shr(src[1], src[0])
    if m == "s_lshr_b32" and n == 2:
        return _shr(src[0], src[1])
    if m in ("v_ashrrev_i32",) and n == 2 and interval(src[1])[1] < (1 << 31):
        return _shr(src[1], src[0])
    if m == "s_ashr_i32" and n == 2 and interval(src[0])[1] < (1 << 31):
        return _shr(src[0], src[1])
    if m == "v_lshl_add_u32" and n == 3:
        return _lshl_add(src[0], src[1], src[2])
    if m.startswith("s_lshl") and m.endswith("_add_u32") and n == 2 and m[6].isdigit():
        return _lshl_add(src[0], (int(m[6]),) * 2, src[1])
    if m == "v_add_lshl_u32" and n == 3:
        return _shl(_add(src[0], src[1]), src[2])
    if m == "v_lshl_or_b32" and n == 3:
        return _or(_shl(src[0], src[1]), src[2])
    return _value_logic(m, src)


def _value_logic(m: str, src: list):
    n = len(src)
    if m in ("v_and_b32", "s_and_b32") and n == 2:
        return _and(*src)
    if m in ("v_or_b32", "s_or_b32") and n == 2:
        return _or(*src)
    if m in ("v_xor_b32", "s_xor_b32") and n == 2:
        return _xor(*src)
    if m == "v_or3_b32" and n == 3:
        return _or(_or(src[0], src[1]), src[2])
    if m == "v_and_or_b32" and n == 3:
        return _or(_and(src[0], src[1]), src[2])
    if m == "v_bfe_u32" and n == 3:
        return _bfe(*src)
    if m == "s_bfe_u32" and n == 2:
        c0, c1 = interval(src[1])
        if c0 != c1:
            return TOP
        if (c0 >> 16) & 127 >= 32:
            return _shr(src[0], (c0 & 31,) * 2)
        return _bfe(src[0], (c0 & 31,) * 2, ((c0 >> 16) & 127,) * 2)
    if m in ("v_cndmask_b32", "s_cselect_b32") and n >= 2:
        return join(src[0], src[1])
    if m in ("v_min_u32", "s_min_u32", "v_max_u32", "s_max_u32") and n == 2:
        (a0, a1), (b0, b1) = interval(src[0]), interval(src[1])
        return (min(a0, b0), min(a1, b1)) if "min" in m else (max(a0, b0), max(a1, b1))
    if m == "v_mbcnt_lo_u32_b32" and n == 2:
        return _add(src[1], (0, 32))
    if m == "v_mbcnt_hi_u32_b32" and n == 2:
        return _add(src[1], (0, 31))
    return None


_SUFFIXES = ("_e32", "_e64")


def _base(mnemonic: str) -> str:
    for s in _SUFFIXES:
        if mnemonic.endswith(s):
            return mnemonic[:-len(s)]
    return mnemonic


def _sources(e: Effects) -> list[str]:
    """Value operands (a carry-out is a destination; a select's mask is not a value)."""
    ops = list(e.operands[e.ndefs:])
    return ops[:2] if _base(e.mnemonic) == "v_cndmask_b32" else ops


def transfer(st: State, e: Effects) -> None:
    """``st`` after instruction ``e`` (in place)."""
    if e.writes & R.EXEC_MASK:
        _exec_write(st, e)
    m = _base(e.mnemonic)
    value = None
    dest = e.operands[0] if e.ndefs >= 1 and e.operands else None
    if dest is not None and not e.unknown and not e.dpp and not e.sdwa and not e.modifiers \
            and e.klass in ("SALU", "VALU") and _reg32(dest) is not None:
        if m == "v_readlane_b32" and len(e.operands) == 3:
            value = read_all_lanes(st, e.operands[1])
        else:
            value = _value(m, [read(st, o) for o in _sources(e)])
    written = e.writes & ~R.EXEC_MASK
    if value is not None:
        kind, bit = _reg32(dest)
        _write(st, kind, bit, value, e)
        written &= ~(1 << bit)
    _clobber(st, written)
    note_saved_exec(st, e)


def _write(st: State, kind: str, bit: int, value, e: Effects) -> None:
    if kind == "s":
        if value == TOP:
            st.s.pop(bit, None)
        else:
            st.s[bit] = value
        st.saved.pop(bit & ~1, None)
        return
    new_v = value if st.exec in (ENTRY, ALL) else join(st.v.get(bit, TOP), value)
    if new_v == TOP:
        st.v.pop(bit, None)
    else:
        st.v[bit] = new_v
    if st.exec == ALL or (st.exec == SUBALL and bit not in st.x):
        st.x[bit] = value
    elif st.exec == SUBALL:
        st.x[bit] = join(st.x[bit], value)


def _clobber(st: State, mask: int) -> None:
    """Every register in ``mask`` becomes unknown (a write the analysis does not model)."""
    if not mask:
        return
    for d in (st.s, st.v):
        for bit in [b for b in d if (mask >> b) & 1]:
            del d[bit]
    if st.exec in (ALL, SUBALL) and mask & R.VGPR_MASK:
        for bit in range(R.VGPR_BASE, R.AGPR_BASE):
            if (mask >> bit) & 1:
                st.x[bit] = TOP
    for pair in [p for p in st.saved if (mask >> p) & 3]:
        del st.saved[pair]


def _exec_write(st: State, e: Effects) -> None:
    """The abstract EXEC after an EXEC write, and the SGPR pair a save-exec fills."""
    m = e.mnemonic
    ops = e.operands
    before = st.exec
    new = SUBALL
    if m == "s_mov_b64" and len(ops) == 2 and ops[0] == "exec":
        src = ops[1].strip()
        if _const(src) == MAX or src == "-1":
            new = ALL
        else:
            pair = R.operand_mask(src)
            low = (pair & -pair).bit_length() - 1 if pair else -1
            new = st.saved.get(low, SUBALL) if R.count(pair) == 2 else SUBALL
    elif m in ("s_and_saveexec_b64", "s_and_b64", "s_andn2_b64") or m.startswith("v_cmpx_"):
        if m.startswith("v_cmpx_") or "saveexec" in m or "exec" in ops[1:3]:
            new = SUB if before in (ENTRY, SUB) else SUBALL
    if "saveexec" in m and ops and ops[0].startswith("s["):
        pair = R.operand_mask(ops[0])
        st.saved[(pair & -pair).bit_length() - 1] = before
    st.exec = new


def note_saved_exec(st: State, e: Effects) -> None:
    """``s_mov_b64 s[a:b], exec``: the pair holds the current EXEC."""
    if e.mnemonic == "s_mov_b64" and len(e.operands) == 2 and e.operands[1] == "exec":
        pair = R.operand_mask(e.operands[0])
        if R.count(pair) == 2 and not pair & R.EXEC_MASK:
            st.saved[(pair & -pair).bit_length() - 1] = st.exec
