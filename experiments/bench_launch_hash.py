#!/usr/bin/env python3
"""A hash of every launch a candidate check makes, on every corpus object: two checkouts
print the same hashes when a change to the emulator is exact.

    python experiments/bench_launch_hash.py [--root CHECKOUT] [--kernels a,b]

For each kernel of experiments/kernels and each of its objects (K0 at ``small``): the
launches of one candidate check (``bench_fastpath.corpus_requests``: every input set,
run variants 0 and 2, the serial schedules, approximate member 1) through one batched
pass, and the first three of them run alone; per launch its status, message, counts,
poison reads, fault address, outputs, guards and per-instruction profile. ``--root``
hashes another checkout's code (its asmevo and its bench_fastpath) on its own corpus,
so a checkout from before this script can be compared too. Prints one line per object
and ends with ``objects=`` and ``launch_hash=`` (all objects' hashes together).
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _update(h, res, fields) -> None:
    for f in fields:
        h.update(repr(getattr(res, f)).encode())
    for k in sorted(res.outputs):
        h.update(k.encode() + res.outputs[k].tobytes())
    h.update(repr(res.guards).encode())
    for k in sorted(res.profile):
        h.update(res.profile[k].counts.tobytes() + res.profile[k].lanes.tobytes())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose code is hashed")
    ap.add_argument("--kernels", default="", help="comma-separated kernel folders (all)")
    a = ap.parse_args()
    root = Path(a.root).resolve()
    if not (root / "asmevo").is_dir() or not (root / "experiments" / "bench_fastpath.py").is_file():
        print(f"bench_launch_hash.py: error: {root}: not an asmevo checkout with "
              "experiments/bench_fastpath.py", file=sys.stderr)
        return 2
    sys.path[:0] = [str(root), str(root / "experiments")]
    import bench_fastpath as fp
    from asmevo.emu import Emulator
    from asmevo.emu.run.batch import launch_many
    from asmevo.launch.spec import load_spec
    want = {k for k in a.kernels.split(",") if k}
    total, n = hashlib.sha256(), 0
    for d in sorted((root / "experiments" / "kernels").iterdir()):
        if not (d / "spec.toml").exists() or want and d.name not in want:
            continue
        spec = load_spec(d, "small")
        for path in [spec.code_object, *spec.code_objects.values()]:
            emu, h = Emulator(path), hashlib.sha256()
            reqs = fp.corpus_requests(spec)
            many = launch_many(emu, spec, reqs)
            h.update(b"batched" if many is not None else b"alone")
            for res in many or []:
                _update(h, res, fp.FIELDS)
            for r in reqs[:3]:
                _update(h, emu.launch(spec, r.inputs, guard_bytes=r.guard_bytes,
                                      guard_fill=r.guard_fill, garbage_seed=r.garbage_seed,
                                      schedule=r.schedule, approx_variant=r.approx_variant),
                        fp.FIELDS)
            print(f"{d.name:24s} {path.name:44s} {h.hexdigest()[:16]}", flush=True)
            total.update(h.digest())
            n += 1
    print(f"objects={n}")
    print(f"launch_hash={total.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
