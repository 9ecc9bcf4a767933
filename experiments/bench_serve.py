"""The dashboard on a large archive: first paint in a real browser, time and memory per request.

Generates a run directory whose archive holds ``--individuals`` individuals
(default 200,000: about 1.3 GB, as large as the archive issue 46 measured), then
serves it with ``asmevo serve`` in a child process and loads the page in headless
chromium. The archive starts as a real short search on ``asm_copy`` (the
instruction-count evaluator: real K0, real edits, real checkpoint), grown with
synthetic generations whose rows have the shape and size of a verifying run's
(edit histories replayable on K0, verdict details with hot windows and a line
profile of 8 windows of 16 to 48 lines).

    python experiments/bench_serve.py [--individuals 200000] [--dir DIR] [--no-browser]

Prints ``name=value`` lines: ``archive_bytes``, ``first_paint_s`` (navigation to the
run's summary cards and first page of individuals drawn),
``all_panels_s`` (every panel: curve, operators, lineage too), ``best_selected_s`` (the
best individual's verdict and side-by-side listing), ``<endpoint>_s`` per JSON
endpoint (each on a cold server), the server's CPU seconds for the page load
(``server_cpu_s``) and its peak
resident memory (``server_peak_rss_mb``) and its growth over the whole run
(``server_rss_growth_mb``). The archive is generated, never committed; ``--dir``
keeps it for reuse (generation takes about a minute per 100,000 individuals).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KERNEL = "asm_copy"
ISLANDS, POPULATION = 4, 50
STATUSES = ("equal",) * 6 + ("mismatch", "mismatch", "build", "hazard")


def seed_run(run_dir: Path) -> None:
    """A real short search: K0, its blob, real individuals with replayable edits."""
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run
    from tests.engine.helpers import write_config

    run_dir.parent.mkdir(parents=True, exist_ok=True)
    cfg = write_config(run_dir.parent / f"{run_dir.name}.toml", name="bench-serve",
                       generations=4, population=6, kernel=KERNEL)
    with create_run(cfg, run_dir) as run:
        engine = open_engine(run)
        try:
            engine.run()
        finally:
            engine.pool.close()


def _details(rng: random.Random, kernel: str) -> dict:
    """A verifying run's details: 8 hot windows (16 to 48 lines) and their profile."""
    lengths = [rng.randrange(16, 49) for _ in range(8)]
    wins = [[kernel, 48 * k, 48 * k + n, round(rng.random() / 8, 4)]
            for k, n in enumerate(lengths)]
    ranges = [[kernel, 48 * k, [rng.randrange(1, 5000) for _ in range(n)],
               [round(rng.random() * 900, 1) for _ in range(n)],
               [round(rng.random() * 300, 1) for _ in range(n)]] for k, n in enumerate(lengths)]
    return {"hot_windows": wins, "verified": True, "input_sets": 5, "launches": 10,
            "line_profile": {"label": "modeled", "unit": "cycles", "ranges": ranges}}


def _rows(conn, g0: int, count: int, templates: list[str], context: str, rng) -> None:
    """``count`` synthetic individuals after generation ``g0``, with their evaluations and
    proposals, in generations of ISLANDS x POPULATION."""
    per_gen = ISLANDS * POPULATION
    prev: list[list[str]] = [["k0"] for _ in range(ISLANDS)]
    inds, evals, props = [], [], []
    for n in range(count):
        g, rest = divmod(n, per_gen)
        g += g0 + 1
        island, slot = divmod(rest, POPULATION)
        if rest == 0 and n:
            prev = [[f"{g - 1}-{i}-{s}" for s in range(POPULATION)] for i in range(ISLANDS)]
        ind = f"{g}-{island}-{slot}"
        edits = rng.choice(templates)
        status = rng.choice(STATUSES)
        key = hashlib.sha256(f"bench-serve {n}".encode()).hexdigest()
        fit = round(0.9 + rng.random() * 0.3 + g * 1e-5, 6) if status == "equal" else 0.0
        parents = [rng.choice(prev[island])] + ([rng.choice(prev[island])]
                                                if rng.random() < 0.2 else [])
        last = json.loads(edits)[-1]
        summary = f"{last['function']}[{last['start']}:{last['end']}] -> " \
                  f"{len(last['lines'])} lines ({last.get('operator', '')})"
        op = "swap_adjacent" if rng.random() < 0.7 else "nop_remove"
        inds.append((1, ind, island, g, slot, op, json.dumps(parents), edits,
                     len(json.loads(edits)), summary, key if status == "equal" else None, key))
        timing = {"label": "modeled", "device": "emulator", "k0": 1000.0,
                  "candidate": 1000.0 / fit, "noise": 0.0, "unit": "cycles",
                  "speedup": fit} if status == "equal" else None
        evals.append((context, key, key, status, "" if status == "equal" else
                      f"{status}: synthetic reason for row {n}",
                      json.dumps(_details(rng, KERNEL), separators=(",", ":")),
                      json.dumps(timing) if timing else None, "modeled" if timing else None,
                      "emulator" if timing else None, fit if timing else None, fit,
                      0.05, 1, g, 1.7e9 + n * 0.05))
        props.append((1, g, island, slot, op, "mutation", "edit", "", ind))
        if len(inds) == 5000 or n == count - 1:
            conn.executemany("INSERT INTO individuals (run_id, ind_id, island, generation, slot,"
                             " operator, parents, edits, n_edits, edit_summary, code_sha256,"
                             " eval_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", inds)
            conn.executemany("INSERT INTO evaluations (eval_context, eval_key, code_sha256,"
                             " status, reason, details, timing, label, device, speedup, fitness,"
                             " seconds, run_id, generation, created)"
                             " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", evals)
            conn.executemany("INSERT INTO proposals (run_id, generation, island, slot, operator,"
                             " kind, outcome, reason, ind_id) VALUES (?,?,?,?,?,?,?,?,?)", props)
            inds, evals, props = [], [], []


def generate(run_dir: Path, individuals: int, seed: int = 46) -> Path:
    """A run directory with about ``individuals`` individuals (see the module docstring)."""
    seed_run(run_dir)
    rng = random.Random(seed)
    conn = sqlite3.connect(run_dir / "archive.db", isolation_level=None)
    try:
        real = [r[0] for r in conn.execute("SELECT edits FROM individuals WHERE n_edits > 0")]
        g0, state = conn.execute("SELECT generation, state FROM checkpoints"
                                 " ORDER BY generation DESC LIMIT 1").fetchone()
        context = conn.execute("SELECT eval_context FROM runs").fetchone()[0]
        have = conn.execute("SELECT COUNT(*) FROM individuals").fetchone()[0]
        conn.execute("BEGIN")
        _rows(conn, g0, max(0, individuals - have), real, context, rng)
        doc = json.loads(state)
        g_last = conn.execute("SELECT MAX(generation) FROM individuals").fetchone()[0]
        doc["generation"] = g_last
        doc["spent"]["evaluations"] = conn.execute("SELECT COUNT(*) FROM evaluations"
                                                   ).fetchone()[0]
        if g_last > g0:
            conn.execute("INSERT INTO checkpoints (run_id, generation, state, created)"
                         " VALUES (1, ?, ?, ?)", (g_last, json.dumps(doc), time.time()))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return run_dir


def _rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class Server:
    """``asmevo serve`` on a free port, in a child process."""

    def __init__(self, root: Path):
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "asmevo.cli", "serve", str(root),
                                      "--port", "0"], cwd=ROOT, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if "http://" not in line:
            raise SystemExit(f"serve did not start: {line}{self.proc.stdout.read()}")
        self.url = line.split()[2]
        self.start_rss = _rss_kb(self.proc.pid, "VmRSS")

    def get(self, path: str) -> float:
        t0 = time.perf_counter()
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=600) as r:
            r.read()
        return time.perf_counter() - t0

    def cpu(self) -> float:
        """CPU seconds (user + system) the server has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> tuple[float, float]:
        peak = _rss_kb(self.proc.pid, "VmHWM") / 1024
        growth = peak - self.start_rss / 1024
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        return peak, growth


PAINTED = ("document.querySelectorAll('#cards .card').length > 0 && "
           "document.querySelectorAll('#individuals tr[data-i]').length > 0")
COMPLETE = "document.body.dataset.generation"
SELECTED = "document.querySelectorAll('#diff tr').length > 1"


class Browser:
    """Headless chromium, started before the server (its start is not timed)."""

    def __init__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        self.profile = tempfile.mkdtemp(prefix="bench-serve-chromium-")
        for f in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", f"--user-data-dir={self.profile}"):
            opts.add_argument(f)
        opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
        opts.page_load_strategy = "none"        # get() returns at once: the page is polled
        self.drv = webdriver.Chrome(service=Service(shutil.which("chromedriver")),
                                    options=opts)

    def close(self) -> None:
        self.drv.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


def first_paint(drv, url: str) -> tuple[float, float, float]:
    """Seconds from navigation to the first paint (the run's cards and a page of
    individuals), to every panel drawn, and to the best individual's listing."""
    try:
        t0 = time.perf_counter()
        drv.get(url)
        seen: dict[str, float] = {}
        while time.perf_counter() - t0 < 600 and len(seen) < 3:
            for name, script in (("painted", PAINTED), ("complete", COMPLETE),
                                 ("selected", SELECTED)):
                if name not in seen and drv.execute_script("return " + script):
                    seen[name] = time.perf_counter() - t0
            time.sleep(0.02)
        return seen.get("painted"), seen.get("complete"), seen.get("selected")
    finally:
        drv.get("about:blank")


ENDPOINTS = ("/api/summary", "/api/curves", "/api/operators", "/api/individuals",
             "/api/lineage")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--individuals", type=int, default=200_000)
    p.add_argument("--dir", help="where the run directory goes (kept; reused if present)")
    p.add_argument("--no-browser", action="store_true", help="endpoint timings only")
    args = p.parse_args(argv)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-serve-"))
    run_dir = base / "run"
    try:
        if not (run_dir / "archive.db").exists():
            t0 = time.perf_counter()
            generate(run_dir, args.individuals)
            print(f"generate_s={time.perf_counter() - t0:.1f}")
        conn = sqlite3.connect(f"file:{run_dir / 'archive.db'}?mode=ro", uri=True)
        print(f"individuals={conn.execute('SELECT COUNT(*) FROM individuals').fetchone()[0]}")
        conn.close()
        print(f"archive_bytes={(run_dir / 'archive.db').stat().st_size}")
        for path in ENDPOINTS:
            srv = Server(run_dir)
            try:
                print(f"{path.rsplit('/', 1)[1]}_s={srv.get(path):.3f}")
            finally:
                srv.close()
        browser = None if args.no_browser else Browser()
        try:
            srv = Server(run_dir)       # navigation follows at once: the page meets a cold
            try:                        # server, whose first read started with it
                if browser is not None:
                    cpu = srv.cpu()
                    for name, value in zip(("first_paint_s", "all_panels_s", "best_selected_s"),
                                           first_paint(browser.drv, srv.url)):
                        print(f"{name}={value:.3f}")
                    print(f"server_cpu_s={srv.cpu() - cpu:.2f}")
                    painted, _, _ = first_paint(browser.drv, srv.url)
                    print(f"reload_first_paint_s={painted:.3f}")
                for path in ENDPOINTS:
                    srv.get(path)
            finally:
                peak, growth = srv.close()
        finally:
            if browser is not None:
                browser.close()
        print(f"server_peak_rss_mb={peak:.0f}")
        print(f"load_average={os.getloadavg()[0]:.1f}")
        print(f"server_rss_growth_mb={growth:.0f}")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
