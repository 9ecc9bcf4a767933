"""The generational loop of the island model.

Before the loop, the operators that can check their setup do (an LLM operator asks
its server: :mod:`asmevo.engine.preflight`), then K0 is judged (:meth:`Engine.start`)
and stands alone on every island: the population generation 0 selects from. One generation
(:meth:`Engine.step`), for every island: keep the elites (an island not yet full,
K0 alone, keeps every member), pick parents by tournament, let operators (chosen
by weight) propose one edit each; every new candidate goes to the pool as it is
proposed, where one task builds it (phase 1: its code hash is its identity) and
evaluates it (phase 2) unless the archive has its verdict; in submission order,
serve what the archive's verdict cache knows and commit the fresh evaluations one
by one as they arrive; migrate around the ring every ``migration_interval``
generations, and commit the generation's individuals (K0's with generation 0),
proposals and the engine checkpoint in one transaction.

Everything random comes from one ``random.Random`` whose state is in the
checkpoint; each operator call gets its own ``Random`` seeded from it. So a
run resumed after ``kill -9`` continues exactly as if never interrupted: the
evaluations of the lost generation come back from the verdict cache, counted
once, and the archive ends up the same.
"""
from __future__ import annotations

import random
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from deap import tools

from asmevo.archive.blobs import BlobStore
from asmevo.archive.store import Archive, ArchiveError
from asmevo.edits import Edit, as_edits
from asmevo.engine import checkpoint, verdict_cache
from asmevo.engine.budget import LlmSpend, Spent, exhausted
from asmevo.engine.config import Config
from asmevo.engine.evaluator import Evaluator
from asmevo.engine.feedback import Feedback, Novelty, model_records
from asmevo.engine.inspirations import Inspirations, knowledge
from asmevo.engine.individual import K0_ID, Individual, chain_key, same_candidate
from asmevo.engine.islands import migrate_ring
from asmevo.engine.preflight import UnusableSetup, check_operators, unusable_operator
from asmevo.engine.parallel import Pool, evaluate_task, in_order, judge_task
from asmevo.engine.selection import best, tournament
from asmevo.engine.tries import Tries
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.verdict import Evaluation
from asmevo.operator import (Attempt, OperatorContext, OperatorUnusable, Rejected,
                             default_windows, get_operator)

Hook = Callable[[str, dict], None]


class EngineError(AsmevoError):
    """The engine cannot continue (bad state, evaluator disagreement)."""


class ProgramCache:
    """Programs of individuals: recovered K0 plus edits, applied incrementally, LRU.

    K0 is loaded and recovered, and edits applied, by the evaluator's target
    (:func:`asmevo.targets.get_target`), so the engine knows no ISA family.
    """

    def __init__(self, k0_path: str, size: int = 512, *, target: str | None = None):
        from asmevo.targets import DEFAULT_TARGET, get_target
        target = target or DEFAULT_TARGET
        t = get_target(target)
        self.target = t
        self.k0 = t.recover(t.load(read_input(k0_path, what="code object"), path=k0_path))
        self._apply = lambda program, edit: t.apply_edits(program, (edit,))
        self._cache: OrderedDict[tuple[str, ...], Any] = OrderedDict()
        self._size = size

    def get(self, edits: tuple[Edit, ...]) -> Any:
        program, done = self.k0, 0
        keys = tuple(e.key for e in edits)
        for n in range(len(edits), 0, -1):
            hit = self._cache.get(keys[:n])
            if hit is not None:
                self._cache.move_to_end(keys[:n])
                program, done = hit, n
                break
        for n in range(done, len(edits)):
            program = self._apply(program, edits[n])
            self._cache[keys[:n + 1]] = program
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return program

    def __call__(self, individual: Individual) -> Any:
        return self.get(individual.edits)


class HotWindows:
    """Each individual's windows, hottest first, from its archived evaluation.

    Evaluation profiles every equal candidate under the timing model and keeps
    its hot windows in the verdict's details; the engine only reads them back
    (it never runs anything itself), so a resumed run sees the same windows.
    Individuals without them (not equal, or timing that gives no profile) get
    ``fallback(program, kernel)``: every basic block, larger first.
    """

    def __init__(self, engine: "Engine", fallback: Callable, size: int = 4096):
        self._engine = engine
        self._fallback = fallback
        self._cache: OrderedDict[str, tuple] = OrderedDict()
        self._size = size

    def __call__(self, individual: Individual) -> list:
        key = individual.eval_key or f"edits:{individual.chain}"
        hit = self._cache.get(key)
        if hit is None:
            hit = tuple(self._lookup(individual))
            self._cache[key] = hit
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return list(hit)

    def _lookup(self, individual: Individual) -> list:
        eng = self._engine
        if individual.eval_key:
            row = verdict_cache.evaluations(eng.archive, eng.context_key,
                                            [individual.eval_key])
            ev = row.get(individual.eval_key)
            hot = ev["evaluation"].verdict.details.get("hot_windows") if ev else None
            if hot:
                return [(f, int(a), int(b)) for f, a, b, *_ in hot if f == eng.evaluator.kernel]
        return self._fallback(eng.programs(individual), eng.evaluator.kernel)


@dataclass
class Plan:
    """One offspring slot: who its parents are and which operator fills it."""

    island: int
    slot: int
    parent: Individual
    operator: Any
    seed: int
    mate: Individual | None = None


@dataclass
class Proposed:
    """What one plan's operator call came to: the edits, or why there are none."""

    edits: tuple[Edit, ...] | None
    outcome: str            # "edit" | "none" | "error"
    reason: str = ""
    unusable: bool = False  # the operator cannot work in this setup (OperatorUnusable)


@dataclass
class Judged:
    """Individuals judged in one generation (in submission order) and what it cost."""

    individuals: list[Individual] = field(default_factory=list)
    fresh: int = 0          # evaluations counted against budget.evaluations
    accepted: int = 0       # of those, equal to K0
    failed_builds: list[tuple[str, Evaluation]] = field(default_factory=list)
    seconds: float = 0.0    # wall time, when judged before the generation (K0)

    @property
    def keys(self) -> frozenset:
        return frozenset(ind.eval_key for ind in self.individuals)

    def __add__(self, other: "Judged") -> "Judged":
        return Judged(self.individuals + other.individuals, self.fresh + other.fresh,
                      self.accepted + other.accepted, self.failed_builds + other.failed_builds,
                      self.seconds + other.seconds)


@dataclass
class Offspring:
    """One generation's slots before judging: each island's members, the new
    individuals (and whose child each is) and a proposal row per plan."""

    children: list[list[Individual]]
    new: list[Individual] = field(default_factory=list)
    parent_of: dict[str, Individual] = field(default_factory=dict)
    proposal_rows: list[dict] = field(default_factory=list)

    def populations(self, judged: Judged, g: int) -> list[list[Individual]]:
        """The islands with every member judged. A candidate the evaluation budget could
        not pay for is not born: its slot keeps the parent, as if nothing was proposed."""
        by_id = {ind.id: ind for ind in judged.individuals}
        unpaid = {i: parent for i, parent in self.parent_of.items() if i not in by_id}
        for row in self.proposal_rows:
            if row["ind_id"] in unpaid:
                row.update(outcome="budget", ind_id=None,
                           reason="not evaluated: budget.evaluations spent")
        return [[by_id.get(ind.id, unpaid.get(ind.id, ind)) for ind in pop]
                for pop in self.children]


def _tried(tries: Tries) -> Judged:
    """The edits operators tried this generation: judged already, counted once."""
    return Judged([], len(tries.fresh), sum(tries.fresh.values()), list(tries.failed))


class _Sent:
    """One generation's candidates handed to the pool, a task per chain of edits (the
    first time it is sent; again, the same future).

    The worker leaves out the evaluation where the archive already has a row for the
    key (``Engine.known``, a hint) and for chains past the first ``allowed`` distinct
    ones (built only: the budget may not pay for them; the engine evaluates them after
    all where it does). ``allowed`` may be more than the generation's final budget (an
    agent's tries spend from it while proposals are made): the decisions are the
    engine's, from the final one."""

    def __init__(self, engine: "Engine", allowed: int | None):
        self._engine, self._allowed = engine, allowed
        self._futures: dict[str, Any] = {}

    def send(self, edits: tuple[Edit, ...]):
        chain = chain_key(edits)
        f = self._futures.get(chain)
        if f is None:
            eng = self._engine
            paid = self._allowed is None or len(self._futures) < self._allowed
            f = self._futures[chain] = eng.pool.submit(
                judge_task, eng.evaluator, (edits, eng.known.blob() if paid else None),
                gpu=eng.config.gpu)
        return f


@dataclass(frozen=True)
class GenerationResult:
    """What one committed generation came to (the progress line's figures)."""

    generation: int
    fresh: int
    accepted: int
    migrated: bool
    seconds: float
    best_per_island: list[float] = field(default_factory=list)


class Engine:
    """An island-model search over one kernel, writing everything to one archive."""

    def __init__(self, config: Config, archive: Archive, blobs: BlobStore, evaluator: Evaluator,
                 pool: Pool, *, run_id: int, hooks: tuple[Hook, ...] = (),
                 windows_of: Callable | None = None):
        self.config = config
        self.archive = archive
        self.blobs = blobs
        self.evaluator = evaluator
        self.pool = pool
        self.run_id = run_id
        self.hooks = hooks
        # an explicit windows_of(program, kernel) pins the windows (tests, ablations);
        # otherwise each individual's profiled hot windows lead
        self.windows_of = (HotWindows(self, default_windows) if windows_of is None
                           else lambda ind: windows_of(self.programs(ind), self.evaluator.kernel))
        self.context_key = evaluator.context_key
        self.feedback = Feedback(archive, self.context_key, run_id)
        self.known = verdict_cache.KnownKeys(archive, self.context_key)
        target = evaluator.target
        self.programs = ProgramCache(evaluator.k0_path, target=target)
        self.novelty = Novelty(archive, run_id)
        self.inspirations = Inspirations(archive, run_id, self.programs.get, knowledge_of=lambda: (
            knowledge(config.run.knowledge, target=target, k0_sha256=evaluator.k0_sha256,
                      programs_for=lambda path: ProgramCache(path, target=target).get)))
        self.operators = [(get_operator(c.name, **dict(c.params)), c.weight)
                          for c in config.operators]
        self.mutations = [(op, w) for op, w in self.operators if op.kind == "mutation" and w > 0]
        self.crossovers = [(op, w) for op, w in self.operators
                           if op.kind == "crossover" and w > 0]
        if not self.mutations:
            raise EngineError("the operator mix has no mutation operator with a weight > 0")
        self.state: checkpoint.EngineState | None = None
        self.spend: LlmSpend | None = None
        self.pending = Judged()     # judged, to be committed with the next generation (K0)
        self.unusable: str | None = None   # the last generation's operator that cannot work

    # -- events -------------------------------------------------------------------------

    def _emit(self, event: str, **info: Any) -> None:
        for hook in self.hooks:
            hook(event, info)

    # -- state --------------------------------------------------------------------------

    def _fresh_state(self) -> checkpoint.EngineState:
        lb = tools.Logbook()
        lb.header = ["gen", "island", "evals", "accepted", "best", "mean"]
        return checkpoint.EngineState(
            generation=-1, populations=[[] for _ in range(self.config.engine.islands)],
            hall_of_fame=tools.HallOfFame(self.config.engine.hall_of_fame,
                                          similar=same_candidate),
            rng=random.Random(self.config.run.seed), logbook=lb, spent=Spent())

    def load_state(self) -> checkpoint.EngineState:
        """The last committed generation's state (or a fresh one before generation 0)."""
        found = self.archive.last_checkpoint(self.run_id)
        if found is None:
            state = self._fresh_state()
        else:
            _, doc = found
            ids = checkpoint.named_ids(doc)
            rows = self.archive.individuals(self.run_id, ids)
            evals = verdict_cache.evaluations(self.archive, self.context_key,
                                             [r["eval_key"] for r in rows.values()])
            inds = {}
            for i, r in rows.items():
                if r["eval_key"] not in evals:
                    raise ArchiveError(f"individual {i} has no evaluation in the archive",
                                       path=str(self.archive.path))
                ev = evals[r["eval_key"]]["evaluation"]
                inds[i] = Individual.from_row(r, fitness=ev.fitness, status=ev.verdict.status)
            state = checkpoint.decode(doc, inds, self.config.engine.hall_of_fame,
                                      same_candidate)
        # money is real: count every recorded LLM call, even of a generation lost to a kill
        self.spend = LlmSpend(self.archive, self.run_id, self.config.budget.llm_dollars)
        state.spent.llm_dollars = self.spend.spent
        self.state = state
        return state

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> str:
        """Judge K0, then run generations until done or a budget is spent; returns the
        stop reason."""
        state = self.state or self.load_state()
        self._emit("start", generation=state.generation + 1, spent=state.spent,
                   k0_problems=self.k0_problems())
        reason = self._stop_reason()
        if not reason:
            self.preflight()
            self.start()
        while not reason:
            self.step()
            if self.unusable:
                self._failed(self.unusable)
            reason = self._stop_reason()
        self.archive.set_run_status(self.run_id, "finished", reason)
        from asmevo.engine.outcomes import why_nothing
        self._emit("finished", reason=reason, state=state,
                   why=why_nothing(self.archive, self.run_id))
        return reason

    def preflight(self) -> None:
        """Every operator that can check its setup does, before any work; a run whose
        operator cannot work stops here (:mod:`asmevo.engine.preflight`)."""
        try:
            lines = check_operators(self)
        except UnusableSetup as exc:
            self._failed(exc.message)
        if lines:
            self._emit("preflight", lines=lines)

    def _failed(self, why: str) -> None:
        """The run marked failed (resumable) and UnusableSetup raised: one line, nonzero."""
        self.archive.set_run_status(self.run_id, "failed", why)
        raise UnusableSetup(why)

    def _stop_reason(self) -> str | None:
        if self.state.generation >= self.config.engine.generations:
            return "engine.generations"
        return exhausted(self.config.budget, self.state.spent)

    def k0_problems(self) -> list[str]:
        """What the static checks report in K0 itself: said once at the start, since
        candidates are refused only for problems K0 does not have."""
        from asmevo.targets import get_target
        try:
            return get_target(self.evaluator.target).k0_problems(self.programs.k0,
                                                                 self.evaluator.kernel)
        except AsmevoError:
            return []

    def start(self) -> None:
        """Judge K0 before the first generation, so that its verdict and profiled hot
        windows guide the first proposals like every later individual's; K0 alone on
        every island is what generation 0 selects from, and its judgement is committed
        with generation 0 (a kill before that judges it again, from the verdict cache).
        A state loaded from a checkpoint has K0 judged already: nothing to do."""
        state = self.state
        if state.generation >= 0 or self.pending.individuals:
            return
        t0 = time.perf_counter()
        k0 = self._judge(0, [Individual(K0_ID, island=0, generation=0, slot=0)])
        state.populations = [k0.individuals[:1] for _ in range(self.config.engine.islands)]
        k0.seconds = time.perf_counter() - t0
        self.pending = k0

    def step(self) -> GenerationResult:
        """One generation, committed: select, propose, judge, migrate, record."""
        state, before = self.state, self.pending     # before: K0, judged by start()
        if state is None or not all(state.populations):
            raise EngineError("a generation needs a population: Engine.start() judges K0 first")
        g = state.generation + 1
        t0 = time.perf_counter()
        wall = self.config.budget.wall_seconds
        deadline = None if wall is None else (
            time.monotonic() + wall - state.spent.wall_seconds - before.seconds)
        self._emit("generation_start", generation=g)
        keep, plans = self._select()
        tries = Tries(self, g, allowed=self._allowed(state.spent, before.fresh),
                      counted=before.keys)
        # each new candidate goes to the pool as soon as it is proposed, so the workers
        # judge while the next ones are proposed; what is judged is decided below
        sent = _Sent(self, self._allowed(state.spent, before.fresh))
        proposals = []
        for plan, p in zip(plans, self._propose(g, plans, self._notebook(g), tries, deadline)):
            proposals.append(p)
            if p.edits is not None:
                sent.send(plan.parent.edits + p.edits)
        born = self._offspring(g, plans, proposals, keep)
        # tried edits were judged already: counted once, whichever offspring repeats them
        judged = before + _tried(tries) + self._judge(
            g, born.new, before.keys | frozenset(tries.fresh),
            self._allowed(state.spent, before.fresh + len(tries.fresh)), sent)
        populations = born.populations(judged, g)
        migrated = self._migrates(g)
        if migrated:
            populations = migrate_ring(populations, self.config.engine.migration_size)
            self._emit("migrated", generation=g)
        self._record(g, populations, judged, before.seconds + time.perf_counter() - t0)
        self._commit(g, judged, born.proposal_rows, tries.rows)
        self.unusable = unusable_operator(g, plans, proposals)
        self.pending = Judged()
        result = GenerationResult(g, judged.fresh, judged.accepted, migrated,
                                  before.seconds + time.perf_counter() - t0,
                                  [max(ind.fitness for ind in pop) for pop in populations])
        self._emit("committed", generation=g, result=result, state=state)
        return result

    def _select(self) -> tuple[list[list[Individual]], list[Plan]]:
        """Each island's survivors and one plan per other slot, in slot order.

        A full island keeps its elites; one not yet full (K0 alone, before generation 0)
        keeps every member. Parents are drawn by tournament (a lone member is every
        parent, drawing nothing)."""
        ecfg, rng = self.config.engine, self.state.rng
        keep, plans = [], []
        for island, pop in enumerate(self.state.populations):
            survivors = best(pop, ecfg.elite) if len(pop) >= ecfg.population else list(pop)
            parents = tournament(pop, ecfg.population - len(survivors), ecfg.tournament, rng)
            keep.append(survivors)
            plans += [self._plan(island, len(survivors) + j, parent, pop, rng)
                      for j, parent in enumerate(parents)]
        return keep, plans

    def _offspring(self, g: int, plans: list[Plan], proposals: list["Proposed"],
                   keep: list[list[Individual]]) -> "Offspring":
        """A new individual per proposed edit (the parent itself in its slot otherwise)
        and the generation's proposal rows."""
        born = Offspring([list(k) for k in keep])
        for plan, p in zip(plans, proposals):
            ind_id = None
            if p.edits is not None:
                parents = (plan.parent.id,) + ((plan.mate.id,) if plan.mate else ())
                child = Individual(f"{g}-{plan.island}-{plan.slot}",
                                   plan.parent.edits + p.edits, parents, plan.island, g,
                                   plan.slot, plan.operator.name)
                born.new.append(child)
                born.parent_of[child.id] = plan.parent
                ind_id = child.id
            else:
                child = plan.parent
            born.children[plan.island].append(child)
            born.proposal_rows.append({"generation": g, "island": plan.island,
                                       "slot": plan.slot, "operator": plan.operator.name,
                                       "kind": plan.operator.kind, "outcome": p.outcome,
                                       "reason": p.reason, "ind_id": ind_id})
        return born

    def _migrates(self, g: int) -> bool:
        ecfg = self.config.engine
        return g > 0 and ecfg.islands > 1 and ecfg.migration_size > 0 \
            and g % ecfg.migration_interval == 0

    def _record(self, g: int, populations: list[list[Individual]], judged: "Judged",
                seconds: float) -> None:
        """The generation into the state: hall of fame, logbook, populations, spending."""
        state = self.state
        state.hall_of_fame.update([ind for pop in populations for ind in pop])
        for island, pop in enumerate(populations):
            fits = [ind.fitness for ind in pop]
            born = [ind for ind in judged.individuals
                    if ind.island == island and ind.generation == g]
            state.logbook.record(gen=g, island=island, evals=len(born),
                                 accepted=sum(ind.equal for ind in born),
                                 best=max(fits), mean=sum(fits) / len(fits))
        state.populations = populations
        state.generation = g
        state.spent.evaluations += judged.fresh
        state.spent.accepted += judged.accepted
        state.spent.wall_seconds += seconds
        state.spent.llm_dollars = self.spend.spent

    def _commit(self, g: int, judged: "Judged", proposal_rows: list[dict],
                try_rows: list[dict]) -> None:
        """The generation's rows and the checkpoint, in one transaction."""
        with self.archive.transaction() as conn:
            for key, ev in judged.failed_builds:
                verdict_cache.put_evaluation(self.archive, self.context_key, key, ev,
                                             run_id=self.run_id, generation=g, conn=conn)
            self.archive.put_individuals(conn, self.run_id,
                                         [ind.to_row() for ind in judged.individuals])
            self.archive.put_proposals(conn, self.run_id, proposal_rows)
            self.archive.put_tries(conn, self.run_id, try_rows)
            self.archive.put_checkpoint(conn, self.run_id, g, checkpoint.encode(self.state))
            self._emit("committing", generation=g)

    def _plan(self, island: int, slot: int, parent: Individual, pop: list[Individual],
              rng: random.Random) -> Plan:
        """The slot's operator (a crossover, with a mate, needs two members to draw
        from) and the seed of its own ``Random``."""
        ecfg = self.config.engine
        mate = None
        if len(pop) > 1 and self.crossovers and rng.random() < ecfg.crossover_rate:
            op = _pick(self.crossovers, rng)
            mate = tournament(pop, 1, ecfg.tournament, rng)[0]
        else:
            op = _pick(self.mutations, rng)
        return Plan(island, slot, parent, op, rng.getrandbits(64), mate)

    def _notebook(self, g: int) -> tuple[Attempt, ...]:
        if not self.config.run.notebook:
            return ()
        from asmevo.edits import edits_from_json
        rows = self.archive.notebook(self.evaluator.kernel, limit=self.config.run.notebook,
                                     before_generation=g, run_id=self.run_id)
        out = []
        for r in rows:
            edits = edits_from_json(r["edits"])
            out.append(Attempt(r["generation"], r["operator"], r["edit_summary"],
                               edits[-1] if edits else None, r["status"], r["reason"],
                               r["speedup"], r["label"], r["eval_key"]))
        return tuple(out)

    def _propose(self, g: int, plans: list[Plan], notebook, tries: Tries,
                 deadline: float | None = None) -> Iterator[Proposed]:
        """Each plan's proposal, in plan order, as it is made; ``deadline``
        (``time.monotonic()``): where the run's wall-clock budget ends."""
        lineage_of = self.feedback.lineage_of(g)
        # what the whole population did in the committed generations (every island)
        inspirations = self.inspirations.for_generation(g)
        records = model_records(self.archive, self.run_id, g)
        seen = self.novelty.seen(g)

        def one(plan: Plan) -> Proposed:
            where = {"run_id": self.run_id, "generation": g, "island": plan.island,
                     "slot": plan.slot, "operator": plan.operator.name}
            ctx = OperatorContext(k0=self.programs.k0, kernel=self.evaluator.kernel,
                                  rng=random.Random(plan.seed), program_of=self.programs,
                                  windows_of=self.windows_of, notebook=notebook,
                                  spend=self.spend, where=where,
                                  profile_of=self.feedback.profile_of,
                                  verdict_of=self.feedback.verdict_of, lineage_of=lineage_of,
                                  try_edit=tries.for_plan(plan), deadline=deadline,
                                  inspirations=inspirations, model_records=records, seen=seen)
            try:
                if plan.mate is not None:
                    edit = plan.operator.crossover(plan.parent, plan.mate, ctx)
                else:
                    edit = plan.operator.mutate(plan.parent, ctx)
            except OperatorUnusable as exc:
                return Proposed(None, "error", str(exc), unusable=True)
            except AsmevoError as exc:
                return Proposed(None, "error", str(exc))
            if isinstance(edit, Rejected):
                return Proposed(None, "none", edit.reason)
            try:
                edits = as_edits(edit)
            except TypeError:
                raise EngineError(f"operator {plan.operator.name!r} returned "
                                  f"{type(edit).__name__}, not an Edit, a tuple of Edits "
                                  "or a Rejected") from None
            return Proposed(edits, "edit")

        threads = self.config.parallel.proposal_threads
        if threads > 1:
            with ThreadPoolExecutor(threads) as ex:
                yield from ex.map(one, plans)
            return
        for plan in plans:
            yield one(plan)

    def _allowed(self, spent: Spent, this_generation: int) -> int | None:
        """Fresh evaluations the budget still pays for in this generation (None: no limit)."""
        limit = self.config.budget.evaluations
        return None if limit is None else max(0, limit - spent.evaluations - this_generation)

    def _judge(self, g: int, new: list[Individual], counted: frozenset = frozenset(),
               allowed: int | None = None, sent: "_Sent | None" = None) -> Judged:
        """Identity (phase 1), verdict cache, fresh evaluations (phase 2), in order.

        ``counted``: keys this generation already counted as fresh (K0's, in generation 0).
        ``allowed``: at most this many fresh evaluations; candidates after the last one
        the budget pays for (in submission order, so a resumed generation drops the same
        ones) are left out of the result.

        A candidate's two phases run as one task (:func:`judge_task`, sent by
        :class:`_Sent`, while proposing when ``sent`` is given) in the worker that builds
        it. What is judged does not depend on where or when the work ran: every decision
        below is taken in submission order from the built keys and the archive, as if
        the two phases ran one after the other.
        """
        chains: dict[str, tuple[Edit, ...]] = {}
        for ind in new:
            chains.setdefault(ind.chain, ind.edits)
        sent = sent or _Sent(self, allowed)
        results = in_order([sent.send(edits) for edits in chains.values()])
        built: dict[str, tuple[str, bytes | None]] = {}
        evaluations: dict[str, Evaluation] = {}
        fresh_keys: set[str] = set()
        failed_builds = []
        later: list[tuple[str, tuple[Edit, ...], bytes]] = []   # paid for, built only
        queued: set[str] = set()
        for (chain, edits), (key, data, verdict, ev, text) in zip(chains.items(), results):
            built[chain] = (key, data)
            if key in evaluations or key in queued:
                continue
            hit = verdict_cache.judged(self.archive, self.context_key, key)
            # a row this run wrote at this generation is an evaluation of this
            # generation that a kill interrupted: served, but counted as fresh
            costs = key not in counted and (hit is None and verdict is None or hit is not None
                                            and hit["run_id"] == self.run_id
                                            and hit["generation"] == g)
            if costs and allowed is not None and len(fresh_keys) + len(later) >= allowed:
                continue                # unpaid: no verdict, so no individual below
            if hit is not None:
                evaluations[key] = hit["evaluation"]
                self.known.add(key)
                if costs:
                    fresh_keys.add(key)
                continue
            if verdict is not None:
                ev = Evaluation(key, verdict, None, 0.0)
                evaluations[key] = ev
                failed_builds.append((key, ev))
                continue
            if ev is None:
                later.append((key, edits, data))
                queued.add(key)
                continue
            evaluations[key] = self.stored(g, key, edits, data, ev, text)
            fresh_keys.add(key)
        results = self.pool.map(evaluate_task, self.evaluator, [e for _, e, _ in later],
                                gpu=self.config.gpu)
        for (key, edits, data), ev in zip(later, results):
            evaluations[key] = self.stored(g, key, edits, data, ev)
            fresh_keys.add(key)
        judged = []
        for ind in new:
            key, data = built[ind.chain]
            ev = evaluations.get(key)
            if ev is None:
                continue                # not paid for by the budget
            judged.append(ind.judged(code_sha256=key if data is not None else None,
                                     eval_key=key, fitness=ev.fitness,
                                     status=ev.verdict.status))
        fresh_keys -= counted
        accepted = sum(evaluations[k].verdict.equal for k in fresh_keys)
        return Judged(judged, len(fresh_keys), accepted, failed_builds)

    def stored(self, g: int, key: str, edits: tuple[Edit, ...], data: bytes,
               ev: Evaluation, text: str | None = None) -> Evaluation:
        """A fresh evaluation, committed to the archive at once (its code object and
        assembly to the blob store when equal; ``text``: the assembly, as the worker
        that built it printed it, else printed here); the verdict that stands."""
        if ev.verdict.status == verdict_cache.WORKER_DIED:
            ev = replace(ev, code_sha256=key)       # filed under the key the build gave
        if ev.code_sha256 != key:
            raise EngineError(f"evaluator built {ev.code_sha256[:16]} where the build "
                              f"phase built {key[:16]}: builds are not deterministic")
        if ev.verdict.equal:
            self.blobs.put(data)
            if text is None:
                text = self.evaluator.assembly(edits)
            if text is not None:
                self.blobs.put_assembly(key, text)
        self.known.add(key)
        won = verdict_cache.put_evaluation(self.archive, self.context_key, key, ev,
                                           run_id=self.run_id, generation=g)
        # another writer may have judged this candidate first: its verdict stands
        stored = ev if won else \
            verdict_cache.evaluations(self.archive, self.context_key, [key])[key]["evaluation"]
        self._emit("evaluated", generation=g, key=key, evaluation=stored)
        return stored


def _pick(weighted: list[tuple[Any, float]], rng: random.Random) -> Any:
    ops = [op for op, _ in weighted]
    return rng.choices(ops, weights=[w for _, w in weighted])[0]

