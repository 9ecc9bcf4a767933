"""The engine's own overhead per evaluation.

Runs a search in this process (``n_jobs = 1``) with the engine's instruction-
count test evaluator, timing every call into the evaluator (building and
judging candidates). Everything else — selection, operators proposing edits,
identity/caching bookkeeping, archive writes, checkpoints, migration — is the
engine's overhead, reported per fresh evaluation and per individual.

    python experiments/bench_engine.py [--kernel tri_add] [--generations 20]

The last line is ``overhead_ms_per_eval=<value>`` (target: under 5 ms).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asmevo.engine.command import open_engine  # noqa: E402
from asmevo.engine.evaluator import InstructionCountEvaluator  # noqa: E402
from asmevo.engine.rundir import create_run  # noqa: E402

_SPENT = [0.0]
_DEPTH = [0]


def _timed(fn):
    """Accumulate the time of the outermost evaluator call (evaluate calls build)."""
    def wrapper(*args, **kw):
        _DEPTH[0] += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                _SPENT[0] += time.perf_counter() - t0
    return wrapper


@dataclass(frozen=True)
class TimedEvaluator(InstructionCountEvaluator):
    """The test evaluator, with the time spent inside it accumulated."""

    build = _timed(InstructionCountEvaluator.build)
    evaluate = _timed(InstructionCountEvaluator.evaluate)
    assembly = _timed(InstructionCountEvaluator.assembly)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="tri_add")
    p.add_argument("--islands", type=int, default=4)
    p.add_argument("--population", type=int, default=16)
    p.add_argument("--generations", type=int, default=10)
    args = p.parse_args(argv)
    os.environ.setdefault("ASMEVO_CACHE_DIR", str(Path(tempfile.gettempdir()) / "asmevo-bench"))
    with tempfile.TemporaryDirectory(prefix="asmevo-bench-") as tmp:
        cfg = Path(tmp) / "bench.toml"
        cfg.write_text(textwrap.dedent(f"""\
            [run]
            name = "bench"
            seed = 1
            spec = "{ROOT / 'experiments' / 'kernels' / args.kernel}"
            size = "small"
            evaluator = "instruction-count"
            [engine]
            islands = {args.islands}
            population = {args.population}
            generations = {args.generations}
            migration_interval = 3
            migration_size = 2
            tournament = 3
            elite = 2
            hall_of_fame = 10
            [operators]
            nop_remove = 1.0
            swap_adjacent = 2.0
            """))
        run = create_run(cfg, Path(tmp) / "run")
        ev = run.evaluator
        run.evaluator = TimedEvaluator(ev.k0_path, ev.kernel, ev.k0_sha256, ev.context_key)
        engine = open_engine(run)
        engine.load_state()
        t0 = time.perf_counter()
        engine.run()
        total = time.perf_counter() - t0
        evals = engine.state.spent.evaluations
        individuals = run.archive.conn.execute("SELECT COUNT(*) FROM individuals").fetchone()[0]
        gens = engine.state.generation + 1
        run.close()
    overhead = total - _SPENT[0]
    print(f"kernel {args.kernel}: {args.islands} islands x {args.population}, {gens} generations")
    print(f"individuals {individuals}, fresh evaluations {evals}")
    print(f"total {total:.3f} s, inside the evaluator {_SPENT[0]:.3f} s, "
          f"engine {overhead:.3f} s")
    print(f"engine overhead per individual {1000 * overhead / individuals:.3f} ms, "
          f"per generation {1000 * overhead / gens:.1f} ms")
    print(f"overhead_ms_per_eval={1000 * overhead / max(evals, 1):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
