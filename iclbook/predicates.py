"""The ledger's predicate language: whitelisted expressions over a notebook's metrics.

A ledger row of kind ``predicate`` (``book/reported/*.yml``) states its rule as an expression such as
``abs(x - 0.5) <= 3 * x_se``. :func:`parse_predicate` checks it against a whitelist (names, numbers,
arithmetic, comparisons, and/or/not, lists, and calls of ``abs``, ``min``, ``max``, ``all``, ``any``);
:func:`evaluate_predicate` evaluates it on the metrics. Nothing else can be called or read. Used by the report
(:mod:`iclbook.ledger`) and by the power of a rule (:mod:`iclbook.power`); this module imports no other
``iclbook`` module.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .numbers import fmt_value

__all__ = [
    "PREDICATE_FUNCTIONS",
    "SCALAR",
    "ReportError",
    "Semantics",
    "evaluate_predicate",
    "evaluate_tree",
    "parse_predicate",
    "predicate_names",
]

#: Functions a predicate may call (nothing else can be called).
PREDICATE_FUNCTIONS = {"abs": abs, "min": min, "max": max, "all": all, "any": any}


class ReportError(ValueError):
    """A reported-values file is malformed."""


# --------------------------------------------------------------------------- predicates
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: math.pow(a, b),
}
_CMPOPS = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


def parse_predicate(expr: str, where: str = "predicate") -> ast.Expression:
    """Parse ``expr`` and check it against the whitelist; raise :class:`ReportError` naming ``where``.

    Allowed: metric names, numeric and boolean literals, ``+ - * / **``, unary ``-``/``+``, comparisons
    (chained too), ``and``/``or``/``not``, list or tuple literals, and calls of ``abs``, ``min``, ``max``,
    ``all`` and ``any`` with positional arguments. Everything else (attributes, subscripts, strings,
    other calls, lambdas, comprehensions, keywords) is rejected.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise ReportError(f"{where}: the predicate must be a non-empty string")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ReportError(f"{where}: predicate {expr!r} is not a valid expression ({exc.msg})") from None
    for node in ast.walk(tree):
        ok = isinstance(
            node,
            (
                ast.Expression,
                ast.BoolOp,
                ast.And,
                ast.Or,
                ast.UnaryOp,
                ast.Not,
                ast.USub,
                ast.UAdd,
                ast.BinOp,
                ast.Compare,
                ast.Name,
                ast.Load,
                ast.List,
                ast.Tuple,
                ast.Call,
                ast.Constant,
                *_BINOPS,
                *_CMPOPS,
            ),
        )
        if isinstance(node, ast.Constant):
            ok = isinstance(node.value, (int, float, bool))
        elif isinstance(node, ast.Call):
            ok = (
                isinstance(node.func, ast.Name)
                and node.func.id in PREDICATE_FUNCTIONS
                and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)
            )
        if not ok:
            what = ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__
            raise ReportError(
                f"{where}: predicate {expr!r}: {type(node).__name__} {what!r} is not allowed (only metric names, "
                f"numbers, arithmetic, comparisons, and/or/not and calls of {', '.join(PREDICATE_FUNCTIONS)})"
            )
    return tree


def predicate_names(expr: str) -> list[str]:
    """The metric names a predicate reads, in order of first appearance (function names excluded)."""
    tree = parse_predicate(expr)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = sorted((n.col_offset, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called)
    return list(dict.fromkeys(name for _, name in found))


@dataclass(frozen=True)
class Semantics:
    """What the operators of a predicate mean: scalar Python values (:data:`SCALAR`, the ledger's verdicts) or
    numpy arrays evaluated elementwise (the power of a rule over simulated draws, :mod:`iclbook.power`).

    ``conjoin``/``disjoin`` receive the operands as zero-argument callables, so that the scalar semantics can
    stop at the first operand that decides (as Python's ``and``/``or`` and chained comparisons do), while the
    elementwise one evaluates them all.
    """

    binops: dict[type, Callable[[Any, Any], Any]]
    cmpops: dict[type, Callable[[Any, Any], Any]]
    conjoin: Callable[[Iterable[Callable[[], Any]]], Any]
    disjoin: Callable[[Iterable[Callable[[], Any]]], Any]
    negate: Callable[[Any], Any]
    calls: dict[str, Callable[..., Any]]


def _all_lazy(thunks: Iterable[Callable[[], Any]]) -> bool:
    return all(bool(t()) for t in thunks)


def _any_lazy(thunks: Iterable[Callable[[], Any]]) -> bool:
    return any(bool(t()) for t in thunks)


#: Python scalars, ``and``/``or`` and chained comparisons short-circuited; ``**`` is ``math.pow`` (an error, not a
#: complex number, for a negative base and a fractional power).
SCALAR = Semantics(
    binops={**_BINOPS},
    cmpops={**_CMPOPS},
    conjoin=_all_lazy,
    disjoin=_any_lazy,
    negate=lambda v: not v,
    calls=PREDICATE_FUNCTIONS,
)


def evaluate_tree(node: ast.AST, env: dict[str, Any], semantics: Semantics = SCALAR) -> Any:
    """The value of a whitelisted predicate tree (:func:`parse_predicate`) with the metric names bound in ``env``,
    under ``semantics`` (the one evaluator of the ledger's predicates and of the power of a rule)."""
    handler = _EVAL.get(type(node))
    if handler is None:  # unreachable after parse_predicate
        raise ReportError(f"predicate node {type(node).__name__} is not allowed")
    return handler(node, env, semantics)


def _eval_boolop(node: ast.BoolOp, env: dict[str, Any], sem: Semantics) -> Any:
    thunks = [lambda v=v: evaluate_tree(v, env, sem) for v in node.values]
    return sem.conjoin(thunks) if isinstance(node.op, ast.And) else sem.disjoin(thunks)


def _eval_unaryop(node: ast.UnaryOp, env: dict[str, Any], sem: Semantics) -> Any:
    v = evaluate_tree(node.operand, env, sem)
    if isinstance(node.op, ast.Not):
        return sem.negate(v)
    return -v if isinstance(node.op, ast.USub) else +v


def _eval_compare(node: ast.Compare, env: dict[str, Any], sem: Semantics) -> Any:
    """A chained comparison ``a < b <= c``: each operand evaluated once, and only when it is needed."""
    operands: dict[int, Any] = {}

    def operand(i: int) -> Any:
        if i not in operands:
            operands[i] = evaluate_tree(node.left if i == 0 else node.comparators[i - 1], env, sem)
        return operands[i]

    thunks = [lambda i=i, op=op: sem.cmpops[type(op)](operand(i), operand(i + 1)) for i, op in enumerate(node.ops)]
    return sem.conjoin(thunks)


def _eval_sequence(node: ast.List | ast.Tuple, env: dict[str, Any], sem: Semantics) -> list[Any]:
    return [evaluate_tree(e, env, sem) for e in node.elts]


#: The evaluator of each node type :func:`parse_predicate` allows (operators are evaluated by their parents).
_EVAL: dict[type, Any] = {
    ast.Expression: lambda node, env, sem: evaluate_tree(node.body, env, sem),
    ast.Constant: lambda node, env, sem: node.value,
    ast.Name: lambda node, env, sem: env[node.id],
    ast.List: _eval_sequence,
    ast.Tuple: _eval_sequence,
    ast.BoolOp: _eval_boolop,
    ast.UnaryOp: _eval_unaryop,
    ast.BinOp: lambda node, env, sem: sem.binops[type(node.op)](
        evaluate_tree(node.left, env, sem), evaluate_tree(node.right, env, sem)
    ),
    ast.Compare: _eval_compare,
    ast.Call: lambda node, env, sem: sem.calls[node.func.id](*[evaluate_tree(a, env, sem) for a in node.args]),
}


def evaluate_predicate(expr: str, values: dict[str, Any], where: str = "predicate") -> bool:
    """Evaluate a whitelisted predicate (see :func:`parse_predicate`) over ``values``; it must give a bool."""
    tree = parse_predicate(expr, where)
    missing = [n for n in predicate_names(expr) if n not in values]
    if missing:
        raise ReportError(f"{where}: predicate {expr!r} reads unknown names {missing}")
    try:
        result = evaluate_tree(tree, values)
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise ReportError(f"{where}: predicate {expr!r} cannot be evaluated: {exc}") from None
    if not isinstance(result, bool):
        shown = fmt_value(result, 6) if isinstance(result, (int, float)) else repr(result)
        raise ReportError(f"{where}: predicate {expr!r} gives {shown}, not true/false")
    return result
