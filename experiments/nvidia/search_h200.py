"""Short engine searches on the H200: every sm_90 corpus kernel, measured, K0 as the noise bound.

For each ``specs/<k>.toml`` a child process runs one ``asmevo`` search (the engine
itself: config -> run directory -> :class:`asmevo.engine.engine.Engine`) with::

    [run]       target = "nvidia", device = "cuda", timing = "measured",
                size = "small" (every input set checked bit-equal there),
                timing_size = "large" (one more input set checked there, then timed)
    [engine]    1 island x population 8 x <= 30 generations
    [operators] sass_move, sass_retime
    [budget]    evaluations = 200, wall_seconds = this kernel's share of the deadline

then re-times its best bit-equal candidate against K0 (``device.time([K0, K0, K1])``,
interleaved, L2 flushed, 60 repetitions after 5 warm-ups) at the large size: the
speedup is K0's median over K1's, and K0 timed against itself (median ratio of
the two K0 series, and their interquartile spread) is the noise bound. A child
per kernel keeps a GPU fault in one search from poisoning the next (CUDA
contexts are per process); with ``--gpus N`` N children run at once, one per
GPU (``CUDA_VISIBLE_DEVICES``). Every candidate that was not bit-equal is kept
in the result with its edits: a legal edit that mismatches is a hole in the
legality rules.

    # on the GPU machine (nvdisasm carried in .nvbin, wheels in .whl)
    python experiments/nvidia/search_h200.py --out $OUT --budget 480 --gpus 2
    # on the CPU, everything but the GPU (a fake cuda device: outputs all zero,
    # random times; candidates are verified in-process)
    python experiments/nvidia/search_h200.py --out /tmp/nvs --budget 60 --fake --only tri_add

Writes ``search_h200.json`` and ``search_h200.md`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPECS = HERE / "specs"
OVERHEAD_S = 15.0        # child start, K0 recovery, reference runs, export, re-timing
RETIME_REPS, RETIME_WARMUP = 60, 5

CONFIG = """\
[run]
name = "{name}"
seed = {seed}
spec = "{spec}"
size = "{size}"
timing_size = "{timing_size}"
target = "nvidia"
device = "cuda"
timing = "measured"
notebook = 0

[engine]
islands = 1
population = {population}
generations = {generations}
tournament = 3
elite = 1
hall_of_fame = 5

[operators]
sass_move = {{ weight = 2.0, max_distance = 16 }}
sass_retime = 1.0
{ptx}
[budget]
evaluations = {evaluations}
wall_seconds = {wall}

[parallel]
n_jobs = 1
"""


# -- a stand-in for the GPU, for a CPU dry run of the whole pipeline --------------------
def _fake_cuda() -> type:
    """The stand-in's class, a Device (defined once asmevo is importable from ROOT)."""
    from asmevo.runtime.device import BufferImage, Device, RunResult

    class FakeCuda(Device):
        """Outputs all zero whatever the code (so every candidate is 'equal'), random
        times; every other capability as the cuda device (the base class's defaults)."""

        targets = ("nvidia",)
        measured = True
        name = "fake-cuda"

        def __init__(self, **_):
            import random
            self._rng = random.Random(0)

        def run(self, code, spec, buffers, *, guard_bytes=256, guard_pattern=0xA5, variant=0):
            import numpy as np

            from asmevo.targets.nvidia.cubin import load
            load(code).kernel(spec.kernel)
            g = bytes([guard_pattern]) * guard_bytes
            out = {a.name: BufferImage(np.zeros_like(buffers[a.name]) if a.output
                                       else buffers[a.name].copy(), g, g) for a in spec.buffers}
            return RunResult("ok", buffers=out)

        def time(self, codes, spec, buffers, *, warmup=3, repetitions=20):
            return [[1e-4 * self._rng.lognormvariate(0, 0.01) for _ in range(repetitions)]
                    for _ in codes]

    return FakeCuda


class _InProcess:
    """Stands in for the spawned verification worker in a dry run (a spawned
    interpreter would not see the fake device)."""

    def __init__(self):
        self.warm: set = set()      # as isolate.Worker: what this process has set up

    def setup(self, key, fn, *args, timeout):
        fn(*args)
        self.warm.add(key)

    def call(self, fn, *args, timeout, counted=True):
        return fn(*args)


def _install_fake() -> None:
    from asmevo.runtime import registry
    from asmevo.verify import isolate
    import os
    registry.REGISTRY["cuda"] = _fake_cuda()
    isolate._WORKERS[(os.getpid(), "spawn")] = _InProcess()     # isolate.worker's key


# -- child: one kernel ------------------------------------------------------------------
def _quartile_spread(xs: list[float]) -> float:
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def one(kernel: str, work: Path, wall: float, *, size: str, timing_size: str,
        population: int, generations: int, seed: int, ptx: float = 0.0) -> dict:
    from asmevo.archive import queries
    from asmevo.archive.store import ArchiveError
    from asmevo.engine.command import open_engine
    from asmevo.engine.config import load_config
    from asmevo.engine.rundir import create_run
    from asmevo.verify.evaluate import k0_state

    t0 = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "config.toml"
    cfg.write_text(CONFIG.format(name=f"h200-{kernel}", seed=seed, spec=SPECS / f"{kernel}.toml",
                                 size=size, timing_size=timing_size, population=population,
                                 generations=generations, evaluations=200,
                                 wall=round(max(wall, 1.0), 1),
                                 ptx=f"ptx_rebuild = {ptx}\n" if ptx else ""))
    config = load_config(cfg)
    res: dict = {"kernel": kernel, "size": size, "timing_size": timing_size,
                 "wall_budget_s": round(wall, 1)}
    with create_run(config, work / "run") as run:
        engine = open_engine(run)
        try:
            res["stop_reason"] = engine.run()
        finally:
            engine.pool.close()
        st = engine.state
        res["generations"] = st.generation + 1
        res["evaluations"] = st.spent.evaluations
        res["accepted"] = st.spent.accepted
        res["search_s"] = round(time.perf_counter() - t0, 1)
        rows = run.archive.conn.execute(
            "SELECT status, COUNT(*) FROM evaluations WHERE eval_context = ? GROUP BY status",
            (run.evaluator.context_key,)).fetchall()
        res["verdicts"] = {r[0]: r[1] for r in rows}
        # every candidate that was not bit-equal: why, and the edits that made it (a legal
        # edit that mismatches is a hole in the legality rules)
        bad = run.archive.conn.execute(
            "SELECT e.status, e.reason, i.edits FROM evaluations e JOIN individuals i "
            "ON i.eval_key = e.eval_key WHERE e.eval_context = ? AND e.status != 'equal'",
            (run.evaluator.context_key,)).fetchall()
        res["rejected"] = [{"status": r[0], "reason": r[1], "edits": r[2]} for r in bad[:50]]
        res["evals_per_s"] = round(st.spent.evaluations / max(res["search_s"], 1e-9), 3)
        try:
            best = queries.best_individual(run.archive, run.run_id)
        except ArchiveError as exc:
            res["error"] = f"no bit-equal candidate: {exc}"
            return res
        res["best"] = {"individual": best["ind_id"], "search_speedup": float(best["fitness"]),
                       "edits": int(best["n_edits"]), "verdict": best["reason"],
                       "code_sha256": best["code_sha256"],
                       "notes": [e.get("note") or e.get("operator")
                                 for e in json.loads(best["edits"] or "[]")]}
        st0 = k0_state(run.evaluator.context)
        ts = k0_state(run.evaluator.context).timing_inputs()
        k1 = run.blobs.get(best["code_sha256"])
        (work / "best.cubin").write_bytes(k1)
        device = st0.device
        res["device"] = device.name + (f" ({device.gpu_name})" if hasattr(device, "gpu_name")
                                       else "")
        a, b, c = device.time([st0.k0_bytes, st0.k0_bytes, k1], ts.spec, ts.values,
                              warmup=RETIME_WARMUP, repetitions=RETIME_REPS)
        ma, mb, mc = (statistics.median(x) for x in (a, b, c))
        res["retime"] = {
            "repetitions": RETIME_REPS, "k0_median_us": round((ma + mb) / 2 * 1e6, 3),
            "k1_median_us": round(mc * 1e6, 3),
            "speedup": (ma + mb) / 2 / mc,
            "k0_vs_k0": ma / mb,
            "k0_spread": max(_quartile_spread(a), _quartile_spread(b)),
            "k1_spread": _quartile_spread(c)}
        res["total_s"] = round(time.perf_counter() - t0, 1)
    return res


# -- parent: every kernel within the deadline -------------------------------------------
def _fmt(x, f="{:.4f}"):
    return "-" if x is None else f.format(x)


def _markdown(results: list[dict], meta: dict) -> str:
    lines = [f"Measured on {meta['device']} ({meta['date']}); size `{meta['size']}`; "
             f"{meta['budget_s']:.0f} s budget over {len(results)} kernels.", "",
             "| kernel | evals | equal | other verdicts | K0 median (us) | K1 median (us) "
             "| speedup (measured) | K0 vs K0 (measured) | K0 spread | K1 edits | beyond noise? |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rt = r.get("retime") or {}
        noise = abs(rt["k0_vs_k0"] - 1) + rt["k0_spread"] / 2 if rt else None
        beyond = ("-" if not rt else
                  "yes" if rt["speedup"] - 1 > noise else
                  "slower" if 1 - rt["speedup"] > noise else "no")
        lines.append(
            f"| {r['kernel']} | {r.get('evaluations', '-')} | {r.get('accepted', '-')} | "
            f"{_others(r)} | {_fmt(rt.get('k0_median_us'), '{:.2f}')} | {_fmt(rt.get('k1_median_us'), '{:.2f}')} "
            f"| {_fmt(rt.get('speedup'))} | {_fmt(rt.get('k0_vs_k0'))} | "
            f"{_fmt(rt.get('k0_spread'), '{:.2%}')} | "
            f"{(r.get('best') or {}).get('edits', '-')} | {beyond}"
            + (f" ({r['error'][:60]})" if r.get("error") else "") + " |")
    sp = [r["retime"]["speedup"] for r in results if r.get("retime")]
    kk = [r["retime"]["k0_vs_k0"] for r in results if r.get("retime")]
    if sp:
        lines += ["", f"Geomean speedup (measured, {len(sp)} kernels): "
                  f"{math.exp(statistics.fmean(math.log(x) for x in sp)):.4f}; "
                  f"K0 vs K0: median {statistics.median(kk):.4f}, range "
                  f"{min(kk):.4f} .. {max(kk):.4f}."]
    wrong = sum((r.get("verdicts") or {}).get(v, 0) for r in results
                for v in ("mismatch", "nondeterministic", "fault"))
    lines += ["", f"Candidates that passed the legality rules but were not bit-equal "
              f"(mismatch, nondeterministic, fault): {wrong}."]
    return "\n".join(lines) + "\n"


def _others(r: dict) -> str:
    v = {k: n for k, n in (r.get("verdicts") or {}).items() if k != "equal"}
    return ", ".join(f"{k} {n}" for k, n in sorted(v.items())) or "-"


def _parse(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="where search_h200.json / .md go")
    ap.add_argument("--work", default=str(ROOT / ".nvsearch"), help="run directories")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds for all kernels")
    ap.add_argument("--only", nargs="*", help="kernel names (default: every spec)")
    ap.add_argument("--size", default="small", help="verify every input set at this size")
    ap.add_argument("--timing-size", default="large", help="check once more and time here")
    ap.add_argument("--gpus", type=int, default=1, help="kernels searched at once, one per GPU")
    ap.add_argument("--population", type=int, default=8)
    ap.add_argument("--generations", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ptx", type=float, default=0.0,
                    help="weight of the ptx_rebuild operator (0: moves and re-timing only)")
    ap.add_argument("--fake", action="store_true", help="CPU dry run: a fake cuda device")
    ap.add_argument("--one", help=argparse.SUPPRESS)          # child mode: one kernel
    ap.add_argument("--wall", type=float, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = _parse(argv)
    if args.fake:
        _install_fake()
    if args.one:
        _child(args)
        return 0
    kernels = args.only or sorted(p.stem for p in SPECS.glob("*.toml"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results = _search_all(args, kernels, out, work)
    results.sort(key=lambda r: r["kernel"])
    meta = {"device": next((r["device"] for r in results if r.get("device")), "?"),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "size": f"{args.size} (verify), {args.timing_size} (check + time)", "gpus": args.gpus,
            "budget_s": args.budget, "fake": args.fake,
            "driver": _driver(), "python": sys.version.split()[0]}
    (out / "search_h200.json").write_text(json.dumps({"meta": meta, "kernels": results},
                                                     indent=2, default=str))
    md = _markdown(results, meta)
    (out / "search_h200.md").write_text(md)
    print(md)
    return 0


def _child(args) -> None:
    """Child mode (``--one``): one kernel's search; its result (or error) as result.json."""
    work = Path(args.work) / args.one
    try:
        res = one(args.one, work, args.wall, size=args.size, timing_size=args.timing_size,
                  population=args.population, generations=args.generations, seed=args.seed,
                  ptx=args.ptx)
    except Exception as exc:   # noqa: BLE001 - the parent reports it per kernel
        import traceback
        res = {"kernel": args.one, "error": f"{type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc(limit=8)}
    (work / "result.json").write_text(json.dumps(res, indent=2, default=str))


def _search_all(args, kernels: list[str], out: Path, work: Path) -> list[dict]:
    """Every kernel's search in a child, at most one per GPU at a time, each given its
    share of what is left of the budget; results as they finish (also written to
    ``out`` after each)."""
    deadline = time.monotonic() + args.budget
    queue, running, results = list(kernels), {}, []
    while queue or running:
        for gpu in range(args.gpus):
            if gpu in running or not queue:
                continue
            k = queue.pop(0)
            # this GPU's share: what is left, over the kernels it will still take
            turns = -(-(len(queue) + 1) // args.gpus)
            share = max((deadline - time.monotonic()) / turns, 10.0)
            running[gpu] = _start(args, k, gpu, share, work)
        time.sleep(0.5)
        for gpu, (k, proc, t0, limit, log) in list(running.items()):
            late = time.monotonic() - t0 > limit
            if proc.poll() is None and not late:
                continue
            if late and proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            del running[gpu]
            res = _collect(k, gpu, work, t0, limit, late)
            results.append(res)
            (out / "search_h200.json").write_text(json.dumps(results, indent=2, default=str))
    return results


def _start(args, k: str, gpu: int, share: float, work: Path):
    """Kernel ``k``'s child on ``gpu`` with ``share`` seconds: (k, process, start, limit, log)."""
    wall = max(share - OVERHEAD_S, 3.0)
    cmd = [sys.executable, __file__, "--one", k, "--wall", str(wall),
           "--work", str(work), "--size", args.size, "--timing-size", args.timing_size,
           "--population", str(args.population), "--generations", str(args.generations),
           "--seed", str(args.seed), "--ptx", str(args.ptx)] + \
        (["--fake"] if args.fake else [])
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu)) if args.gpus > 1 else None
    log = open(work / f"{k}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    return k, proc, time.monotonic(), share + 60, log


def _collect(k: str, gpu: int, work: Path, t0: float, limit: float, late: bool) -> dict:
    """A finished (or killed) child's result, printed as one line."""
    rj = work / k / "result.json"
    tail = (work / f"{k}.log").read_text(errors="replace")[-2000:]
    res = json.loads(rj.read_text()) if rj.exists() else {
        "kernel": k, "error": (f"child timed out after {limit:.0f} s; " if late else "")
        + tail}
    res["child_s"] = round(time.monotonic() - t0, 1)
    res["gpu"] = gpu
    rt = res.get("retime") or {}
    print(f"{k:24s} gpu {gpu} evals {res.get('evaluations', '-'):>4} "
          f"verdicts {res.get('verdicts', '-')}  speedup {_fmt(rt.get('speedup'))}  "
          f"K0/K0 {_fmt(rt.get('k0_vs_k0'))}  {res.get('child_s')} s  "
          f"{res.get('error', '')[:200]}", flush=True)
    return res


def _driver() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
