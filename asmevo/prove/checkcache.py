"""The instruction checks, remembered on disk across processes.

A check's outcome is a function of the instruction's form, MODE, the processor and
the code of both semantics (the prover's and the emulator's), so its key names a
hash of every source file of :mod:`asmevo.prove` and :mod:`asmevo.emu`: any change
to either checks every form again. One JSON file per key prefix under
``ASMEVO_CACHE_DIR/prove/<version>/``, written to a temporary file and renamed (a
reader sees the old or the new one whole); an unreadable entry is checked again.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from asmevo import knobs


@lru_cache(maxsize=1)
def version() -> str:
    """A hash of the sources of the two semantics."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for pkg in ("prove", "emu"):        # subpackages included (emu/isa, emu/numerics, ...)
        for p in sorted((root / pkg).rglob("*.py")) + sorted((root / pkg).rglob("*.c")):
            h.update(p.relative_to(root).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _path(key: tuple) -> Path:
    digest = hashlib.sha256(repr(key).encode()).hexdigest()
    return knobs.cache_dir() / "prove" / version() / digest[:2] / f"{digest}.json"


FIELDS = ("text", "kind", "cases", "skipped", "disagreements", "refused")


def load(key: tuple) -> dict | None:
    """The remembered outcome of ``key``'s check (its :data:`FIELDS`), or None."""
    try:
        d = json.loads(_path(key).read_text())
        if d.get("key") != repr(key) or any(f not in d for f in FIELDS):
            return None
        return {f: d[f] for f in FIELDS}
    except (OSError, ValueError, TypeError):
        return None


def store(key: tuple, outcome: dict) -> None:
    p = _path(key)
    tmp = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump({"key": repr(key)} | {k: outcome[k] for k in FIELDS}, f)
        os.replace(tmp, p)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)        # a cache that cannot be written is only slower
