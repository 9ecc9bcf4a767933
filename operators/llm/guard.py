"""Limits a hostile LLM server cannot stretch: a deadline and a byte cap on the stream itself.

httpx's timeouts bound each read, not an answer: a server that sends one byte a
second never trips a read timeout, and keeps a call (and the search waiting on
it) alive for as long as it likes. So every connection the SDK opens goes
through :class:`GuardedBackend`, below httpx: each connect, write and read is
given at most the time left before the attempt's :class:`Watch` ends (the
attempt's ``timeout_s``, the call's ``call_timeout_s`` or the run's wall-clock
budget, whichever comes first), and the bytes read for one answer, headers
included, are counted against ``ASMEVO_LLM_MAX_ANSWER_BYTES``. Past either, the
read fails at once and :attr:`Watch.tripped` says why.

A response hook then refuses, before the SDK parses anything, a compressed body
(a few KiB of gzip inflate to gigabytes; requests ask for ``identity``) and a
body nested deeper than ``ASMEVO_MAX_JSON_DEPTH``. Redirects are not followed: a
key header must not travel to wherever a server points.

The watch is per thread: the SDKs are synchronous, so the thread that sends a
call is the one that reads its answer, and proposal threads do not share one.
"""
from __future__ import annotations

import importlib
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from asmevo import jsontext, knobs
from asmevo.operators.llm.errors import LLMError

class _Current(threading.local):
    watch: "Watch | None" = None      # the attempt this thread is in


_CURRENT = _Current()


@dataclass
class Watch:
    """One attempt's limits: it ends at ``deadline`` (``time.monotonic()``), set by the
    limit ``limit`` names; ``final``: that limit is the call's or the run's, so no retry
    follows."""

    deadline: float
    limit: str
    final: bool
    max_bytes: int
    received: int = 0
    tripped: str = ""

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def trip(self, reason: str) -> str:
        self.tripped = self.tripped or reason
        return self.tripped


@contextmanager
def watching(watch: Watch):
    """Every connection this thread uses, within ``watch``, until the block ends."""
    _CURRENT.watch = watch
    try:
        yield watch
    finally:
        _CURRENT.watch = None


def current() -> Watch | None:
    return _CURRENT.watch


def _bounded(timeout: float | None, watch: Watch | None, expired: type) -> float | None:
    """``timeout`` shortened to what is left of ``watch``; ``expired`` raised when nothing is."""
    if watch is None:
        return timeout
    left = watch.left()
    if left <= 0:
        raise expired(watch.trip(f"{watch.limit} passed before the answer was "
                                               "complete"))
    return left if timeout is None else min(timeout, left)


class GuardedStream:
    """A network stream of httpcore's backend with every operation inside the watch."""

    def __init__(self, inner, errors):
        self._inner, self._errors = inner, errors

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        watch = current()
        try:
            data = self._inner.read(max_bytes, _bounded(timeout, watch, self._errors.ReadTimeout))
        except self._errors.ReadTimeout:
            if watch is not None and watch.left() <= 0:
                watch.trip(f"{watch.limit} passed before the answer was complete")
            raise
        if watch is not None:
            watch.received += len(data)
            if watch.received > watch.max_bytes:
                raise self._errors.ReadError(watch.trip(knobs.LLM_MAX_ANSWER_BYTES.exceeded(
                    watch.received, "the answer") or "the answer is too large"))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, current(), self._errors.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return GuardedStream(self._inner.start_tls(
            ssl_context, server_hostname,
            _bounded(timeout, current(), self._errors.ConnectTimeout)), self._errors)

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class GuardedBackend:
    """httpcore's network backend, every stream it opens a :class:`GuardedStream`."""

    def __init__(self, inner):
        self._inner = inner
        self._errors = importlib.import_module(type(inner).__module__.split(".")[0])

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        bounded = _bounded(timeout, current(), self._errors.ConnectTimeout)
        return GuardedStream(self._inner.connect_tcp(host, port, bounded, local_address,
                                                     socket_options), self._errors)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        bounded = _bounded(timeout, current(), self._errors.ConnectTimeout)
        return GuardedStream(self._inner.connect_unix_socket(path, bounded, socket_options),
                             self._errors)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AnswerRefused(Exception):
    """Raised by the response hook; the watch holds the reason."""


def _check_response(response) -> None:
    """Before the SDK parses the body: no compression, nesting within the limit."""
    watch = current()
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        reason = f"the answer is compressed ({encoding[:40]}), which was not asked for"
        raise AnswerRefused(watch.trip(reason) if watch else reason)
    response.read()
    try:
        jsontext.check_nesting(response.content, "the answer's JSON")
    except jsontext.JsonError as exc:
        raise AnswerRefused(watch.trip(exc.message) if watch else exc.message) from None


def http_client(sdk, timeout: float):
    """The SDK's own httpx client, its connections guarded (module docstring)."""
    client = sdk.DefaultHttpxClient(timeout=timeout, follow_redirects=False,
                                    headers={"accept-encoding": "identity"},
                                    event_hooks={"response": [_check_response]})
    for transport in [client._transport, *client._mounts.values()]:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            raise LLMError(f"the {sdk.__name__} SDK's HTTP transport "
                           f"({type(transport).__name__}) has no connection pool whose "
                           "sockets asmevo can bound; use the httpx release the SDK pins")
        pool._network_backend = GuardedBackend(backend)
    return client
