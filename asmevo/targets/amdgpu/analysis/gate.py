"""The static gate: a candidate's hazard and waitcnt problems against K0's.

:func:`static_gate` runs both checks over the kernel under search and the
functions it calls before a candidate is ever executed.

The gate judges the candidate, not K0: real kernels have problems the checks
report (a HIP ``__builtin_amdgcn_s_barrier`` with an LDS write still in flight,
a call with a load outstanding), and K0 is by definition the behaviour to
keep. So a candidate is refused only for problems K0 does not already have,
compared by a stable identity (function, rule, consumer and producer text,
registers), never by line numbers an edit shifts; a hazard K0 has counts as
K0's only while the candidate keeps at least K0's wait states.
"""
from __future__ import annotations

from asmevo.memo import Memo
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.hazards import check_hazards
from asmevo.targets.amdgpu.analysis.problems import Problem
from asmevo.targets.amdgpu.analysis.waitcnt import check_waitcnts
from asmevo.targets.amdgpu.recover import recover
from asmevo.verdict import Verdict


def problem_key(fn, p: Problem) -> tuple:
    """What makes a problem the same problem after an edit moved it."""
    ins = fn.instructions
    consumer = ins[p.index].text if 0 <= p.index < len(ins) else ""
    producer = ins[p.producer].text if p.producer is not None and \
        0 <= p.producer < len(ins) else ""
    return (fn.name, p.kind, p.rule, consumer, producer, tuple(p.registers))


def function_problems(fn, target) -> list[Problem]:
    cfg = build_cfg(fn)      # one graph for both checks (neither changes it)
    return check_waitcnts(fn, cfg) + check_hazards(fn, target, cfg)


def callees(program, kernel: str) -> list[str]:
    """``kernel`` and every function it may call, transitively.

    A call is ``s_getpc_b64 s[a:b]`` then ``s_add_u32 sa, sa, OFF`` (the linked
    form of ``sym@rel32@lo+4``) then ``s_swappc``/``s_setpc``; the target is
    resolved through K0's addresses. A call whose target does not resolve makes
    every non-kernel function count as called."""
    entries = {f.entry: f.name for f in program.functions}
    names = {f.name for f in program.functions}
    seen, todo = [kernel], [kernel]
    while todo:
        fn = program.function(todo.pop())
        found, unresolved = _call_targets(fn, entries, names)
        if unresolved:
            found |= {f.name for f in program.functions if f.kernel is None}
        for name in sorted(found):
            if name not in seen:
                seen.append(name)
                todo.append(name)
    return seen


def _call_targets(fn, entries: dict[int, str], names: set[str]) -> tuple[set[str], bool]:
    ins = fn.instructions
    found: set[str] = set()
    pcs: dict[str, int] = {}
    unresolved = False
    for k, i in enumerate(ins):
        m = i.mnemonic
        if m == "s_getpc_b64" and i.address is not None:
            reg = i.operands.split(",")[0].strip()
            lo = reg[2:].split(":")[0] if reg.startswith("s[") else ""
            pcs[f"s{lo}"] = i.address + 4
        elif m == "s_add_u32":
            ops = [o.strip() for o in i.operands.split(",")]
            if len(ops) == 3 and ops[0] == ops[1] and ops[0] in pcs:
                try:
                    off = int(ops[2].removeprefix("lit(").removesuffix(")"), 0)
                except ValueError:
                    sym = ops[2].split("@", 1)[0]
                    if sym in names:
                        found.add(sym)
                    continue
                target = pcs.pop(ops[0]) + (off - (1 << 32) if off >= 1 << 31 else off)
                if target in entries:
                    found.add(entries[target])
        elif m == "s_swappc_b64" or (m == "s_setpc_b64" and fn.kernel is not None):
            if not found:
                unresolved = True
    return found, unresolved


_BASELINES: Memo[dict] = Memo("amdgpu.gate.baselines", 257)


def baseline(k0_program, target, names) -> dict[tuple, list[int | None]]:
    """K0's problems in the functions ``names``: stable key -> wait states K0 has
    (``None`` for waitcnt problems). Cached per K0 object and function."""
    out: dict[tuple, list[int | None]] = {}
    have = {f.name for f in k0_program.functions}
    for name in names:
        if name not in have:
            continue
        ck = (k0_program.source.sha256, name, str(target))
        hit = _BASELINES.get(ck)
        if hit is None:
            fn = k0_program.function(name)
            hit = {}
            for p in function_problems(fn, target):
                hit.setdefault(problem_key(fn, p), []).append(p.actual)
            _BASELINES.put(ck, hit)
        for key, acts in hit.items():
            out.setdefault(key, []).extend(acts)
    return out


def new_problems(program, target, names, k0_base: dict) -> list[tuple]:
    """(function, problem) for each problem of ``program`` in ``names`` that K0 does not
    have (more copies of one than K0 has count as new)."""
    left = {k: list(v) for k, v in k0_base.items()}
    out = []
    for name in names:
        fn = program.function(name)
        for p in sorted(function_problems(fn, target), key=lambda q: (q.index, q.kind)):
            # K0's copy with the most wait states the candidate still reaches
            ok = [a for a in left.get(problem_key(fn, p), ())
                  if a is None or p.actual is None or a <= p.actual]
            if ok:
                left[problem_key(fn, p)].remove(max(ok, key=lambda a: -1 if a is None else a))
                continue
            out.append((fn, p))
    return out


def k0_program(code_object):
    """K0's recovered program (cached by content), the baseline's source."""
    key = code_object.sha256
    prog = _K0_PROGRAMS.get(key)
    if prog is None:
        if len(_K0_PROGRAMS) > 8:
            _K0_PROGRAMS.clear()
        prog = _K0_PROGRAMS[key] = recover(code_object, verify=False)
    return prog


_K0_PROGRAMS: dict[str, object] = {}


def gate_scope(program, kernel: str | None, k0=None) -> list[str]:
    """The functions the gate checks: the kernel and its callees (in the candidate and
    in K0), plus any edited function; without a kernel, the edited functions."""
    names = [f.name for f in program.functions if f.edited]
    if kernel is not None:
        reach = callees(program, kernel)
        if k0 is not None and kernel in {f.name for f in k0.functions}:
            reach += [n for n in callees(k0, kernel) if n not in reach]
        names = reach + [n for n in names if n not in reach]
    have = {f.name for f in program.functions}
    return [n for n in names if n in have]


def static_gate(program, target=None, *, kernel: str | None = None, k0=None):
    """``None`` when the checked functions (:func:`gate_scope`) have no hazard or
    waitcnt problem K0 lacks, else a :class:`~asmevo.verdict.Verdict`
    ("hazard" or "waitcnt") for the first new problem, with its rule, function,
    index, address and registers in ``details``.

    ``k0``: K0's Program (default: recovered from ``program.source``, which an
    edited program shares with K0)."""
    target = target if target is not None else program.source.target
    k0 = k0 if k0 is not None else k0_program(program.source)
    names = gate_scope(program, kernel, k0)
    found = new_problems(program, target, names, baseline(k0, target, names))
    if not found:
        return None
    fn, p = found[0]
    details = {"rule": p.rule, "function": fn.name, "index": p.index,
               "address": p.address, "registers": list(p.registers),
               "producer": p.producer, "count": len(found)}
    if p.required is not None:
        details |= {"required": p.required, "actual": p.actual}
    return Verdict(p.kind, f"{fn.name}[{p.index}]: {p.message}", details)


def k0_problems(program, target=None, kernel: str | None = None) -> list[str]:
    """K0's own problems in the kernel and its callees, one line each: what a
    report states once, since candidates are not refused for them."""
    target = target if target is not None else program.source.target
    names = callees(program, kernel) if kernel else [f.name for f in program.functions]
    return [str(p) for n in names for p in function_problems(program.function(n), target)]
