"""Verdicts and evaluations: what verification says about one candidate.

Plain frozen values, JSON-ready, so a child process can return them, the
archive can store them and an LLM prompt can quote them.
"""
from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field


# Every status a candidate can end with. Only "equal" earns a fitness.
STATUSES = (
    "equal",            # bit-equal to K0 on every input set, deterministic
    "mismatch",         # some output (or input, or guard) differs
    "nondeterministic", # two runs on the same inputs differ
    "unspecified",      # relies on what the ISA leaves open (lanes storing to one address)
    "fault",            # out-of-bounds / misaligned access, bad jump, GPU fault
    "timeout",          # instruction budget or wall clock exceeded
    "crash",            # the evaluating child process died
    "worker-died",      # its process was killed twice (OOM killer, kill): no verdict, judged again
    "unsupported",      # the emulator does not know an instruction
    "hazard",           # a manual wait-state rule is violated
    "waitcnt",          # a register is read before its memory op is waited for
    "abi",              # the rebuilt object's ABI differs from K0's
    "build",            # llvm-mc / ld.lld refused the candidate
    "unsafe",           # an edit line is not a plain instruction
    "invalid",          # the edit does not fit the program (window, label)
    "refuted",          # the prover found an entry state where the edited code differs
    "unproved",         # proof required (run.proof = "require") and not found
)

# What an equal verdict covers (details["coverage"]): "proved" (the prover showed the
# candidate equivalent for every input) or "tested" (bit-equal on the launches it ran).
COVERAGES = ("proved", "tested")


def _details(details) -> dict:
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = None
    return details if isinstance(details, dict) else {}


def coverage_of(details) -> str:
    """An equal verdict's coverage (``details`` a dict or its JSON text); verdicts from
    before the prover say nothing: tested."""
    got = _details(details).get("coverage")
    return got if got in COVERAGES else "tested"


def coverage_label(details) -> str:
    """An equal verdict's coverage as shown: ``proved``, or ``tested (N launches)`` with
    the launches the differential run covered (``tested`` where the details do not say)."""
    d = _details(details)
    got = coverage_of(d)
    n = d.get("launches")
    if got == "tested" and isinstance(n, int) and not isinstance(n, bool):
        return f"tested ({n} launch{'es' if n != 1 else ''})"
    return got


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}")

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def to_json(self) -> dict:
        return {"status": self.status, "reason": self.reason, "details": _plain(self.details)}

    @staticmethod
    def from_json(d: dict) -> "Verdict":
        return Verdict(d["status"], d.get("reason", ""), dict(d.get("details", {})))

    def __str__(self) -> str:
        return self.status + (f": {self.reason}" if self.reason else "")


_LEAVES = (str, int, float, bool, type(None))


def _plain(x):
    """``dataclasses.asdict``'s copy of a verdict's details: dicts, lists and tuples
    rebuilt, other values deep-copied; the str, number, bool and None leaves JSON
    details consist of are immutable, so they are taken as they are (asdict's
    deepcopy of each one was most of an equal candidate's archiving)."""
    if isinstance(x, dict):
        return type(x)((_plain(k), _plain(v)) for k, v in x.items())
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(_plain(v) for v in x)
    return x if type(x) in _LEAVES else copy.deepcopy(x)


@dataclass(frozen=True)
class Timing:
    """K0 against the candidate. ``label`` is "modeled" (timing model) or "measured"."""

    label: str
    device: str
    k0: float            # median time (seconds) or modeled cycles of K0
    candidate: float
    noise: float = 0.0   # relative noise bound (e.g. spread of K0 against itself)
    unit: str = "s"
    # modeled: the speedup's lowest and highest under an ensemble of parameter sets drawn
    # within the timing model's calibration error (None: not computed, e.g. no speedup)
    band: tuple[float, float] | None = None

    @property
    def speedup(self) -> float:
        return self.k0 / self.candidate if self.candidate > 0 else 0.0

    @property
    def improved(self) -> bool:
        return self.speedup > 1.0 + self.noise

    @property
    def robust(self) -> bool:
        """A speedup that holds under every parameter set of the band (or has no band);
        one that exists under some sets and not under their neighbours is an artifact."""
        return self.band is None or self.band[0] > 1.0

    def to_json(self) -> dict:
        return asdict(self) | {"speedup": self.speedup}

    @staticmethod
    def from_json(d: dict) -> "Timing":
        band = d.get("band")
        return Timing(d["label"], d["device"], float(d["k0"]), float(d["candidate"]),
                      float(d.get("noise", 0.0)), d.get("unit", "s"),
                      (float(band[0]), float(band[1])) if band else None)

    def __str__(self) -> str:
        band = f", band {self.band[0]:.3f}-{self.band[1]:.3f}" if self.band else ""
        return f"{self.speedup:.3f}x ({self.label}, {self.device}{band})"


@dataclass(frozen=True)
class Evaluation:
    """One candidate's verdict, timing when equal, and the fitness the engine sees."""

    code_sha256: str
    verdict: Verdict
    timing: Timing | None = None
    seconds: float = 0.0
    worker: str | None = None           # the Dask worker that made it (None: this machine)

    @property
    def fitness(self) -> float:
        if not self.verdict.equal or self.timing is None:
            return 0.0
        return self.timing.speedup

    def to_json(self) -> dict:
        out = {"code_sha256": self.code_sha256, "verdict": self.verdict.to_json(),
               "timing": self.timing.to_json() if self.timing else None,
               "seconds": self.seconds, "fitness": self.fitness}
        if self.worker is not None:
            out["worker"] = self.worker
        return out

    @staticmethod
    def from_json(d: dict) -> "Evaluation":
        return Evaluation(d["code_sha256"], Verdict.from_json(d["verdict"]),
                          Timing.from_json(d["timing"]) if d.get("timing") else None,
                          float(d.get("seconds", 0.0)), d.get("worker"))
