"""Content-addressed files beside the archive: ``blobs/aa/<sha256>.co`` and ``.s``.

A code object is stored under the SHA-256 of its bytes, so storing it twice is a
no-op and a reader can check what it got. Assembly text is stored under the
hash of the code object it builds (``<code sha>.s``), beside that object.
Writes go to a temporary file renamed into place: a kill leaves either the
whole file or none, plus at most a temporary file, which :meth:`BlobStore.sweep`
removes when a run is opened again. There is no fsync per blob (it cost more than the rest of
the engine's bookkeeping together): after a power loss a blob may fail its hash
check on read, which is reported, and the candidate rebuilds from its edits.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from asmevo.archive.store import ArchiveError


class BlobStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, sha256: str, suffix: str = ".co") -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ArchiveError(f"not a sha256 hex digest: {sha256!r}")
        return self.root / sha256[:2] / f"{sha256}{suffix}"

    def _write(self, path: Path, data: bytes) -> None:
        if path.exists():
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as exc:        # a full disk, a read-only or unwritable run directory
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            raise ArchiveError(f"cannot write a blob ({exc.strerror})",
                               path=str(exc.filename or path)) from exc

    def sweep(self) -> int:
        """Remove temporary files whose writer process is gone (a kill mid-write);
        returns how many. Call it holding the run's lock."""
        removed = 0
        for tmp in self.root.glob("??/.*.tmp"):
            pid = tmp.name.rsplit(".", 2)[-2]
            if pid.isdigit() and _alive(int(pid)):
                continue
            tmp.unlink(missing_ok=True)
            removed += 1
        return removed

    def put(self, data: bytes) -> str:
        """Store a code object; returns its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        self._write(self.path(sha, ".co"), data)
        return sha

    def get(self, sha256: str) -> bytes:
        """The code object with this hash, checked; a missing or altered blob is an error."""
        p = self.path(sha256, ".co")
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"no code object blob {sha256[:16]}", path=str(p)) from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ArchiveError("code object blob does not match its hash (corrupt)", path=str(p))
        return data

    def has(self, sha256: str, suffix: str = ".co") -> bool:
        return self.path(sha256, suffix).exists()

    def put_assembly(self, code_sha256: str, text: str) -> Path:
        """Store the assembly that builds code object ``code_sha256``."""
        p = self.path(code_sha256, ".s")
        self._write(p, text.encode())
        return p

    def get_assembly(self, code_sha256: str) -> str | None:
        p = self.path(code_sha256, ".s")
        return p.read_text() if p.exists() else None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` can still write: it exists and is not a zombie (a killed
    writer nobody has reaped yet, as a container whose first process reaps nothing keeps
    it, still answers a signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True         # no /proc here: as signal 0 says
    return state not in ("Z", "X")
