"""The semantics checked against the emulator, one instruction at a time.

For an instruction with an exact row, random and edge states (NaNs with payloads,
infinities, denormals, signed zeros, shift counts past the width, extreme
integers, EXEC all on, all off, single lanes and random, addresses in and out of
bounds and misaligned) are run through the emulator (:mod:`asmevo.prove.harness`)
and through the symbolic semantics evaluated at the same state
(:mod:`asmevo.prove.concrete`): every SGPR, SCC, every lane of every VGPR the
instruction names, memory, LDS and the fault status must agree bit for bit. For an
opaque instruction (:mod:`asmevo.prove.sem_opaque`) the claim the model rests on is
tested instead: a second state that agrees with the first only on the function's
inputs at one lane gives the same results at that lane, and nothing but the
destinations' active lanes changes.

A state the emulator refuses (an input it does not model) is skipped and counted.
:func:`trusted` caches the verdict per instruction form; a proof uses an
instruction only when its form passed (:mod:`asmevo.prove.equiv`).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

from asmevo.memo import Memo
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.prove import checkcache, harness
from asmevo.prove.concrete import evaluate, substitution
from asmevo.prove.errors import Unsupported
from asmevo.prove.machine import EXEC, VCC, Context, Machine
from asmevo.prove.registry import execute, lookup, parsed
from asmevo.prove.sem_opaque import canonical, opaque_plan
from asmevo.prove.z3env import z3
from asmevo.targets.amdgpu.processors import DEFAULT

ACCUM = 256                    # accum_offset of the checks: a0 is v256
DEFAULT_MODE = 0x2F0           # IEEE, DX10 clamp, f32/f64/f16 denormals kept
MEM_DWORDS = 256               # the part of the harness allocation checks fill
LDS_BYTES = 4096


@dataclass
class Outcome:
    text: str
    kind: str = "exact"                  # exact | opaque
    cases: int = 0
    skipped: int = 0                     # states the emulator refused
    disagreements: list[str] = field(default_factory=list)
    refused: str | None = None           # why the prover does not model it

    @property
    def ok(self) -> bool:
        return self.refused is None and not self.disagreements and self.cases > self.skipped


# -- values ----------------------------------------------------------------------------------

def _f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


SPECIAL32 = [0, 1, 2, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 31, 32, 33, 63, 64, 0xFFFF, 0x10000,
             0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA00123,
             0x7FBFFFFF, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
             _f32(1.0), _f32(-1.0), _f32(0.5), _f32(2.0), _f32(1.5), _f32(-0.0) | 0,
             0x3C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x8000, 0x3C003C00, 0x7C007E01,
             0x7FF00000, 0xFFF80000, 0x00100000, 0x3FF00000]


def word(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.45:
        return rng.choice(SPECIAL32)
    if r < 0.6:
        return _f32(rng.uniform(-4, 4))
    if r < 0.7:
        return rng.randrange(64)
    return rng.getrandbits(32)


def _exec(rng: random.Random) -> int:
    return rng.choice([(1 << 64) - 1, (1 << 64) - 1, 0, 1, 1 << 63, 0x5555555555555555,
                       rng.getrandbits(64), rng.getrandbits(64), 0xFFFFFFFF])


# -- states ----------------------------------------------------------------------------------

def vregs_of(ins, e) -> list[int]:
    out = set()
    for mask in (e.reads, e.writes):
        for b in range(R.VGPR_BASE, R.AGPR_BASE):
            if (mask >> b) & 1:
                out.add(b - R.VGPR_BASE)
        for b in range(R.AGPR_BASE, R.NBITS):
            if (mask >> b) & 1:
                out.add(ACCUM + b - R.AGPR_BASE)
    for o in ins.ops:
        if o.kind == "v":
            out.update(range(o.reg, o.reg + o.count))
    return sorted(r for r in out if r < harness.NVGPRS)


def random_state(rng: random.Random, ins, vregs, mode: int) -> harness.Snapshot:
    snap = harness.Snapshot(mode=mode, lds_size=LDS_BYTES)
    snap.s = [word(rng) for _ in range(128)]
    ex = _exec(rng)
    snap.s[EXEC], snap.s[EXEC + 1] = ex & 0xFFFFFFFF, ex >> 32
    snap.scc = rng.random() < 0.5
    snap.v = {r: [word(rng) for _ in range(64)] for r in vregs}
    _correlate(rng, snap, vregs)
    snap.mem = {harness.BASE + 4 * i: word(rng) for i in range(MEM_DWORDS)}
    snap.lds = {4 * i: word(rng) for i in range(MEM_DWORDS)}
    _addresses(rng, ins, snap)
    return snap


def _correlate(rng: random.Random, snap: harness.Snapshot, vregs) -> None:
    """Lanes where one register's value is another's, its negation, a neighbour or
    the other zero: equal and opposite operands are where min/max, compares and the
    NaN choice have their corner cases."""
    if len(vregs) < 2 or rng.random() < 0.3:
        return
    for r in vregs:
        src = snap.v[rng.choice(vregs)]
        lanes = snap.v[r]
        for i in range(64):
            if rng.random() < 0.5:
                how = rng.randrange(4)
                x = src[i]
                if how == 3:                    # the two zeros (or the two halves' zeros)
                    z = rng.choice((0x80000000, 0x8000, 0x80008000))
                    src[i], lanes[i] = (0, z) if rng.random() < 0.5 else (z, 0)
                else:
                    lanes[i] = (x, x ^ 0x80000000, (x + 1) & 0xFFFFFFFF)[how]


def _near(rng: random.Random, align: int, limit: int) -> int:
    """An offset into the filled region: aligned, sometimes not, sometimes past it."""
    r = rng.random()
    if r < 0.04:
        return limit + rng.randrange(0, 64, align)
    off = rng.randrange(0, limit - 64, align)
    return off + rng.randrange(1, align) if r < 0.08 and align > 1 else off


def _addresses(rng: random.Random, ins, snap: harness.Snapshot) -> None:
    """Point the instruction's address operands at the filled memory (global: the
    harness allocation; LDS: its first bytes) in most lanes."""
    b = ins.base
    ops = ins.ops
    if b.startswith(("global_load", "global_store")):
        vi = 1 if "_load" in b else 0
        sa = ops[2] if len(ops) > 2 else None
        va = ops[vi]
        if sa is not None and sa.kind == "s":
            base = harness.BASE + 4 * rng.randrange(8)
            snap.s[sa.reg], snap.s[sa.reg + 1] = base & 0xFFFFFFFF, base >> 32
            snap.v[va.reg] = [_near(rng, 4, 512) for _ in range(64)]
        elif va.kind == "v":
            lanes = [harness.BASE + _near(rng, 4, 512) for _ in range(64)]
            snap.v[va.reg] = [a & 0xFFFFFFFF for a in lanes]
            snap.v[va.reg + 1] = [a >> 32 for a in lanes]
    elif b.startswith("ds_") and b not in ("ds_swizzle_b32",):
        vi = 1 if b.startswith(("ds_read", "ds_bpermute")) else 0
        va = ops[vi]
        if va.kind == "v":
            snap.v[va.reg] = [_near(rng, 4, 512) if rng.random() < 0.95 else
                              LDS_BYTES - rng.randrange(0, 16) for _ in range(64)]
    elif b.startswith("s_load"):
        base = harness.BASE + _near(rng, 4, 512)
        snap.s[ops[1].reg], snap.s[ops[1].reg + 1] = base & 0xFFFFFFFF, base >> 32
    elif b.startswith("buffer_") and len(ops) > 2 and ops[2].kind == "s":
        _buffer_state(rng, ins, snap)


def _buffer_state(rng: random.Random, ins, snap: harness.Snapshot) -> None:
    """A V# on the harness allocation (linear mostly, swizzled sometimes, ADD_TID_ENABLE
    among them), num_records around the lanes' offsets (some lanes out of range), VADDR
    offsets and indices into the filled memory, SOFFSET 0, small or near num_records."""
    ops, r = ins.ops, ins.ops[2].reg
    base = harness.BASE + _near(rng, 4, 256)
    stride = rng.choice([0, 4, 8, 12, 16])
    swz = rng.random() < 0.15
    d3 = rng.choice([0x27000, 0x20000, rng.getrandbits(32) & ~(1 << 23)])
    if rng.random() < 0.1:
        d3 |= 1 << 23                           # ADD_TID_ENABLE: swizzled too
    nrec = rng.choice([rng.randrange(0, 700), rng.randrange(0, 48), 0xFFFFFFFF, 0])
    snap.s[r:r + 4] = [base & 0xFFFFFFFF, ((base >> 32) & 0xFFFF) | (stride << 16) |
                       (swz << 31), nrec, d3]
    va = ops[1]
    if va.kind == "v":
        idxen, offen = bool(ins.mods.get("idxen")), bool(ins.mods.get("offen"))
        if idxen:
            snap.v[va.reg] = [rng.randrange(0, 50) for _ in range(64)]
        if offen:
            snap.v[va.reg + idxen] = [_near(rng, 4, 512) for _ in range(64)]
    so = ops[3] if len(ops) > 3 else None
    if so is not None and so.kind == "s" and so.reg < 128:
        snap.s[so.reg] = rng.choice([0, 0, 4 * rng.randrange(16), nrec - rng.randrange(8),
                                     rng.getrandbits(32)]) & 0xFFFFFFFF


# -- exact rows ----------------------------------------------------------------------------

def check_text(text: str, *, cases: int = 16, seed: int = 0, mode: int = DEFAULT_MODE,
               processor: str = DEFAULT) -> Outcome:
    """The semantics of ``text`` against the emulator on ``cases`` states."""
    try:
        ins = parsed(text, ACCUM, processor)
    except Unsupported as exc:
        return Outcome(text, refused=exc.why)
    if lookup(ins) is None:
        return check_opaque(text, cases=cases, seed=seed, mode=mode, processor=processor)
    ctx = Context(mode, processor, ACCUM)
    m = Machine(ctx)
    try:
        execute(m, text)
    except Unsupported as exc:
        return Outcome(text, refused=exc.why)
    vregs = vregs_of(ins, effects(text))
    # refusals: a signalling NaN outside IEEE mode, a buffer's SOFFSET range check
    return _states(Outcome(text), ins, vregs, cases, seed, mode, processor,
                   lambda rng, snap, got: compare(ctx, m, snap, got, vregs),
                   refusals=not ctx.ieee or ins.base.startswith("buffer_"))


def _states(out: Outcome, ins, vregs, cases: int, seed: int, mode: int, processor: str,
            judge, refusals: bool = False) -> Outcome:
    """``cases`` random states run through the emulator, each judged (``judge(rng,
    state, after)``: why it disagrees, or None) until one disagrees; the emulator's
    refusals are skipped, or (``refusals``) judged as the semantics' aborts."""
    rng = random.Random(f"{seed}:{ins.text}")
    for _ in range(cases):
        snap = random_state(rng, ins, vregs, mode)
        got = harness.run(snap, [ins.text], vregs=vregs, accum_offset=ACCUM,
                          processor=processor)
        out.cases += 1
        if got.status == "barrier" or got.status == "unsupported" and not refusals:
            out.skipped += 1        # (the harness stops at a barrier: nothing ran)
            continue
        why = judge(rng, snap, got)
        if why:
            out.disagreements.append(why)
            break
    return out


def compare(ctx: Context, m: Machine, snap: harness.Snapshot, got: harness.Snapshot,
            vregs) -> str | None:
    """Where the symbolic state ``m`` (from ``snap``) and the emulator's ``got`` differ."""
    touches = not (m.mem.eq(ctx.mem0) and m.lds.eq(ctx.lds0)) or bool(m.faults)
    subs = substitution(ctx, snap, vregs, memory=touches)
    ev = lambda t: evaluate(ctx.expand(t), subs)  # noqa: E731
    faults = any(any(x) if isinstance(x, list) else x
                 for x in (ev(f) for f in m.faults.values()))
    if faults != (got.status in ("fault", "unsupported")):
        return f"abort: semantics {faults}, emulator {got.status} {got.detail}"
    if faults:
        return None
    sv = ev(z3.Concat(*[m.sget(r) for r in reversed(range(128))]))
    for r in range(128):
        if (sv >> (32 * r)) & 0xFFFFFFFF != got.s[r]:
            return f"s{r}: semantics {((sv >> (32 * r)) & 0xFFFFFFFF):#x}, emulator {got.s[r]:#x}"
    if bool(ev(m.scc)) != got.scc:
        return f"scc: emulator {got.scc}"
    for r in vregs:
        lanes = ev(m.vget(r))
        lanes = lanes if isinstance(lanes, list) else [lanes] * 64
        for i, (a, b) in enumerate(zip(lanes, got.vget(r))):
            if a != b:
                return f"v{r} lane {i}: semantics {a:#x}, emulator {b:#x}"
    for arr, mine, theirs in ((m.mem, snap.mem, got.mem), (m.lds, snap.lds, got.lds)):
        if arr.eq(ctx.mem0) or arr.eq(ctx.lds0):
            if mine != theirs:
                return "memory changed where the semantics store nothing"
            continue
        keys = sorted(set(mine) | set(theirs))
        vals = ev(z3.Concat(*[z3.Select(arr, z3.BitVecVal(k >> 2, 62))
                              for k in reversed(keys)])) if keys else 0
        for i, k in enumerate(keys):
            if (vals >> (32 * i)) & 0xFFFFFFFF != theirs.get(k, 0):
                return f"memory at {k:#x}: semantics {(vals >> (32 * i)) & 0xFFFFFFFF:#x}, " \
                       f"emulator {theirs.get(k, 0):#x}"
    return None


# -- opaque rows ---------------------------------------------------------------------------

def check_opaque(text: str, *, cases: int = 16, seed: int = 0, mode: int = DEFAULT_MODE,
                 processor: str = DEFAULT) -> Outcome:
    """The claim an opaque model rests on, tested on the emulator."""
    out = Outcome(text, kind="opaque")
    try:
        ins = parsed(text, ACCUM, processor)
        plan = opaque_plan(ins)
    except Unsupported as exc:
        out.refused = exc.why
        return out
    vregs = vregs_of(ins, effects(text))
    inputs = {o.reg + k for o in plan["srcs"] if o.kind == "v" for k in range(o.count)}
    inputs |= set(plan["kept"])
    return _states(out, ins, vregs, cases, seed, mode, processor,
                   lambda rng, a, ra: _untouched(a, ra, plan, vregs) or
                   _local(rng, a, ra, plan, text, vregs, inputs, processor))


def _untouched(a: harness.Snapshot, ra: harness.Snapshot, plan, vregs) -> str | None:
    if ra.status != "ok":
        return f"status {ra.status}: {ra.detail}"
    ex = a.s[EXEC] | (a.s[EXEC + 1] << 32)
    sd = set() if plan["sdst"] is None else {plan["sdst"], plan["sdst"] + 1}
    for r in range(128):
        if r not in sd and ra.s[r] != a.s[r]:
            return f"s{r} changed"
    if sd:
        got = ra.s[plan["sdst"]] | (ra.s[plan["sdst"] + 1] << 32)
        if got & ~ex:
            return "a lane-mask result in an inactive lane"
    if ra.scc != a.scc or ra.mem != a.mem or ra.lds != a.lds:
        return "SCC or memory changed"
    for r in vregs:
        for i in range(64):
            if (r not in plan["vdst"] or not (ex >> i) & 1) and ra.vget(r)[i] != a.vget(r)[i]:
                return f"v{r} lane {i} changed (not a written active lane)"
    return None


def _local(rng, a, ra, plan, text, vregs, inputs, processor) -> str | None:
    """A second state equal to ``a`` in the inputs at lane p only, and holding them in
    lane q too: the same results at p, and at q (the lane index is no input)."""
    ex = a.s[EXEC] | (a.s[EXEC + 1] << 32)
    for p in rng.sample(range(64), 3):
        q = rng.choice([i for i in range(64) if i != p])
        b = harness.Snapshot(s=list(a.s), scc=a.scc, mem=dict(a.mem), lds=dict(a.lds),
                             lds_size=a.lds_size, mode=a.mode)
        b.v = {r: [a.vget(r)[p] if (i in (p, q) and r in inputs) else word(rng)
                   for i in range(64)] for r in vregs}
        if VCC in plan["implicit"]:         # VCC's bit of the lane is an input: lane q's too
            vcc = a.s[VCC] | (a.s[VCC + 1] << 32)
            vcc = vcc | (1 << q) if (vcc >> p) & 1 else vcc & ~(1 << q)
            b.s[VCC], b.s[VCC + 1] = vcc & 0xFFFFFFFF, vcc >> 32
        rb = harness.run(b, [text], vregs=vregs, accum_offset=ACCUM, processor=processor)
        if rb.status == "unsupported":
            continue
        if rb.status != "ok":
            return f"status {rb.status}"
        if (ex >> p) & 1:
            for r in plan["vdst"]:
                if rb.vget(r)[p] != ra.vget(r)[p]:
                    return f"v{r} lane {p} depends on more than the modeled inputs"
                if (ex >> q) & 1 and rb.vget(r)[q] != ra.vget(r)[p]:
                    return f"v{r}: lanes {p} and {q} differ on the same inputs"
            if plan["sdst"] is not None:
                sa = ra.s[plan["sdst"]] | (ra.s[plan["sdst"] + 1] << 32)
                sb = rb.s[plan["sdst"]] | (rb.s[plan["sdst"] + 1] << 32)
                if (sa >> p) & 1 != (sb >> p) & 1:
                    return f"lane-mask bit {p} depends on more than the modeled inputs"
    return None


# -- what proofs may use ---------------------------------------------------------------------

_TRUSTED: Memo[Outcome] = Memo("prove.check.trusted", None)   # one per instruction form


def form_key(text: str, mode: int, processor: str) -> tuple:
    return (canonical(text), mode, processor)


def trusted(text: str, mode: int, processor: str, cases: int = 8) -> Outcome:
    """The check of ``text``'s form (its registers renumbered; constants and modifiers
    kept), run once per form and version of the two semantics: remembered in this
    process and on disk (:mod:`asmevo.prove.checkcache`). A proof uses the
    instruction only when it passed."""
    key = form_key(text, mode, processor)
    got = _TRUSTED.get(key)
    if got is None:
        kept = checkcache.load(key)
        if kept is not None:
            got = Outcome(**kept)
        else:
            got = check_text(text, cases=cases, mode=mode, processor=processor)
            checkcache.store(key, {f: getattr(got, f) for f in checkcache.FIELDS})
        _TRUSTED.put(key, got)
    return got
