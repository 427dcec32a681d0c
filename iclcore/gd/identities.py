"""The identity families of Nagy (§1–§7, App. A) as data: statement, hypotheses, a sympy
certificate and an exact-rational evaluation on points drawn *inside* each domain.

Notation (Nagy §1, scalar model): ``a = sum x_i^2``, ``b = sum x_i y_i``, ``c = sum y_i^2``,
``L(w) = a w^2 - 2 b w + c`` (exactly ``sum (w x_i - y_i)^2``), ``g = a w - b`` (the gradient of
``L/2``), ``w+ = w - eta g``, ``a w* = b``, ``e = w - w*``.

Every statement is a :class:`~iclcore.gd.statements.Statement`:

* ``params``: names of unit-interval parameters ``t in [0, 1]`` (or ``(0, 1)`` when ``open``);
  ``point(t)`` maps them to a point that satisfies the hypotheses by construction, so property
  tests draw inside the domain instead of filtering, and the parameter values 0 and 1 reach the
  boundary of the domain (e.g. ``eta a in {0, 2}``).
* ``holds(v)``: the conclusion, evaluated exactly (``fractions.Fraction``).
* ``residuals()``: sympy expressions that must expand to zero. For an identity it is
  ``lhs - rhs``; for an inequality it is ``gap - certificate`` where ``certificate`` is a product
  or sum of factors whose signs the hypotheses fix (stated in ``how``).
* ``kind``: ``identity``, ``conditional identity`` (holds under a substitution hypothesis),
  ``inequality``, ``strict inequality`` or ``hypothesis-carrying`` (the content sits in the
  hypotheses, e.g. "F >= 0 and G >= 0 imply F G >= 0"); the last are not counted as evidence.
* ``origin``: ``paper`` (stated and named in Nagy), ``paper prose`` (stated in the text but not
  a kernel node), ``reconstructed`` (MN1–MN3, whose printed statements are cut by a lost "<") or
  ``ours`` (the matrix lifts, :func:`iclcore.gd.matrix_lifts.matrix_lift_statements`).

Layout: the record and the scalar model are in :mod:`iclcore.gd.statements`; the statements in
:mod:`iclcore.gd.scalar_statements` (§1–§7), :mod:`iclcore.gd.appendix_statements` (App. A) and
:mod:`iclcore.gd.matrix_lifts` (ours). This module collects them (:data:`STATEMENTS`) and checks
them (:func:`certify`, :func:`evaluate`, :func:`identity_table`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import sympy as sp

from iclcore.gd.appendix_statements import appendix_statements
from iclcore.gd.matrix_lifts import matrix_lift_statements
from iclcore.gd.scalar_statements import scalar_statements
from iclcore.gd.statements import Statement

__all__ = [
    "STATEMENTS",
    "statement",
    "certify",
    "evaluate",
    "identity_table",
]

STATEMENTS: tuple[Statement, ...] = (*scalar_statements(), *appendix_statements(), *matrix_lift_statements())


def statement(label: str) -> Statement:
    """The statement with this label (e.g. ``"A6"``)."""
    for s_ in STATEMENTS:
        if s_.label == label:
            return s_
    raise ValueError(f"label: unknown statement {label!r}")


def certify(st: Statement) -> bool:
    """True iff every sympy residual of ``st`` is identically zero."""
    return all(sp.simplify(r) == 0 for r in st.residuals())


def evaluate(st: Statement, t: Mapping[str, Fraction]) -> bool:
    """Evaluate the conclusion of ``st`` exactly at the domain point ``point(t)``.

    ``t`` maps each name in ``st.params`` to a rational in ``[0, 1]`` (in ``(0, 1)`` for the names in
    ``st.open_params``); a value outside raises ``ValueError``.
    """
    for k in st.params:
        if k not in t:
            raise ValueError(f"t: missing parameter {k!r} of {st.label}")
        x = Fraction(t[k])
        lo_ok = x > 0 if k in st.open_params else x >= 0
        hi_ok = x < 1 if k in st.open_params else x <= 1
        if not (lo_ok and hi_ok):
            raise ValueError(f"t[{k!r}] = {x} outside the unit interval of {st.label}")
    return bool(st.holds(st.point({k: Fraction(t[k]) for k in st.params})))


def identity_table(results: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """Markdown table: label, Lean name, family, statement, hypotheses, how checked, verdict, evidence.

    ``results`` (optional) maps a label to ``{"sympy": bool, "points": int, "failures": int}`` and
    adds those columns.
    """
    head = "| id | Lean name | origin | statement | hypotheses | how checked | verdict | evidence |"
    if results is not None:
        head += " sympy | exact points (fails) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s_ in STATEMENTS:
        math = s_.statement.replace("|", r"\vert ")
        txt = lambda x: x.replace("|", r"\|")  # noqa: E731  (a bare "|" would split the table cell)
        row = (
            f"| {s_.label} | `{s_.lean}` | {s_.origin} | ${math}$ | {txt(s_.hypotheses)} | {txt(s_.how)} | "
            f"{txt(s_.verdict)} | {s_.evidence} |"
        )
        if results is not None:
            r = results.get(s_.label, {})
            sy = {True: "✓", False: "✗", None: "—"}[r.get("sympy")]
            row += f" {sy} | {r.get('points', 0)} ({r.get('failures', 0)}) |"
        lines.append(row)
    return "\n".join(lines) + "\n"
