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
* :class:`InstructionCountEvaluator` — the engine's *test* evaluator. It builds
  candidates with the real toolchain and scores the built bytes by a static
  cycle count of the kernel; it does **not** run or verify anything (its
  verdict details say ``"verified": false``). It exists to test and benchmark
  the engine, and to try a config before the emulator is ready.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from asmevo.edits import Edit, edits_to_json
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.verdict import Evaluation, Timing, Verdict


class EvaluatorError(AsmevoError):
    """An evaluator that cannot be set up for this config."""


class Evaluator(Protocol):
    k0_sha256: str
    kernel: str
    k0_path: str
    context_key: str
    target: str        # ISA family (asmevo.targets.REGISTRY): how K0 is recovered and edited

    def build(self, edits: tuple[Edit, ...]) -> tuple[bytes | None, Verdict | None]: ...
    def evaluate(self, edits: tuple[Edit, ...]) -> Evaluation: ...


def edits_key(edits: tuple[Edit, ...]) -> str:
    """Identity of a candidate that did not build: its edit list (as evaluation names it)."""
    return "edits:" + hashlib.sha256(edits_to_json(tuple(edits)).encode()).hexdigest()


def candidate_key(data: bytes | None, edits: tuple[Edit, ...]) -> str:
    return hashlib.sha256(data).hexdigest() if data is not None else edits_key(edits)


def _sha_file(path: Path) -> str:
    return hashlib.sha256(read_input(path, what="code object")).hexdigest()


# -- the real evaluator -------------------------------------------------------------------

@dataclass(frozen=True)
class VerifyEvaluator:
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

    def assembly(self, edits) -> str:
        return assembly_of(self.k0_path, edits, self.target)


# -- the engine's test evaluator ----------------------------------------------------------

# cycles per instruction class: a crude static model, enough to rank candidates
_COST = (("s_waitcnt", 4), ("global_", 8), ("buffer_", 8), ("flat_", 8), ("ds_", 4),
         ("s_load", 4), ("v_", 2), ("s_", 1))


def static_cycles(instrs: list) -> int:
    """A deterministic cost: per-class cycles, ``s_nop N`` = N+1, a wait right after a
    memory instruction pays 2 more (nothing hides the latency)."""
    total = 0
    prev = ""
    for ins in instrs:
        m = ins.mnemonic
        if m == "s_nop":
            try:
                total += int(ins.operands.strip(), 0) + 1
            except ValueError:
                total += 1
        else:
            total += next((c for p, c in _COST if m.startswith(p)), 1)
        if m == "s_waitcnt" and prev.startswith(("global_", "buffer_", "s_load", "ds_")):
            total += 2
        prev = m
    return total


@lru_cache(maxsize=4)
def _k0(path: str, target: str = "amdgpu"):
    from asmevo.targets import get_target
    t = get_target(target)
    co = t.load(read_input(path, what="code object"), path=path)
    return co, t.recover(co)


def assembly_of(k0_path: str, edits, target: str = "amdgpu") -> str:
    """The candidate's text (AMDGPU: the ``.s`` that builds it), stored beside its code object."""
    from asmevo.targets import get_target
    t = get_target(target)
    return t.assembly(t.apply_edits(_k0(k0_path, target)[1], tuple(edits)))


@lru_cache(maxsize=4096)
def _score_bytes(data: bytes, kernel: str) -> tuple[int, tuple[str, ...]]:
    from asmevo.targets.amdgpu import load, recover
    instrs = recover(load(data, path="candidate")).function(kernel).instructions
    return static_cycles(instrs), tuple(sorted(i.text for i in instrs if i.mnemonic != "s_nop"))


@dataclass(frozen=True)
class InstructionCountEvaluator:
    """Test evaluator: real builds, a static score of the built bytes, no verification.

    A candidate is "equal" when its kernel keeps K0's multiset of non-``s_nop``
    instructions (a necessary condition of equivalence, not a proof), and its
    modeled time is :func:`static_cycles` of the built kernel.
    """

    k0_path: str
    kernel: str
    k0_sha256: str
    context_key: str
    target = "amdgpu"          # a class attribute: it scores AMDGPU instructions

    @staticmethod
    def create(k0_path: str | Path, kernel: str) -> "InstructionCountEvaluator":
        p = Path(k0_path).resolve()
        sha = _sha_file(p)
        key = hashlib.sha256(f"instruction-count\0{sha}\0{kernel}".encode()).hexdigest()[:16]
        return InstructionCountEvaluator(str(p), kernel, sha, key)

    def build(self, edits):
        from asmevo.targets.amdgpu.assemble import BuildError
        from asmevo.targets.amdgpu.build import build_program
        from asmevo.targets.amdgpu.descriptor import DescriptorError
        from asmevo.targets.amdgpu.edits import apply_edits
        from asmevo.targets.amdgpu.program import EditError
        from asmevo.targets.amdgpu.sanitize import UnsafeEdit

        _, k0 = _k0(self.k0_path)
        try:
            program = apply_edits(k0, tuple(edits))
        except UnsafeEdit as exc:
            return None, Verdict("unsafe", exc.message)
        except (EditError, DescriptorError) as exc:
            return None, Verdict("invalid", str(exc))
        try:
            return build_program(program), None
        except BuildError as exc:
            return None, Verdict("build", exc.message)

    def assembly(self, edits) -> str:
        return assembly_of(self.k0_path, edits)

    def evaluate(self, edits):
        t0 = time.perf_counter()
        data, verdict = self.build(edits)
        key = candidate_key(data, edits)
        if verdict is not None:
            return Evaluation(key, verdict, None, time.perf_counter() - t0)
        k0_bytes, _ = self.build(())
        k0_cost, k0_multiset = _score_bytes(k0_bytes, self.kernel)
        cost, multiset = _score_bytes(data, self.kernel)
        details = {"evaluator": "instruction-count", "verified": False}
        if multiset != k0_multiset:
            return Evaluation(key, Verdict("mismatch", "instruction multiset changed "
                                           "(instruction-count evaluator)", details),
                              None, time.perf_counter() - t0)
        timing = Timing("modeled", "static-count", float(k0_cost), float(cost), 0.0, "cycles")
        return Evaluation(key, Verdict("equal", "unverified: instruction-count evaluator",
                                       details), timing, time.perf_counter() - t0)


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
    if config.run.device == "emulator":
        from asmevo.emu.launch import check_size
        check_size(spec)            # before the run directory exists
        if config.run.timing_size is not None:
            check_size(load_spec(config.run.spec, config.run.timing_size))
    try:
        from asmevo.verify.evaluate import EvalContext
    except ImportError as exc:
        raise EvaluatorError(f"the verifying evaluator is not available ({exc}); "
                             "set run.evaluator = \"instruction-count\" to test the engine") from exc
    ctx = EvalContext(spec_path=str(config.run.spec), size=config.run.size,
                      code_object=str(k0), device=config.run.device, timing=config.run.timing,
                      target=config.run.target, timing_size=config.run.timing_size)
    spec_sha = _sha_file(Path(spec.path))
    sha = _sha_file(k0)
    key = hashlib.sha256(f"verify\0{sha}\0{spec_sha}\0{ctx.identity()}".encode()).hexdigest()[:16]
    return VerifyEvaluator(ctx, spec.kernel, str(k0), sha, key)
