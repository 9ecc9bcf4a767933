"""K0 and an individual side by side: the kernel's listing, aligned, hot windows shaded.

The individual's program is K0 with its archived edits applied (the edits are
replayable values, so any individual, accepted or not, is shown without its
code object); K0 comes from the spec the run names and must still hash to the
run's ``k0_sha256``. Only reads: the spec folder and the archive copy.
"""
from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from archive.store import Archive, ArchiveError
from asmevo.edits import edits_from_json


@dataclass(frozen=True)
class K0:
    target: object
    code_object: object
    program: object
    kernel: str


@lru_cache(maxsize=16)
def _k0(target_name: str, path: str, sha256: str, kernel: str) -> K0:
    from asmevo.targets import get_target

    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ArchiveError("K0's file no longer matches the run's k0_sha256 "
                           "(rebuilt or replaced since the run)", path=path)
    target = get_target(target_name)
    co = target.load(data, path=path)
    return K0(target, co, target.recover(co), kernel)


def k0_of(archive: Archive) -> K0:
    """The run's K0, recovered (cached by path and hash)."""
    from asmevo.launch.spec import load_spec

    run = archive.run()
    cfg = json.loads(run["config_json"])["run"]
    path = cfg.get("code_object") or str(load_spec(run["spec_path"], run["spec_size"]).code_object)
    return _k0(cfg.get("target", "amdgpu"), path, run["k0_sha256"], run["kernel"])


def _shades(details: dict, kernel: str, n: int) -> list[float]:
    """Per instruction: the share of modeled time of the hot window it lies in (0 if none)."""
    share = [0.0] * n
    for fn, start, end, s, *_ in details.get("hot_windows") or ():
        if fn != kernel:
            continue
        for i in range(max(0, int(start)), min(n, int(end))):
            share[i] = max(share[i], float(s))
    return share


def _details(archive: Archive, ind_id: str) -> tuple[str, dict]:
    found = archive.edits_and_details(ind_id)
    if found is None:
        raise ArchiveError(f"no individual {ind_id!r} in this run")
    return found


def side_by_side(archive: Archive, ind_id: str) -> dict:
    """Rows ``[tag, k0_index, k0_text, k0_share, ind_index, ind_text, ind_share]`` of the kernel."""
    k0 = k0_of(archive)
    edits_json, details = _details(archive, ind_id)
    _, k0_details = _details(archive, "k0")
    program = k0.target.apply_edits(k0.program, edits_from_json(edits_json))
    left = k0.target.listing(k0.program, k0.kernel)
    right = k0.target.listing(program, k0.kernel)
    ls, rs = _shades(k0_details, k0.kernel, len(left)), _shades(details, k0.kernel, len(right))
    rows = []
    sm = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, a0, a1, b0, b1 in sm.get_opcodes():
        for k in range(max(a1 - a0, b1 - b0)):
            i, j = a0 + k, b0 + k
            li = i if i < a1 else None
            rj = j if j < b1 else None
            rows.append([tag, li, left[li] if li is not None else "",
                         ls[li] if li is not None else 0.0,
                         rj, right[rj] if rj is not None else "",
                         rs[rj] if rj is not None else 0.0])
    changed = sum(1 for r in rows if r[0] != "equal")
    return {"kernel": k0.kernel, "ind_id": ind_id, "rows": rows, "changed_rows": changed,
            "abi": k0.target.describe(k0.code_object, k0.program, k0.kernel)}
