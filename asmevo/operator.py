"""The operator contract: the protocols, the context an operator receives, the
values it answers with, and the registry by name.

An operator proposes one :class:`~asmevo.edits.Edit` (or several), or says why
not with a :class:`Rejected`; it never builds, runs or judges code. Operators
are registered by name and kind the way DEAP registers on a Toolbox, so an
ablation is a config naming a different set::

    @mutation("nop_remove", targets=("amdgpu",))
    class NopRemove:
        def mutate(self, individual, context): ...

    op = get_operator("nop_remove", **params_from_config)

Each names the ISA families whose programs it edits; a config that picks one for
another target is refused (:func:`check_target`).

The contract lives here, in the core of asmevo, and the concrete operators live in
the ``asmevo.operators`` package (source folder ``operators/``), which imports it;
the core never imports ``asmevo.operators``. The modules that register operators
are named by the ``asmevo.operators`` entry point group (setup.cfg), loaded on
first use: a module that does not import is an error, and so is an install that
declares none, so an operator never vanishes silently. A checkout run without
installing reads the group from its setup.cfg, and so does an editable install whose
metadata still names the old top-level ``operators.*`` modules (elsewhere those are an
error that says to reinstall).

Everything an operator may depend on arrives in its :class:`OperatorContext`,
including a ``random.Random`` seeded for that one call: the same seed and the
same parent give the same edit, which is what makes a resumed run equal to an
uninterrupted one.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Union, runtime_checkable

from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.verdict import Verdict

# the entry point group naming the modules whose import registers operators (setup.cfg)
ENTRY_POINTS = "asmevo.operators"

Window = tuple[str, int, int]     # (function, start, end): an instruction range


class OperatorError(AsmevoError):
    """An unknown operator name, bad parameters, or a malformed registration."""


class OperatorUnusable(OperatorError):
    """An operator cannot work in this setup: the service it asks refuses its key, cannot
    be reached, or does not know its model. Raised by :meth:`Preflight.preflight` before
    the search, or instead of a proposal; the engine stops a run in which an operator
    failed every proposal of a generation so, instead of spending the budget on it."""


@dataclass(frozen=True)
class Rejected:
    """An operator's answer when it proposes nothing: why (recorded with the proposal).

    An operator returns an :class:`Edit`, a tuple of Edits (applied in order) or a
    Rejected, never None; ``str()`` is the reason, so it reads in a message as it is.
    """

    reason: str

    def __str__(self) -> str:
        return self.reason


class Candidate(Protocol):
    """What an operator may read of an individual (the engine's ``Individual`` is one):
    its id, its edit history on K0, and its evaluation's key, status and fitness."""

    id: str
    edits: tuple[Edit, ...]
    eval_key: str
    status: str
    fitness: float


# what an operator returns: one edit, several applied in order, or why there is none
Proposal = Union[Edit, tuple, Rejected]


@runtime_checkable
class Mutation(Protocol):
    """A ``kind = "mutation"`` operator (registered with :func:`mutation`)."""

    name: str
    kind: str
    targets: tuple[str, ...]     # the ISA families whose programs it edits

    def mutate(self, individual: Candidate, context: "OperatorContext") -> Proposal: ...


@runtime_checkable
class Crossover(Protocol):
    """A ``kind = "crossover"`` operator (registered with :func:`crossover`)."""

    name: str
    kind: str
    targets: tuple[str, ...]

    def crossover(self, a: Candidate, b: Candidate, context: "OperatorContext") -> Proposal: ...


Operator = Mutation | Crossover


@runtime_checkable
class Preflight(Protocol):
    """An operator that can tell before the search whether it can work (an LLM operator
    asks its server). ``preflight`` says what it checked, one line each, or raises
    :class:`OperatorUnusable`; ``done`` holds the checks made so far in this pre-flight
    (key: what was checked, value: its line), so operators that share a service ask it
    once. The context is an operator call's, with ``where["operator"] == "preflight"``:
    a check that is billed is charged there."""

    def preflight(self, context: "OperatorContext", done: dict) -> list[str]: ...


@dataclass(frozen=True)
class Attempt:
    """One earlier attempt on this kernel, as the notebook shows it to an operator."""

    generation: int
    operator: str
    summary: str           # str(last edit)
    edit: Edit | None      # the attempt's own (last) edit
    status: str            # verdict status
    reason: str
    speedup: float | None  # when equal
    label: str | None      # "modeled" | "measured"
    eval_key: str = ""     # its evaluation: ``OperatorContext.verdict`` gives the full verdict


@dataclass(frozen=True)
class LineCost:
    """What one instruction cost in a profiled launch."""

    executions: int        # wave-level executions over the launch
    cycles: float          # issue + stall cycles (modeled) or samples/latency (measured)
    stalls: float


@dataclass(frozen=True)
class LineProfile:
    """Per-line costs of one individual's program, where its evaluation profiled them.

    ``lines`` maps ``(function, instruction index)`` (indices of the individual's
    own program, after its edits) to a :class:`LineCost`; evaluation keeps the
    lines of the candidate's hot windows, so lines elsewhere are unknown (None).
    """

    label: str                                  # "modeled" | "measured"
    unit: str                                   # "cycles" | "samples"
    lines: dict[tuple[str, int], LineCost]
    # the hot windows, hottest first: (function, start, end, share of the time)
    windows: tuple[tuple[str, int, int, float], ...] = ()

    def at(self, function: str, index: int) -> LineCost | None:
        return self.lines.get((function, index))


@dataclass(frozen=True)
class TryResult:
    """The engine's answer to an operator's :meth:`OperatorContext.try_edit`.

    A tried edit is built, gated, run against K0 and timed like any candidate and
    archived; ``status`` is its verdict's status, ``details`` the verdict's details
    (first mismatch, hazard rule, faulting address, ...), ``speedup`` the fitness
    when equal. ``refused`` says why the engine did not evaluate it (the evaluation
    budget is spent, or the engine evaluates no tries); then ``status`` is "refused".
    """

    status: str
    reason: str = ""
    details: dict = field(default_factory=dict)
    speedup: float | None = None
    label: str | None = None          # "modeled" | "measured"
    eval_key: str | None = None
    fresh: bool = False               # a new evaluation, counted in the run's budget
    refused: str = ""

    @property
    def equal(self) -> bool:
        return self.status == "equal"


@dataclass(frozen=True)
class Change:
    """One window of an accepted edit: the lines it replaced and the lines it put there."""

    function: str
    start: int
    end: int
    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class Inspiration:
    """An accepted edit that made its candidate faster than its parent, as a prompt may
    quote it: where it came from, its windows' actual lines before and after, and what it
    gained (the child's speedup over the parent's, and over K0)."""

    source: str                        # "island 1, gen 3" or "run NAME, kernel K"
    operator: str
    changes: tuple[Change, ...]
    gain: float                        # child fitness / parent fitness (> 1)
    speedup: float                     # the child's speedup over its own K0
    label: str = "modeled"             # "modeled" | "measured"
    island: int = -1                   # -1: another run's (an archive of earlier runs)


@dataclass(frozen=True)
class ModelRecord:
    """What one model earned for one operator in a run's committed generations: its
    proposals (a conversation is one), their cost, and how many made a candidate equal
    to K0 and faster than its parent."""

    proposals: int = 0
    cost: float = 0.0
    improvements: int = 0


@dataclass(frozen=True)
class LlmCall:
    """What one LLM request cost; recorded in the archive with the prompt's text."""

    call_id: str
    model: str
    prompt: str
    tokens_in: int
    tokens_out: int
    cost: float
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    status: str = ""                 # what the call came to, as the usage table keeps it
    reason: str = ""
    answer: str | None = None        # JSON of the tool call's input: a resume reuses it


class SpendHook(Protocol):
    """The engine's side of the LLM budget (thread-safe).

    ``record`` stores a call once per call id; ``recorded(call_id)`` returns the
    stored row, so a resumed run reuses an answer it already paid for.
    """

    def remaining(self) -> float: ...
    def record(self, call: LlmCall, where: dict) -> None: ...
    def recorded(self, call_id: str) -> dict | None: ...


class _NoSpend:
    def remaining(self) -> float:
        return float("inf")

    def record(self, call: LlmCall, where: dict) -> None:
        pass

    def recorded(self, call_id: str) -> dict | None:
        return None


def default_windows(program: Any, function: str) -> list[Window]:
    """Every basic block's instruction range of ``function``, larger first: the
    windows of an individual whose evaluation kept no profiled hot windows."""
    blocks = [b for b in program.function(function).blocks() if b.end > b.start]
    blocks.sort(key=lambda b: (-(b.end - b.start), b.start))
    return [(function, b.start, b.end) for b in blocks]


def _no_profile(individual: Any) -> LineProfile | None:
    return None


def _no_verdict(eval_key: str) -> Verdict | None:
    return None


def _no_lineage(individual: Any, limit: int) -> tuple[Attempt, ...]:
    return ()


def _no_tries(edits: Edit | tuple[Edit, ...]) -> TryResult:
    return TryResult("refused", refused="this engine evaluates no tried edits")


def _no_inspirations(best: int, diverse: int) -> tuple[Inspiration, ...]:
    return ()


def _no_models(operator: str) -> dict[str, ModelRecord]:
    return {}


def _never_seen(chain: tuple[Edit, ...]) -> str | None:
    return None


_COMMA = re.compile(r"\s*,\s*")


def normalized_line(text: str) -> str:
    """An instruction line as novelty compares it: case, spacing and comma spacing
    folded (``V_ADD_F32  v1,v2 , v3`` is ``v_add_f32 v1, v2, v3``); nothing that can
    change the encoding is touched."""
    return _COMMA.sub(", ", " ".join(str(text).lower().split()))


def novelty_key(chain: tuple[Edit, ...]) -> str:
    """Two edit chains with one key are the same candidate as far as their text says:
    windows and lines equal after :func:`normalized_line` (operators and notes aside)."""
    body = [[e.function, e.start, e.end, [normalized_line(t) for t in e.lines],
             [list(d) for d in e.descriptor]] for e in chain]
    return hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest()[:24]


@dataclass
class OperatorContext:
    """Everything one operator call may use; built fresh for every call. This is the
    whole contract between the engine and an operator: the engine fills every field.

    ``program_of`` gives an individual's current program (recovered K0 with its
    edits applied, cached by the engine); ``windows_of`` ranks an individual's
    windows. ``notebook`` is the archive's recent attempts on this kernel.
    ``profile_of`` gives an individual's per-line profile (from its archived
    evaluation), ``verdict_of`` the full archived verdict of an evaluation key,
    ``lineage_of`` the edits agents tried on an individual and its ancestors
    (newest first, at most ``limit``), and ``try_edit`` evaluates one edit (or a
    tuple of edits, applied in order) on top of the individual being mutated,
    through the engine (the operator never runs anything itself).
    ``inspirations(best, diverse)`` gives the run's accepted improvements (every
    island, and an archive of earlier runs where the config names one): the ``best``
    by gain and ``diverse`` others; ``model_records(operator)`` what each model
    earned for an operator; ``seen(chain)`` says where a candidate with this edit
    chain from K0 (by :func:`novelty_key`) was tried before, or None. All of them
    answer from committed generations only, so a resumed run sees what the
    uninterrupted one saw. A context built without them (a test's) answers None,
    nothing, or a refused try.
    """

    k0: Any                                   # recovered K0 Program
    kernel: str                               # the function being optimized
    rng: random.Random
    program_of: Callable[[Any], Any]
    # an individual's ranked windows (the engine's: profiled hot windows when its
    # evaluation has them); None: every basic block, larger first
    windows_of: Callable[[Any], list[Window]] | None = None
    notebook: tuple[Attempt, ...] = ()
    spend: SpendHook = field(default_factory=_NoSpend)
    where: dict = field(default_factory=dict)  # run_id / generation / island / slot / operator
    reasons: list[str] = field(default_factory=list)
    profile_of: Callable[[Any], LineProfile | None] = field(default=_no_profile)
    verdict_of: Callable[[str], Verdict | None] = field(default=_no_verdict)
    lineage_of: Callable[[Any, int], tuple[Attempt, ...]] = field(default=_no_lineage)
    try_edit: Callable[[Edit | tuple[Edit, ...]], TryResult] = field(default=_no_tries)
    inspirations: Callable[[int, int], tuple[Inspiration, ...]] = field(
        default=_no_inspirations)
    model_records: Callable[[str], dict[str, ModelRecord]] = field(default=_no_models)
    seen: Callable[[tuple[Edit, ...]], str | None] = field(default=_never_seen)
    # time.monotonic() at which the run's wall-clock budget ends (None: it has none); an
    # operator that waits on anything (an LLM call) stops there
    deadline: float | None = None

    def program(self, individual: Any) -> Any:
        return self.program_of(individual)

    def kernel_of(self, individual: Any) -> tuple[Any, Any]:
        """``individual``'s current program and, in it, the function being optimized:
        where an operator that rewrites the kernel starts."""
        program = self.program_of(individual)
        return program, program.function(self.kernel)

    def windows(self, individual: Any) -> list[Window]:
        """Hot windows of ``individual``'s current program (indices after its edits)."""
        if self.windows_of is not None:
            return self.windows_of(individual)
        return default_windows(self.program_of(individual), self.kernel)

    def reject(self, reason: str) -> Rejected:
        """Why nothing was proposed, as the value to return (the engine records it with
        the proposal); ``reasons`` keeps every rejection said in this call."""
        self.reasons.append(reason)
        return Rejected(reason)

    def budget_left(self) -> float:
        return self.spend.remaining()

    def charge(self, call: LlmCall, **where: Any) -> None:
        """Record an LLM call's cost (and prompt) in the archive, at once; ``where``
        adds to the call's place (an agent's ``turn``)."""
        self.spend.record(call, dict(self.where) | where)


# -- registry -----------------------------------------------------------------------------

_REGISTRY: dict[str, Callable[..., Any]] = {}
_LOADED = False
_LOAD_LOCK = threading.Lock()
_METHOD = {"mutation": "mutate", "crossover": "crossover"}


def _register(name: str, kind: str, targets: tuple[str, ...]) -> Callable:
    def deco(factory):
        if not callable(getattr(factory, _METHOD[kind], None)):
            raise OperatorError(f"operator {name!r} is registered as a {kind} but has no "
                                f"{_METHOD[kind]}() method")
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise OperatorError(f"operator {name!r} is registered twice "
                                f"({_REGISTRY[name]!r} and {factory!r})")
        if not targets or not all(isinstance(t, str) for t in targets):
            raise OperatorError(f"operator {name!r} names no target it supports")
        factory.name, factory.kind, factory.targets = name, kind, tuple(targets)
        _REGISTRY[name] = factory
        return factory
    return deco


def mutation(name: str, *, targets: tuple[str, ...]) -> Callable:
    """Class decorator: register a mutation operator (it has ``mutate``) as ``name``, for
    the ISA families ``targets`` (asmevo.targets.REGISTRY names) whose programs it edits."""
    return _register(name, "mutation", targets)


def crossover(name: str, *, targets: tuple[str, ...]) -> Callable:
    """Class decorator: register a crossover operator (it has ``crossover``) as ``name``,
    for the ISA families ``targets``."""
    return _register(name, "crossover", targets)


def check_target(name: str, target: str) -> None:
    """Raise where operator ``name`` does not edit programs of ISA family ``target``."""
    targets = known_operators()[name].targets
    if target not in targets:
        raise OperatorError(f"operator {name!r} edits {' and '.join(targets)} programs, "
                            f"not {target}")


def _checkout_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The operator entry points setup.cfg declares, where asmevo runs from a checkout
    that was never installed (setup.cfg beside the package); else none."""
    import configparser
    from pathlib import Path
    cfg = Path(__file__).resolve().parent.parent / "setup.cfg"
    parser = configparser.ConfigParser()
    try:
        parser.read_string(cfg.read_text())
        lines = parser.get("options.entry_points", ENTRY_POINTS)
    except (OSError, configparser.Error):
        return {}
    eps = {}
    for line in lines.splitlines():
        name, eq, value = line.partition("=")
        if eq:
            ep = importlib.metadata.EntryPoint(name.strip(), value.strip(), ENTRY_POINTS)
            eps[ep.value] = ep
    return eps


def _load_plugins() -> None:
    global _LOADED
    with _LOAD_LOCK:
        if _LOADED:
            return
        found = {ep.value: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}
        stale = sorted(v for v in found if v.split(".")[0] in ("operators", "archive"))
        if stale:
            # metadata of an install from before the move under asmevo (an editable
            # install of this checkout not yet redone): the checkout's own setup.cfg
            # says what the modules are now; without one it is an error
            checkout = _checkout_entry_points()
            if not checkout:
                raise OperatorError(
                    f"the installed asmevo names operator modules by their old top-level "
                    f"names ({', '.join(stale)}; now asmevo.operators.*): reinstall it "
                    "(./setup.sh, or pip install -e . from the checkout)")
            found = {v: ep for v, ep in found.items() if v not in stale} | checkout
        found = found or _checkout_entry_points()
        if not found:
            raise OperatorError(f"no operator modules are installed: the {ENTRY_POINTS!r} "
                                "entry points are missing (pip install -e . from the checkout)")
        for value, ep in sorted(found.items()):
            ep.load()                   # an ImportError here is a broken module: raised
        _LOADED = True


def known_operators() -> dict[str, Callable[..., Any]]:
    _load_plugins()
    return dict(sorted(_REGISTRY.items()))


def operator_params(name: str) -> set[str] | None:
    """The keyword parameters ``name`` accepts (None: any)."""
    factory = known_operators().get(name)
    if factory is None:
        raise OperatorError(f"unknown operator {name!r}; known: {', '.join(known_operators())}")
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def get_operator(name: str, **params: Any) -> Operator:
    """A configured operator instance; unknown names and parameters are errors."""
    factories = known_operators()
    if name not in factories:
        raise OperatorError(f"unknown operator {name!r}; known: {', '.join(factories)}")
    accepted = operator_params(name)
    if accepted is not None:
        bad = sorted(set(params) - accepted)
        if bad:
            raise OperatorError(f"operator {name!r} has no parameter {bad[0]!r}; "
                                f"it takes: {', '.join(sorted(accepted)) or 'none'}")
    try:
        return factories[name](**params)
    except (TypeError, ValueError) as exc:
        raise OperatorError(f"operator {name!r}: bad parameters ({exc})") from exc
