"""The symbolic state of one wave, and what two versions of a window share.

A :class:`Context` owns the initial symbols (every SGPR, VGPR, SCC, memory, LDS),
the uninterpreted functions and the kernel's MODE; K0's window and the
candidate's each run on a :class:`Machine` of the same context, so they start
from one state. Where a proof composes several windows (or a loop's trips), the
registers K0 has dead at a window's entry may hold different values in the two
versions: :class:`Policy` names them, and each side then starts from symbols of
its own there (for a vector register live only in EXEC's lanes, in the other
lanes).

Memory is two arrays of dwords (global, indexed by byte address / 4; the
workgroup's LDS likewise): every access of 4 bytes or more is 4-byte aligned or
faults, and byte and short accesses read and rewrite their dword. Faults are not
values: each access adds the condition under which it faults (misaligned, or a
dword the launch does not map, an uninterpreted predicate over dword addresses:
a proof holds for every memory layout) to a set, and two versions must fault
under the same conditions.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.emu.fpmode import IEEE, DX10_CLAMP
from asmevo.prove.errors import Unsupported
from asmevo.prove.term import LANE, bv, cat, lane_bit
from asmevo.prove.z3env import z3

EXEC, VCC, M0 = 126, 106, 124
BV6, BV32, BV62 = z3.BitVecSort(6), z3.BitVecSort(32), z3.BitVecSort(62)
SCC_REG = 128           # the liveness bit of SCC (asmevo.targets.amdgpu.analysis.regs)


@dataclass(frozen=True)
class Policy:
    """Which initial registers the two sides share. ``shared_s``: SGPR numbers (and
    :data:`SCC_REG`); ``shared_v_all``: VGPRs equal in every lane; ``shared_v_exec``:
    VGPRs equal in the lanes of the entry EXEC. None: everything shared."""

    shared_s: frozenset = frozenset()
    shared_v_all: frozenset = frozenset()
    shared_v_exec: frozenset = frozenset()


class Context:
    """Initial symbols, uninterpreted functions and the kernel's float MODE."""

    def __init__(self, mode: int, processor: str = "gfx942", accum_offset: int = 0):
        self.mode = mode
        self.processor = processor
        self.accum_offset = accum_offset
        self.mem0 = z3.Array("mem", BV62, BV32)
        self.lds0 = z3.Array("lds", BV62, BV32)
        self.lds_size = z3.BitVec("lds_size", 64)
        self.unmapped_arr = z3.Array("unmapped", BV62, z3.BoolSort())
        self.readonly_arr = z3.Array("readonly", BV62, z3.BoolSort())
        self._ufs: dict[str, object] = {}
        self._small: dict[int, object] = {}
        self.uf_info: dict[str, dict] = {}    # name -> what concrete evaluation needs
        self.barrier_mem: list = []           # memory after the i-th barrier (other waves')

    @property
    def ieee(self) -> bool:
        return bool(self.mode & IEEE)

    @property
    def dx10(self) -> bool:
        return bool(self.mode & DX10_CLAMP)

    def sgpr(self, r: int, side: str | None = None):
        return z3.BitVec(f"s{r}" if side is None else f"s{r}@{side}", 32)

    def vgpr_array(self, r: int, side: str | None = None):
        return z3.Array(f"v{r}" if side is None else f"v{r}@{side}", BV6, BV32)

    def vgpr(self, r: int, side: str | None = None):
        return z3.Select(self.vgpr_array(r, side), LANE)

    def unmapped(self, d):
        """Whether the dword at ``d`` (a dword index) is not mapped in the launch."""
        return z3.Select(self.unmapped_arr, d)

    def readonly(self, d):
        return z3.Select(self.readonly_arr, d)

    def scc(self, side: str | None = None):
        return z3.Bool("scc" if side is None else f"scc@{side}")

    def unmapped_small(self, addr, nbytes: int):
        """Whether a ``nbytes`` (1 or 2) access at byte address ``addr`` leaves the mapped
        bytes (a byte-granular predicate of its own: a partly mapped dword may hold it)."""
        arr = self._small.get(nbytes)
        if arr is None:
            arr = self._small[nbytes] = z3.Array(f"unmapped{nbytes}", z3.BitVecSort(64),
                                                 z3.BoolSort())
        return z3.Select(arr, addr)

    def uf(self, name: str, domain: tuple, rng, **info):
        """The uninterpreted function ``name`` (made once per context)."""
        f = self._ufs.get(name)
        if f is None:
            f = self._ufs[name] = z3.Function(name, *domain, rng)
            self.uf_info[name] = info
        return f

    def barrier(self, k: int):
        """Global memory and LDS as the ``k``-th barrier leaves them (other waves' stores
        included): the same symbols for both versions."""
        while len(self.barrier_mem) <= k:
            i = len(self.barrier_mem)
            self.barrier_mem.append((z3.Array(f"mem!{i}", BV62, BV32),
                                     z3.Array(f"lds!{i}", BV62, BV32)))
        return self.barrier_mem[k]


class Machine:
    """One wave's registers, memory and fault conditions as terms."""

    def __init__(self, ctx: Context, side: str = "", policy: Policy | None = None):
        self.ctx = ctx
        self.side = side
        self.policy = policy
        self.s: dict[int, object] = {}
        self.v: dict[int, object] = {}
        self._scc = None
        self.mem = ctx.mem0
        self.lds = ctx.lds0
        self.faults: dict[int, object] = {}     # term id -> fault condition (lane term)
        self.barriers: list = []                # (global, LDS) at each barrier, stores before it
        self.exec0 = None

    # -- initial values ---------------------------------------------------------------
    def _s0(self, r: int):
        p = self.policy
        if p is None or r in p.shared_s:
            return self.ctx.sgpr(r)
        return self.ctx.sgpr(r, self.side)

    def _v0(self, r: int):
        p = self.policy
        if p is None or r in p.shared_v_all:
            return self.ctx.vgpr(r)
        mine = self.ctx.vgpr(r, self.side)
        if r in p.shared_v_exec:
            entry = cat(self._s0(EXEC + 1), self._s0(EXEC))
            return z3.If(lane_bit(entry), self.ctx.vgpr(r), mine)
        return mine

    # -- registers ---------------------------------------------------------------------
    def sget(self, r: int):
        got = self.s.get(r)
        return got if got is not None else self._s0(r)

    def sset(self, r: int, val) -> None:
        if not 0 <= r < 128:
            raise Unsupported(f"s{r}", "no such scalar register")
        self.s[r] = val

    def sget64(self, r: int):
        return cat(self.sget(r + 1), self.sget(r))

    def sset64(self, r: int, val) -> None:
        self.sset(r, z3.Extract(31, 0, val))
        self.sset(r + 1, z3.Extract(63, 32, val))

    def vget(self, r: int):
        got = self.v.get(r)
        return got if got is not None else self._v0(r)

    def vset_all(self, r: int, val) -> None:
        """Write every lane (v_writelane's kept lanes, a load's data are written masked)."""
        if not 0 <= r < 512:
            raise Unsupported(f"v{r}", "no such vector register")
        self.v[r] = val

    def vwrite(self, r: int, val, enable=None) -> None:
        """Write lane :data:`LANE` where EXEC (and ``enable``) has it on."""
        on = self.active()
        if enable is not None:
            on = z3.And(on, enable)
        self.vset_all(r, z3.If(on, val, self.vget(r)))

    @property
    def scc(self):
        return self._scc if self._scc is not None else (
            self.ctx.scc() if self.policy is None or SCC_REG in self.policy.shared_s
            else self.ctx.scc(self.side))

    @scc.setter
    def scc(self, val) -> None:
        self._scc = val

    def exec64(self):
        return self.sget64(EXEC)

    def active(self, lane=LANE):
        return lane_bit(self.exec64(), lane)

    # -- memory and faults ---------------------------------------------------------------
    def fault(self, cond) -> None:
        cond = z3.simplify(cond) if z3.is_and(cond) and len(cond.children()) <= 1 else cond
        if z3.is_false(cond):
            return
        self.faults[cond.get_id()] = cond

    def dword_faults(self, addr, nbytes: int, write: bool, lane_on):
        """The fault condition of a global access of ``nbytes`` at ``addr`` (64-bit)."""
        conds = []
        align = min(nbytes, 4)
        if align > 1:
            conds.append(z3.Extract(align.bit_length() - 2, 0, addr) != 0)
        first = z3.Extract(63, 2, addr)
        n = max(1, (nbytes + 3) // 4) if nbytes >= 4 else 1
        for i in range(n):
            d = first + bv(i, 62) if i else first
            conds.append(self.ctx.unmapped(d) if nbytes >= 4 else
                         self.ctx.unmapped_small(addr, nbytes))
            if write:
                conds.append(self.ctx.readonly(d))
        self.fault(z3.And(lane_on, z3.Or(*conds)))

    def barrier(self) -> None:
        """``s_barrier``: what this wave stored so far becomes visible to the others, and
        what they stored becomes visible to it (data-race-free code: the only place)."""
        k = len(self.barriers)
        self.barriers.append((self.mem, self.lds))
        self.mem, self.lds = self.ctx.barrier(k)

    def copy(self, side: str) -> "Machine":
        m = Machine(self.ctx, side, self.policy)
        m.s, m.v, m._scc = dict(self.s), dict(self.v), self._scc
        m.mem, m.lds, m.faults, m.barriers = self.mem, self.lds, dict(self.faults), \
            list(self.barriers)
        return m


def dword_index(addr):
    """The dword an aligned 64-bit byte address names."""
    return z3.Extract(63, 2, addr)

