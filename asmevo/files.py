"""Reading an input file: a regular file only, and at most ``ASMEVO_MAX_INPUT_BYTES``.

Code objects, specs, configs and CSVs come from anywhere. A FIFO with no
writer blocks a plain ``open`` forever, ``/dev/zero`` reads until MemoryError,
and a directory or a device fails deep inside a parser. So every input file is
opened without blocking, checked to be a regular file within the size limit
(``fstat`` of the open descriptor, so a swapped path cannot slip through), and
read to at most that many bytes; anything else is one error naming the file.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from asmevo import knobs
from asmevo.errors import AsmevoError


class InputFileError(AsmevoError):
    """An input path that is not a readable regular file of allowed size."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_input(path: str | Path, *, error: type[AsmevoError] = InputFileError,
               what: str = "file", limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``; ``error`` (the caller's package's
    exception type) with one line naming the file otherwise (``what`` it is for).
    ``limit``: a smaller size limit than the knob's (the knob still caps it)."""
    where = str(path)
    knob = knobs.max_input_bytes()
    limit = knob if limit is None else min(limit, knob)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror})", path=where) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {what} ({_kind(st.st_mode)}, not a regular file)", path=where)
        if st.st_size > limit:
            raise error(f"{what} is {st.st_size:,} bytes, more than the {limit:,} "
                        + (f"that {knobs.MAX_INPUT_BYTES} allows (raise it to read this file)"
                           if limit == knob else "allowed here"), path=where)
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise error(f"{what} grew past the {limit:,} bytes allowed while it was read",
                        path=where)
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror})", path=where) from exc
    finally:
        os.close(fd)


def read_input_text(path: str | Path, *, error: type[AsmevoError] = InputFileError,
                    what: str = "file") -> str:
    """:func:`read_input` decoded as UTF-8 (one error if it is not)."""
    data = read_input(path, error=error, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                    path=str(path)) from exc
