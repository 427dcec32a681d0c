"""The identity families of seed 004 (§1–§7, App. A) as data: statement, hypotheses, a sympy
certificate and an exact-rational evaluation on points drawn *inside* each domain.

Notation (seed 004 §1, scalar model): ``a = sum x_i^2``, ``b = sum x_i y_i``, ``c = sum y_i^2``,
``L(w) = a w^2 - 2 b w + c`` (exactly ``sum (w x_i - y_i)^2``), ``g = a w - b`` (the gradient of
``L/2``), ``w+ = w - eta g``, ``a w* = b``, ``e = w - w*``.

Every statement is a :class:`Statement`:

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
* ``origin``: ``paper`` (stated and named in seed 004), ``paper prose`` (stated in the text but not
  a kernel node), ``reconstructed`` (MN1–MN3, whose printed statements are cut by a lost "<") or
  ``ours`` (the matrix lifts, :func:`matrix_lift_statements`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from iclcore.validation import symmetric_psd

__all__ = [
    "loss",
    "gradient",
    "gd_step",
    "Statement",
    "STATEMENTS",
    "statement",
    "certify",
    "evaluate",
    "EVIDENCE",
    "identity_table",
    "matrix_loss_decrease",
    "layer_varying_error",
    "rational_orthogonal",
    "descent_condition_holds",
]

R = Fraction(8)  # half-width of the box used for unrestricted real variables


# --------------------------------------------------------------------------------------------
# the scalar model of §1 (works on floats, Fractions and sympy symbols alike)
# --------------------------------------------------------------------------------------------


def loss(w: Any, a: Any, b: Any, c: Any) -> Any:
    """``L(w) = a w^2 - 2 b w + c`` (seed 004 §1); equals ``sum_i (w x_i - y_i)^2``."""
    return a * w**2 - 2 * b * w + c


def gradient(w: Any, a: Any, b: Any) -> Any:
    """``g = a w - b`` (seed 004 §1): the gradient of ``L/2``, not of ``L`` (see the errata)."""
    return a * w - b


def gd_step(w: Any, a: Any, b: Any, eta: Any) -> Any:
    """``w+ = w - eta g`` (seed 004 §1)."""
    return w - eta * gradient(w, a, b)


def _real(t: Fraction) -> Fraction:
    """Map ``t in [0, 1]`` to ``[-R, R]`` (``t = 1/2`` gives 0)."""
    return R * (2 * t - 1)


def _pos(t: Fraction) -> Fraction:
    """Map ``t in [0, 1]`` to ``[0, R]``."""
    return R * t


# --------------------------------------------------------------------------------------------
# statements
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One statement of seed 004 (or one of our lifts); see the module docstring."""

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

S = sp.symbols(
    "a b c w eta wstar e u v p y1 y2 ap F G Lw rho2 e0sq e2sq e3sq L1 L2 L1n L2n a1 a2 "
    "kappa vo qk g1 g2 g1n g2n k1 k2 l1 l2",
    real=True,
)
(
    a,
    b,
    c,
    w,
    eta,
    wstar,
    e,
    u,
    v,
    p,
    y1,
    y2,
    ap,
    F,
    G,
    Lw,
    rho2,
    e0sq,
    e2sq,
    e3sq,
    L1,
    L2,
    L1n,
    L2n,
    a1,
    a2,
    kappa,
    vo,
    qk,
    g1,
    g2,
    g1n,
    g2n,
    k1,
    k2,
    l1,
    l2,
) = S


def _z(*exprs: Any) -> list[sp.Expr]:
    return [sp.expand(x) for x in exprs]


MN_D = 4  # dimension used when evaluating the arbitrary-dimension statements on exact points


def _build() -> tuple[Statement, ...]:
    st: list[Statement] = []

    def add(**kw: Any) -> None:
        st.append(Statement(**kw))

    g_ = gradient(w, a, b)
    # ---------------------------------------------------------------- ring identities (§1.1, §3, §4)
    add(
        label="LDI",
        lean="loss_decrease_identity",
        family="ring",
        statement=r"L(w)-L(w-\eta g)=\eta(2-\eta a)\,g^2",
        hypotheses="none (all real a, b, c, w, η)",
        kind="identity",
        origin="paper",
        params=("a", "b", "c", "w", "eta"),
        point=lambda t: {k: _real(t[k]) for k in ("a", "b", "c", "w", "eta")},
        holds=lambda q: (
            loss(q["w"], q["a"], q["b"], q["c"])
            - loss(gd_step(q["w"], q["a"], q["b"], q["eta"]), q["a"], q["b"], q["c"])
            == q["eta"] * (2 - q["eta"] * q["a"]) * gradient(q["w"], q["a"], q["b"]) ** 2
        ),
        residuals=lambda: _z(loss(w, a, b, c) - loss(gd_step(w, a, b, eta), a, b, c) - eta * (2 - eta * a) * g_**2),
        how="sympy expand(lhs - rhs) = 0",
        verdict="holds",
    )
    add(
        label="ERI",
        lean="error_recursion_identity",
        family="ring",
        statement=r"w^+-w^\star=(1-\eta a)(w-w^\star),\ (e^+)^2=(1-\eta a)^2e^2",
        hypotheses="b = a w*",
        kind="conditional identity",
        origin="paper",
        params=("a", "wstar", "w", "eta"),
        point=lambda t: {
            "a": _real(t["a"]),
            "wstar": _real(t["wstar"]),
            "w": _real(t["w"]),
            "eta": _real(t["eta"]),
            "b": _real(t["a"]) * _real(t["wstar"]),
        },
        holds=lambda q: (
            gd_step(q["w"], q["a"], q["b"], q["eta"]) - q["wstar"] == (1 - q["eta"] * q["a"]) * (q["w"] - q["wstar"])
        ),
        residuals=lambda: _z(
            (gd_step(w, a, a * wstar, eta) - wstar) - (1 - eta * a) * (w - wstar),
            (gd_step(w, a, a * wstar, eta) - wstar) ** 2 - (1 - eta * a) ** 2 * (w - wstar) ** 2,
        ),
        how="substitute b = a w*, then sympy expand = 0",
        verdict="holds",
    )
    add(
        label="EXC",
        lean="(prose, §8.1a)",
        family="ring",
        statement=r"L(w)-L(w^\star)=a\,e^2\ \Rightarrow\ \frac{L_k-L^\star}{L_0-L^\star}=(1-\eta a)^{2k}",
        hypotheses="b = a w*",
        kind="conditional identity",
        origin="paper prose",
        params=("a", "wstar", "w", "c"),
        point=lambda t: {
            "a": _real(t["a"]),
            "wstar": _real(t["wstar"]),
            "w": _real(t["w"]),
            "c": _real(t["c"]),
            "b": _real(t["a"]) * _real(t["wstar"]),
        },
        holds=lambda q: (
            loss(q["w"], q["a"], q["b"], q["c"]) - loss(q["wstar"], q["a"], q["b"], q["c"])
            == q["a"] * (q["w"] - q["wstar"]) ** 2
        ),
        residuals=lambda: _z(loss(w, a, a * wstar, c) - loss(wstar, a, a * wstar, c) - a * (w - wstar) ** 2),
        how="sympy expand = 0; the raw ratio L_k/L_0 equals (1-ηa)^{2k} only if L* = c - b²/a = 0",
        verdict="holds for the excess loss; Fig. 1a's L_k/L_0 needs realizable data (L* = 0)",
    )
    # ---------------------------------------------------------------- family A (§2–§4)
    add(
        label="A1",
        lean="attention_update_is_gd_step",
        family="A",
        statement=r"\eta(b-aw)=-\eta g",
        hypotheses="η > 0 (unused)",
        kind="identity",
        origin="paper",
        params=("a", "b", "w", "eta"),
        point=lambda t: {k: _real(t[k]) for k in ("a", "b", "w", "eta")},
        holds=lambda q: q["eta"] * (q["b"] - q["a"] * q["w"]) == -q["eta"] * gradient(q["w"], q["a"], q["b"]),
        residuals=lambda: _z(eta * (b - a * w) + eta * g_),
        how="definitional; sympy expand = 0",
        verdict="holds (definitional; η > 0 not needed)",
    )
    add(
        label="A2",
        lean="in_context_gradient_is_curvature_times_error",
        family="A",
        statement=r"g=a\,e",
        hypotheses="a w* = b (the stated a > 0 is not needed)",
        kind="conditional identity",
        origin="paper",
        params=("a", "wstar", "w"),
        point=lambda t: {
            "a": _real(t["a"]),
            "wstar": _real(t["wstar"]),
            "w": _real(t["w"]),
            "b": _real(t["a"]) * _real(t["wstar"]),
        },
        holds=lambda q: gradient(q["w"], q["a"], q["b"]) == q["a"] * (q["w"] - q["wstar"]),
        residuals=lambda: _z(gradient(w, a, a * wstar) - a * (w - wstar)),
        how="substitute b = a w*; sympy",
        verdict="holds; hypothesis a > 0 redundant",
    )
    add(
        label="A3",
        lean="stable_step_factor_nonneg",
        family="A",
        statement=r"\eta(2-\eta a)\ge0",
        hypotheses="η > 0, ηa ≤ 2 (η ≥ 0 suffices)",
        kind="inequality",
        origin="paper",
        params=("eta", "x"),
        point=lambda t: {
            "eta": _pos(t["eta"]),
            "a": (2 - _pos(t["x"])) / _pos(t["eta"]) if t["eta"] else _real(t["x"]),
        },
        holds=lambda q: q["eta"] * (2 - q["eta"] * q["a"]) >= 0,
        residuals=lambda: _z(eta * (2 - eta * a) - eta * (2 - eta * a)),
        how="product of η ≥ 0 and 2 - ηa ≥ 0",
        verdict="holds",
    )
    add(
        label="A4",
        lean="grad_sq_nonneg",
        family="A",
        statement=r"g^2\ge0",
        hypotheses="none",
        kind="inequality",
        origin="paper",
        params=("a", "b", "w"),
        point=lambda t: {k: _real(t[k]) for k in ("a", "b", "w")},
        holds=lambda q: gradient(q["w"], q["a"], q["b"]) ** 2 >= 0,
        residuals=lambda: _z(g_**2 - (a * w - b) ** 2),
        how="a square",
        verdict="holds",
    )
    add(
        label="A5",
        lean="gd_decreases_loss",
        family="A",
        statement=r"L(w^+)\le L(w)",
        hypotheses="L(w) - L(w+) = F·G with F ≥ 0, G ≥ 0",
        kind="hypothesis-carrying",
        origin="paper",
        params=("Lw", "F", "G"),
        point=lambda t: {
            "Lw": _real(t["Lw"]),
            "F": _pos(t["F"]),
            "G": _pos(t["G"]),
            "Lwn": _real(t["Lw"]) - _pos(t["F"]) * _pos(t["G"]),
        },
        holds=lambda q: q["Lwn"] <= q["Lw"],
        residuals=lambda: _z(Lw - (Lw - F * G) - F * G),
        how="L - L+ = F·G, a product of the two assumed non-negative factors",
        verdict="holds (content in the hypotheses)",
    )
    add(
        label="A5+",
        lean="(LDI + A3 + A4 + A5)",
        family="A",
        statement=r"L(w-\eta g)\le L(w)",
        hypotheses="η ≥ 0, 0 ≤ ηa ≤ 2; any b, c, w",
        kind="inequality",
        origin="paper prose",
        params=("eta", "x", "b", "c", "w"),
        point=lambda t: {
            "eta": _pos(t["eta"]),
            "a": (2 * t["x"]) / _pos(t["eta"]) if t["eta"] else _pos(t["x"]),
            "b": _real(t["b"]),
            "c": _real(t["c"]),
            "w": _real(t["w"]),
        },
        holds=lambda q: (
            loss(gd_step(q["w"], q["a"], q["b"], q["eta"]), q["a"], q["b"], q["c"])
            <= loss(q["w"], q["a"], q["b"], q["c"])
        ),
        residuals=lambda: _z(loss(w, a, b, c) - loss(gd_step(w, a, b, eta), a, b, c) - eta * (2 - eta * a) * g_**2),
        how="LDI: L - L+ = [η(2-ηa)]·g², both factors ≥ 0 in the window",
        verdict="holds (the window 0 ≤ ηa ≤ 2 is the ½-loss window)",
    )
    add(
        label="A6",
        lean="contraction_factor_sq_le_one",
        family="A",
        statement=r"(1-\eta a)^2\le1",
        hypotheses="0 ≤ ηa ≤ 2",
        kind="inequality",
        origin="paper",
        params=("x",),
        point=lambda t: {"x": 2 * t["x"]},
        holds=lambda q: (1 - q["x"]) ** 2 <= 1,
        residuals=lambda: _z(1 - (1 - u) ** 2 - u * (2 - u)),
        how="1 - (1-x)² = x(2-x), x = ηa ∈ [0, 2]",
        verdict="holds",
    )
    add(
        label="A7",
        lean="contraction_reduces_error",
        family="A",
        statement=r"(e^+)^2\le e^2",
        hypotheses="(e+)² = ρ² e², ρ² ≤ 1, e² ≥ 0",
        kind="hypothesis-carrying",
        origin="paper",
        params=("rho2", "e0sq"),
        point=lambda t: {"rho2": t["rho2"], "e0sq": _pos(t["e0sq"]), "e1sq": t["rho2"] * _pos(t["e0sq"])},
        holds=lambda q: q["e1sq"] <= q["e0sq"],
        residuals=lambda: _z(e0sq - rho2 * e0sq - (1 - rho2) * e0sq),
        how="e² - ρ²e² = (1-ρ²)e²",
        verdict="holds (content in the hypotheses)",
    )
    add(
        label="A7k",
        lean="(prose, §4/§6, not a kernel node)",
        family="A",
        statement=r"e_k=(1-\eta a)^k e_0\ \ (k\le 6)",
        hypotheses="b = a w*; fixed η",
        kind="conditional identity",
        origin="paper prose",
        params=("a", "wstar", "w", "eta"),
        point=lambda t: {
            "a": _real(t["a"]),
            "wstar": _real(t["wstar"]),
            "w": _real(t["w"]),
            "eta": _real(t["eta"]),
            "b": _real(t["a"]) * _real(t["wstar"]),
        },
        holds=lambda q: _k_steps(q, 6) - q["wstar"] == (1 - q["eta"] * q["a"]) ** 6 * (q["w"] - q["wstar"]),
        residuals=lambda: [
            sp.expand(
                _k_steps({"w": w, "a": a, "b": a * wstar, "eta": eta}, k) - wstar - (1 - eta * a) ** k * (w - wstar)
            )
            for k in range(1, 7)
        ],
        how="sympy for k = 1..6; the general k is induction (informal in the paper)",
        verdict="holds",
    )
    # ---------------------------------------------------------------- family B (§5)
    add(
        label="B1",
        lean="softmax_prediction_lower_bound",
        family="B",
        statement=r"p y_1+(1-p)y_2\ge y_1",
        hypotheses="p ∈ [0, 1], y1 ≤ y2",
        kind="inequality",
        origin="paper",
        params=("p", "y1", "dy"),
        point=lambda t: {"p": t["p"], "y1": _real(t["y1"]), "y2": _real(t["y1"]) + _pos(t["dy"])},
        holds=lambda q: q["p"] * q["y1"] + (1 - q["p"]) * q["y2"] >= q["y1"],
        residuals=lambda: _z(p * y1 + (1 - p) * y2 - y1 - (1 - p) * (y2 - y1)),
        how="ŷ - y1 = (1-p)(y2-y1)",
        verdict="holds",
    )
    add(
        label="B2",
        lean="softmax_prediction_upper_bound",
        family="B",
        statement=r"p y_1+(1-p)y_2\le y_2",
        hypotheses="p ∈ [0, 1], y1 ≤ y2",
        kind="inequality",
        origin="paper",
        params=("p", "y1", "dy"),
        point=lambda t: {"p": t["p"], "y1": _real(t["y1"]), "y2": _real(t["y1"]) + _pos(t["dy"])},
        holds=lambda q: q["p"] * q["y1"] + (1 - q["p"]) * q["y2"] <= q["y2"],
        residuals=lambda: _z(y2 - (p * y1 + (1 - p) * y2) - p * (y2 - y1)),
        how="y2 - ŷ = p(y2-y1)",
        verdict="holds",
    )
    add(
        label="B3",
        lean="softmax_concentration_accelerates",
        family="B",
        statement=r"(1-v)^2\le(1-u)^2",
        hypotheses="0 < u ≤ v ≤ 1 (u > 0 not needed)",
        kind="inequality",
        origin="paper",
        params=("u", "v"),
        point=lambda t: {"u": t["u"], "v": t["u"] + (1 - t["u"]) * t["v"]},
        holds=lambda q: (1 - q["v"]) ** 2 <= (1 - q["u"]) ** 2,
        residuals=lambda: _z((1 - u) ** 2 - (1 - v) ** 2 - (v - u) * (2 - u - v)),
        how="(1-u)² - (1-v)² = (v-u)(2-u-v), both factors ≥ 0",
        verdict="holds; u > 0 redundant",
    )
    add(
        label="B4",
        lean="softmax_moderation_accelerates",
        family="B",
        statement=r"(1-v)^2\le(1-u)^2",
        hypotheses="1 ≤ v ≤ u ≤ 2 (u ≤ 2 not needed)",
        kind="inequality",
        origin="paper",
        params=("v", "u"),
        point=lambda t: {"v": 1 + t["v"], "u": 1 + t["v"] + (1 - t["v"]) * t["u"]},
        holds=lambda q: (1 - q["v"]) ** 2 <= (1 - q["u"]) ** 2,
        residuals=lambda: _z((1 - u) ** 2 - (1 - v) ** 2 - (v - u) * (2 - u - v)),
        how="same factorisation; both factors ≤ 0",
        verdict="holds; u ≤ 2 redundant",
    )
    add(
        label="Bgen",
        lean="(prose, §5.2)",
        family="B",
        statement=r"|1-v|\le|1-u|\iff(1-v)^2\le(1-u)^2",
        hypotheses="none",
        kind="identity",
        origin="paper prose",
        params=("u", "v"),
        point=lambda t: {"u": _real(t["u"]), "v": _real(t["v"])},
        holds=lambda q: (abs(1 - q["v"]) <= abs(1 - q["u"])) == ((1 - q["v"]) ** 2 <= (1 - q["u"]) ** 2),
        residuals=lambda: _z((1 - u) ** 2 - (1 - v) ** 2 - (abs(1 - u) - abs(1 - v)) * (abs(1 - u) + abs(1 - v))),
        how="(1-u)² - (1-v)² = (|1-u| - |1-v|)(|1-u| + |1-v|)",
        verdict="holds (also in the straddling case)",
    )
    add(
        label="Breal",
        lean="(prose, §5.2)",
        family="B",
        statement=r"y_i=w^\star x_i\ \forall i\Rightarrow b_p/a_p=b/a",
        hypotheses="realizable data; p in the simplex; a_p > 0",
        kind="conditional identity",
        origin="paper prose",
        params=("x1", "x2", "x3", "p1", "p2", "wstar"),
        point=_breal_point,
        holds=lambda q: q["bp"] * q["a"] == q["b"] * q["ap"],
        residuals=lambda: _z(
            sum(pi * xi * (wstar * xi) for pi, xi in zip(sp.symbols("p1:4"), sp.symbols("x1:4")))
            - wstar * sum(pi * xi**2 for pi, xi in zip(sp.symbols("p1:4"), sp.symbols("x1:4"))),
            sum(xi * (wstar * xi) for xi in sp.symbols("x1:4")) - wstar * sum(xi**2 for xi in sp.symbols("x1:4")),
        ),
        how="b_p = w* a_p and b = w* a (sympy, n = 3)",
        verdict="holds",
    )
    add(
        label="B5",
        lean="curvature_squares_under_concentration",
        family="B",
        statement=r"a^2\le a_p^2",
        hypotheses="a ≥ 0, a_p ≥ a",
        kind="inequality",
        origin="paper",
        params=("a", "d"),
        point=lambda t: {"a": _pos(t["a"]), "ap": _pos(t["a"]) + _pos(t["d"])},
        holds=lambda q: q["a"] ** 2 <= q["ap"] ** 2,
        residuals=lambda: _z(ap**2 - a**2 - (ap - a) * (ap + a)),
        how="a_p² - a² = (a_p-a)(a_p+a)",
        verdict="holds",
    )
    add(
        label="B6",
        lean="concentration_amplifies_gradient",
        family="B",
        statement=r"a^2e^2\le a_p^2e^2",
        hypotheses="a ≥ 0, a_p ≥ a, e² ≥ 0",
        kind="inequality",
        origin="paper",
        params=("a", "d", "e"),
        point=lambda t: {"a": _pos(t["a"]), "ap": _pos(t["a"]) + _pos(t["d"]), "e": _real(t["e"])},
        holds=lambda q: q["a"] ** 2 * q["e"] ** 2 <= q["ap"] ** 2 * q["e"] ** 2,
        residuals=lambda: _z((ap**2 - a**2) * e**2 - (ap - a) * (ap + a) * e**2),
        how="(a_p-a)(a_p+a)e²",
        verdict="holds; g_p = a_p e only relative to the reweighted optimum (equal to w* only for realizable data)",
    )
    add(
        label="B7",
        lean="optimal_preconditioning_zeroes_contraction",
        family="B",
        statement=r"v=1\Rightarrow(1-v)^2=0",
        hypotheses="v = η a_p = 1",
        kind="conditional identity",
        origin="paper",
        params=(),
        point=lambda t: {"v": Fraction(1)},
        holds=lambda q: (1 - q["v"]) ** 2 == 0,
        residuals=lambda: _z((1 - v) ** 2 - (1 - v) ** 2),
        how="substitution",
        verdict="holds (trivial)",
    )
    # ---------------------------------------------------------------- family C (§6)
    add(
        label="C1",
        lean="contraction_compounds",
        family="C",
        statement=r"(\rho^2)^2\le\rho^2",
        hypotheses="ρ² ∈ [0, 1]",
        kind="inequality",
        origin="paper",
        params=("rho2",),
        point=lambda t: {"rho2": t["rho2"]},
        holds=lambda q: q["rho2"] ** 2 <= q["rho2"],
        residuals=lambda: _z(rho2 - rho2**2 - rho2 * (1 - rho2)),
        how="ρ² - ρ⁴ = ρ²(1-ρ²)",
        verdict="holds",
    )
    add(
        label="C2",
        lean="depth_strictly_improves",
        family="C",
        statement=r"(\rho^2)^2<\rho^2",
        hypotheses="0 < ρ² < 1",
        kind="strict inequality",
        origin="paper",
        params=("rho2",),
        open_params=("rho2",),
        point=lambda t: {"rho2": t["rho2"]},
        holds=lambda q: q["rho2"] ** 2 < q["rho2"],
        residuals=lambda: _z(rho2 - rho2**2 - rho2 * (1 - rho2)),
        how="ρ²(1-ρ²), both factors > 0",
        verdict="holds",
    )
    add(
        label="C3",
        lean="two_layer_error_bound",
        family="C",
        statement=r"e_2^2\le e_0^2",
        hypotheses="e2² = ρ2² e0², ρ2² ≤ 1, e0² ≥ 0",
        kind="hypothesis-carrying",
        origin="paper",
        params=("rho2", "e0sq"),
        point=lambda t: {"e0sq": _pos(t["e0sq"]), "e2sq": t["rho2"] * _pos(t["e0sq"])},
        holds=lambda q: q["e2sq"] <= q["e0sq"],
        residuals=lambda: _z(e0sq - rho2 * e0sq - (1 - rho2) * e0sq),
        how="as A7",
        verdict="holds (content in the hypotheses)",
    )
    add(
        label="C4",
        lean="three_layer_error_bound",
        family="C",
        statement=r"e_3^2\le e_0^2",
        hypotheses="e3² ≤ e2², e2² ≤ e0²",
        kind="hypothesis-carrying",
        origin="paper",
        params=("e0sq", "s", "r"),
        point=lambda t: {
            "e0sq": _pos(t["e0sq"]),
            "e2sq": _pos(t["e0sq"]) * t["s"],
            "e3sq": _pos(t["e0sq"]) * t["s"] * t["r"],
        },
        holds=lambda q: q["e3sq"] <= q["e0sq"],
        residuals=lambda: _z((e0sq - e3sq) - ((e0sq - e2sq) + (e2sq - e3sq))),
        how="transitivity: e0² - e3² = (e0²-e2²) + (e2²-e3²)",
        verdict="holds (content in the hypotheses)",
    )
    # ---------------------------------------------------------------- family D (§7)
    add(
        label="D1",
        lean="total_loss_descent",
        family="D",
        statement=r"L_1'+L_2'\le L_1+L_2",
        hypotheses="L1' ≤ L1, L2' ≤ L2",
        kind="hypothesis-carrying",
        origin="paper",
        params=("L1", "L2", "d1", "d2"),
        point=lambda t: {
            "L1": _real(t["L1"]),
            "L2": _real(t["L2"]),
            "L1n": _real(t["L1"]) - _pos(t["d1"]),
            "L2n": _real(t["L2"]) - _pos(t["d2"]),
        },
        holds=lambda q: q["L1n"] + q["L2n"] <= q["L1"] + q["L2"],
        residuals=lambda: _z((L1 + L2) - (L1n + L2n) - ((L1 - L1n) + (L2 - L2n))),
        how="sum of two non-negative gaps",
        verdict="holds (content in the hypotheses)",
    )
    add(
        label="D2",
        lean="optimal_step_balances_contraction",
        family="D",
        statement=r"(1-u)^2\le(1-v)^2\ \text{(in fact }=\text{)}",
        hypotheses="u + v = 2",
        kind="conditional identity",
        origin="paper",
        params=("u",),
        point=lambda t: {"u": _real(t["u"]), "v": 2 - _real(t["u"])},
        holds=lambda q: (1 - q["u"]) ** 2 == (1 - q["v"]) ** 2,
        residuals=lambda: _z((1 - u) ** 2 - (1 - (2 - u)) ** 2),
        how="(1-u)² - (1-v)² = (v-u)(2-u-v) = 0",
        verdict="holds as an equality: the stated inequality is an identity",
    )
    add(
        label="D2r",
        lean="(prose, §7)",
        family="D",
        statement=r"\eta=\tfrac{2}{a_1+a_2}:\ (1-\eta a_1)^2=\big(\tfrac{\kappa-1}{\kappa+1}\big)^2,\ \kappa=\tfrac{a_2}{a_1}",
        hypotheses="a1 > 0, a2 ≥ 0",
        kind="conditional identity",
        origin="paper prose",
        params=("a1", "a2"),
        open_params=("a1",),
        point=lambda t: {"a1": _pos(t["a1"]), "a2": _pos(t["a2"])},
        holds=lambda q: (
            (1 - 2 * q["a1"] / (q["a1"] + q["a2"])) ** 2
            == ((q["a2"] / q["a1"] - 1) / (q["a2"] / q["a1"] + 1)) ** 2
            == (1 - 2 * q["a2"] / (q["a1"] + q["a2"])) ** 2
        ),
        residuals=lambda: [
            sp.simplify((1 - 2 * a1 / (a1 + a2)) ** 2 - ((a2 / a1 - 1) / (a2 / a1 + 1)) ** 2),
            sp.simplify((1 - 2 * a1 / (a1 + a2)) ** 2 - (1 - 2 * a2 / (a1 + a2)) ** 2),
        ],
        how="sympy simplify = 0",
        verdict="holds",
    )
    add(
        label="D3",
        lean="condition_rate_bounded",
        family="D",
        statement=r"(a_2-a_1)^2\le(a_2+a_1)^2",
        hypotheses="a1, a2 ≥ 0",
        kind="inequality",
        origin="paper",
        params=("a1", "a2"),
        point=lambda t: {"a1": _pos(t["a1"]), "a2": _pos(t["a2"])},
        holds=lambda q: (q["a2"] - q["a1"]) ** 2 <= (q["a2"] + q["a1"]) ** 2,
        residuals=lambda: _z((a2 + a1) ** 2 - (a2 - a1) ** 2 - 4 * a1 * a2),
        how="difference = 4 a1 a2",
        verdict="holds",
    )
    # ---------------------------------------------------------------- family V (App. A)
    add(
        label="V1",
        lean="construction_realizes_gd_step",
        family="V",
        statement=r"\kappa(b-aw)=-\kappa(aw-b)",
        hypotheses="none",
        kind="identity",
        origin="paper",
        params=("kappa", "a", "b", "w"),
        point=lambda t: {k: _real(t[k]) for k in ("kappa", "a", "b", "w")},
        holds=lambda q: q["kappa"] * (q["b"] - q["a"] * q["w"]) == -(q["kappa"] * (q["a"] * q["w"] - q["b"])),
        residuals=lambda: _z(kappa * (b - a * w) + kappa * (a * w - b)),
        how="sympy expand = 0",
        verdict="holds (scalar gain only; the matrices are in gd_vonoswald)",
    )
    add(
        label="V2",
        lean="composite_gain_positive",
        family="V",
        statement=r"v_oq_k>0",
        hypotheses="v_o > 0, q_k > 0",
        kind="strict inequality",
        origin="paper",
        params=("vo", "qk"),
        open_params=("vo", "qk"),
        point=lambda t: {"vo": _pos(t["vo"]), "qk": _pos(t["qk"])},
        holds=lambda q: q["vo"] * q["qk"] > 0,
        residuals=lambda: _z(vo * qk - vo * qk),
        how="product of two positives",
        verdict="holds",
    )
    add(
        label="V3",
        lean="gains_realize_newton_convergence",
        family="V",
        statement=r"\kappa a_p=1",
        hypotheses="κ = η, η a_p = 1 (existence: κ = 1/a_p, a_p ≠ 0)",
        kind="conditional identity",
        origin="paper",
        params=("ap",),
        open_params=("ap",),
        point=lambda t: {"ap": _pos(t["ap"]), "kappa": 1 / _pos(t["ap"])},
        holds=lambda q: q["kappa"] * q["ap"] == 1,
        residuals=lambda: _z((1 / ap) * ap - 1),
        how="substitution",
        verdict="holds (trivial)",
    )
    # ---------------------------------------------------------------- family M (App. A)
    add(
        label="M1",
        lean="matrix_update_energy_decomposition",
        family="M",
        statement=r"u_1^2+u_2^2=\kappa_1^2g_1^2+\kappa_2^2g_2^2",
        hypotheses="u_i = -κ_i g_i",
        kind="conditional identity",
        origin="paper",
        params=("k1", "k2", "g1", "g2"),
        point=lambda t: {k: _real(t[k]) for k in ("k1", "k2", "g1", "g2")},
        holds=lambda q: (
            (q["k1"] * q["g1"]) ** 2 + (q["k2"] * q["g2"]) ** 2
            == q["k1"] ** 2 * q["g1"] ** 2 + q["k2"] ** 2 * q["g2"] ** 2
        ),
        residuals=lambda: _z((-k1 * g1) ** 2 + (-k2 * g2) ** 2 - k1**2 * g1**2 - k2**2 * g2**2),
        how="sympy expand = 0",
        verdict="holds",
    )
    add(
        label="M2",
        lean="matrix_frobenius_contraction",
        family="M",
        statement=r"g_1'^2+g_2'^2\le g_1^2+g_2^2",
        hypotheses="g_i'² ≤ g_i² for each i",
        kind="hypothesis-carrying",
        origin="paper",
        params=("g1", "g2", "s1", "s2"),
        point=lambda t: {
            "g1": _real(t["g1"]),
            "g2": _real(t["g2"]),
            "g1n": _real(t["g1"]) * t["s1"],
            "g2n": _real(t["g2"]) * t["s2"],
        },
        holds=lambda q: q["g1n"] ** 2 + q["g2n"] ** 2 <= q["g1"] ** 2 + q["g2"] ** 2,
        residuals=lambda: _z((g1**2 + g2**2) - (g1n**2 + g2n**2) - ((g1**2 - g1n**2) + (g2**2 - g2n**2))),
        how="sum of two non-negative gaps",
        verdict="holds (content in the hypotheses)",
    )
    add(
        label="M3",
        lean="single_gain_newton_impossible",
        family="M",
        statement=r"(1-\kappa\lambda_2)^2>0",
        hypotheses="κ = 1/λ1, λ1 < λ2 (and λ1 ≠ 0, implicit)",
        kind="strict inequality",
        origin="paper",
        params=("l1", "d"),
        open_params=("l1", "d"),
        point=lambda t: {"l1": _pos(t["l1"]), "l2": _pos(t["l1"]) + _pos(t["d"]), "kappa": 1 / _pos(t["l1"])},
        holds=lambda q: (1 - q["kappa"] * q["l2"]) ** 2 > 0,
        residuals=lambda: [sp.simplify((1 - l2 / l1) ** 2 - (l2 - l1) ** 2 / l1**2)],
        how="(1-λ2/λ1)² = (λ2-λ1)²/λ1² > 0",
        verdict="holds; the multi-head reading does not follow (a single head has a matrix W_KQ)",
    )
    add(
        label="M3s",
        lean="(prose, App. A)",
        family="M",
        statement=r"\forall\kappa:\ (1-\kappa\lambda_1)^2+(1-\kappa\lambda_2)^2\ge\tfrac{(\lambda_1-\lambda_2)^2}{\lambda_1^2+\lambda_2^2}>0",
        hypotheses="λ1 ≠ λ2",
        kind="strict inequality",
        origin="paper prose",
        params=("kappa", "l1", "d"),
        open_params=("d",),
        point=lambda t: {"kappa": _real(t["kappa"]), "l1": _real(t["l1"]), "l2": _real(t["l1"]) + _pos(t["d"])},
        holds=lambda q: (
            (1 - q["kappa"] * q["l1"]) ** 2 + (1 - q["kappa"] * q["l2"]) ** 2
            >= (q["l1"] - q["l2"]) ** 2 / (q["l1"] ** 2 + q["l2"] ** 2)
            > 0
        ),
        residuals=lambda: [
            sp.simplify(
                (1 - kappa * l1) ** 2
                + (1 - kappa * l2) ** 2
                - ((l1**2 + l2**2) * (kappa - (l1 + l2) / (l1**2 + l2**2)) ** 2 + (l1 - l2) ** 2 / (l1**2 + l2**2))
            )
        ],
        how="completing the square in κ",
        verdict="holds (with the sharp bound)",
    )
    # ---------------------------------------------------------------- family MN (App. A; reconstructed)
    gs = sp.symbols(f"g0:{MN_D}", real=True)
    gns = sp.symbols(f"h0:{MN_D}", real=True)
    ks = sp.symbols(f"k0:{MN_D}", real=True)
    add(
        label="MN1",
        lean="frobenius_energy_nonneg",
        family="MN",
        statement=r"\sum_{k<d}g_k^2\ge0",
        hypotheses="g_k² ≥ 0 for all k < d",
        kind="hypothesis-carrying",
        origin="reconstructed",
        params=tuple(f"g{k}" for k in range(MN_D)),
        point=lambda t: {"g": [_real(t[f"g{k}"]) for k in range(MN_D)]},
        holds=lambda q: sum(x**2 for x in q["g"]) >= 0,
        residuals=lambda: _z(sum(x**2 for x in gs) - sum(x**2 for x in gs)),
        how="sum of non-negative terms (Finset.sum_nonneg)",
        verdict="holds (reconstructed; content in the hypotheses)",
    )
    add(
        label="MN2",
        lean="frobenius_contraction_full",
        family="MN",
        statement=r"\sum_{k<d}g_k'^2\le\sum_{k<d}g_k^2",
        hypotheses="g_k'² ≤ g_k² for all k < d",
        kind="hypothesis-carrying",
        origin="reconstructed",
        params=tuple(f"g{k}" for k in range(MN_D)) + tuple(f"s{k}" for k in range(MN_D)),
        point=lambda t: {
            "g": [_real(t[f"g{k}"]) for k in range(MN_D)],
            "gn": [_real(t[f"g{k}"]) * t[f"s{k}"] for k in range(MN_D)],
        },
        holds=lambda q: sum(x**2 for x in q["gn"]) <= sum(x**2 for x in q["g"]),
        residuals=lambda: _z(
            sum(x**2 for x in gs) - sum(x**2 for x in gns) - sum(x**2 - y**2 for x, y in zip(gs, gns))
        ),
        how="sum of non-negative gaps (Finset.sum_le_sum)",
        verdict="holds (reconstructed; content in the hypotheses)",
    )
    add(
        label="MN3",
        lean="frobenius_update_energy_decomposition",
        family="MN",
        statement=r"\sum_{k<d}u_k^2=\sum_{k<d}\kappa_k^2g_k^2",
        hypotheses="u_k = -κ_k g_k for all k",
        kind="conditional identity",
        origin="reconstructed",
        params=tuple(f"g{k}" for k in range(MN_D)) + tuple(f"k{k}" for k in range(MN_D)),
        point=lambda t: {"g": [_real(t[f"g{k}"]) for k in range(MN_D)], "k": [_real(t[f"k{k}"]) for k in range(MN_D)]},
        holds=lambda q: (
            sum((-kk * gg) ** 2 for kk, gg in zip(q["k"], q["g"]))
            == sum(kk**2 * gg**2 for kk, gg in zip(q["k"], q["g"]))
        ),
        residuals=lambda: _z(
            sum((-kk * gg) ** 2 for kk, gg in zip(ks, gs)) - sum(kk**2 * gg**2 for kk, gg in zip(ks, gs))
        ),
        how=f"sympy expand = 0 (d = {MN_D}; term by term, Finset.sum_congr)",
        verdict="holds (reconstructed)",
    )
    st.extend(matrix_lift_statements())
    return tuple(st)


def _k_steps(q: Mapping[str, Any], k: int) -> Any:
    x = q["w"]
    for _ in range(k):
        x = gd_step(x, q["a"], q["b"], q["eta"])
    return x


def _breal_point(t: Mapping[str, Fraction]) -> dict[str, Any]:
    xs = [_real(t["x1"]), _real(t["x2"]), _real(t["x3"])]
    if all(x == 0 for x in xs):
        xs[0] = Fraction(1)  # a > 0 (the ratio b/a needs it)
    p1 = t["p1"]
    p2 = (1 - p1) * t["p2"]
    ps = [p1, p2, 1 - p1 - p2]
    if sum(pi * x * x for pi, x in zip(ps, xs)) == 0:  # the weighted curvature must be > 0 as well
        ps = [Fraction(1, 3)] * 3
    ws = _real(t["wstar"])
    ys = [ws * x for x in xs]
    return {
        "a": sum(x * x for x in xs),
        "b": sum(x * y for x, y in zip(xs, ys)),
        "ap": sum(pi * x * x for pi, x in zip(ps, xs)),
        "bp": sum(pi * x * y for pi, x, y in zip(ps, xs, ys)),
    }


# --------------------------------------------------------------------------------------------
# matrix lifts (ours): e+ = (I - P H) e, descent, Newton, layer-varying steps
# --------------------------------------------------------------------------------------------


def matrix_loss_decrease(P: np.ndarray, H: np.ndarray, g: np.ndarray) -> float:
    """``L(w) - L(w - P g) = g^T (P + P^T - P^T H P) g`` for ``L(w) = w^T H w - 2 b^T w + c``, ``g = H w - b``."""
    P, H, g = np.asarray(P), np.asarray(H), np.asarray(g)
    return g @ (P + P.T - P.T @ H @ P) @ g


def layer_varying_error(steps: Sequence[Any], H: Any, e0: Any) -> Any:
    """``e_L = prod_l (I - p_l H) e_0`` (scalar steps ``p_l``, ordered ``l = 0..L-1``); exact on Fractions.

    ``H`` is a list of lists (or array) of shape ``(d, d)``; ``e0`` a list of length ``d``.
    """
    d = len(e0)
    e = list(e0)
    for pl in steps:
        He = [sum(H[i][j] * e[j] for j in range(d)) for i in range(d)]
        e = [e[i] - pl * He[i] for i in range(d)]
    return e


def rational_orthogonal(s: Sequence[Fraction], d: int) -> list[list[Fraction]]:
    """Exact rational orthogonal matrix by the Cayley transform ``Q = (I - S)(I + S)^{-1}``.

    ``s`` holds the ``d(d-1)/2`` strictly-upper entries of the skew matrix ``S``. Returns a list of
    lists of Fractions with ``Q^T Q = I`` exactly.
    """
    if len(s) != d * (d - 1) // 2:
        raise ValueError(f"s: expected {d * (d - 1) // 2} entries for d = {d}, got {len(s)}")
    Sm = sp.zeros(d, d)
    it = iter(s)
    for i in range(d):
        for j in range(i + 1, d):
            x = sp.Rational(next(it))
            Sm[i, j], Sm[j, i] = x, -x
    Q = (sp.eye(d) - Sm) * (sp.eye(d) + Sm).inv()
    return [[Fraction(int(sp.fraction(Q[i, j])[0]), int(sp.fraction(Q[i, j])[1])) for j in range(d)] for i in range(d)]


def descent_condition_holds(P: np.ndarray, H: np.ndarray, tol: float = 1e-10) -> tuple[bool, bool]:
    """For symmetric ``P > 0``: (``P + P - P H P >= 0``, ``lambda_max(P^{1/2} H P^{1/2}) <= 2``).

    The two booleans agree (our lift of the window ``0 <= eta a <= 2``): ``2P - PHP =
    P^{1/2}(2I - P^{1/2} H P^{1/2}) P^{1/2}``. ``tol`` absorbs rounding on the boundary.
    """
    P = symmetric_psd(P, "P", definite=True)
    H = symmetric_psd(H, "H")
    if H.shape != P.shape:
        raise ValueError(f"H: expected shape {P.shape} (that of P), got {H.shape}")
    lam, V = np.linalg.eigh(P)
    R_ = V @ np.diag(np.sqrt(lam)) @ V.T
    M = 2 * P - P @ H @ P
    scale = max(1.0, np.abs(M).max())
    return bool(np.linalg.eigvalsh((M + M.T) / 2).min() >= -tol * scale), bool(
        np.linalg.eigvalsh(R_ @ H @ R_).max() <= 2 + tol * scale
    )


def _msym(name: str, d: int, symmetric: bool = False) -> sp.Matrix:
    M = sp.Matrix(
        d, d, lambda i, j: sp.Symbol(f"{name}{min(i, j) if symmetric else i}{max(i, j) if symmetric else j}", real=True)
    )
    return M


def _lift_residuals_recursion() -> list[sp.Expr]:
    d = 2
    H, P = _msym("H", d, True), _msym("P", d)
    ws, w_ = sp.Matrix(sp.symbols("ws0:2", real=True)), sp.Matrix(sp.symbols("w0:2", real=True))
    b_ = H * ws
    g = H * w_ - b_
    wn = w_ - P * g
    r1 = (wn - ws) - (sp.eye(d) - P * H) * (w_ - ws)
    c_ = sp.Symbol("c", real=True)
    Lf = lambda x: (x.T * H * x)[0] - 2 * (b_.T * x)[0] + c_  # noqa: E731
    r2 = Lf(w_) - Lf(wn) - (g.T * (P + P.T - P.T * H * P) * g)[0]
    return [sp.expand(x) for x in list(r1) + [r2]]


def _mat(A: Sequence[Sequence[Any]], x: Sequence[Any]) -> list[Any]:
    return [sum(A[i][j] * x[j] for j in range(len(x))) for i in range(len(A))]


def _lift_point_recursion(t: Mapping[str, Fraction]) -> dict[str, Any]:
    H = [[_real(t["h00"]), _real(t["h01"])], [_real(t["h01"]), _real(t["h11"])]]
    P = [[_real(t["p00"]), _real(t["p01"])], [_real(t["p10"]), _real(t["p11"])]]
    return {
        "H": H,
        "P": P,
        "w": [_real(t["w0"]), _real(t["w1"])],
        "ws": [_real(t["s0"]), _real(t["s1"])],
        "c": Fraction(3),
    }


def _lift_holds_recursion(q: Mapping[str, Any]) -> bool:
    H, P, w_, ws = q["H"], q["P"], q["w"], q["ws"]
    b_ = _mat(H, ws)
    g = [x - y for x, y in zip(_mat(H, w_), b_)]
    wn = [x - y for x, y in zip(w_, _mat(P, g))]
    e_ = [x - y for x, y in zip(w_, ws)]
    IPH = [[(i == j) - sum(P[i][k] * H[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
    ok1 = [x - y for x, y in zip(wn, ws)] == _mat(IPH, e_)

    def Lf(x: Sequence[Any]) -> Any:
        return sum(x[i] * hx for i, hx in enumerate(_mat(H, x))) - 2 * sum(bi * xi for bi, xi in zip(b_, x)) + q["c"]

    M = [
        [P[i][j] + P[j][i] - sum(P[k][i] * H[k][m] * P[m][j] for k in range(2) for m in range(2)) for j in range(2)]
        for i in range(2)
    ]
    ok2 = Lf(w_) - Lf(wn) == sum(g[i] * mg for i, mg in enumerate(_mat(M, g)))
    return ok1 and ok2


def _lift_point_newton(t: Mapping[str, Fraction]) -> dict[str, Any]:
    Q = rational_orthogonal([_real(t["s0"])], 2)
    lam = [_pos(t["l0"]), _pos(t["l0"]) + _pos(t["l1"])]
    H = [[sum(Q[i][k] * lam[k] * Q[j][k] for k in range(2)) for j in range(2)] for i in range(2)]
    Hinv = [[sum(Q[i][k] / lam[k] * Q[j][k] for k in range(2)) for j in range(2)] for i in range(2)]
    return {"H": H, "P": Hinv, "w": [_real(t["w0"]), _real(t["w1"])], "ws": [_real(t["ws0"]), _real(t["ws1"])]}


def _lift_holds_newton(q: Mapping[str, Any]) -> bool:
    g = [x - y for x, y in zip(_mat(q["H"], q["w"]), _mat(q["H"], q["ws"]))]
    wn = [x - y for x, y in zip(q["w"], _mat(q["P"], g))]
    return wn == list(q["ws"])


def _lift_residuals_congruence() -> list[sp.Expr]:
    Rm, H = _msym("R", 2, True), _msym("H", 2, True)
    P = Rm * Rm
    return [sp.expand(x) for x in (2 * P - P * H * P - Rm * (2 * sp.eye(2) - Rm * H * Rm) * Rm)]


def _lift_residuals_newton() -> list[sp.Expr]:
    H = _msym("H", 2, True)
    ws, w_ = sp.Matrix(sp.symbols("ws0:2", real=True)), sp.Matrix(sp.symbols("w0:2", real=True))
    P = H.inv()
    wn = w_ - P * (H * w_ - H * ws)
    return [sp.simplify(x) for x in (wn - ws)]


def _lift_residuals_layers() -> list[sp.Expr]:
    out = []
    for d in (2, 3):
        H = _msym("H", d, True)
        lam = sp.Symbol("lam")
        cp = H.charpoly(lam).all_coeffs()
        M = sp.zeros(d, d)
        for k, co in enumerate(cp):  # Cayley-Hamilton: chi_H(H) = prod_l (H - lambda_l I) = 0
            M += co * H ** (d - k)
        out += [sp.expand(x) for x in M]
    return out


def _lift_point_layers(t: Mapping[str, Fraction]) -> dict[str, Any]:
    d = 3
    Q = rational_orthogonal([_real(t["s0"]), _real(t["s1"]), _real(t["s2"])], d)
    lam = [
        1 + _pos(t["l0"]),
        1 + _pos(t["l0"]) + _pos(t["l1"]) + Fraction(1, 7),
        1 + _pos(t["l0"]) + _pos(t["l1"]) + _pos(t["l2"]) + Fraction(2, 7),
    ]
    H = [[sum(Q[i][k] * lam[k] * Q[j][k] for k in range(d)) for j in range(d)] for i in range(d)]
    e0 = [_real(t[f"e{i}"]) for i in range(d)]
    return {"H": H, "lam": lam, "e0": e0}


def matrix_lift_statements() -> list[Statement]:
    """Our matrix lifts of the scalar ladder (not in seed 004), as :class:`Statement` objects."""
    out = [
        Statement(
            label="L1",
            lean="(ours)",
            family="lift",
            statement=r"e^+=(I-PH)e,\quad L(w)-L(w^+)=g^\top(P+P^\top-P^\top HP)g",
            hypotheses="b = H w*, any P (d = 2 symbolic)",
            kind="conditional identity",
            origin="ours",
            params=("h00", "h01", "h11", "p00", "p01", "p10", "p11", "w0", "w1", "s0", "s1"),
            point=_lift_point_recursion,
            holds=_lift_holds_recursion,
            residuals=_lift_residuals_recursion,
            how="sympy with symbolic 2×2 H (symmetric) and P (general)",
            verdict="holds",
        ),
        Statement(
            label="L2",
            lean="(ours)",
            family="lift",
            statement=r"P\succ0:\ P+P-PHP\succeq0\iff\lambda_{\max}(P^{1/2}HP^{1/2})\le2",
            hypotheses="P symmetric positive definite, H ⪰ 0",
            kind="inequality",
            origin="ours",
            params=(),
            point=lambda t: {},
            holds=lambda q: True,
            residuals=_lift_residuals_congruence,
            how="2P - PHP = P^{1/2}(2I - P^{1/2}HP^{1/2})P^{1/2} (congruence); numerical property test",
            verdict="holds (descent condition)",
        ),
        Statement(
            label="L3",
            lean="(ours)",
            family="lift",
            statement=r"P=H^{-1}\Rightarrow e^+=0",
            hypotheses="H invertible",
            kind="conditional identity",
            origin="ours",
            params=("s0", "l0", "l1", "w0", "w1", "ws0", "ws1"),
            open_params=("l0", "l1"),
            point=_lift_point_newton,
            holds=_lift_holds_newton,
            residuals=_lift_residuals_newton,
            how="sympy with symbolic 2×2 H",
            verdict="holds (one-step convergence)",
        ),
        Statement(
            label="L4",
            lean="(ours)",
            family="lift",
            statement=r"p_\ell=1/\lambda_\ell\ (\ell=1..d)\Rightarrow\prod_\ell(I-p_\ell H)=0",
            hypotheses="H symmetric with eigenvalues λ_1..λ_d ≠ 0",
            kind="conditional identity",
            origin="ours",
            params=("s0", "s1", "s2", "l0", "l1", "l2", "e0", "e1", "e2"),
            point=_lift_point_layers,
            holds=lambda q: all(x == 0 for x in layer_varying_error([1 / x for x in q["lam"]], q["H"], q["e0"])),
            residuals=_lift_residuals_layers,
            how="Cayley–Hamilton (sympy, symbolic d = 2, 3); exact Fractions with a Cayley-transform eigenbasis",
            verdict="holds: d layer-varying steps zero d modes; a fixed step cannot (M3s)",
        ),
    ]
    return out


STATEMENTS: tuple[Statement, ...] = _build()


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
