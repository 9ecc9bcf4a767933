"""Run configuration: one TOML file → frozen dataclasses, validated here and only here.

The same file starts a search, resumes it and reports on it (the archive keeps
its text). An unknown key or a bad value is a :class:`ConfigError` naming the
key (``engine.population``), never a default silently taking its place.

Sections: ``[run]`` ``[engine]`` ``[operators]`` ``[budget]`` ``[parallel]``, and
``[llm]`` (settings shared by the LLM operators; see docs/llm.md).
In ``[operators]`` a number is a weight (``nop_remove = 1.0``); a table gives a
weight and the operator's parameters (``swap_adjacent = {weight = 2, tries = 8}``).
A config that names no operators (no ``[operators]``, or an empty one) searches with
the target's :data:`RECOMMENDED_OPERATORS`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from asmevo import knobs
from asmevo.errors import AsmevoError, has_control_characters
from asmevo.files import parse_toml, read_input_text
from asmevo.prove.stage import BUDGET_MAX_S, BUDGET_S
from asmevo.runtime.registry import DEFAULT_DEVICE, REGISTRY as DEVICE_CLASSES
from asmevo.targets import DEFAULT_TARGET, REGISTRY as TARGETS


class ConfigError(AsmevoError):
    """A config file that cannot be read, has an unknown key, or a bad value."""


TIMINGS = ("modeled", "measured")
EVALUATORS = ("verify", "instruction-count")
PROOFS = ("off", "on", "require")
MAX_PROCESSES = 1024                   # parallel.n_jobs, parallel.proposal_threads
MAX_WEIGHT = 1e9                       # an operator weight (their sum must stay finite)

# The recommended set, per target: every rule operator at weight 1, the loop and structural
# ones included (they are what pays on loop kernels; experiments/README.md "Recommended
# rule set" has their figures). experiments/quickstart.toml and experiments/bench_search.py
# use it too; its crossovers need [engine] crossover_rate > 0 (the quick start: 0.2).
RECOMMENDED_OPERATORS: dict[str, dict[str, float]] = {
    "amdgpu": {name: 1.0 for name in (
        "schedule", "waitcnt_relax", "peephole", "merge_loads", "trim_registers",
        "window_crossover", "block_crossover", "unroll", "pipeline", "licm", "scalarize",
        "dead_code", "gcse", "strength_reduce", "address_fold", "occupancy_rename",
        "structural_crossover", "kernarg_hoist", "trim_lds", "fold_moves", "mfma_schedule")},
    "nvidia": {"sass_move": 1.0, "sass_retime": 1.0, "ptx_rebuild": 1.0},
}
MAX_PARAMETER = 1e6                    # |a number| among an operator's parameters


@dataclass(frozen=True)
class RunConfig:
    name: str
    spec: Path
    seed: int = 0
    size: str = "default"
    code_object: Path | None = None    # overrides the spec's code object (K0)
    device: str = DEFAULT_DEVICE
    timing: str = "modeled"
    evaluator: str = "verify"          # "instruction-count": the engine's test evaluator
    notebook: int = 20                 # attempts shown to operators
    target: str = DEFAULT_TARGET       # ISA family: a key of asmevo.targets.REGISTRY
    timing_size: str | None = None     # time at this spec size (checked once there); None: size
    proof: str = "on"                  # the prove stage: off | on | require (docs/prover.md)
    proof_budget: float = BUDGET_S     # seconds one candidate's proof may take (then unknown)
    family: bool = True                # check launch-family members, orders and overlaps too
    family_seed: int = 0               # which seeded family members
    # run directories of earlier runs whose improvements on other kernels of this target
    # operators may quote (OperatorContext.inspirations); read once, never written
    knowledge: tuple[Path, ...] = ()


@dataclass(frozen=True)
class EngineConfig:
    islands: int = 2
    population: int = 8
    generations: int = 10
    migration_interval: int = 5
    migration_size: int = 1
    tournament: int = 3
    elite: int = 1
    hall_of_fame: int = 10
    crossover_rate: float = 0.0


@dataclass(frozen=True)
class OperatorChoice:
    name: str
    weight: float
    params: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class BudgetConfig:
    evaluations: int | None = None     # None: unlimited
    wall_seconds: float | None = None
    llm_dollars: float | None = None


@dataclass(frozen=True)
class ParallelConfig:
    n_jobs: int = 1                    # local processes (joblib); -1: every core
    scheduler: str = ""                # "tcp://host:port": a Dask distributed cluster
    gpu_resource: str = "GPU"          # Dask worker resource that GPU work needs
    proposal_threads: int = 1          # operators proposing at once (LLM calls wait on I/O)


@dataclass(frozen=True)
class Config:
    run: RunConfig
    engine: EngineConfig
    operators: tuple[OperatorChoice, ...]
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    text: str = ""                     # the TOML it came from
    base_dir: Path = Path(".")         # relative paths in it are relative to this

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("text")
        return _plain(d)

    @property
    def gpu(self) -> bool:
        return DEVICE_CLASSES[self.run.device].measured


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    return v


# -- validation ---------------------------------------------------------------------------

def _fail(where: str, key: str, msg: str) -> ConfigError:
    return ConfigError(f"{key}: {msg}", path=where)


INT_MAX = 2 ** 63 - 1                  # what the archive (SQLite INTEGER) can store


def _int(where, key, v, lo=None, hi=INT_MAX, limit=None):
    """An integer in [lo, hi] and within ``limit`` (an asmevo.knobs.Limit), if given."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail(where, key, f"must be an integer, got {_short(v)}")
    if lo is not None and v < lo:
        raise _fail(where, key, f"must be >= {lo}, got {v}")
    if v > hi:
        raise _fail(where, key, f"must be <= {hi}, got {v}")
    refusal = limit.exceeded(v, key) if limit is not None else None
    if refusal:
        raise ConfigError(refusal, path=where)
    return v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _float(where, key, v, lo=None, hi=None, strict_lo=False):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise _fail(where, key, f"must be a finite number, got {_short(v)}")
    if lo is not None and (v < lo or (strict_lo and v == lo)):
        raise _fail(where, key, f"must be {'>' if strict_lo else '>='} {lo}, got {v}")
    if hi is not None and v > hi:
        raise _fail(where, key, f"must be <= {hi}, got {v}")
    return float(v)


def _flag(where, key, v) -> bool:
    if not isinstance(v, bool):
        raise _fail(where, key, f"must be true or false, got {_short(v)}")
    return v


def _str(where, key, v, choices=None):
    if not isinstance(v, str):
        raise _fail(where, key, f"must be a string, got {_short(v)}")
    if choices is not None and v not in choices:
        raise _fail(where, key, f"must be one of {', '.join(choices)}; got {_short(v)}")
    return v


def path_of(where: str, key: str, v: Any, base: Path) -> Path:
    """A path from the config, relative to ``base``; one without control characters."""
    text = _str(where, key, v)
    if not text or has_control_characters(text):
        raise _fail(where, key, f"must be a path without control characters, got {_short(v)}")
    try:
        return (base / text).resolve()
    except (OSError, RuntimeError) as exc:          # a symlink loop, say
        raise _fail(where, key, f"cannot resolve {_short(text)} ({exc})") from None


def _table(where: str, doc: dict, section: str, cls) -> dict:
    raw = doc.get(section, {})
    if not isinstance(raw, dict):
        raise _fail(where, section, "must be a table")
    known = {f.name for f in fields(cls)}
    for k in raw:
        if k not in known:
            raise _fail(where, f"{section}.{k}", f"unknown key (known: {', '.join(sorted(known))})")
    return raw


def _run(where: str, doc: dict, base: Path) -> RunConfig:
    raw = _table(where, doc, "run", RunConfig)
    for req in ("name", "spec"):
        if req not in raw:
            raise _fail(where, f"run.{req}", "missing (required)")
    name = _str(where, "run.name", raw["name"])
    if name in ("", ".", "..") or any(c in name for c in "/\\") or has_control_characters(name):
        raise _fail(where, "run.name", "must be a non-empty name without slashes or control "
                    f"characters, got {_short(name)}")
    spec = path_of(where, "run.spec", raw["spec"], base)
    if not spec.exists():
        raise _fail(where, "run.spec", f"no such spec {spec}")
    co = raw.get("code_object")
    if co is not None:
        co = path_of(where, "run.code_object", co, base)
        if not co.is_file():
            raise _fail(where, "run.code_object", f"no such file {co}")
    run = RunConfig(
        name=name, spec=spec, seed=_int(where, "run.seed", raw.get("seed", 0), 0),
        size=_str(where, "run.size", raw.get("size", "default")), code_object=co,
        device=_str(where, "run.device", raw.get("device", DEFAULT_DEVICE),
                    tuple(DEVICE_CLASSES)),
        timing=_str(where, "run.timing", raw.get("timing", "modeled"), TIMINGS),
        evaluator=_str(where, "run.evaluator", raw.get("evaluator", "verify"), EVALUATORS),
        notebook=_int(where, "run.notebook", raw.get("notebook", 20), 0, 100_000),
        target=_str(where, "run.target", raw.get("target", DEFAULT_TARGET), tuple(TARGETS)),
        timing_size=(None if raw.get("timing_size") is None
                     else _str(where, "run.timing_size", raw["timing_size"])),
        proof=_str(where, "run.proof", raw.get("proof", "on"), PROOFS),
        proof_budget=_float(where, "run.proof_budget",
                            raw.get("proof_budget", BUDGET_S), 0, BUDGET_MAX_S, strict_lo=True),
        family=_flag(where, "run.family", raw.get("family", True)),
        family_seed=_int(where, "run.family_seed", raw.get("family_seed", 0), 0),
        knowledge=_knowledge(where, raw.get("knowledge", []), base))
    # what the ISA family runs on and whether it has a timing model, as the target says
    target = TARGETS[run.target]
    if run.target not in DEVICE_CLASSES[run.device].targets:
        runs_on = [n for n, d in DEVICE_CLASSES.items() if run.target in d.targets]
        raise _fail(where, "run.device", f"target {run.target} runs on "
                    f"{' or '.join(runs_on)}, not {run.device!r}")
    if run.timing == "modeled" and not target.timing_model:
        raise _fail(where, "run.timing", f"target {run.target} has no timing model: "
                    "use timing = \"measured\"")
    from asmevo.engine.evaluator import InstructionCountEvaluator
    if run.target != InstructionCountEvaluator.target and run.evaluator == "instruction-count":
        raise _fail(where, "run.evaluator", "the instruction-count evaluator scores AMDGPU "
                    "code only")
    return run


def _knowledge(where: str, raw: Any, base: Path) -> tuple[Path, ...]:
    """``run.knowledge``: run directories (or their archive.db) that exist."""
    if not isinstance(raw, list):
        raise _fail(where, "run.knowledge", f"must be a list of run directories, got {_short(raw)}")
    out = []
    for k, v in enumerate(raw):
        path = path_of(where, f"run.knowledge[{k}]", v, base)
        db = path / "archive.db" if path.is_dir() else path
        if not db.is_file():
            raise _fail(where, f"run.knowledge[{k}]", f"no run archive at {db}")
        out.append(path)
    return tuple(out)


def _engine(where: str, doc: dict) -> EngineConfig:
    raw = _table(where, doc, "engine", EngineConfig)
    d = EngineConfig()
    g = lambda k: raw.get(k, vars(d)[k])  # noqa: E731
    e = EngineConfig(
        islands=_int(where, "engine.islands", g("islands"), 1, limit=knobs.MAX_ISLANDS),
        population=_int(where, "engine.population", g("population"), 2,
                        limit=knobs.MAX_POPULATION),
        generations=_int(where, "engine.generations", g("generations"), 0,
                         limit=knobs.MAX_GENERATIONS),
        migration_interval=_int(where, "engine.migration_interval", g("migration_interval"), 1),
        migration_size=_int(where, "engine.migration_size", g("migration_size"), 0),
        tournament=_int(where, "engine.tournament", g("tournament"), 1,
                        limit=knobs.MAX_POPULATION),
        elite=_int(where, "engine.elite", g("elite"), 0),
        hall_of_fame=_int(where, "engine.hall_of_fame", g("hall_of_fame"), 1, 2 ** 31),
        crossover_rate=_float(where, "engine.crossover_rate", g("crossover_rate"), 0.0, 1.0))
    if e.elite >= e.population:
        raise _fail(where, "engine.elite", f"must be below engine.population ({e.population})")
    if e.migration_size >= e.population:
        raise _fail(where, "engine.migration_size",
                    f"must be below engine.population ({e.population})")
    return e


def _operators(where: str, doc: dict) -> tuple[OperatorChoice, ...]:
    from asmevo.operator import OperatorError, check_target, get_operator, known_operators
    raw = doc.get("operators")
    run = doc.get("run")
    target = run.get("target", DEFAULT_TARGET) if isinstance(run, dict) else DEFAULT_TARGET
    if raw is None or raw == {}:        # names none: the target's recommended set
        raw = dict(RECOMMENDED_OPERATORS.get(target, RECOMMENDED_OPERATORS[DEFAULT_TARGET]))
    if not isinstance(raw, dict):
        raise _fail(where, "operators", "must be a table (name = weight)")
    known = known_operators()
    out = []
    for name, v in raw.items():
        key = f"operators.{name}"
        if name not in known:
            raise _fail(where, key, f"unknown operator (known: {', '.join(known)})")
        if isinstance(v, dict):
            params = dict(v)
            if "weight" not in params:
                raise _fail(where, f"{key}.weight", "missing (a table needs a weight)")
            weight = _float(where, f"{key}.weight", params.pop("weight"), 0.0, MAX_WEIGHT)
        else:
            weight, params = _float(where, key, v, 0.0, MAX_WEIGHT), {}
        _parameters(where, key, params)
        if name.startswith("llm_") and isinstance(doc.get("llm"), dict):
            # [llm] holds the settings every LLM operator shares; its own table overrides
            params = {"llm": dict(doc["llm"]), **params}
        try:
            check_target(name, target)
            get_operator(name, **params)
        except OperatorError as exc:
            bad = next((p for p in params if f"{p!r}" in exc.message), None)
            raise _fail(where, f"{key}.{bad}" if bad else key, exc.message) from None
        out.append(OperatorChoice(name, weight, tuple(sorted(params.items()))))
    if not any(o.weight > 0 for o in out):
        raise _fail(where, "operators", "every weight is 0")
    return tuple(out)


def leaves(key: str, value: Any) -> Iterator[tuple[str, Any]]:
    """Every value under ``value`` that is not a table or list, with its full key (``a.b[2]``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(f"{key}.{k}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(f"{key}[{i}]", v)
    else:
        yield key, value


def _parameters(where: str, key: str, value: Any) -> None:
    """Numbers among operator parameters are finite and moderate: ``tries = 1e18`` would
    loop for ever inside one proposal. Operators check their own meaning of each."""
    for k, v in leaves(key, value):
        if isinstance(v, (int, float)) and not isinstance(v, bool) \
                and (not math.isfinite(v) or abs(v) > MAX_PARAMETER):
            raise _fail(where, k, f"must be a finite number within +-{MAX_PARAMETER:g}, "
                                  f"got {_short(v)}")


def _llm(where: str, doc: dict) -> None:
    raw = doc.get("llm")
    if raw is not None and not isinstance(raw, dict):
        raise _fail(where, "llm", f"must be a table, got {_short(raw)}")
    _parameters(where, "llm", raw or {})


def _budget(where: str, doc: dict) -> BudgetConfig:
    raw = _table(where, doc, "budget", BudgetConfig)
    ev = raw.get("evaluations")
    ws = raw.get("wall_seconds")
    ld = raw.get("llm_dollars")
    return BudgetConfig(
        evaluations=None if ev is None else _int(where, "budget.evaluations", ev, 1,
                                                 limit=knobs.MAX_EVALUATIONS),
        wall_seconds=None if ws is None else _float(where, "budget.wall_seconds", ws, 0.0,
                                                    strict_lo=True),
        llm_dollars=None if ld is None else _float(where, "budget.llm_dollars", ld, 0.0))


def _parallel(where: str, doc: dict) -> ParallelConfig:
    raw = _table(where, doc, "parallel", ParallelConfig)
    n = _int(where, "parallel.n_jobs", raw.get("n_jobs", 1), -1, MAX_PROCESSES)
    if n == 0 or n < -1:
        raise _fail(where, "parallel.n_jobs", f"must be >= 1 or -1 (every core), got {n}")
    sched = _str(where, "parallel.scheduler", raw.get("scheduler", ""))
    if sched and not sched.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise _fail(where, "parallel.scheduler",
                    f"must be a Dask scheduler address like tcp://host:8786, got {sched!r}")
    return ParallelConfig(
        n_jobs=n, scheduler=sched,
        gpu_resource=_str(where, "parallel.gpu_resource", raw.get("gpu_resource", "GPU")),
        proposal_threads=_int(where, "parallel.proposal_threads",
                              raw.get("proposal_threads", 1), 1, MAX_PROCESSES))


SECTIONS = ("run", "engine", "operators", "budget", "parallel", "llm")


def parse_config(text: str, *, base_dir: str | Path, where: str = "<config>") -> Config:
    """Parse and validate config text; relative paths resolve against ``base_dir``."""
    doc = parse_toml(text, error=ConfigError, path=where, what="config")
    for k in doc:
        if k not in SECTIONS:
            raise _fail(where, k, f"unknown section or key (sections: {', '.join(SECTIONS)})")
    base = Path(base_dir).resolve()
    _llm(where, doc)
    return Config(run=_run(where, doc, base), engine=_engine(where, doc),
                  operators=_operators(where, doc), budget=_budget(where, doc),
                  parallel=_parallel(where, doc), text=text, base_dir=base)


def load_config(path: str | Path) -> Config:
    p = Path(path)
    text = read_input_text(p, error=ConfigError, what="config")
    return parse_config(text, base_dir=p.parent, where=str(p))
