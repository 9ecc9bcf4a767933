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

from asmevo.emu.numerics.fpmode import IEEE, DX10_CLAMP
from asmevo.prove.errors import Unsupported
from asmevo.prove.term import LANE, at_lane, bv, cat, lane_bit
from asmevo.prove.z3env import check, z3
from asmevo.targets.amdgpu.processors import DEFAULT

EXEC, VCC, M0 = 126, 106, 124
BV6, BV32, BV62 = z3.BitVecSort(6), z3.BitVecSort(32), z3.BitVecSort(62)
SCC_REG = 128           # the liveness bit of SCC (asmevo.targets.amdgpu.analysis.regs)


@dataclass(frozen=True)
class Policy:
    """Which initial registers the two sides share. ``shared_s``: SGPR numbers (and
    :data:`SCC_REG`); ``shared_v_all``: VGPRs equal in every lane; ``shared_v_exec``:
    VGPRs equal in the lanes of the entry EXEC. None: everything shared.

    ``exec_stable``: neither window writes EXEC or reads another lane, so a register
    equal in EXEC's lanes is read only there and may start from the shared symbol in
    every lane (one term for both sides: what keeps the comparison structural);
    ``compared_all`` names the registers compared in every lane at the end, which
    keep the lane split."""

    shared_s: frozenset = frozenset()
    shared_v_all: frozenset = frozenset()
    shared_v_exec: frozenset = frozenset()
    exec_stable: bool = False
    compared_all: frozenset = frozenset()
    cand_values: tuple = ()        # (SGPR, term): what the candidate holds there, K0 not


WITNESSES = 8      # entry states :meth:`Context.same` keeps to tell terms apart


def _differ_under(model, x, y) -> bool:
    """Whether ``x`` and ``y`` take different values in ``model`` (a model of the facts,
    completed where it says nothing: the facts do not constrain what it leaves out)."""
    vx, vy = model.eval(x, model_completion=True), model.eval(y, model_completion=True)
    return z3.is_bv_value(vx) and z3.is_bv_value(vy) and vx.as_long() != vy.as_long()


class Context:
    """Initial symbols, uninterpreted functions and the kernel's float MODE."""

    def __init__(self, mode: int, processor: str = DEFAULT, accum_offset: int = 0):
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
        self.private_arr: dict[int, object] = {}
        self.defs: dict[str, tuple] = {}       # placeholder name -> (placeholder, build, keep)
        self.kernarg: tuple[int, int] | None = None   # (first SGPR of its pointer, bytes)
        self.karg = z3.Array("kernarg", BV62, BV32)    # its dwords, as the dispatch wrote them
        self._same: dict[tuple, tuple] = {}
        self._witnesses: list = []         # entry states (models of the facts), newest first
        self.mask_pred: dict[str, object] = {}  # lane-mask placeholder name -> its predicate
        self.uf_info: dict[str, dict] = {}    # name -> what concrete evaluation needs
        self.barrier_mem: list = []           # memory after the i-th barrier (other waves')
        self.deadline: float | None = None    # time.perf_counter() the proof stops at

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
        """Whether the dword at ``d`` (a dword index) is not mapped in the launch. Where
        the kernarg pointer holds what the dispatch put there (:attr:`kernarg`), the
        segment it points to is mapped (its bytes rounded up to dwords)."""
        got = z3.Select(self.unmapped_arr, d)
        seg = self.kernarg_dwords()
        if seg is None:
            return got
        lo, n = seg
        return z3.And(got, z3.Not(z3.ULT(d - lo, bv(n, 62))))

    def kernarg_dwords(self):
        """(the kernarg segment's first dword index, its dwords), or None."""
        if self.kernarg is None:
            return None
        r, size = self.kernarg
        base = cat(self.sgpr(r + 1), self.sgpr(r))
        return z3.Extract(63, 2, base), (size + 3) // 4

    def facts(self) -> list:
        """What holds at every window's entry whatever the state, where the kernarg
        pointer holds the dispatch's value: it is aligned (HSA: 16 bytes), and the
        segment's dwords in memory are :attr:`karg` (read-only for the whole dispatch)."""
        seg = self.kernarg_dwords()
        if seg is None:
            return []
        lo, n = seg
        r, _ = self.kernarg
        return [z3.Extract(3, 0, self.sgpr(r)) == 0] + [
            z3.Select(self.karg, bv(k, 62)) == z3.Select(self.mem0, lo + bv(k, 62))
            for k in range(n)]

    def readonly(self, d):
        """Whether the dword at ``d`` may not be written (the kernarg segment never may)."""
        got = z3.Select(self.readonly_arr, d)
        seg = self.kernarg_dwords()
        if seg is None:
            return got
        lo, n = seg
        return z3.Or(got, z3.ULT(d - lo, bv(n, 62)))

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

    def private_fault(self, addr, lane, nbytes: int):
        """Whether lane ``lane``'s ``nbytes`` access at ``addr`` through a swizzled buffer
        resource leaves its column of the wave's private slot, where the launch has a
        private segment (scratch._check_swizzled): a predicate of its own, false in the
        harness's layout (no private segment)."""
        arr = self.private_arr.get(nbytes)
        if arr is None:
            arr = self.private_arr[nbytes] = z3.Array(f"private{nbytes}", z3.BitVecSort(70),
                                                      z3.BoolSort())
        return z3.Select(arr, z3.Concat(lane, addr))

    def uf(self, name: str, domain: tuple, rng, **info):
        """The uninterpreted function ``name`` (made once per context)."""
        f = self._ufs.get(name)
        if f is None:
            f = self._ufs[name] = z3.Function(name, *domain, rng)
            self.uf_info[name] = info
        return f

    # -- deferred definitions -----------------------------------------------------------
    def defer(self, prefix: str, key: tuple, sort, build):
        """A constant that stands for ``build()`` (a term of ``sort``), named by the
        terms in ``key``: two versions that build the same thing from the same terms get
        the same constant, and its definition is expanded (:meth:`definitions`) only
        where a question needs it. What makes a wave's 64 lanes affordable: a compare's
        lane mask and a store's memory are 64 instances of a lane term."""
        name = f"{prefix}!" + ".".join(str(t.get_id()) for t in key)
        got = self.defs.get(name)
        if got is None:
            got = self.defs[name] = (z3.Const(name, sort), build, key)
        return got[0]

    def lane_mask(self, pred):
        """The 64-bit lane mask whose bit ``lane`` is ``pred`` (a Bool in LANE)."""
        from asmevo.prove.term import each_lane, mask_of
        ph = self.defer("mask", (pred,), z3.BitVecSort(64), lambda: mask_of(each_lane(pred)))
        self.mask_pred[ph.decl().name()] = pred
        return ph

    def same(self, x, y, timeout_ms: int = 300) -> bool:
        """Whether terms ``x`` and ``y`` are equal for every entry state (decided quickly,
        or taken as not). An entry state an earlier question found (a model of the facts)
        under which they differ answers "not" without asking the solver again: most
        pairs asked are different addresses, and one state tells most of them apart."""
        key = (x.get_id(), y.get_id())
        got = self._same.get(key)
        if got is None:
            got = self._same[key] = (self._decide_same(x, y, timeout_ms), x, y)
        return got[0]

    def _decide_same(self, x, y, timeout_ms: int) -> bool:
        for k, m in enumerate(self._witnesses):
            if _differ_under(m, x, y):
                if k:                       # the state that answered is asked first next
                    self._witnesses.insert(0, self._witnesses.pop(k))
                return False
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*self.facts(), x != y)
        answer = check(s)
        if answer == z3.sat:
            self._witnesses.insert(0, s.model())
            del self._witnesses[WITNESSES:]
        return answer == z3.unsat

    def exec_empty(self, e):
        """Whether the 64-bit EXEC value ``e`` is empty, as a placeholder (simplification
        of what uses it cannot rewrite it, so a proof can set it false where a lane is
        known to be on)."""
        return self.defer("empty", (e,), z3.BoolSort(), lambda: e == 0)

    def definitions(self, terms) -> list:
        """The definitions (``placeholder == value``) of every placeholder ``terms`` use,
        and of those their definitions use, oldest first."""
        found: dict[str, object] = {}
        seen: set[int] = set()
        stack = list(terms)
        while stack:
            t = stack.pop()
            tid = t.get_id()
            if tid in seen:
                continue
            seen.add(tid)
            if z3.is_const(t):
                name = t.decl().name()
                d = self.defs.get(name)
                if d is not None and name not in found:
                    rhs = found[name] = d[1]()
                    stack.append(rhs)
                continue
            stack.extend([t.body()] if z3.is_quantifier(t) else t.children())
        order = list(self.defs)
        return [(self.defs[n][0], found[n]) for n in sorted(found, key=order.index)]

    def expand(self, t):
        """``t`` with every placeholder replaced by what it stands for."""
        return self.expander([t])(t)

    def expander(self, terms):
        """A function that replaces every placeholder ``terms`` use (and those their
        definitions use) by what it stands for, in any term built from them. A question
        asked with the definitions substituted, not as equations, is far easier where a
        store's memory is one: ``mem != placeholder`` with ``placeholder == Lambda(...)``
        beside it took z3 past its limit, the same with the lambda in place seconds."""
        pairs = []
        for ph, rhs in self.definitions(terms):
            pairs.append((ph, z3.substitute(rhs, *pairs) if pairs else rhs))
        return (lambda t: z3.substitute(t, *pairs)) if pairs else (lambda t: t)

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
        self.accesses: list = []                # (space, address term, bytes): for replay
        self.ref: Machine | None = None         # K0's machine, run first (see address())
        self.addresses: list = []               # (space, address term) of each access

    # -- initial values ---------------------------------------------------------------
    def _s0(self, r: int):
        p = self.policy
        if p is not None and self.side == "cand":
            for reg, val in p.cand_values:
                if reg == r:
                    return val         # what an earlier region left there (validate.py)
        k = self.ctx.kernarg
        if p is None or r in p.shared_s or (k is not None and k[0] <= r <= k[0] + 1):
            return self.ctx.sgpr(r)        # the kernarg pointer never changes: shared
        return self.ctx.sgpr(r, self.side)

    def _v0(self, r: int):
        p = self.policy
        if p is None or r in p.shared_v_all:
            return self.ctx.vgpr(r)
        mine = self.ctx.vgpr(r, self.side)
        if r in p.shared_v_exec and p.exec_stable and r not in p.compared_all:
            return self.ctx.vgpr(r)
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

    def kernarg_values(self, base: int, offset: int, n: int) -> list | None:
        """The ``n`` dwords an ``s_load`` from the kernarg pointer ``base`` at the constant
        byte ``offset`` gives: the segment's dispatch contents (:attr:`Context.karg`),
        the same terms wherever the kernel loads them; None where that is not known (the
        pointer changed, the access leaves the segment)."""
        k = self.ctx.kernarg
        if k is None or base != k[0] or offset % 4 or offset + 4 * n > k[1]:
            return None
        if not self.sget64(base).eq(cat(self.ctx.sgpr(base + 1), self.ctx.sgpr(base))):
            return None
        return [z3.Select(self.ctx.karg, bv(offset // 4 + i, 62)) for i in range(n)]

    def vuse(self, r: int):
        """VGPR ``r`` as an instruction that uses it only in lanes EXEC has on reads it: a
        masked write made under the current EXEC (``If(on, new, old)``) is ``new`` there.
        Keeps two versions' terms alike where only the inactive lanes' history differs."""
        val = self.vget(r)
        if z3.is_app_of(val, z3.Z3_OP_ITE) and val.arg(0).eq(self.active()):
            return val.arg(1)
        return val

    def vset_all(self, r: int, val) -> None:
        """Write every lane (v_writelane's kept lanes, a load's data are written masked)."""
        if not 0 <= r < 512:
            raise Unsupported(f"v{r}", "no such vector register")
        self.v[r] = val

    def vwrite(self, r: int, val, enable=None) -> None:
        """Write lane :data:`LANE` where EXEC (and ``enable``) has it on."""
        on = self.active()
        if enable is not None and not z3.is_true(enable):
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

    def bit(self, mask, lane=LANE):
        """Bit ``lane`` of the 64-bit lane mask ``mask``, as a Bool: a compare's mask
        gives its predicate back (no 64-way expansion), and the bitwise operations of
        masks (``s_and_b64 exec, vcc``...) give those of their lanes' bits."""
        return lane_bit_of(self.ctx, mask, lane)

    def active(self, lane=LANE):
        return self.bit(self.exec64(), lane)

    # -- memory and faults ---------------------------------------------------------------
    def fault(self, cond) -> None:
        cond = z3.simplify(cond) if z3.is_and(cond) and len(cond.children()) <= 1 else cond
        if z3.is_false(cond):
            return
        self.faults[cond.get_id()] = cond

    def dword_faults(self, addr, nbytes: int, write: bool, lane_on):
        """The fault condition of a global access of ``nbytes`` at ``addr`` (64-bit)."""
        self.accesses.append(("global", addr, nbytes))
        conds = []
        align = min(nbytes, 4)
        if align > 1:
            conds.append(low_bits(addr, align.bit_length() - 1) != 0)
        first = dword_index(addr)
        n = max(1, (nbytes + 3) // 4) if nbytes >= 4 else 1
        for i in range(n):
            d = first + bv(i, 62) if i else first
            conds.append(self.ctx.unmapped(d) if nbytes >= 4 else
                         self.ctx.unmapped_small(addr, nbytes))
            if write:
                conds.append(self.ctx.readonly(d))
        self.fault(z3.And(lane_on, z3.Or(*conds)))

    def address(self, space: str, addr):
        """``addr``, or the term K0's window used for an address equal to it for every
        entry state and lane: the candidate's accesses then load and store the same
        terms as K0's where they touch the same bytes, however the address was computed
        (a pointer stepped by two 32-bit adds, an offset folded into the instruction),
        and what is computed from them stays alike term for term."""
        ref = self.ref
        if ref is not None and not any(addr.eq(x) for sp, x in ref.addresses if sp == space):
            for sp, x in reversed(ref.addresses[-24:]):
                if sp == space and x.size() == addr.size() and self.ctx.same(x, addr):
                    addr = x
                    break
        self.addresses.append((space, addr))
        return addr

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
        m.accesses = list(self.accesses)
        return m


_BITWISE = {z3.Z3_OP_BAND: z3.And, z3.Z3_OP_BOR: z3.Or, z3.Z3_OP_BXOR: z3.Xor}


def lane_bit_of(ctx: Context, mask, lane=LANE):
    """:meth:`Machine.bit` (module function: the expansion recurses)."""
    if z3.is_const(mask):
        pred = ctx.mask_pred.get(mask.decl().name())
        if pred is not None:
            return pred if lane is LANE else at_lane(pred, lane)
        return lane_bit(mask, lane)
    for op, fn in _BITWISE.items():
        if z3.is_app_of(mask, op):
            return fn(*[lane_bit_of(ctx, c, lane) for c in mask.children()]) \
                if op != z3.Z3_OP_BXOR or mask.num_args() == 2 else lane_bit(mask, lane)
    if z3.is_app_of(mask, z3.Z3_OP_BNOT):
        return z3.Not(lane_bit_of(ctx, mask.arg(0), lane))
    return lane_bit(mask, lane)


def split_const(addr):
    """``(rest, c)`` with ``addr == rest + c`` for the literal ``c`` of a sum (0 if none)."""
    c, terms, todo = 0, [], [addr]
    while todo:
        t = todo.pop()
        if z3.is_app_of(t, z3.Z3_OP_BADD):
            todo.extend(t.children())
        elif z3.is_bv_value(t):
            c += t.as_long()
        else:
            terms.append(t)
    if not terms or c == 0:
        return addr, 0
    rest = terms[0]
    for t in terms[1:]:
        rest = rest + t
    return rest, c % (1 << addr.size())


def dword_index(addr):
    """The dword an aligned byte address names (64-bit addresses: a 62-bit index).
    ``x + 4k`` gives ``x / 4 + k``, the same term for every way of writing it, so a
    merged access and the accesses it replaces name their dwords alike."""
    rest, c = split_const(addr)
    w = addr.size()
    if c % 4 == 0:
        return z3.Extract(w - 1, 2, rest) + bv(c >> 2, w - 2) if c else z3.Extract(w - 1, 2, rest)
    return z3.Extract(w - 1, 2, addr)


def low_bits(addr, n: int):
    """Bits ``n-1..0`` of a byte address (a multiple of 4 added changes none of them)."""
    rest, c = split_const(addr)
    if n <= 2 and c % 4 == 0:
        return z3.Extract(n - 1, 0, rest)
    return z3.Extract(n - 1, 0, addr)
