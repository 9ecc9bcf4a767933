"""LLM wire protocols by name (``[llm] provider``): the one place that knows them all.

A new wire protocol is one module with an :class:`asmevo.operators.llm.provider.Provider`
subclass and one line here. The registry imports its entries; they never import it.
"""
from __future__ import annotations

from asmevo.operators.llm.anthropic_wire import MessagesApi
from asmevo.operators.llm.openai_wire import ChatCompletions
from asmevo.operators.llm.provider import Provider

PROVIDERS: dict[str, Provider] = {"anthropic": MessagesApi(), "openai": ChatCompletions()}
DEFAULT_PROVIDER = "anthropic"
