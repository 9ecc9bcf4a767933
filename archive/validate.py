"""Looking at an archive without changing it: file checks, WAL frames, a read-only view.

SQLite changes files even when it only reads: a read-only connection creates a
missing ``-shm`` and ``-wal`` and rebuilds the ``-shm`` index a killed writer
left; the last read-write connection checkpoints and deletes both; and a WAL
whose header is damaged is silently taken as empty, its committed rows ignored,
and then deleted with them. So a suspicious archive is never handed to SQLite in
place. Everything here only reads: the files are checked byte by byte (the
database header, the WAL header and its frame checksums), and SQLite sees either
the untouched database in immutable mode (when there is no WAL to apply) or a
private copy of the database and its WAL.
"""
from __future__ import annotations

import shutil
import sqlite3
import stat
import struct
import tempfile
from pathlib import Path

import numpy as np

from asmevo.archive.errors import ArchiveError

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)     # checksums little-endian, big-endian
WAL_VERSION = 3007000


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def check_files(path: Path, *, create: bool) -> bool:
    """Refuse a database file that cannot be an archive; True where there is none yet.

    "None yet" is a missing file, or an empty one where ``create`` allows it: SQLite
    creates the file before it writes anything, so a kill can leave 0 bytes.
    """
    try:
        st = path.lstat()
    except FileNotFoundError:
        if not create:
            raise ArchiveError("no archive here", path=str(path)) from None
        _check_no_wal(path)
        return True
    if stat.S_ISDIR(st.st_mode):
        raise ArchiveError("archive path is a directory, not a database file", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise ArchiveError("archive path is not a regular file (a link, FIFO or device)",
                           path=str(path))
    if st.st_size == 0:
        _check_no_wal(path)
        if not create:
            raise ArchiveError("archive is an empty file (0 bytes): it holds no run",
                               path=str(path))
        return True
    page_size = _check_header(path, st.st_size)
    if not _check_wal(wal_of(path), page_size):
        _check_length(path, st.st_size, page_size)
    return False


def _check_no_wal(path: Path) -> None:
    wal = wal_of(path)
    if wal.exists() and (not wal.is_file() or wal.stat().st_size > 0):
        raise ArchiveError(f"the database file is missing or empty but {wal.name} holds "
                           f"{wal.stat().st_size} bytes: the database was truncated or "
                           "replaced", path=str(path))


def _check_header(path: Path, size: int) -> int:
    """The page size, from a header that must be SQLite's."""
    with open(path, "rb") as f:
        head = f.read(100)
    if head[:16] != SQLITE_MAGIC[:len(head[:16])]:
        raise ArchiveError("not an asmevo archive (not an SQLite database: corrupt or foreign "
                           "file); refusing to start fresh over it", path=str(path))
    if len(head) < 100:
        raise ArchiveError(f"archive is truncated ({size} bytes, shorter than SQLite's "
                           "100-byte header)", path=str(path))
    raw = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if raw == 1 else raw
    if page_size < 512 or page_size & (page_size - 1):
        raise ArchiveError(f"archive header is corrupt (page size {raw})", path=str(path))
    return page_size


def _check_length(path: Path, size: int, page_size: int) -> None:
    """Without a WAL the database file alone holds every page its header counts."""
    with open(path, "rb") as f:
        head = f.read(100)
    pages, counter, valid_for = (struct.unpack(">I", head[o:o + 4])[0] for o in (28, 24, 92))
    if size % page_size or (counter == valid_for and size < pages * page_size):
        raise ArchiveError(f"archive is truncated: {size} bytes, but its header counts "
                           f"{pages} pages of {page_size} bytes", path=str(path))


# -- the write-ahead log -------------------------------------------------------------------

def _check_wal(wal: Path, page_size: int) -> bool:
    """Refuse a damaged WAL; True where one with frames is there (SQLite must apply it).

    SQLite reads frames from the start until one has other salts or a wrong checksum;
    frames after that are ignored. Ignoring the tail is right after a kill (an
    unfinished transaction, or frames of an earlier cycle with older salts), but
    frames of the current cycle after a bad one mean the file was damaged, and the
    rows in them would be lost without a word.
    """
    try:
        st = wal.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise ArchiveError("write-ahead log is not a regular file", path=str(wal))
    if st.st_size == 0:
        return False
    with open(wal, "rb") as f:
        header = f.read(32)
        if len(header) < 32:
            raise ArchiveError(f"write-ahead log is damaged ({st.st_size} bytes, shorter "
                               "than its header); SQLite would discard it and the rows in it",
                               path=str(wal))
        magic, version, wal_page, _, salt1, salt2, c1, c2 = struct.unpack(">8I", header)
        order = ">u4" if magic == WAL_MAGIC[1] else "<u4"
        if magic not in WAL_MAGIC or version != WAL_VERSION \
                or _checksum(header[:24], (0, 0), order) != (c1, c2):
            raise ArchiveError("write-ahead log is damaged (its header is not a valid SQLite "
                               "WAL header): the rows committed since the last checkpoint "
                               "are in it, and SQLite would discard them; refusing to open",
                               path=str(wal))
        if wal_page != page_size:
            raise ArchiveError(f"write-ahead log has {wal_page}-byte pages, the database "
                               f"{page_size}-byte pages: they do not belong together",
                               path=str(wal))
        _check_frames(f, wal, page_size, (salt1, salt2), (c1, c2), order)
    return True


def _check_frames(f, wal: Path, page_size: int, salts: tuple[int, int],
                  sums: tuple[int, int], order: str) -> None:
    index, broken = 0, None
    while True:
        frame = f.read(24 + page_size)
        if len(frame) < 24 + page_size:
            return
        fs1, fs2, k1, k2 = struct.unpack(">4I", frame[8:24])
        if (fs1, fs2) == salts:
            if broken is not None:
                at = 32 + broken * (24 + page_size)
                raise ArchiveError(
                    f"write-ahead log is damaged at frame {broken} (byte {at}): frame {index} "
                    "and maybe more of the same write cycle come after it, and SQLite would "
                    "discard them and their rows; refusing to open", path=str(wal))
            new = _checksum(frame[:8] + frame[24:], sums, order)
            if new == (k1, k2):
                sums = new
            else:
                broken = index
        elif broken is None:
            broken = index
        index += 1


_POWERS: dict[int, np.ndarray] = {}


def _powers(n: int) -> np.ndarray:
    """A^0 .. A^n mod 2**32 for A = [[1, 1], [1, 2]], the checksum's step matrix."""
    if n not in _POWERS:
        out = np.empty((n + 1, 2, 2), dtype=np.uint64)
        m = np.eye(2, dtype=np.uint64)
        a = np.array([[1, 1], [1, 2]], dtype=np.uint64)
        for k in range(n + 1):
            out[k] = m
            m = (a @ m) & 0xFFFFFFFF
        _POWERS[n] = out
    return _POWERS[n]


def _checksum(data: bytes, start: tuple[int, int], order: str) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` continued from ``start``.

    Per pair of words (x0, x1): s0 += x0 + s1; s1 += x1 + s0 (mod 2**32), i.e.
    s' = A s + (x0, x0 + x1); unrolled as sum_j A^(n-1-j) c_j + A^n s, vectorized.
    """
    words = np.frombuffer(data, dtype=order).astype(np.uint64)
    x0, x1 = words[0::2], words[1::2]
    n = len(x0)
    p = _powers(n)
    rev = p[n - 1::-1] if n else p[:0]
    c0, c1 = x0, (x0 + x1) & 0xFFFFFFFF
    s0 = int(np.sum(rev[:, 0, 0] * c0 + rev[:, 0, 1] * c1, dtype=np.uint64))
    s1 = int(np.sum(rev[:, 1, 0] * c0 + rev[:, 1, 1] * c1, dtype=np.uint64))
    an = p[n]
    s0 += int(an[0, 0]) * start[0] + int(an[0, 1]) * start[1]
    s1 += int(an[1, 0]) * start[0] + int(an[1, 1]) * start[1]
    return s0 & 0xFFFFFFFF, s1 & 0xFFFFFFFF


def _copy_quiet(path: Path, copy: Path, tries: int = 5) -> None:
    """Copy the database and its WAL while neither changes: a live run may append or
    checkpoint during a copy, and a database and WAL copied at different moments do not
    fit together."""
    def stamp():
        return [(p.stat().st_size, p.stat().st_mtime_ns) for p in (path, wal_of(path))]
    for _ in range(tries):
        before = stamp()
        shutil.copyfile(path, copy)
        shutil.copyfile(wal_of(path), wal_of(copy))
        if stamp() == before:
            return
    raise ArchiveError(f"the archive kept changing while it was read ({tries} tries)",
                       path=str(path))


# -- a read-only view ----------------------------------------------------------------------

class ReadView:
    """An SQLite connection that reads an archive as it is now and changes none of its files.

    Without a WAL to apply, the database is opened in place, immutable (no lock, no
    ``-shm``); with one, or with ``private`` (a copy the caller may write, e.g. to
    migrate an old schema for reading), a private copy of both is opened instead, so
    SQLite's recovery, checkpoint and any write happen to the copy. Call
    :func:`check_files` first.
    """

    def __init__(self, path: Path, *, private: bool = False):
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.conn: sqlite3.Connection | None = None
        wal = wal_of(path)
        try:
            has_wal = wal.is_file() and wal.stat().st_size > 0
            if has_wal or private:
                self._tmp = tempfile.TemporaryDirectory(prefix="asmevo-archive-view-")
                copy = Path(self._tmp.name) / path.name
                if has_wal:
                    _copy_quiet(path, copy)
                else:
                    shutil.copyfile(path, copy)
                self.conn = sqlite3.connect(str(copy), isolation_level=None,
                                            check_same_thread=False)
            else:
                uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
                self.conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                            check_same_thread=False)
            self.conn.execute("PRAGMA query_only=1")
        except OSError as exc:
            self.close()
            raise ArchiveError(f"cannot read the archive ({exc.strerror})",
                               path=str(path)) from exc
        except sqlite3.Error as exc:
            self.close()
            raise ArchiveError(f"cannot open the archive ({exc})", path=str(path)) from exc
        self.conn.row_factory = sqlite3.Row

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
