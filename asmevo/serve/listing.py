"""K0 and an individual side by side: the kernel's listing, aligned, hot windows shaded.

The individual's program is K0 with its archived edits applied (the edits are
replayable values, so any individual, accepted or not, is shown without its
code object). K0 is the copy the run keeps in its own blob store
(``blobs/<sha>/<k0_sha256>.co``, checked against that hash): the dashboard reads no
path an archive names, since a crafted archive could name a FIFO, a device or a
file anywhere. A blob must be a regular file of at most ``ASMEVO_MAX_INPUT_BYTES``
inside the run directory (a link out of it is refused).
"""
from __future__ import annotations

import difflib
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

from asmevo.archive.blobs import BlobStore
from asmevo.archive.store import ArchiveError
from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.memo import cached
from asmevo.targets import ARCHIVED_BEFORE_TARGETS

BLOBS = "blobs"
MAX_EDITS = 5000        # edits of one individual replayed at most (a run makes about one
                        # per generation of a lineage)


@dataclass(frozen=True)
class K0:
    target: object
    code_object: object
    program: object
    kernel: str


@cached("serve.listing._k0", 16)
def _k0(target_name: str, path: str, sha256: str, kernel: str) -> K0:
    from asmevo.targets import get_target

    data = read_input(path, what="K0's code object (the run's blob)")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ArchiveError("K0's blob does not match the run's k0_sha256 (corrupt or "
                           "replaced)", path=path)
    target = get_target(target_name)
    co = target.load(data, path=path)
    return K0(target, co, target.recover(co), kernel)


def k0_path(run_dir: Path, sha256) -> Path:
    """Where the run keeps K0: inside ``run_dir``, or an error saying why not."""
    if not isinstance(sha256, str):
        raise ArchiveError("the run's k0_sha256 is not text", path=str(run_dir))
    path = BlobStore(run_dir / BLOBS).path(sha256, ".co")
    if not path.exists():
        raise ArchiveError(f"K0 is not in the run directory ({path.relative_to(run_dir)}); "
                           "runs started before asmevo kept it there get it from "
                           "`asmevo resume`. The dashboard reads no file an archive names",
                           path=str(run_dir))
    real, inside = path.resolve(), run_dir.resolve()
    if not real.is_relative_to(inside):
        raise ArchiveError(f"K0's blob {path.relative_to(run_dir)} leads out of the run "
                           "directory", path=str(run_dir))
    return real


def k0_of(view) -> K0:
    """The run's K0, recovered (cached by path and hash)."""
    run = view.run
    path = k0_path(Path(view.path).parent, run["k0_sha256"])
    return _k0(str(run["target"] or ARCHIVED_BEFORE_TARGETS), str(path), run["k0_sha256"],
               str(run["kernel"]))


def _windows(details, kernel: str, n: int) -> list[tuple[int, int, float]]:
    """The verdict's hot windows of ``kernel`` as ``(start, end, share)``, clipped to the
    listing's ``n`` lines (a window that is not ``[function, start, end, share, ...]``
    is left out)."""
    out = []
    wins = details.get("hot_windows") if isinstance(details, dict) else None
    for w in wins if isinstance(wins, list) else ():
        if not (isinstance(w, list) and len(w) >= 4 and w[0] == kernel
                and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                        for x in w[1:4]) and all(math.isfinite(x) for x in w[1:4])):
            continue
        lo, hi = max(0, int(min(w[1], n))), min(n, int(max(w[2], 0)))
        if lo < hi:
            out.append((lo, hi, float(w[3])))
    return out


def _shades(details, kernel: str, n: int) -> list[float]:
    """Per instruction: the share of modeled time of the hot window it lies in (0 if none)."""
    share = [0.0] * n
    for lo, hi, s in _windows(details, kernel, n):
        for i in range(lo, hi):
            share[i] = max(share[i], s)
    return share


def _edits(raw) -> tuple[Edit, ...]:
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise AsmevoError("they are not a list of edits")
    if len(raw) > MAX_EDITS:
        raise AsmevoError(f"{len(raw):,} edits, more than the {MAX_EDITS:,} the dashboard "
                          "replays")
    return tuple(Edit.from_json(e) for e in raw)


def side_by_side(view, ind_id: str) -> dict:
    """Rows ``[tag, k0_index, k0_text, k0_share, ind_index, ind_text, ind_share]`` of the kernel."""
    from asmevo.archive import pages
    rid = int(view.run["run_id"])
    k0 = k0_of(view)
    ind = pages.individual(view.conn, rid, ind_id, view.path)
    first = pages.individual(view.conn, rid, "k0", view.path)
    try:
        program = k0.target.apply_edits(k0.program, _edits(ind["edits"]))
    except AsmevoError as exc:
        raise ArchiveError(f"individual {ind_id[:60]!r}: its edits do not apply to K0 "
                           f"({str(exc)[:200]})", path=view.path) from None
    left = k0.target.listing(k0.program, k0.kernel)
    right = k0.target.listing(program, k0.kernel)
    ls = _shades(first["details"] or {}, k0.kernel, len(left))
    rs = _shades(ind["details"] or {}, k0.kernel, len(right))
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
    profile = [{"start": lo, "end": hi, "share": s, "first": left[lo], "last": left[hi - 1]}
               for lo, hi, s in sorted(_windows(first["details"] or {}, k0.kernel, len(left)),
                                       key=lambda w: -w[2])]
    return {"kernel": k0.kernel, "ind_id": ind_id, "rows": rows, "changed_rows": changed,
            "abi": k0.target.describe(k0.code_object, k0.program, k0.kernel),
            "profile": profile}
