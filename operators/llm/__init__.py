"""LLM operators: ``llm_mutate``, ``llm_crossover``, ``llm_repair`` (one call each) and
``llm_agent`` (a conversation with tools), on the Anthropic or an OpenAI-compatible API.

Importing this package registers them. See ``docs/llm.md``.
"""
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.operators import BUDGET_SPENT, LLMMutate, LLMOperator, LLMRepair
from asmevo.operators.llm.crossover import LLMCrossover
from asmevo.operators.llm.agent import LLMAgent
from asmevo.operators.llm.pricing import Price, Usage, cost
from asmevo.operators.llm.spend import MemoryLedger, archive_spend_report, render_report, spend_report

__all__ = ["BUDGET_SPENT", "LLMAgent", "LLMConfig", "LLMCrossover", "LLMError", "LLMMutate",
           "LLMOperator", "LLMRepair", "MemoryLedger", "Price", "Usage", "archive_spend_report",
           "cost", "render_report", "spend_report"]
