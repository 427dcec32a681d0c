"""The record of one identity of Nagy (:class:`Statement`), the scalar model of Nagy §1,
and the helpers that map unit-interval parameters into each statement's domain.

Notation (Nagy §1, scalar model): ``a = sum x_i^2``, ``b = sum x_i y_i``, ``c = sum y_i^2``,
``L(w) = a w^2 - 2 b w + c`` (exactly ``sum (w x_i - y_i)^2``), ``g = a w - b`` (the gradient of
``L/2``), ``w+ = w - eta g``, ``a w* = b``, ``e = w - w*``. The statements themselves are in
:mod:`iclcore.gd.scalar_statements` (§1–§7), :mod:`iclcore.gd.appendix_statements` (App. A) and
:mod:`iclcore.gd.matrix_lifts` (ours); :mod:`iclcore.gd.identities` collects and checks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy as sp

__all__ = [
    "loss",
    "gradient",
    "gd_step",
    "Statement",
    "EVIDENCE",
    "MN_D",
    "unit_to_real",
    "unit_to_nonnegative",
    "minimizer_point",
    "expanded",
]

R = Fraction(8)  # half-width of the box used for unrestricted real variables

# --------------------------------------------------------------------------------------------
# the scalar model of §1 (works on floats, Fractions and sympy symbols alike)
# --------------------------------------------------------------------------------------------


def loss(w: Any, a: Any, b: Any, *, c: Any) -> Any:
    """``L(w) = a w^2 - 2 b w + c`` (Nagy §1); equals ``sum_i (w x_i - y_i)^2``."""
    return a * w**2 - 2 * b * w + c


def gradient(w: Any, a: Any, b: Any) -> Any:
    """``g = a w - b`` (Nagy §1): the gradient of ``L/2``, not of ``L`` (see the errata)."""
    return a * w - b


def gd_step(w: Any, a: Any, b: Any, *, eta: Any) -> Any:
    """``w+ = w - eta g`` (Nagy §1)."""
    return w - eta * gradient(w, a, b)


def unit_to_real(t: Fraction) -> Fraction:
    """Map ``t in [0, 1]`` to ``[-R, R]`` (``t = 1/2`` gives 0), ``R = 8``."""
    return R * (2 * t - 1)


def unit_to_nonnegative(t: Fraction) -> Fraction:
    """Map ``t in [0, 1]`` to ``[0, R]``, ``R = 8``."""
    return R * t


def minimizer_point(t: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """The point of a "``b = a w*``" statement: every parameter of ``t`` mapped by
    :func:`unit_to_real`, and ``b = a w*`` (so that ``w*`` solves ``a w* = b``)."""
    q = {k: unit_to_real(x) for k, x in t.items()}
    q["b"] = q["a"] * q["wstar"]
    return q


def expanded(*exprs: Any) -> list[sp.Expr]:
    """The residuals ``exprs``, each expanded by :func:`sympy.expand` (zero iff the identity holds)."""
    return [sp.expand(x) for x in exprs]


MN_D = 4  # dimension used when evaluating the arbitrary-dimension statements on exact points


# --------------------------------------------------------------------------------------------
# the statement record
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One statement of Nagy (or one of our lifts); the fields are described in :mod:`iclcore.gd.identities`."""

    label: str
    lean: str
    family: str
    statement: str
    hypotheses: str
    kind: str
    origin: str
    params: tuple[str, ...]
    point: Callable[[Mapping[str, Fraction]], dict[str, Any]]
    holds: Callable[[Mapping[str, Any]], bool]
    residuals: Callable[[], list[sp.Expr]]
    how: str
    verdict: str
    open_params: tuple[str, ...] = field(default=())

    @property
    def evidence(self) -> str:
        """Evidence label: hypothesis-carrying statements are not counted as evidence."""
        return EVIDENCE[self.kind]


EVIDENCE = {
    "identity": "identity (sympy)",
    "conditional identity": "identity under a substitution (sympy)",
    "inequality": "inequality (factor certificate)",
    "strict inequality": "strict inequality (factor certificate)",
    "hypothesis-carrying": "hypothesis-carrying: not evidence",
}
