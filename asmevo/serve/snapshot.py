"""Read a live archive without touching it, reopened whenever its files change.

The archive's read-only view (:class:`asmevo.archive.store.Archive` with ``readonly``)
already changes no byte of a run directory: without a WAL it reads the
database immutable, with one it reads a private copy of both. The dashboard
keeps one such view per run, with the run's :class:`asmevo.archive.digest.Digest`, and
opens a fresh one when the size or mtime of ``archive.db`` or its WAL moves,
which is also the token the page polls.

A request holds the view it reads through :meth:`Snapshot.lease`: a view that a newer
state of the files replaces is closed when its last request is done with it, never
under one (which SQLite answers with "Cannot operate on a closed database").
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from asmevo.archive import digest, pages
from asmevo.archive.store import Archive, ArchiveError
from asmevo.serve.views import View

ARCHIVE = "archive.db"


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
    """The newest read-only view of one run directory's archive, with its run's digest."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.db = run_dir / ARCHIVE
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._view: View | None = None
        self._leases: dict[int, int] = {}       # id(view) -> requests reading it

    def close(self) -> None:
        with self._lock:
            if self._view is not None and not self._leases.get(id(self._view)):
                self._view.archive.close()
            self._view = None

    @contextmanager
    def lease(self):
        """The newest view, kept open until the ``with`` block ends (see the module doc)."""
        with self._lock:
            view = self._fresh()
            self._leases[id(view)] = self._leases.get(id(view), 0) + 1
        try:
            yield view
        finally:
            with self._lock:
                left = self._leases.pop(id(view)) - 1
                if left:
                    self._leases[id(view)] = left
                elif view is not self._view:       # replaced (or closed) meanwhile
                    view.archive.close()

    @property
    def token(self) -> str:
        """Changes whenever the run's archive files change (what the page polls)."""
        return stamp(self.db).token

    def view(self) -> View:
        """The archive as of now, its run and digest (built once per state of the files,
        by the first request that needs it; the others wait for it). An ArchiveError
        (naming the run's file) when damaged.

        The archive is opened without SQLite's quick_check (a second on 1 GB): a page
        that is damaged is met by the query that reads it, which names the file.

        A caller that reads the view while the run goes on holds it by :meth:`lease`:
        without one, the view may be closed by the next state's first reader."""
        with self._lock:
            return self._fresh()

    def _fresh(self) -> View:
        """:meth:`view`'s work, under the lock."""
        now = stamp(self.db)
        if self._view is not None and now == self._stamp:
            return self._view
        if now.db is None:
            raise ArchiveError("no archive here (is this a run directory?)", path=str(self.db))
        fresh = Archive(self.db, readonly=True, check=False)
        try:
            path = str(self.db)
            run = pages.run(fresh.conn, path)
            view = View(fresh, run, digest.build(fresh.conn, run["run_id"],
                                                 run["eval_context"], path))
        except BaseException:
            fresh.close()
            raise
        old = self._view
        self._view, self._stamp = view, now
        if old is not None and not self._leases.get(id(old)):
            old.archive.close()
        return view


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
