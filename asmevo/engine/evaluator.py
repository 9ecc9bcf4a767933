"""What the engine asks of evaluation: build a candidate, judge a candidate.

The engine never runs kernels. It holds an :class:`Evaluator` (picklable: it
travels to joblib and Dask workers) and calls two pure functions of it:
``build(edits)`` — the candidate's bytes, whose hash is its identity — and
``evaluate(edits)`` — the full verdict. ``context_key`` says what a verdict
means (K0, spec, size, device, timing); the archive's verdict cache is keyed
by it, so a cached verdict is only reused under the same conditions.

Two evaluators:

* :class:`VerifyEvaluator` — the real one (:mod:`asmevo.verify.evaluate`):
  static gate, differential run on the device, modeled or measured timing.
* :class:`InstructionCountEvaluator` — the engine's *test* evaluator: the same
  pipeline (:data:`asmevo.verify.pipeline.COUNT`: apply and build with the
  real toolchain) with :class:`asmevo.verify.count.CountJudge` where the device
  would be, a static cycle count of the built kernel; it does **not** run or
  verify anything (its verdict details say ``"verified": false``). It exists to
  test and benchmark the engine, and to try a config before the emulator is ready.

Both name a candidate by :func:`asmevo.verify.pipeline.candidate_key`, in build
and in evaluation alike.
"""
from __future__ import annotations

import hashlib
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.memo import cached
from asmevo.runtime.registry import device_class
from asmevo.targets import DEFAULT_TARGET
from asmevo.verdict import Evaluation, Verdict
from asmevo.verify.pipeline import COUNT, Candidate, Setting, candidate_key, run


class EvaluatorError(AsmevoError):
    """An evaluator that cannot be set up for this config."""


class Evaluator(ABC):
    """What the engine and its pools call. Every method a caller uses is declared here,
    with a default where an evaluator may have nothing to do, so callers never probe."""

    k0_sha256: str
    kernel: str
    k0_path: str
    context_key: str
    target: str = DEFAULT_TARGET   # ISA family (asmevo.targets.REGISTRY): how K0 is edited
    # whether a pool may fork its workers from a process that has called warm(worker=False)
    forks: bool = False

    @abstractmethod
    def build(self, edits: tuple[Edit, ...]) -> tuple[bytes | None, Verdict | None]: ...

    @abstractmethod
    def evaluate(self, edits: tuple[Edit, ...]) -> Evaluation: ...

    def warm(self, worker: bool = True) -> None:
        """Set up this process's state before the first candidate (a pool's workers, as
        they start); ``worker=False``: a parent about to fork its pool."""

    def assembly(self, edits) -> str | None:
        """The candidate's text, stored beside an equal candidate; None: none kept."""
        return None

    def built_assembly(self, edits) -> str | None:
        """:meth:`assembly` of a candidate this process has just built, where it is at
        hand without applying the edits again; None otherwise."""
        return None

    # what a Dask worker needs (asmevo.engine.cluster): the files it reads (none: the
    # evaluator travels with each task), the same evaluator reading them elsewhere, and a
    # quick check of what a process lacks
    def inputs(self) -> list[str]:
        return []

    def moved(self, where: Callable[[str], str]) -> "Evaluator":
        return self

    def check(self) -> None:
        """Raise what this process lacks to judge candidates."""


def _sha_file(path: Path) -> str:
    return hashlib.sha256(read_input(path, what="code object")).hexdigest()


# -- the real evaluator -------------------------------------------------------------------

@dataclass(frozen=True)
class VerifyEvaluator(Evaluator):
    """:func:`asmevo.verify.evaluate.evaluate_candidate` behind the engine's protocol."""

    context: object            # asmevo.verify.evaluate.EvalContext
    kernel: str
    k0_path: str
    k0_sha256: str
    context_key: str

    @property
    def target(self) -> str:
        return self.context.target

    def build(self, edits):
        from asmevo.verify.evaluate import build_candidate
        return build_candidate(self.context, tuple(edits))

    def evaluate(self, edits):
        from asmevo.verify.evaluate import evaluate_candidate
        return evaluate_candidate(self.context, tuple(edits))

    @property
    def forks(self) -> bool:
        """Whether a pool may fork its workers from a process that has set this up
        (``warm(worker=False)``): on the emulator, yes; a GPU context does not survive
        a fork."""
        return device_class(self.context.device).forks

    def warm(self, worker: bool = True) -> None:
        """Set up K0's state in this process before the first candidate (a pool's
        workers, as they start): :func:`asmevo.verify.evaluate.warm`; ``worker=False``
        leaves out the evaluating child (a parent about to fork its pool)."""
        from asmevo.verify.evaluate import warm
        warm(self.context, worker=worker)

    def assembly(self, edits) -> str:
        return assembly_of(self.k0_path, edits, self.target)

    def inputs(self) -> list[str]:
        """The files a process reads to judge candidates: K0, the spec and the
        ``reference.py`` beside it (a Dask worker gets them as bytes:
        :mod:`asmevo.engine.shipping`, which adds what the reference reads as it imports)."""
        from asmevo.launch.spec import load_spec
        spec = load_spec(self.context.spec_path, self.context.size).path
        ref = spec.parent / "reference.py"
        return [self.k0_path, str(spec)] + ([str(ref)] if ref.is_file() else [])

    def moved(self, where: Callable[[str], str]) -> "VerifyEvaluator":
        """This evaluator with each path it reads (K0's, the spec's) mapped by ``where``."""
        ctx = self.context
        code = where(ctx.code_object) if ctx.code_object else None
        return replace(self, context=replace(ctx, spec_path=where(ctx.spec_path),
                                             code_object=code), k0_path=where(self.k0_path))

    def check(self) -> None:
        """Raise what this process lacks to judge candidates, quickly (no reference
        runs): the spec and its reference (imported in a child), K0 recovered with the
        target's tools (LLVM), an isolation child that starts and answers."""
        from asmevo.launch.spec import load_spec
        from asmevo.targets import get_target
        from asmevo.verify.evaluate import isolation_method
        from asmevo.verify.isolate import run_isolated
        ctx = self.context
        load_spec(ctx.spec_path, ctx.size).reference()
        target = get_target(ctx.target)
        target.recover(target.load(read_input(self.k0_path, what="code object"),
                                   path=self.k0_path))
        method = isolation_method(ctx)
        got = run_isolated(os.getpid, timeout=60, method=method) if method else None
        if isinstance(got, Verdict):
            raise EvaluatorError(f"cannot run a candidate in a {method}ed child process "
                                 f"({got.status}: {got.reason})")

    def built_assembly(self, edits) -> str | None:
        """:meth:`assembly` of a candidate this process has just built, from the
        program its build applied (no second application of the edits); None when it
        is not at hand."""
        from asmevo.verify.evaluate import built_assembly
        return built_assembly(self.context, tuple(edits))


# -- the engine's test evaluator ----------------------------------------------------------

@cached("engine.evaluator._k0", 4)
def _k0(path: str, target: str = DEFAULT_TARGET):
    from asmevo.targets import get_target
    t = get_target(target)
    co = t.load(read_input(path, what="code object"), path=path)
    return co, t.recover(co)


def assembly_of(k0_path: str, edits, target: str = DEFAULT_TARGET) -> str:
    """The candidate's text (AMDGPU: the ``.s`` that builds it), stored beside its code object."""
    from asmevo.targets import get_target
    t = get_target(target)
    return t.assembly(t.apply_edits(_k0(k0_path, target)[1], tuple(edits)))


@cached("engine.evaluator._count_setting", 4)
def _count_setting(k0_path: str, kernel: str) -> Setting:
    """The instruction-count pipeline's setting: K0, its kernel and the counting judge
    (K0 scored as the pipeline builds it)."""
    from asmevo.targets import get_target
    from asmevo.verify.count import CountJudge
    co, program = _k0(k0_path)
    s = Setting(get_target(InstructionCountEvaluator.target), co, program, kernel)
    _, k0, verdict = run(s, Candidate(()), COUNT, until="build")
    if verdict is not None:
        raise EvaluatorError(f"K0 does not build: {verdict}", path=k0_path)
    return replace(s, judge=CountJudge(k0.data, kernel))


@dataclass(frozen=True)
class InstructionCountEvaluator(Evaluator):
    """Test evaluator: real builds, a static score of the built bytes, no verification.

    A candidate is "equal" when its kernel keeps K0's multiset of non-``s_nop``
    instructions (a necessary condition of equivalence, not a proof), and its
    modeled time is :func:`asmevo.verify.count.static_cycles` of the built kernel.
    """

    k0_path: str
    kernel: str
    k0_sha256: str
    context_key: str
    target = "amdgpu"          # a class attribute: it scores AMDGPU instructions only

    @staticmethod
    def create(k0_path: str | Path, kernel: str) -> "InstructionCountEvaluator":
        p = Path(k0_path).resolve()
        sha = _sha_file(p)
        key = hashlib.sha256(f"instruction-count\0{sha}\0{kernel}".encode()).hexdigest()[:16]
        return InstructionCountEvaluator(str(p), kernel, sha, key)

    def build(self, edits):
        _, cand, verdict = run(_count_setting(self.k0_path, self.kernel),
                               Candidate(tuple(edits)), COUNT, until="build")
        return cand.data, verdict

    def assembly(self, edits) -> str:
        return assembly_of(self.k0_path, edits, self.target)

    def inputs(self) -> list[str]:
        """The files a process reads to score candidates: K0."""
        return [self.k0_path]

    def moved(self, where: Callable[[str], str]) -> "InstructionCountEvaluator":
        return replace(self, k0_path=where(self.k0_path))

    def check(self) -> None:
        """Raise what this process lacks to score candidates (K0 builds with LLVM)."""
        _count_setting(self.k0_path, self.kernel)

    def evaluate(self, edits):
        t0 = time.perf_counter()
        _, cand, verdict = run(_count_setting(self.k0_path, self.kernel),
                               Candidate(tuple(edits)), COUNT)
        return Evaluation(candidate_key(cand.data, edits), verdict, cand.timing,
                          time.perf_counter() - t0)


# -- from a config ------------------------------------------------------------------------

def make_evaluator(config) -> Evaluator:
    """The evaluator a config names, with the K0 and kernel it optimizes."""
    from asmevo.launch.spec import load_spec

    spec = load_spec(config.run.spec, config.run.size)
    if config.run.timing_size is not None:
        load_spec(config.run.spec, config.run.timing_size)   # a size the spec has
    k0 = Path(config.run.code_object or spec.code_object).resolve()
    if not k0.is_file():
        raise EvaluatorError(f"K0 code object {k0} does not exist", path=str(config.run.spec))
    if config.run.evaluator == "instruction-count":
        return InstructionCountEvaluator.create(k0, spec.kernel)
    device = device_class(config.run.device)
    device.check_launch(spec)       # before the run directory exists
    if config.run.timing_size is not None:
        device.check_launch(load_spec(config.run.spec, config.run.timing_size))
    try:
        from asmevo.verify.evaluate import EvalContext
    except ImportError as exc:
        raise EvaluatorError(f"the verifying evaluator is not available ({exc}); "
                             "set run.evaluator = \"instruction-count\" to test the engine") from exc
    ctx = EvalContext(spec_path=str(config.run.spec), size=config.run.size,
                      code_object=str(k0), device=config.run.device, timing=config.run.timing,
                      target=config.run.target, timing_size=config.run.timing_size,
                      proof=config.run.proof, proof_budget=config.run.proof_budget,
                      family=config.run.family, family_seed=config.run.family_seed)
    spec_sha = _sha_file(Path(spec.path))
    sha = _sha_file(k0)
    key = hashlib.sha256(f"verify\0{sha}\0{spec_sha}\0{ctx.identity()}".encode()).hexdigest()[:16]
    return VerifyEvaluator(ctx, spec.kernel, str(k0), sha, key)
