"""Read a live archive without touching it: a private copy, refreshed when the files change.

SQLite readers of a WAL database write to its ``-shm`` index (and may create the
``-wal``/``-shm`` files, or run recovery on ones a killed writer left), so even a
``mode=ro`` connection can change a run directory. The dashboard promises to
change no byte of what it serves, so it never opens the run's files with
SQLite at all: it copies ``archive.db`` and ``archive.db-wal`` into a private
temporary directory whenever their size or mtime changes, and opens the copy.
A copy taken while the writer checkpoints could mix states; the files' stamps
are read before and after the copy, and a copy whose stamps moved is retaken.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from archive.store import Archive, ArchiveError

ARCHIVE = "archive.db"
RETRIES = 5


@dataclass(frozen=True)
class Stamp:
    """What identifies one state of an archive's files (db and WAL)."""

    db: tuple[int, int] | None
    wal: tuple[int, int] | None

    @property
    def token(self) -> str:
        return "-".join(f"{a}.{b}" for part in (self.db, self.wal) for a, b in [part or (0, 0)])


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def stamp(db: Path) -> Stamp:
    return Stamp(_stat(db), _stat(db.with_name(db.name + "-wal")))


class Snapshot:
    """The newest consistent copy of one run directory's archive, opened read-write
    in private (the copy is ours; the run's files are only ever read)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.db = run_dir / ARCHIVE
        self._tmp = Path(tempfile.mkdtemp(prefix="asmevo_serve_"))
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._archive: Archive | None = None
        self._generation = 0

    def close(self) -> None:
        with self._lock:
            if self._archive is not None:
                self._archive.close()
                self._archive = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    @property
    def token(self) -> str:
        """Changes whenever the run's archive files change (what the page polls)."""
        return stamp(self.db).token

    def archive(self) -> Archive:
        """The archive as of now; raises ArchiveError (naming the run's file) when damaged."""
        with self._lock:
            now = stamp(self.db)
            if self._archive is not None and now == self._stamp:
                return self._archive
            if now.db is None:
                raise ArchiveError("no archive here (is this a run directory?)", path=str(self.db))
            fresh, self._stamp = self._copy()
            if self._archive is not None:
                self._archive.close()
                shutil.rmtree(self._archive.path.parent, ignore_errors=True)
            self._archive = fresh
            return fresh

    def _copy(self) -> tuple[Archive, Stamp]:
        for _ in range(RETRIES):
            before = stamp(self.db)
            self._generation += 1
            dest = self._tmp / f"{self._generation}"
            dest.mkdir()
            copy = dest / ARCHIVE
            try:
                shutil.copyfile(self.db, copy)
                wal = self.db.with_name(ARCHIVE + "-wal")
                if before.wal is not None and wal.exists():
                    shutil.copyfile(wal, dest / (ARCHIVE + "-wal"))
            except FileNotFoundError:
                shutil.rmtree(dest, ignore_errors=True)
                continue        # the writer checkpointed and removed its WAL meanwhile
            except OSError as exc:
                shutil.rmtree(dest, ignore_errors=True)
                raise ArchiveError(f"cannot read the archive ({exc.strerror})",
                                   path=str(self.db)) from None
            if stamp(self.db) != before:
                shutil.rmtree(dest, ignore_errors=True)
                continue
            try:
                return Archive(copy, check=True), before
            except ArchiveError as exc:
                shutil.rmtree(dest, ignore_errors=True)
                raise ArchiveError(exc.message, path=str(self.db)) from None
        raise ArchiveError(f"the archive kept changing during {RETRIES} copies; try again",
                           path=str(self.db))

def is_run_dir(path: Path) -> bool:
    return (path / ARCHIVE).is_file() or (path / ARCHIVE).exists()


def walk_runs(root: Path, limit: int = 500) -> list[Path]:
    """Run directories at or below ``root`` (an ablation's cells, a folder of runs)."""
    if is_run_dir(root):
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if ARCHIVE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []        # a run's blobs/ hold no runs
            if len(found) >= limit:
                break
    return found
