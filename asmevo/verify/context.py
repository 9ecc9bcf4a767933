"""What one evaluation is judged against, as plain picklable values: :class:`EvalContext`.

The engine ships it to joblib or Dask workers with every candidate; everything built
from it once per process (K0 recovered, K0's reference runs) is a
:class:`asmevo.verify.baseline.Baseline`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from asmevo.prove.stage import BUDGET_MAX_S, BUDGET_S
from asmevo.runtime.registry import DEFAULT_DEVICE
from asmevo.targets import DEFAULT_TARGET
from asmevo.verify.errors import VerifyError


@dataclass(frozen=True)
class EvalContext:
    """Everything an evaluation needs, as plain picklable values."""

    spec_path: str
    size: str = "small"
    code_object: str | None = None      # K0 path; default: the spec's
    device: str = DEFAULT_DEVICE
    timing: str = "modeled"             # modeled | measured | none (verify only)
    seeds: tuple[int, ...] = (0, 1, 2)
    special_values: bool = True
    runs: int = 2                       # candidate runs per input set (nondeterminism)
    timeout: float = 60.0               # wall clock per candidate (child process)
    isolate: bool = True
    repetitions: int = 20               # measured timing
    warmup: int = 3
    isa: str | None = None              # e.g. "gfx90a" to pick the spec's other object
    target: str = DEFAULT_TARGET        # ISA family: asmevo.targets.REGISTRY key
    family: bool = True                 # also check launch-family members, orders, overlaps
    family_seed: int = 0                # which seeded members (recorded in equal verdicts)
    # time at this size (after a one-input-set check there); None: at ``size``.
    # Kept out of repr: see identity().
    timing_size: str | None = field(default=None, repr=False)
    # the prove stage (asmevo.prove.stage): off | on | require; out of repr as timing_size
    proof: str = field(default="on", repr=False)
    # seconds one candidate's proof may take (asmevo.prove.stage.BUDGET_S); as proof
    proof_budget: float = field(default=BUDGET_S, repr=False)

    def __post_init__(self):
        if self.timing not in ("modeled", "measured", "none"):
            raise VerifyError(f"timing must be modeled, measured or none, not {self.timing!r}")
        if self.timeout <= 0 or self.runs < 1:
            raise VerifyError("timeout must be positive and runs at least 1")
        if not self.seeds and not self.special_values:
            raise VerifyError("no input sets: give seeds or enable special values")
        if self.proof not in ("off", "on", "require"):
            raise VerifyError(f"proof must be off, on or require, not {self.proof!r}")
        if not 0 < self.proof_budget <= BUDGET_MAX_S:
            raise VerifyError(f"proof_budget must be in (0, {BUDGET_MAX_S:g}] seconds, "
                              f"not {self.proof_budget!r}")

    @property
    def sizes_differ(self) -> bool:
        return self.timing_size is not None and self.timing_size != self.size

    def identity(self) -> str:
        """What evaluation keys hash: the repr, plus fields added after keys were first
        archived only when they change anything, so archives written before them resume."""
        return repr(self)[:-1] + (f", timing_size={self.timing_size!r}" if self.sizes_differ
                                  else "") + (f", proof={self.proof!r}" if self.proof != "on"
                                              else "") + (
            f", proof_budget={self.proof_budget!r})" if self.proof_budget != BUDGET_S else ")")

    @property
    def key(self) -> str:
        return hashlib.sha256(self.identity().encode()).hexdigest()[:16]

