"""Refutations' counterexamples kept as input sets for a kernel's later candidates.

A refutation's entry state (a :class:`~asmevo.prove.harness.Snapshot`: a wave state
inside the kernel, at the start of a region of K0's kernel function) is remembered
per K0 kernel. A later candidate's region in the same basic block of K0 is first run
on the emulator from each remembered state (both windows, the approximate families'
members 0 to 7, exactly as a refutation is replayed): where they differ, that is its
refutation, found without the solver. A state inside the kernel maps to launch
inputs only through the code before it, which the prover does not invert, so these
input sets are the emulator harness's, not the differential run's.

One JSON file per K0 kernel (a hash of its instruction texts) under
``ASMEVO_CACHE_DIR/prove/counterexamples/``, the newest :data:`KEEP` entries, written
to a temporary file and renamed; an unreadable file reads as empty.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from asmevo import knobs
from asmevo.prove.harness import Snapshot

KEEP = 32               # counterexamples kept per K0 kernel
FIELDS = ("s", "scc", "v", "mem", "lds", "lds_size", "mode")


def kernel_key(fn) -> str:
    """K0's kernel function, as its instruction texts, hashed."""
    h = hashlib.sha256("\n".join(i.text for i in fn.instructions).encode())
    return h.hexdigest()[:24]


def _path(key: str) -> Path:
    return knobs.cache_dir() / "prove" / "counterexamples" / f"{key}.json"


def _to_json(snap: Snapshot) -> dict:
    return {"s": list(snap.s), "scc": bool(snap.scc),
            "v": {str(r): list(x) for r, x in snap.v.items()},
            "mem": {str(a): x for a, x in snap.mem.items()},
            "lds": {str(a): x for a, x in snap.lds.items()},
            "lds_size": snap.lds_size, "mode": snap.mode}


def _from_json(d: dict) -> Snapshot:
    return Snapshot(s=[int(x) for x in d["s"]], scc=bool(d["scc"]),
                    v={int(r): [int(x) for x in xs] for r, xs in d["v"].items()},
                    mem={int(a): int(x) for a, x in d["mem"].items()},
                    lds={int(a): int(x) for a, x in d["lds"].items()},
                    lds_size=int(d["lds_size"]), mode=int(d["mode"]))


def load(key: str) -> list[dict]:
    """The remembered entries of K0 kernel ``key``: ``at`` (K0's instruction index the
    state is at), ``lane``, ``snapshot``."""
    try:
        rows = json.loads(_path(key).read_text())
        return [{"at": int(r["at"]), "lane": int(r["lane"]),
                 "snapshot": _from_json(r["snapshot"])} for r in rows]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []


def add(key: str, at: int, snap: Snapshot, lane: int) -> None:
    """Remember one refutation's entry state (the same state twice is kept once)."""
    row = {"at": at, "lane": lane, "snapshot": _to_json(snap)}
    try:
        rows = json.loads(_path(key).read_text())
        if not isinstance(rows, list):
            rows = []
    except (OSError, ValueError):
        rows = []
    if row in rows:
        return
    rows = (rows + [row])[-KEEP:]
    p, tmp = _path(key), None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(rows, f)
        os.replace(tmp, p)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)        # a store that cannot be written only finds less
