"""Size expressions and constraints: the little language a spec writes its numbers in.

Sizes are integer expressions over named parameters (``cdiv(N, 256)``,
``ROWS * COLS``); a launch family's constraints are predicates over the same
parameters (``K % 64 == 0 and M <= 4 * N``). Both are parsed with :mod:`ast`
and evaluated by walking a small whitelist of node types, bounded first,
because a spec may come from anywhere.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

from asmevo import knobs
from asmevo.launch.errors import SpecError

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
# name -> (fewest arguments, most arguments or None, function)
_FUNCS: dict[str, tuple[int, int | None, Callable[..., int | float]]] = {
    "cdiv": (2, 2, lambda a, b: -(-a // b)),
    "min": (1, None, lambda *a: min(a)),
    "max": (1, None, lambda *a: max(a)),
}
_MAGNITUDE = 2 ** 64           # no intermediate value beyond it: a spec's numbers fit 64 bits


def err(where: str, msg: str) -> SpecError:
    return SpecError(f"{where}: {msg}" if where else msg)


def evaluate(expr: int | float | str, params: dict[str, int], *, where: str = "") -> int | float:
    """Evaluate a size expression: ints, params, + - * // % **, cdiv/min/max.

    Bounded before anything is computed, because a spec may come from anywhere:
    its length and syntax nodes are limited (knobs), an exponent over
    ``ASMEVO_MAX_EXPONENT`` is refused before the power is taken (``9**9**9``
    fails at once), and every intermediate value must be a finite real within
    2**64, so ``(-8)**0.5``, ``1e999`` or ``nan`` are errors, not values.
    """
    if isinstance(expr, bool) or not isinstance(expr, (int, float, str)):
        raise err(where, f"expected a number or expression, got {short(expr)}")
    if not isinstance(expr, str):
        return _bounded(expr, where, expr)
    return _Walk(expr, params, where, logic=False).run()


def predicate(expr: str, params: dict[str, int], *, where: str = "") -> bool:
    """Evaluate a constraint: size expressions compared (``==``, ``!=``, ``<``, ``<=``,
    ``>``, ``>=``, chains too) and combined with ``and``, ``or``, ``not``."""
    if not isinstance(expr, str):
        raise err(where, f"expected a constraint string, got {short(expr)}")
    v = _Walk(expr, params, where, logic=True).run()
    if not isinstance(v, bool):
        raise err(where, f"{short(expr)} is not a comparison (it gives {v!r})")
    return v


_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
           ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


class _Walk:
    """One expression parsed within the limits and evaluated node by node; ``logic``
    admits comparisons and boolean operators (constraints), else arithmetic only."""

    def __init__(self, expr: str, params: dict, where: str, *, logic: bool):
        self.expr, self.params, self.where, self.logic = expr, params, where, logic
        refusal = knobs.MAX_EXPRESSION_CHARS.exceeded(len(expr), where or "expression")
        if refusal:
            raise SpecError(refusal)
        try:
            self.tree = ast.parse(expr, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise err(where, f"bad expression {short(expr)}") from exc
        refusal = knobs.MAX_EXPRESSION_NODES.exceeded(sum(1 for _ in ast.walk(self.tree)),
                                                      where or "expression")
        if refusal:
            raise SpecError(refusal)

    def run(self):
        try:
            return self.ev(self.tree.body)
        except ZeroDivisionError as exc:
            raise err(self.where, f"division by zero in {short(self.expr)}") from exc
        except OverflowError as exc:
            raise err(self.where, f"value out of range in {short(self.expr)}") from exc

    def ev(self, node: ast.AST):
        where, expr = self.where, self.expr
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return _bounded(node.value, where, expr)
        if isinstance(node, ast.Name):
            if node.id not in self.params:
                raise err(where, f"unknown parameter {node.id!r} in {short(expr)}")
            return self.params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = self.number(node.left), self.number(node.right)
            if isinstance(node.op, ast.Pow):
                refusal = knobs.MAX_EXPONENT.exceeded(abs(right), where or "expression")
                if refusal:
                    raise SpecError(f"{refusal} in {short(expr)}")
            return _bounded(_BINOPS[type(node.op)](left, right), where, expr)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.number(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FUNCS and not node.keywords:
            lo, hi, fn = _FUNCS[node.func.id]
            if len(node.args) < lo or (hi is not None and len(node.args) > hi):
                want = f"{lo}" if lo == hi else f"at least {lo}"
                raise err(where, f"{node.func.id}() takes {want} argument(s), got "
                                 f"{len(node.args)} in {short(expr)}")
            return _bounded(fn(*(self.number(a) for a in node.args)), where, expr)
        if self.logic:
            return self.logical(node)
        raise err(where, f"unsupported expression {short(expr)}")

    def number(self, node: ast.AST) -> int | float:
        v = self.ev(node)
        if isinstance(v, bool):
            raise err(self.where, f"a comparison used as a number in {short(self.expr)}")
        return v

    def logical(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
            left = self.number(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.number(right_node)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            vals = [self.truth(v) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.truth(node.operand)
        raise err(self.where, f"unsupported constraint {short(self.expr)}")

    def truth(self, node: ast.AST) -> bool:
        v = self.ev(node)
        if not isinstance(v, bool):
            raise err(self.where, f"{short(self.expr)}: 'and', 'or' and 'not' take "
                                  "comparisons, not numbers")
        return v


def _bounded(v: Any, where: str, expr: Any) -> int | float:
    """``v`` if it is a finite real (an integer within 2**64), else the error saying why not."""
    if isinstance(v, complex):
        raise err(where, f"{short(expr)} is not a real number")
    if isinstance(v, float) and not math.isfinite(v):
        raise err(where, f"{short(expr)} is not finite ({v})")
    if isinstance(v, int) and abs(v) > _MAGNITUDE:
        raise err(where, f"{short(expr)} is out of range (beyond 2**64)")
    return v


def short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
