#!/usr/bin/env python3
"""Smoke test of the cuda device and of the move operator's legality on a real GPU.

Two steps, on two machines:

    # here (CPU, needs nvdisasm): K0 + legal reordered/re-timed candidates per kernel
    python experiments/nvidia/smoke_h200.py --make-candidates .nvsmoke
    # on the GPU machine: K0 against numpy (small + large), event timing, and every
    # candidate bit-compared with K0 through asmevo.verify.differential
    python experiments/nvidia/smoke_h200.py --candidates .nvsmoke --out $OUT

The second step needs no NVIDIA tools, only cuda-bindings, numpy and pyelftools.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from asmevo.launch.spec import load_spec, make_inputs, np_dtype

SPECS = ROOT / "experiments" / "nvidia" / "specs"


def make_candidates(out: Path, seed: int = 0, per_kernel: int = 2, moves: int = 6) -> None:
    from asmevo.targets.nvidia import edit as E
    from asmevo.targets.nvidia.cubin import load
    from asmevo.targets.nvidia.program import recover
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    manifest = {}
    for spec_path in sorted(SPECS.glob("*.toml")):
        spec = load_spec(spec_path)
        k0 = load(spec.code_object)
        prog = recover(k0)
        entries = []
        for c in range(per_kernel + 1):
            code = prog.kernel(spec.kernel)
            log = []
            if c < per_kernel:        # reorder: `moves` random legal memory-instruction moves
                movable = [i for i, ins in enumerate(code.instructions) if ins.ops.movable]
                tries = 0
                while len(log) < moves and tries < 60 and movable:
                    tries += 1
                    i = rng.choice(movable)
                    targets = E.legal_moves(code, i, max_distance=12, compensate=(c == 0))
                    if not targets:
                        continue
                    to = rng.choice(targets)
                    code = E.move(code, i, to, compensate=(c == 0))
                    log.append(f"move {i}->{to} ({code.instructions[to].text})")
                    movable = [k for k, ins in enumerate(code.instructions) if ins.ops.movable]
            else:                     # re-time: longer stalls and flipped yield bits
                for _ in range(moves):
                    i = rng.randrange(len(code.instructions))
                    st = code.instructions[i].control.stall
                    y = code.instructions[i].control.yield_bit
                    try:
                        code = E.retime(code, i, stall=min(11, st + rng.randint(1, 3)), yield_bit=y)
                        log.append(f"retime {i}: stall {st}->{code.instructions[i].control.stall}")
                    except E.IllegalEdit as exc:
                        log.append(f"refused retime {i}: {exc}")
            data = E.build(prog.with_kernel(code))
            name = f"{spec.name}.cand{c}.cubin"
            (out / name).write_bytes(data)
            entries.append({"file": name, "edits": log, "identical_to_k0": data == k0.data})
            print(f"{name}: {len(log)} edits, differs from K0: {data != k0.data}", flush=True)
        manifest[spec.name] = entries
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _close(spec, got: dict, want: dict) -> tuple[bool, str]:
    worst = ""
    for name, ref in want.items():
        a = next(x for x in spec.args if x.name == name)
        g = got[name].data
        if a.dtype == "bfloat16":
            g = (g.astype(np.uint32) << 16).view(np.float32)
        g = g.astype(np.float64)
        r = np.asarray(ref, dtype=np.float64).reshape(-1)
        if g.shape != r.shape:
            return False, f"{name}: shape {g.shape} vs {r.shape}"
        if np.isnan(g).any():
            return False, f"{name}: NaN in output"
        err = np.abs(g - r)
        ok = np.all(err <= spec.atol + spec.rtol * np.abs(r))
        rel = float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30))
        worst += f"{name}: max|err|={err.max():.2e} rel={rel:.1e} "
        if not ok:
            return False, worst
    return True, worst


def run_gpu(cands: Path | None, out: Path, only: list[str] | None) -> int:
    from asmevo.runtime.cuda import CudaDevice
    from asmevo.verify.differential import differential, reference_runs
    from asmevo.verify.inputs import GUARD_BYTE, POISON_BYTE
    dev = CudaDevice()
    print(f"device: {dev.name} {dev.gpu_name}", flush=True)
    manifest = json.loads((cands / "manifest.json").read_text()) if cands else {}
    rows, failures, report = [], 0, {}
    for spec_path in sorted(SPECS.glob("*.toml")):
        name = spec_path.stem
        if only and name not in only:
            continue
        rec = report.setdefault(name, {})
        for size in ("small", "large"):
            spec = load_spec(spec_path, size)
            k0 = spec.code_object.read_bytes()
            vals = make_inputs(spec, 0)
            bufs = {a.name: (np.full(a.count, 0, np_dtype(a.dtype)) if a.output else vals[a.name])
                    for a in spec.buffers}
            for a in spec.buffers:
                if a.output:
                    bufs[a.name].view(np.uint8)[:] = POISON_BYTE
            t0 = time.time()
            res = dev.run(k0, spec, bufs | {a.name: vals[a.name] for a in spec.args
                                            if a.kind != "buffer"},
                          guard_bytes=256, guard_pattern=GUARD_BYTE)
            if not res.ok:
                rows.append((name, size, "FAULT", res.message[:60], "", ""))
                failures += 1
                continue
            guards = all(b.guard_before == bytes([GUARD_BYTE]) * 256 and
                         b.guard_after == bytes([GUARD_BYTE]) * 256 for b in res.buffers.values())
            ok, err = _close(spec, res.buffers, spec.expected(vals))
            ok = ok and guards
            failures += not ok
            med = ""
            if size == "large":
                ts = dev.time([k0], spec, vals, warmup=5, repetitions=30)[0]
                med = f"{statistics.median(ts) * 1e6:.1f}"
                rec["k0_median_us"] = statistics.median(ts) * 1e6
                rec["k0_spread"] = (max(ts) - min(ts)) / statistics.median(ts)
            cand_status = []
            ref = (reference_runs(dev, k0, spec, seeds=(0, 1), special=True)
                   if manifest.get(name) else None)
            for c in manifest.get(name, []):
                k1 = (cands / c["file"]).read_bytes()
                v = differential(dev, ref, k1, spec, runs=2)
                cand_status.append(f"{c['file'].split('.')[-2]}:{v.status}")
                rec.setdefault("candidates", {}).setdefault(c["file"], {})[size] = str(v)
                if size == "large" and v.equal:
                    tk = dev.time([k0, k1], spec, vals, warmup=5, repetitions=30)
                    rec["candidates"][c["file"]]["large_median_us"] = [
                        statistics.median(t) * 1e6 for t in tk]
                failures += not v.equal
            rec[size] = {"ok": bool(ok), "guards": guards, "err": err.strip(),
                         "wall_s": round(time.time() - t0, 2)}
            rows.append((name, size, "ok" if ok else "WRONG", err.strip()[:48], med,
                         " ".join(cand_status)))
            print(rows[-1], flush=True)
    (out / "smoke.json").write_text(json.dumps(report, indent=1))
    print(f"\n{'kernel':24s} {'size':6s} {'vs numpy':8s} {'K0 median us':>12s}  candidates")
    for r in rows:
        print(f"{r[0]:24s} {r[1]:6s} {r[2]:8s} {r[4]:>12s}  {r[5]}")
    print(f"failures: {failures}")
    return 1 if failures else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-candidates", type=Path, metavar="DIR")
    ap.add_argument("--candidates", type=Path, metavar="DIR")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--only", nargs="+")
    a = ap.parse_args()
    if a.make_candidates:
        make_candidates(a.make_candidates)
        return
    a.out.mkdir(parents=True, exist_ok=True)
    sys.exit(run_gpu(a.candidates, a.out, a.only))


if __name__ == "__main__":
    main()
