"""Mutation and crossover operators, chosen by name (``rules/``, ``llm/``, ``basic``).

See :mod:`operators.registry` for the protocol and the context an operator gets.
"""
from operators.registry import (Attempt, BudgetExhausted, LlmCall, Operator, OperatorContext,
                                OperatorError, Window, default_windows, get_operator,
                                known_operators, register)

__all__ = ["Attempt", "BudgetExhausted", "LlmCall", "Operator", "OperatorContext",
           "OperatorError", "Window", "default_windows", "get_operator", "known_operators",
           "register"]
