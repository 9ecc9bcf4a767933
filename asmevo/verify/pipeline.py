"""The candidate pipeline: one ordered tuple of named stages every evaluator goes through.

A candidate starts as an edit list and each stage turns what the one before
made into the next artifact, or stops it with the :class:`~asmevo.verdict.Verdict`
that refuses it::

    apply         edits     -> program      (the target's edit rules: unsafe, invalid)
    gate          program   -> program      (the target's static gate, against K0's own problems)
    build         program   -> bytes        (AMDGPU: rebuild or patch K0; NVIDIA: in place)
    abi           bytes     -> bytes        (the kernel's ABI identical to K0's)
    differential  bytes     -> equal        (K0 and the candidate run on the same inputs)
    prove         equal     -> equal        (proved or only tested; a refutation rejects it)
    timing        equal     -> timing       (modeled or measured, only for an equal candidate)

The family-specific stages ask the :class:`asmevo.targets.Target`; the
differential run and timing ask a :class:`Judge` (the device behind
:mod:`asmevo.verify.evaluate`, or the engine's instruction-count test judge).
An evaluator is a choice of stages by name (:data:`CANDIDATE`, :data:`CODE`, ...),
and :func:`run` can stop after any of them (``asmevo candidate --until gate``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Protocol

from asmevo.edits import Edit, edits_to_json
from asmevo.errors import AsmevoError
from asmevo.prove.stage import BUDGET_S
from asmevo.verdict import Timing, Verdict
from asmevo.verify.errors import VerifyError

if TYPE_CHECKING:
    from asmevo.targets import Target


class Judge(Protocol):
    """What the differential and timing stages ask (a device, or a static score)."""

    def differential(self, data: bytes) -> Verdict:
        """The candidate's bytes against K0's: ``equal`` or the verdict that refuses them."""
        ...

    def timing(self, program: Any, data: bytes) -> tuple[Timing | None, dict]:
        """An equal candidate's timing (None: not timed) and details for its verdict."""
        ...


@dataclass(frozen=True)
class Setting:
    """What the stages judge a candidate against: the target, K0 (code object and
    recovered program), the kernel under search and, for the run stages, a judge."""

    target: Target
    code_object: Any             # K0 as the target loaded it
    program: Any                 # K0 recovered (AMDGPU: with its route)
    kernel: str | None
    judge: Judge | None = None
    proof: str = "off"           # the prove stage: off | on | require (asmevo.prove.stage)
    proof_budget: float = BUDGET_S   # seconds one candidate's proof may take
    block: tuple | None = None   # the launch's work-items per workgroup (the prove stage's)


@dataclass(frozen=True)
class Candidate:
    """A candidate as far as the stages have taken it."""

    edits: tuple[Edit, ...]
    program: Any = None
    data: bytes | None = None
    verdict: Verdict | None = None       # the differential run's (equal) verdict
    timing: Timing | None = None
    details: dict = field(default_factory=dict)   # added to the final verdict's details


Stage = Callable[[Setting, Candidate], "Candidate | Verdict"]


def _apply(s: Setting, c: Candidate) -> Candidate | Verdict:
    out = s.target.apply(s.program, c.edits)
    return out if isinstance(out, Verdict) else replace(c, program=out)


def _gate(s: Setting, c: Candidate) -> Candidate | Verdict:
    return s.target.static_gate(c.program, s.code_object, kernel=s.kernel) or c


def _build(s: Setting, c: Candidate) -> Candidate | Verdict:
    out = s.target.build(s.program, c.program)
    return out if isinstance(out, Verdict) else replace(c, data=out)


def _abi(s: Setting, c: Candidate) -> Candidate | Verdict:
    try:
        diffs = s.target.abi_diff(s.code_object, s.target.load(c.data, path="candidate"))
    except AsmevoError as exc:
        return Verdict("build", f"candidate does not load: {exc}")
    if diffs:
        return Verdict("abi", str(diffs[0]), {"differences": [str(d) for d in diffs]})
    return c


def _code_gate(s: Setting, c: Candidate) -> Candidate | Verdict:
    """The static gate of a ready-built object (``asmevo verify``): no edits, no program."""
    return s.target.code_gate(c.data, s.code_object, kernel=s.kernel) or c


def _differential(s: Setting, c: Candidate) -> Candidate | Verdict:
    verdict = s.judge.differential(c.data)
    return replace(c, verdict=verdict) if verdict.equal else verdict


def _prove(s: Setting, c: Candidate) -> Candidate | Verdict:
    """Translation validation of an equal candidate against K0 (asmevo.prove): its
    verdict says ``proved`` or ``tested``; a refutation rejects it."""
    if s.proof == "off" or c.program is None or s.kernel is None or not s.target.provable:
        return c
    from asmevo.prove.stage import judge
    refusal, details = judge(s.program, c.program, s.kernel, s.proof,
                             budget_s=s.proof_budget, block=s.block)
    if refusal is not None:
        return refusal
    return replace(c, details=c.details | details)


def _timing(s: Setting, c: Candidate) -> Candidate | Verdict:
    timing, details = s.judge.timing(c.program, c.data)
    return replace(c, timing=timing, details=c.details | details)


STAGES: dict[str, Stage] = {
    "apply": _apply, "gate": _gate, "build": _build, "abi": _abi,
    "code-gate": _code_gate, "differential": _differential, "prove": _prove,
    "timing": _timing,
}

# the pipelines, by the stage names they run in order
CANDIDATE = ("apply", "gate", "build", "abi", "differential", "prove", "timing")  # edits
CODE = ("abi", "code-gate", "differential", "timing")                     # a built object
COUNT = ("apply", "build", "differential", "timing")   # the engine's instruction-count test


def stages_until(pipeline: tuple[str, ...], until: str | None) -> tuple[str, ...]:
    """``pipeline`` up to and including the stage ``until`` (all of it for None)."""
    if until is None:
        return pipeline
    if until not in pipeline:
        raise VerifyError(f"no stage {until!r} in this pipeline; its stages: "
                          f"{', '.join(pipeline)}")
    return pipeline[:pipeline.index(until) + 1]


def run(setting: Setting, candidate: Candidate, pipeline: tuple[str, ...], *,
        until: str | None = None) -> tuple[str | None, Candidate, Verdict | None]:
    """Run the stages of ``pipeline`` in order (to ``until``):
    ``(stage that refused it or None, the candidate as far as it got, its verdict)``.

    The verdict is the refusing stage's; for a candidate that passes every stage it
    is the differential run's (with the timing stage's details), or None where the
    pipeline stopped before the differential run."""
    for name in stages_until(pipeline, until):
        out = STAGES[name](setting, candidate)
        if isinstance(out, Verdict):
            return name, candidate, out
        candidate = out
    verdict = candidate.verdict
    if verdict is not None and candidate.details:
        verdict = replace(verdict, details=verdict.details | candidate.details)
    return None, candidate, verdict


def candidate(target, program, edits, code_object, *, kernel: str | None = None):
    """The stages apply, gate and build of one edit list against K0 (``program``,
    ``code_object``): ``(program, bytes, None)`` for a candidate that builds, else
    ``(program or None, None, the verdict)``."""
    _, cand, verdict = run(Setting(target, code_object, program, kernel),
                           Candidate(tuple(edits)), CANDIDATE, until="build")
    return cand.program, cand.data, verdict


def edits_key(edits: tuple[Edit, ...]) -> str:
    """Identity of a candidate that did not build: its edit list."""
    return "edits:" + hashlib.sha256(edits_to_json(tuple(edits)).encode()).hexdigest()


def candidate_key(data: bytes | None, edits: tuple[Edit, ...]) -> str:
    """A candidate's identity: the hash of its bytes, or of its edits where it has none.
    Build and evaluation both name a candidate by it (the engine checks they agree)."""
    return hashlib.sha256(data).hexdigest() if data is not None else edits_key(edits)
