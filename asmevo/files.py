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
import re
import stat
import tomllib
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


# -- TOML -----------------------------------------------------------------------------------
# Python's TOML parser recurses once per level of nested arrays and inline tables, and
# every walk of the document after it does too: `x = [[[[...` a few hundred deep ends in
# a RecursionError. The nesting is counted on the text first (strings and comments aside),
# and once more on the parsed document (dotted keys nest without brackets), against
# ASMEVO_MAX_TOML_DEPTH.

_TOML_SKIP = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')


def toml_nesting(text: str) -> int:
    """How deeply brackets nest in TOML ``text``, outside strings and comments."""
    from asmevo.jsontext import bracket_depth
    return bracket_depth(_TOML_SKIP.sub("", text).encode("utf-8", "surrogatepass"))


def parse_toml(text: str, *, error: type[AsmevoError] = InputFileError, path: str | None = None,
               what: str = "file") -> dict:
    """``tomllib.loads`` within ``ASMEVO_MAX_TOML_DEPTH``; ``error`` naming ``path`` on
    invalid TOML or a document nested too deeply."""
    limit = knobs.MAX_TOML_DEPTH
    refusal = limit.exceeded(toml_nesting(text), f"{what} nesting")
    if refusal is None:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise error(f"invalid TOML ({exc})", path=path) from None
        except RecursionError:
            refusal = f"{what} nesting: over the limit of {limit.value} (set {limit.env} to raise it)"
        else:
            refusal = limit.exceeded(nested_depth(doc), f"{what} nesting")
            if refusal is None:
                return doc
    raise error(refusal, path=path)


def read_toml(path: str | Path, *, error: type[AsmevoError] = InputFileError,
              what: str = "file") -> dict:
    """:func:`read_input_text` then :func:`parse_toml`."""
    return parse_toml(read_input_text(path, error=error, what=what), error=error,
                      path=str(path), what=what)


def nested_depth(doc) -> int:
    """How deeply dicts and lists nest in ``doc``, iteratively (no recursion limit)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest
