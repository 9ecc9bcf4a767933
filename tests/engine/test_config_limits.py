"""Every bad run config the hostile-input review found: one line naming the file, the key and,
for a limit, the knob that raises it; exit 2 at once and no run directory."""
from __future__ import annotations

import time

import pytest

from tests.engine.helpers import write_config
from tests.hostile import run_cli

CASES = [
    ("population = 1e9", "population = 4", "population = 1e9",
     "engine.population: must be an integer, got 1000000000.0"),
    ("population = 10**9", "population = 4", "population = 1000000000",
     "engine.population: 1,000,000,000 individuals per island is over the limit of 4,096 "
     "(set ASMEVO_MAX_POPULATION to raise it)"),
    ("islands = 1e5", "islands = 2", "islands = 1e5", "engine.islands: must be an integer"),
    ("islands = 100000", "islands = 2", "islands = 100000",
     "engine.islands: 100,000 islands is over the limit of 256 (set ASMEVO_MAX_ISLANDS"),
    ("generations", "generations = 5", "generations = 10000000000",
     "engine.generations: 10,000,000,000 generations is over the limit"),
    ("tournament", "tournament = 2", "tournament = 1000000000000",
     "engine.tournament: 1,000,000,000,000 individuals per island is over the limit"),
    ("evaluations", "[budget]", "[budget]\nevaluations = 100000000000",
     "budget.evaluations: 100,000,000,000 evaluations is over the limit of 10,000,000 "
     "(set ASMEVO_MAX_EVALUATIONS"),
    ("seed 2**64", "seed = 7", "seed = 18446744073709551616",
     "run.seed: must be <= 9223372036854775807"),
    ("hall of fame", "hall_of_fame = 3", "hall_of_fame = 18446744073709551616",
     "engine.hall_of_fame: must be <= 2147483648"),
    ("n_jobs", "n_jobs = 1", "n_jobs = 100000", "parallel.n_jobs: must be <= 1024"),
    ("proposal threads", "n_jobs = 1", "n_jobs = 1\nproposal_threads = 1000000",
     "parallel.proposal_threads: must be <= 1024"),
    ("NaN weight", "nop_remove = 1.0", "nop_remove = nan",
     "operators.nop_remove: must be a finite number, got nan"),
    ("huge weight", "nop_remove = 1.0", "nop_remove = 1e300", "operators.nop_remove: must be <="),
    ("tries = 1e18", "tries = 8", "tries = 1000000000000000000",
     "operators.swap_adjacent.tries: must be a finite number within +-1e+06"),
    ("wall_seconds = inf", "[budget]", "[budget]\nwall_seconds = inf",
     "budget.wall_seconds: must be a finite number, got inf"),
    ("name ..", 'name = "t"', 'name = ".."', "run.name: must be a non-empty name"),
    ("name with a newline", 'name = "t"', 'name = "a\\nb"', "run.name: must be a non-empty name"),
    ("llm not a table", "[run]", 'llm = 5\n[run]', "llm: must be a table"),
    ("a section as a number", "[run]", "parallel = 3\n[run]", "parallel: must be a table"),
    ("unknown key", "[budget]", "[budget]\ntokens = 5", "budget.tokens: unknown key"),
]


@pytest.mark.parametrize("what, old, new, message", CASES, ids=[c[0] for c in CASES])
def test_bad_config_is_one_line_and_exit_2(tmp_path, what, old, new, message):
    cfg = write_config(tmp_path / "c.toml")
    text = cfg.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    if what == "a section as a number":
        text = text.replace("\n[parallel]\nn_jobs = 1", "")
    cfg.write_text(text)
    t0 = time.perf_counter()
    out = run_cli(["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--quiet"], seconds=20)
    assert time.perf_counter() - t0 < 5
    assert out.escaped is None and not out.hung, (out.escaped, out.stderr)
    assert out.code == 2 and len(out.error_lines) == 1, out.stderr
    assert out.error_lines[0].startswith(f"asmevo run: error: {cfg}: "), out.error_lines
    assert message in out.error_lines[0], out.error_lines
    assert not (tmp_path / "run").exists()


def test_the_population_limit_is_raised_by_its_knob(tmp_path, monkeypatch):
    from asmevo.engine.config import load_config
    cfg = write_config(tmp_path / "c.toml", population=5000)
    assert run_cli(["run", str(cfg), "--run-dir", str(tmp_path / "run")]).code == 2
    monkeypatch.setenv("ASMEVO_MAX_POPULATION", "5000")
    assert load_config(cfg).engine.population == 5000


@pytest.mark.parametrize("old, new", [
    ("tournament = 2", "tournament = 4096"),     # larger than the island: with replacement
    ("hall_of_fame = 3", "hall_of_fame = 2147483648"),
    ("migration_interval = 2", "migration_interval = 9223372036854775807"),
    ("[budget]", "[budget]\nevaluations = 1"),
    ("[budget]", "[budget]\nwall_seconds = 1e300\nllm_dollars = 0"),
])
def test_edge_values_that_are_accepted_also_run(tmp_path, old, new):
    """What validation accepts at its edges must also survive a real search."""
    cfg = write_config(tmp_path / "c.toml", population=2, islands=3, generations=1)
    cfg.write_text(cfg.read_text().replace(old, new, 1))
    out = run_cli(["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--quiet"], seconds=120)
    assert out.escaped is None and out.code == 0, (out.escaped, out.stderr)


@pytest.mark.parametrize("command", ["run", "ablate"])
def test_deeply_nested_toml_is_one_line(tmp_path, command):
    cfg = tmp_path / "c.toml"
    cfg.write_text("deep = " + "[" * 600 + "]" * 600 + "\n")
    out = run_cli([command, str(cfg)])
    assert out.code == 2 and out.error_lines == [
        f"asmevo {command}: error: {cfg}: config nesting: 600 levels of nesting is over the "
        "limit of 32 (set ASMEVO_MAX_TOML_DEPTH to raise it)"], out.stderr


def test_control_characters_in_paths_are_refused(tmp_path):
    cfg = write_config(tmp_path / "c.toml")
    text = "\n".join('spec = "a\\u0000b"' if ln.startswith("spec =") else ln
                     for ln in cfg.read_text().splitlines())
    cfg.write_text(text)
    out = run_cli(["run", str(cfg), "--run-dir", str(tmp_path / "run")])
    assert out.code == 2 and "run.spec: must be a path without control characters" \
        in out.stderr, out.stderr
