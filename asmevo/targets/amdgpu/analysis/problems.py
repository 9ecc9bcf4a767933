"""What the static checks report, and the gate that turns it into a verdict.

A :class:`Problem` names the rule, the instruction, and (for hazards) the
producing instruction with required and actual wait states, so an operator or
an LLM prompt can say exactly what to fix. :func:`static_gate` runs both
checks over every edited function before a candidate is ever executed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from asmevo.errors import AsmevoError


class AnalysisError(AsmevoError):
    """A request the analysis cannot answer (a window that crosses blocks, ...)."""


@dataclass(frozen=True)
class Problem:
    kind: str                   # "hazard" or "waitcnt"
    rule: str                   # e.g. "xdl-write-valu-read", "raw"
    index: int                  # index into Function.instructions of the consumer
    address: int | None
    message: str
    function: str = ""
    producer: int | None = None  # index of the producing instruction, when there is one
    registers: tuple[str, ...] = ()
    required: int | None = None  # hazards: wait states needed
    actual: int | None = None    # hazards: wait states present (minimum over paths)
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.function}:{self.index}" if self.function else str(self.index)
        if self.address is not None:
            where += f" (0x{self.address:x})"
        return f"{self.kind}/{self.rule} at {where}: {self.message}"


def target_family(target) -> tuple[str, bool]:
    """(family, xnack) for a TargetId, a CodeObject, or a string like "gfx942:xnack-".

    Families: "gfx90a", "gfx942" (gfx940/941/942, gfx9-4-generic) and "gfx950"
    (gfx942's rules plus its own: :mod:`asmevo.targets.amdgpu.analysis.hazards`).

    xnack "any" counts as enabled: LLVM then keeps SMEM/VMEM soft clauses safe.
    """
    if hasattr(target, "target") and not isinstance(target, str):
        target = target.target
    if hasattr(target, "processor"):
        proc, xnack = target.processor, getattr(target, "xnack", "any")
    else:
        text = str(target)
        proc = text.split(":", 1)[0].split("--")[-1]
        xnack = "off" if "xnack-" in text else "on" if "xnack+" in text else "any"
    family = "gfx942" if proc in ("gfx940", "gfx941", "gfx942", "gfx9-4-generic") else proc
    if family not in ("gfx942", "gfx950", "gfx90a"):
        raise AnalysisError(f"no hazard model for {proc} (gfx90a, gfx940-family and gfx950 only)")
    return family, xnack != "off"


def static_gate(program, target=None, *, baseline=None):
    """``None`` when every edited function passes hazards and waitcnt checks, else a
    :class:`~asmevo.verify.verdict.Verdict` ("hazard" or "waitcnt") for the first
    problem, with its rule, function, index, address and registers in ``details``.

    ``baseline`` (K0's program): problems K0 already has do not count, only new ones
    (hand-written kernels such as AITer's break LLVM's rules on purpose; an edit must
    not be refused for code it did not make worse). A problem is K0's when K0 has the
    same rule between the same producer and consumer text, as often, with no more
    wait states than the candidate."""
    from asmevo.targets.amdgpu.analysis.hazards import check_hazards
    from asmevo.targets.amdgpu.analysis.waitcnt import check_waitcnts
    from asmevo.verify.verdict import Verdict

    target = target if target is not None else program.source.target
    for fn in program.functions:
        if not fn.edited:
            continue
        problems = check_waitcnts(fn) + check_hazards(fn, target)
        if problems and baseline is not None:
            problems = new_problems(fn, problems, _k0_problems(baseline, fn.name, target))
        if problems:
            p = min(problems, key=lambda q: (q.index, q.kind))
            details = {"rule": p.rule, "function": fn.name, "index": p.index,
                       "address": p.address, "registers": list(p.registers),
                       "producer": p.producer, "count": len(problems)}
            if p.required is not None:
                details |= {"required": p.required, "actual": p.actual}
            return Verdict(p.kind, f"{fn.name}[{p.index}]: {p.message}", details)
    return None


def _signature(fn, p: Problem) -> tuple:
    ins = fn.instructions
    producer = ins[p.producer].text if p.producer is not None else ""
    return (p.kind, p.rule, ins[p.index].text, producer, p.registers)


_K0_CACHE: dict[tuple, dict] = {}


def _k0_problems(k0, name: str, target) -> dict[tuple, list[int]]:
    """Signature -> wait states present, for every problem of K0's function ``name``."""
    from asmevo.targets.amdgpu.analysis.hazards import check_hazards
    from asmevo.targets.amdgpu.analysis.waitcnt import check_waitcnts

    key = (k0.source.sha256, name, str(target))
    if key not in _K0_CACHE:
        fn = k0.function(name)
        out: dict[tuple, list[int]] = {}
        for p in check_waitcnts(fn) + check_hazards(fn, target):
            out.setdefault(_signature(fn, p), []).append(p.actual or 0)
        if len(_K0_CACHE) > 16:
            _K0_CACHE.clear()
        _K0_CACHE[key] = {k: sorted(v) for k, v in out.items()}
    return _K0_CACHE[key]


def new_problems(fn, problems: list[Problem], known: dict[tuple, list[int]]) -> list[Problem]:
    """The problems of ``fn`` that K0 (``known``, from :func:`_k0_problems`) does not have:
    each K0 instance excuses one candidate instance with at least its wait states."""
    left = {k: list(v) for k, v in known.items()}
    out = []
    for p in sorted(problems, key=lambda q: q.actual or 0):
        pool = left.get(_signature(fn, p), [])
        i = next((k for k, a in enumerate(pool) if a <= (p.actual or 0)), None)
        if i is None:
            out.append(p)
        else:
            pool.pop(i)
    return sorted(out, key=lambda q: (q.index, q.kind))
