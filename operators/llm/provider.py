"""What a wire protocol (``[llm] provider``) is: the one class every provider fills in.

A provider says which SDK sends a request and with what client, how a Messages-shaped
request looks on its wire, and how an answer and its usage come back. The client
(:mod:`asmevo.operators.llm.client`), the config and the pre-flight ask it and never its
name. The providers themselves are listed in :mod:`asmevo.operators.llm.providers`.
"""
from __future__ import annotations

from typing import Callable

from asmevo.operators.llm.answer import Answer
from asmevo.operators.llm.pricing import Usage, getter


class Provider:
    name: str
    sdk: str                     # the Python package whose client sends it (imported on use)
    default_url: str
    default_key_env: str         # the environment variable that holds its key by default
    needs_model: bool = False    # the default model is not served here: a config names one
    lists_models: bool = False   # asked GET /models where GET /models/{model} is missing

    def client(self, sdk, **options):
        """The SDK's client (``options``: api_key, base_url, max_retries, timeout,
        http_client)."""
        raise NotImplementedError

    def create(self, client) -> Callable:
        """The client's call that sends one request."""
        raise NotImplementedError

    def body(self, request: dict) -> dict:
        """What goes on the wire (and into the archive) for a Messages-shaped request."""
        return request

    def answer(self, message) -> tuple[Answer, Usage]:
        """The answer and the usage of one response."""
        raise NotImplementedError

    @staticmethod
    def usage_of(message):
        """A response's usage object (an empty one where it has none)."""
        return getter(message)("usage", None) or {}
