"""Re-extract ``aiter_rows.csv``: AITer's measured rows whose exact gfx942 binaries exist.

    python experiments/fidelity/extract_aiter.py AITER_CHECKOUT [--out experiments/fidelity/aiter_rows.csv]

AITER_CHECKOUT is a checkout of github:ROCm/aiter (a working tree, or a bare git directory:
then the files are read from its HEAD with ``git show``). The rows come from its tuned tables
(``aiter/configs/*.csv`` and ``aiter/configs/model_configs/*.csv``): every row on gfx942 (a
``gfx`` column of ``gfx942``; tables without one -- the fused-MoE ones -- count as gfx942 when
``cu_num`` is 80 (MI308X) or 304 (MI300X), gfx950 parts have 256) whose kernel name
(``kernelName``; ``kernelName1``, the stage-1 kernel, for MoE) is listed in one of
``hsa/gfx942/*/*.csv`` or ``hsa/gfx942/*/*/*.csv`` (``knl_name`` -> ``co_name``), i.e. an
AITer asm kernel whose ``.co`` is in the same checkout. The measured time is the table's
``us`` (``us1`` for the MoE stage-1 kernel, which the tuner times alone). AITer's tuners time
each candidate kernel on the GPU named by ``cu_num``; the tables do not say more (clocks,
ROCm version), and this script adds nothing to them. One thing it takes out: rows whose
measurement (``us``, ``tflops`` and ``bw``, for the same kernel in the same table) repeats
unchanged across different shapes -- one table gives the fused-MoE stage 1 the same 390 us
for 2,048 and for 32,768 tokens -- are copies, not a measurement of each shape, and every
row of such a group is left out (counted in the summary).

License: AITer is MIT (``NOTICE`` beside this file); the rows are AITer's data, copied
unmodified except for the columns chosen.
"""
from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

COLUMNS = ("table", "family", "cu_num", "kernel", "co", "M", "N", "K", "splitK", "us",
           "token", "model_dim", "inter_dim", "expert", "topk", "block_m", "act_type",
           "q_type", "doweight", "tflops", "bw")
CU_GFX942 = ("80", "304")


class Checkout:
    """Files of an AITer checkout: a working tree or a bare git directory (its HEAD)."""

    def __init__(self, root: Path):
        self.root = root
        self.bare = not (root / "aiter" / "configs").is_dir()
        if self.bare and not (root / "HEAD").exists():
            raise SystemExit(f"{root}: neither an AITer working tree nor a git directory")

    def files(self) -> list[str]:
        if not self.bare:
            return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*.csv"))
        out = subprocess.run(["git", "--git-dir", str(self.root), "ls-tree", "-r",
                              "--name-only", "HEAD"], capture_output=True, text=True, check=True)
        return sorted(out.stdout.split())

    def text(self, path: str) -> str:
        if not self.bare:
            return (self.root / path).read_text()
        return subprocess.run(["git", "--git-dir", str(self.root), "show", f"HEAD:{path}"],
                              capture_output=True, text=True, check=True).stdout

    def commit(self) -> str:
        git = ["git", "--git-dir", str(self.root)] if self.bare else ["git", "-C", str(self.root)]
        got = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True)
        return got.stdout.strip() or "unknown"


def kernel_files(co: Checkout, files: list[str]) -> dict[str, tuple[str, str]]:
    """knl_name -> (family: the hsa/gfx942 folder, co path in the checkout)."""
    out = {}
    for f in files:
        parts = f.split("/")
        if len(parts) < 4 or parts[:2] != ["hsa", "gfx942"] or not f.endswith(".csv"):
            continue
        for r in csv.DictReader(io.StringIO(co.text(f))):
            if r.get("knl_name") and r.get("co_name"):
                out[r["knl_name"]] = (parts[2], "/".join(parts[:-1] + [r["co_name"]]))
    return out


def rows_of(co: Checkout, table: str, kernels: dict) -> list[dict]:
    out = []
    for r in csv.DictReader(io.StringIO(co.text(table))):
        gfx = r.get("gfx")
        cu = (r.get("cu_num") or "").strip()
        if (gfx or "gfx942") != "gfx942" or cu not in CU_GFX942:
            continue
        moe = "kernelName1" in r
        name = r.get("kernelName1" if moe else "kernelName", "")
        if name not in kernels or (r.get("libtype") or "asm") != "asm":
            continue
        us = r.get("us1" if moe else "us")
        try:
            if not float(us) > 0:
                continue
        except (TypeError, ValueError):
            continue
        family, path = kernels[name]
        row = {c: r.get(c, "") for c in COLUMNS}
        row.update(table=table.rsplit("/", 1)[-1], family=family, cu_num=cu, kernel=name,
                   co=path, us=us, doweight=r.get("doweight_stage1", ""))
        out.append(row)
    return out


def without_copies(rows: list[dict]) -> tuple[list[dict], int]:
    """The rows less every group whose measurement repeats unchanged across shapes."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r["table"], r["cu_num"], r["kernel"], r["us"], r["tflops"],
                           r["bw"]), []).append(i)
    drop = {i for g in groups.values() if len(g) > 1 for i in g}
    return [r for i, r in enumerate(rows) if i not in drop], len(drop)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("aiter", help="an AITer checkout (working tree or bare git directory)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("aiter_rows.csv")))
    args = ap.parse_args(argv)
    co = Checkout(Path(args.aiter))
    files = co.files()
    kernels = kernel_files(co, files)
    tables = [f for f in files if f.startswith("aiter/configs/") and f.endswith(".csv")]
    rows, copies = without_copies([r for t in tables for r in rows_of(co, t, kernels)])
    buf = io.StringIO()
    buf.write(f"# AITer (github:ROCm/aiter, MIT, NOTICE) commit {co.commit()}; "
              f"experiments/fidelity/extract_aiter.py\n")
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    Path(args.out).write_text(buf.getvalue())
    fams: dict[tuple[str, str], int] = {}
    for r in rows:
        fams[(r["family"], r["cu_num"])] = fams.get((r["family"], r["cu_num"]), 0) + 1
    for (fam, cu), n in sorted(fams.items()):
        print(f"{fam:20s} cu_num {cu:>3s}: {n} rows")
    print(f"rows={len(rows)} tables={len({r['table'] for r in rows})} kernels="
          f"{len({r['kernel'] for r in rows})} copies_left_out={copies} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
