"""Shared helpers for engine tests: tiny configs and archive comparison by content.

Runs use the engine's instruction-count test evaluator (real builds, static
score, no emulation) on ``asm_copy``, a 26-instruction kernel whose ``s_nop``
padding gives the search something to improve.
"""
from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "experiments" / "kernels"


def config_text(*, name: str = "t", seed: int = 7, kernel: str = "asm_copy", islands: int = 2,
                population: int = 4, generations: int = 5, migration_interval: int = 2,
                n_jobs: int = 1, scheduler: str = "", budget: str = "", extra: str = "",
                operators: str = "nop_remove = 1.0\nswap_adjacent = { weight = 2.0, tries = 8 }"
                ) -> str:
    sched = f'scheduler = "{scheduler}"' if scheduler else ""
    return textwrap.dedent(f"""\
        [run]
        name = "{name}"
        seed = {seed}
        spec = "{KERNELS / kernel}"
        size = "small"
        evaluator = "instruction-count"

        [engine]
        islands = {islands}
        population = {population}
        generations = {generations}
        migration_interval = {migration_interval}
        migration_size = 1
        tournament = 2
        elite = 1
        hall_of_fame = 3
        {extra}

        [operators]
        """) + operators + "\n\n[budget]\n" + budget + f"\n\n[parallel]\nn_jobs = {n_jobs}\n{sched}\n"


def write_config(path: Path, **kw) -> Path:
    path.write_text(config_text(**kw))
    return path


def archive_content(run_dir: Path) -> dict:
    """Everything a run decided, without row ids, timestamps or durations."""
    conn = sqlite3.connect(str(Path(run_dir) / "archive.db"))
    conn.row_factory = sqlite3.Row

    def rows(sql: str, drop: tuple[str, ...] = ()) -> list[dict]:
        return [{k: r[k] for k in r.keys() if k not in drop} for r in conn.execute(sql)]

    # the config text differs between serial and parallel runs ([parallel]); the rest not
    runs = rows("SELECT * FROM runs ORDER BY run_id",
                ("run_id", "created", "config_toml", "config_json"))
    inds = rows("SELECT * FROM individuals ORDER BY generation, island, slot", ("run_id",))
    # where and how long an evaluation ran is not a decision
    evals = rows("SELECT * FROM evaluations ORDER BY eval_key",
                 ("created", "seconds", "run_id", "worker"))
    props = rows("SELECT * FROM proposals ORDER BY generation, island, slot", ("run_id",))
    tries = rows("SELECT * FROM agent_tries ORDER BY generation, island, slot, seq", ("run_id",))
    cps = []
    for r in conn.execute("SELECT generation, state FROM checkpoints ORDER BY generation"):
        state = json.loads(r["state"])
        state["spent"].pop("wall_seconds")
        cps.append((r["generation"], state))
    conn.close()
    blobs = sorted(p.name for p in (Path(run_dir) / "blobs").rglob("*") if p.is_file())
    return {"runs": runs, "individuals": inds, "evaluations": evals, "proposals": props,
            "agent_tries": tries, "checkpoints": cps, "blobs": blobs}


def assert_same_archive(a: dict, b: dict) -> None:
    for key in a:
        assert a[key] == b[key], f"archives differ in {key}"


def without_matplotlib(env: dict, tmp: Path) -> dict:
    """``env`` for a subprocess in which ``import matplotlib`` fails as if it were not
    installed: a ``sitecustomize`` first on PYTHONPATH puts None in sys.modules."""
    d = tmp / "no_matplotlib"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text("import sys\nsys.modules['matplotlib'] = None\n")
    path = env.get("PYTHONPATH", "")
    return env | {"PYTHONPATH": str(d) + (":" + path if path else "")}
