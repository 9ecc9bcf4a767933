"""A run directory: ``archive.db``, ``blobs/``, ``config.toml``, and a lock.

``blobs/`` holds K0 too (under its ``k0_sha256``), so what a run started from can be
read from the run directory alone (the dashboard reads no path an archive names).

Starting a run never reuses a directory that already holds one, and resuming
never starts fresh: a missing directory or archive is an error. The lock
(``flock``, released by the kernel even on ``kill -9``) keeps two processes off
one run.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from asmevo.archive.blobs import BlobStore
from asmevo.archive.store import Archive, ArchiveError, archive_is_empty
from asmevo.engine.config import Config, load_config, parse_config
from asmevo.engine.evaluator import Evaluator, make_evaluator
from asmevo.files import read_input

ARCHIVE = "archive.db"
BLOBS = "blobs"
CONFIG = "config.toml"
LOCK = "lock"


@dataclass
class Run:
    """An open run directory with its archive, config and evaluator."""

    path: Path
    archive: Archive
    blobs: BlobStore
    config: Config
    evaluator: Evaluator
    run_id: int
    _lock_fd: int | None = None

    def close(self) -> None:
        self.archive.close()
        if self._lock_fd is not None:
            # again at the end: a writer that was still dying when the run was opened
            # (a SIGKILLed ablate's worker) is gone by now, so its temporary file goes too
            self.blobs.sweep()
            # unlocked, not only closed: a forked verification worker still holds a copy
            # of the descriptor, and the lock belongs to the open file they share
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def _writing(what: str, path: Path):
    """A full disk, a read-only or unwritable run directory: one ArchiveError naming
    the path (nothing the run committed before is touched)."""
    try:
        yield
    except OSError as exc:
        raise ArchiveError(f"cannot {what} ({exc.strerror})",
                           path=str(exc.filename or path)) from exc


def _lock(path: Path) -> int:
    with _writing("lock the run directory", path / LOCK):
        fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ArchiveError("run directory is in use by another asmevo process",
                           path=str(path)) from None
    return fd


def create_run(config: Config | str | Path, run_dir: str | Path) -> Run:
    """A new run in ``run_dir`` (created; it must not hold a run already)."""
    if not isinstance(config, Config):
        config = load_config(config)
    path = Path(run_dir)
    evaluator = make_evaluator(config)   # fails on a bad spec/K0 before touching the disk
    if path.exists() and not path.is_dir():
        raise ArchiveError("run directory is a file, not a directory", path=str(path))
    if not archive_is_empty(path / ARCHIVE):     # read-only: a refusal changes no file
        raise ArchiveError("run directory already holds a run; use `asmevo resume` "
                           "or choose another --run-dir", path=str(path))
    with _writing("make the run directory", path):
        path.mkdir(parents=True, exist_ok=True)
    fd = _lock(path)
    try:
        archive = Archive(path / ARCHIVE, create=True)
        if archive.runs():
            archive.close()
            raise ArchiveError("run directory already holds a run; use `asmevo resume` "
                               "or choose another --run-dir", path=str(path))
        tmp = path / f".{CONFIG}.tmp"
        with _writing("write the run's config", path / CONFIG):
            tmp.write_text(config.text)
            os.replace(tmp, path / CONFIG)
        from asmevo.launch.spec import load_spec
        spec = load_spec(config.run.spec, config.run.size)
        run_id = archive.create_run(
            name=config.run.name, seed=config.run.seed, k0_sha256=evaluator.k0_sha256,
            kernel=evaluator.kernel, spec_path=str(config.run.spec), spec_size=config.run.size,
            eval_context=evaluator.context_key, config_toml=config.text,
            config_json=config.to_json() | {"spec_kernel": spec.kernel})
        blobs = BlobStore(path / BLOBS)
        keep_k0(blobs, evaluator)
    except BaseException:
        os.close(fd)
        raise
    return Run(path, archive, blobs, config, evaluator, run_id, fd)


def keep_k0(blobs: BlobStore, evaluator: Evaluator) -> None:
    """K0's bytes in the run's blob store (once), checked against the hash the run records."""
    import hashlib
    if blobs.has(evaluator.k0_sha256):
        return
    data = read_input(evaluator.k0_path, what="code object")
    if hashlib.sha256(data).hexdigest() != evaluator.k0_sha256:
        raise ArchiveError("K0 changed while the run started", path=evaluator.k0_path)
    blobs.put(data)


def open_run(run_dir: str | Path, *, lock: bool = True, evaluator: bool = True) -> Run:
    """An existing run directory; its config comes from the archive.

    Everything that can refuse the run (a damaged or foreign archive, no run in it,
    a changed K0 or spec) is checked on a read-only view first, so a refusal changes
    no file. ``lock=False`` (report, best) keeps that view: the archive stays
    untouched; with the lock (resume) the archive is then opened for writing.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise ArchiveError("no such run directory", path=str(path))
    if not os.path.lexists(path / ARCHIVE):
        raise ArchiveError(f"not a run directory (no {ARCHIVE})", path=str(path))
    view = Archive(path / ARCHIVE, readonly=True)
    try:
        row = view.run()
        config = _stored_config(row, path)
        ev = make_evaluator(config) if evaluator else None
        if ev is not None and (ev.k0_sha256 != row["k0_sha256"]
                               or ev.context_key != row["eval_context"]):
            raise ArchiveError(
                f"K0 or its spec changed since the run started (K0 now {ev.k0_sha256[:12]}, "
                f"was {row['k0_sha256'][:12]}); results would not be comparable",
                path=str(path))
    except BaseException:
        view.close()
        raise
    if not lock:
        return Run(path, view, BlobStore(path / BLOBS), config, ev, int(row["run_id"]))
    view.close()
    fd = _lock(path)
    try:
        archive = Archive(path / ARCHIVE)
        row = archive.run(int(row["run_id"]))
    except BaseException:
        os.close(fd)
        raise
    try:
        blobs = BlobStore(path / BLOBS)
        blobs.sweep()              # what a killed writer left half-written
        if ev is not None:
            keep_k0(blobs, ev)     # a run started before runs kept K0 gets it now
    except BaseException:
        archive.close()
        os.close(fd)
        raise
    return Run(path, archive, blobs, config, ev, int(row["run_id"]), fd)


def _stored_config(row: dict, path: Path) -> Config:
    """The config a run was started with, as its archive keeps it."""
    try:
        base = json.loads(row["config_json"])["base_dir"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"the run's stored config is damaged ({exc})",
                           path=str(path / ARCHIVE)) from None
    return parse_config(row["config_toml"], base_dir=base, where=str(path / CONFIG))
