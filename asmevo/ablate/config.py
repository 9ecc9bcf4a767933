"""Ablation config: operator sets × kernels × seeds, each cell one engine run.

    [ablation]                 name, seeds, kernels ("all" or a list), size,
                               per-cell budget (evaluations, wall_seconds, llm_dollars),
                               corpus (kernel folders; default the repo's experiments/kernels),
                               jobs (cells run at once; the command's --jobs overrides)
    [base.run|engine|parallel] engine config sections applied to every cell
    [sets.<name>]              operator name = weight, or {weight = .., param = ..}

Every cell's engine config is written out as TOML text and validated by the
engine's own :func:`~asmevo.engine.config.parse_config`; its errors are renamed
to the key of this file (``engine.population`` → ``base.engine.population``,
``operators.x`` → ``sets.<name>.x``), so an unknown key is an error naming the
key, exactly as in a run config. The cell's text is also its identity when an
ablation is re-run: a cell directory started from a different text is an error,
never silently mixed into the table.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from asmevo import knobs
from asmevo.engine.config import (INT_MAX, MAX_PROCESSES, Config, ConfigError, leaves,
                                  parse_config, path_of)
from asmevo.files import parse_toml, read_input_text

CORPUS = Path(__file__).resolve().parents[2] / "experiments" / "kernels"
SECTIONS = ("ablation", "base", "sets")
BASE_SECTIONS = ("run", "engine", "parallel")
# [run] keys every cell sets itself
CELL_RUN_KEYS = ("name", "seed", "spec", "size", "code_object")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class Cell:
    """One engine run of the ablation: an operator set on one kernel with one seed."""

    set: str
    kernel: str
    seed: int
    text: str                 # the engine config (TOML) of this cell
    base_dir: Path

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.set, self.kernel, self.seed)

    @property
    def relpath(self) -> Path:
        return Path("cells") / self.set / self.kernel / f"seed{self.seed}"

    def config(self) -> Config:
        return parse_config(self.text, base_dir=self.base_dir, where=f"cell {self.relpath}")


@dataclass(frozen=True)
class AblationConfig:
    name: str
    seeds: tuple[int, ...]
    kernels: tuple[str, ...]
    size: str
    corpus: Path
    evaluations: int | None
    wall_seconds: float | None
    llm_dollars: float | None
    jobs: int | None
    base: dict                          # section -> {key: value}
    sets: dict                          # set name -> {operator: weight | {weight, params}}
    path: Path
    text: str

    def cells(self) -> list[Cell]:
        """Every cell, kernel-major (consecutive cells share a kernel's K0 work)."""
        return [Cell(s, k, seed, cell_text(self, s, k, seed), self.path.parent)
                for k in self.kernels for s in self.sets for seed in self.seeds]


# -- validation (the style of asmevo.engine.config: every error names its key) -------------

def _fail(where: str, key: str, msg: str) -> ConfigError:
    return ConfigError(f"{key}: {msg}", path=where)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(where: str, key: str, v) -> None:
    """A value a cell's TOML text can carry: numbers, strings, booleans, lists, tables
    (a TOML date or time has no meaning in an engine config)."""
    for k, x in leaves(key, v):
        if not isinstance(x, (bool, int, float, str)):
            raise _fail(where, k, f"must be a number, string, boolean, list or table, got "
                                  f"{_short(x)}")


def _number(where, key, v, *, integer=False, lo=None, hi=None, limit=None):
    """A number in [lo, hi] and within ``limit`` (an asmevo.knobs.Limit), if given."""
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if not ok or isinstance(v, bool) or (not integer and not math.isfinite(v)):
        raise _fail(where, key, f"must be {'an integer' if integer else 'a finite number'}, "
                                f"got {_short(v)}")
    if lo is not None and v < lo:
        raise _fail(where, key, f"must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise _fail(where, key, f"must be <= {hi}, got {v}")
    refusal = limit.exceeded(v, key) if limit is not None else None
    if refusal:
        raise ConfigError(refusal, path=where)
    return v


_ABLATION_KEYS = ("name", "seeds", "kernels", "size", "corpus", "evaluations", "wall_seconds",
                  "llm_dollars", "jobs")


def _ablation(where: str, raw, base: Path) -> dict:
    if not isinstance(raw, dict):
        raise _fail(where, "ablation", "missing (a table with name, seeds, kernels, ...)")
    for k in raw:
        if k not in _ABLATION_KEYS:
            raise _fail(where, f"ablation.{k}",
                        f"unknown key (known: {', '.join(sorted(_ABLATION_KEYS))})")
    for req in ("name", "seeds", "kernels"):
        if req not in raw:
            raise _fail(where, f"ablation.{req}", "missing (required)")
    name = raw["name"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail(where, "ablation.name", f"must be a name of letters, digits, _.+-; "
                                            f"got {name!r}")
    seeds = raw["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise _fail(where, "ablation.seeds", f"must be a non-empty list of integers, got "
                                             f"{_short(seeds)}")
    seeds = tuple(_number(where, "ablation.seeds", s, integer=True, lo=0, hi=INT_MAX)
                  for s in seeds)
    if len(set(seeds)) != len(seeds):
        raise _fail(where, "ablation.seeds", f"has a repeated seed: {list(seeds)}")
    size = raw.get("size", "small")
    if not isinstance(size, str):
        raise _fail(where, "ablation.size", f"must be a string, got {size!r}")
    corpus = raw.get("corpus")
    if corpus is None:
        corpus = CORPUS
    else:
        corpus = path_of(where, "ablation.corpus", corpus, base)
    if not corpus.is_dir():
        raise _fail(where, "ablation.corpus", f"no such folder {corpus}")
    found = sorted(p.parent.name for p in corpus.glob("*/spec.toml"))
    kernels = raw["kernels"]
    if kernels == "all":
        if not found:
            raise _fail(where, "ablation.kernels", f"no kernel specs under {corpus}")
        kernels = found
    elif isinstance(kernels, list) and kernels and all(isinstance(k, str) for k in kernels):
        for k in kernels:
            if k not in found:
                raise _fail(where, "ablation.kernels", f"no kernel {k!r} in {corpus} "
                                                       f"(it has: {', '.join(found)})")
        if len(set(kernels)) != len(kernels):
            raise _fail(where, "ablation.kernels", "has a repeated kernel")
    else:
        raise _fail(where, "ablation.kernels",
                    f'must be "all" or a non-empty list of kernel names, got {kernels!r}')
    budget = {}
    for key, integer, lo, limit in (("evaluations", True, 1, knobs.MAX_EVALUATIONS),
                                    ("wall_seconds", False, 1e-9, None),
                                    ("llm_dollars", False, 0.0, None)):
        v = raw.get(key)
        budget[key] = None if v is None else _number(where, f"ablation.{key}", v,
                                                     integer=integer, lo=lo, limit=limit)
    if budget["evaluations"] is None and budget["wall_seconds"] is None:
        raise _fail(where, "ablation.evaluations",
                    "a per-cell budget is required (evaluations and/or wall_seconds)")
    jobs = raw.get("jobs")
    if jobs is not None:
        _number(where, "ablation.jobs", jobs, integer=True, lo=1, hi=MAX_PROCESSES)
    return {"name": name, "seeds": seeds, "kernels": tuple(kernels), "size": size,
            "corpus": corpus, "jobs": jobs, **budget}


def _base(where: str, raw) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(where, "base", "must be a table of engine sections (run, engine, parallel)")
    out = {}
    for section, table in raw.items():
        if section not in BASE_SECTIONS:
            hint = ("each set names its operators in [sets.<name>]" if section == "operators"
                    else "the per-cell budget goes in [ablation]" if section == "budget"
                    else f"sections: {', '.join(BASE_SECTIONS)}")
            raise _fail(where, f"base.{section}", f"not allowed here ({hint})")
        if not isinstance(table, dict):
            raise _fail(where, f"base.{section}", "must be a table")
        _plain(where, f"base.{section}", table)
        if section == "run":
            for k in table:
                if k in CELL_RUN_KEYS:
                    raise _fail(where, f"base.run.{k}",
                                "set by each cell (from [ablation] and the kernel), not in [base]")
        out[section] = dict(table)
    return out


def _sets(where: str, raw) -> dict:
    if not isinstance(raw, dict) or not raw:
        raise _fail(where, "sets", "needs at least one operator set ([sets.<name>])")
    for name, ops in raw.items():
        if not _NAME.fullmatch(name):
            raise _fail(where, f"sets.{name}", "a set name is letters, digits and _.+-")
        if not isinstance(ops, dict) or not ops:
            raise _fail(where, f"sets.{name}", "must be a table of operator = weight")
        _plain(where, f"sets.{name}", ops)
    return {name: dict(ops) for name, ops in raw.items()}


# -- cell configs ------------------------------------------------------------------------

def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)            # a JSON string is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _table(name: str, d: dict) -> list[str]:
    return [f"[{name}]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in d.items()] + [""]


def cell_text(ab: AblationConfig, set_name: str, kernel: str, seed: int) -> str:
    """The engine config of one cell, as TOML (its identity when the ablation is re-run)."""
    run = {"name": f"{ab.name}.{set_name}.{kernel}.s{seed}", "seed": seed,
           "spec": str(ab.corpus / kernel), "size": ab.size} | ab.base.get("run", {})
    budget = {k: v for k, v in (("evaluations", ab.evaluations),
                                ("wall_seconds", ab.wall_seconds),
                                ("llm_dollars", ab.llm_dollars)) if v is not None}
    lines = [f"# ablation {ab.name}: set {set_name}, kernel {kernel}, seed {seed}", ""]
    lines += _table("run", run)
    lines += _table("engine", ab.base.get("engine", {}))
    lines += _table("operators", ab.sets[set_name])
    lines += _table("budget", budget)
    lines += _table("parallel", ab.base.get("parallel", {}))
    return "\n".join(lines)


_REBASE = {"run": "base.run", "engine": "base.engine", "parallel": "base.parallel",
           "budget": "ablation"}


def _rebased(exc: ConfigError, where: str, set_name: str) -> ConfigError:
    """An engine config error renamed to this file's key (``operators.x`` → ``sets.s.x``)."""
    key, sep, msg = exc.message.partition(": ")
    head, _, rest = key.partition(".")
    new = f"sets.{set_name}" if head == "operators" else _REBASE.get(head)
    if not sep or new is None:
        return ConfigError(exc.message, path=where)
    return ConfigError(f"{new}{'.' + rest if rest else ''}: {msg}", path=where)


def parse_ablation(text: str, *, path: str | Path) -> AblationConfig:
    """Parse and validate an ablation config; every set is checked as an engine config."""
    p = Path(path).resolve()
    where = str(path)
    doc = parse_toml(text, error=ConfigError, path=where, what="config")
    for k in doc:
        if k not in SECTIONS:
            raise _fail(where, k, f"unknown section or key (sections: {', '.join(SECTIONS)})")
    ab = AblationConfig(**_ablation(where, doc.get("ablation"), p.parent),
                        base=_base(where, doc.get("base")), sets=_sets(where, doc.get("sets")),
                        path=p, text=text)
    from asmevo.launch.spec import SpecError, load_spec
    for k in ab.kernels:
        try:
            load_spec(ab.corpus / k, ab.size)
        except SpecError as exc:
            raise _fail(where, "ablation.size", str(exc)) from None
    for s in ab.sets:
        try:
            parse_config(cell_text(ab, s, ab.kernels[0], ab.seeds[0]), base_dir=p.parent,
                         where=where)
        except ConfigError as exc:
            raise _rebased(exc, where, s) from None
    return ab


def load_ablation(path: str | Path) -> AblationConfig:
    p = Path(path)
    text = read_input_text(p, error=ConfigError, what="ablation config")
    return parse_ablation(text, path=p)
