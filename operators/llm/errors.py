"""The one exception type of the LLM operators.

Operators never raise it into the engine for a failed call (that is a recorded
operator failure returning None); it marks bad configuration and misuse.
"""
from __future__ import annotations

from asmevo.errors import AsmevoError


class LLMError(AsmevoError):
    """Bad ``[llm]`` configuration, a missing API key, or a malformed replay script."""
