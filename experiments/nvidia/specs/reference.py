"""References for the sm_90 specs: each kernel folder's own ``reference``, by folder name.

A spec here names its function with ``reference = "<folder>"``; the spec loader looks
for reference.py beside the spec, so this one file re-exports every folder's.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _from_folder(folder: str):
    def reference(args: dict) -> dict:
        path = KERNELS / folder / "reference.py"
        spec = importlib.util.spec_from_file_location(f"asmevo_ref_sm90_{folder}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.reference(args)
    reference.__name__ = folder
    return reference


for _folder in sorted(p.name for p in KERNELS.iterdir() if (p / "reference.py").exists()):
    globals()[_folder] = _from_folder(_folder)
