"""The statements of Nagy §1–§7 as :class:`~iclcore.gd.statements.Statement` records: the ring
identities (§1.1, §3, §4) and the families A (§2–§4), B (§5), C (§6) and D (§7).

Conventions and the record are in :mod:`iclcore.gd.statements`; :mod:`iclcore.gd.identities`
collects, certifies and evaluates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import sympy as sp

from iclcore.gd.statements import (
    Statement,
    expanded,
    gd_step,
    gradient,
    loss,
    minimizer_point,
    unit_to_nonnegative,
    unit_to_real,
)

__all__ = ["scalar_statements"]

# real sympy symbols of the scalar model (Nagy §1) and of the statements' auxiliary quantities
_NAMES = "a b c w eta wstar e u v p y1 y2 ap F G Lw rho2 e0sq e2sq e3sq L1 L2 L1n L2n a1 a2"
a, b, c, w, eta, wstar, e, u, v, p, y1, y2, ap, F, G, Lw, rho2, e0sq, e2sq, e3sq, L1, L2, L1n, L2n, a1, a2 = sp.symbols(
    _NAMES, real=True
)


def scalar_statements() -> list[Statement]:
    """The ring identities and the families A–D of Nagy (§1–§7), in the paper's order."""
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
        point=lambda t: {k: unit_to_real(t[k]) for k in ("a", "b", "c", "w", "eta")},
        holds=lambda q: (
            loss(q["w"], q["a"], q["b"], c=q["c"])
            - loss(gd_step(q["w"], q["a"], q["b"], eta=q["eta"]), q["a"], q["b"], c=q["c"])
            == q["eta"] * (2 - q["eta"] * q["a"]) * gradient(q["w"], q["a"], q["b"]) ** 2
        ),
        residuals=_loss_decrease_residuals,
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
        point=minimizer_point,
        holds=lambda q: (
            gd_step(q["w"], q["a"], q["b"], eta=q["eta"]) - q["wstar"]
            == (1 - q["eta"] * q["a"]) * (q["w"] - q["wstar"])
        ),
        residuals=lambda: expanded(
            (gd_step(w, a, a * wstar, eta=eta) - wstar) - (1 - eta * a) * (w - wstar),
            (gd_step(w, a, a * wstar, eta=eta) - wstar) ** 2 - (1 - eta * a) ** 2 * (w - wstar) ** 2,
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
        point=minimizer_point,
        holds=lambda q: (
            loss(q["w"], q["a"], q["b"], c=q["c"]) - loss(q["wstar"], q["a"], q["b"], c=q["c"])
            == q["a"] * (q["w"] - q["wstar"]) ** 2
        ),
        residuals=lambda: expanded(loss(w, a, a * wstar, c=c) - loss(wstar, a, a * wstar, c=c) - a * (w - wstar) ** 2),
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
        point=lambda t: {k: unit_to_real(t[k]) for k in ("a", "b", "w", "eta")},
        holds=lambda q: q["eta"] * (q["b"] - q["a"] * q["w"]) == -q["eta"] * gradient(q["w"], q["a"], q["b"]),
        residuals=lambda: expanded(eta * (b - a * w) + eta * g_),
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
        point=minimizer_point,
        holds=lambda q: gradient(q["w"], q["a"], q["b"]) == q["a"] * (q["w"] - q["wstar"]),
        residuals=lambda: expanded(gradient(w, a, a * wstar) - a * (w - wstar)),
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
            "eta": unit_to_nonnegative(t["eta"]),
            "a": (2 - unit_to_nonnegative(t["x"])) / unit_to_nonnegative(t["eta"])
            if t["eta"]
            else unit_to_real(t["x"]),
        },
        holds=lambda q: q["eta"] * (2 - q["eta"] * q["a"]) >= 0,
        residuals=lambda: expanded(eta * (2 - eta * a) - eta * (2 - eta * a)),
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
        point=lambda t: {k: unit_to_real(t[k]) for k in ("a", "b", "w")},
        holds=lambda q: gradient(q["w"], q["a"], q["b"]) ** 2 >= 0,
        residuals=lambda: expanded(g_**2 - (a * w - b) ** 2),
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
            "Lw": unit_to_real(t["Lw"]),
            "F": unit_to_nonnegative(t["F"]),
            "G": unit_to_nonnegative(t["G"]),
            "Lwn": unit_to_real(t["Lw"]) - unit_to_nonnegative(t["F"]) * unit_to_nonnegative(t["G"]),
        },
        holds=lambda q: q["Lwn"] <= q["Lw"],
        residuals=lambda: expanded(Lw - (Lw - F * G) - F * G),
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
            "eta": unit_to_nonnegative(t["eta"]),
            "a": (2 * t["x"]) / unit_to_nonnegative(t["eta"]) if t["eta"] else unit_to_nonnegative(t["x"]),
            "b": unit_to_real(t["b"]),
            "c": unit_to_real(t["c"]),
            "w": unit_to_real(t["w"]),
        },
        holds=lambda q: (
            loss(gd_step(q["w"], q["a"], q["b"], eta=q["eta"]), q["a"], q["b"], c=q["c"])
            <= loss(q["w"], q["a"], q["b"], c=q["c"])
        ),
        residuals=_loss_decrease_residuals,
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
        residuals=lambda: expanded(1 - (1 - u) ** 2 - u * (2 - u)),
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
        point=lambda t: {
            "rho2": t["rho2"],
            "e0sq": unit_to_nonnegative(t["e0sq"]),
            "e1sq": t["rho2"] * unit_to_nonnegative(t["e0sq"]),
        },
        holds=lambda q: q["e1sq"] <= q["e0sq"],
        residuals=lambda: expanded(e0sq - rho2 * e0sq - (1 - rho2) * e0sq),
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
        point=minimizer_point,
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
        point=_softmax_pair_point,
        holds=lambda q: q["p"] * q["y1"] + (1 - q["p"]) * q["y2"] >= q["y1"],
        residuals=lambda: expanded(p * y1 + (1 - p) * y2 - y1 - (1 - p) * (y2 - y1)),
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
        point=_softmax_pair_point,
        holds=lambda q: q["p"] * q["y1"] + (1 - q["p"]) * q["y2"] <= q["y2"],
        residuals=lambda: expanded(y2 - (p * y1 + (1 - p) * y2) - p * (y2 - y1)),
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
        residuals=lambda: expanded((1 - u) ** 2 - (1 - v) ** 2 - (v - u) * (2 - u - v)),
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
        residuals=lambda: expanded((1 - u) ** 2 - (1 - v) ** 2 - (v - u) * (2 - u - v)),
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
        point=lambda t: {"u": unit_to_real(t["u"]), "v": unit_to_real(t["v"])},
        holds=lambda q: (abs(1 - q["v"]) <= abs(1 - q["u"])) == ((1 - q["v"]) ** 2 <= (1 - q["u"]) ** 2),
        residuals=lambda: expanded((1 - u) ** 2 - (1 - v) ** 2 - (abs(1 - u) - abs(1 - v)) * (abs(1 - u) + abs(1 - v))),
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
        residuals=lambda: expanded(
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
        point=lambda t: {
            "a": unit_to_nonnegative(t["a"]),
            "ap": unit_to_nonnegative(t["a"]) + unit_to_nonnegative(t["d"]),
        },
        holds=lambda q: q["a"] ** 2 <= q["ap"] ** 2,
        residuals=lambda: expanded(ap**2 - a**2 - (ap - a) * (ap + a)),
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
        point=lambda t: {
            "a": unit_to_nonnegative(t["a"]),
            "ap": unit_to_nonnegative(t["a"]) + unit_to_nonnegative(t["d"]),
            "e": unit_to_real(t["e"]),
        },
        holds=lambda q: q["a"] ** 2 * q["e"] ** 2 <= q["ap"] ** 2 * q["e"] ** 2,
        residuals=lambda: expanded((ap**2 - a**2) * e**2 - (ap - a) * (ap + a) * e**2),
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
        residuals=lambda: expanded((1 - v) ** 2 - (1 - v) ** 2),
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
        residuals=lambda: expanded(rho2 - rho2**2 - rho2 * (1 - rho2)),
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
        residuals=lambda: expanded(rho2 - rho2**2 - rho2 * (1 - rho2)),
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
        point=lambda t: {"e0sq": unit_to_nonnegative(t["e0sq"]), "e2sq": t["rho2"] * unit_to_nonnegative(t["e0sq"])},
        holds=lambda q: q["e2sq"] <= q["e0sq"],
        residuals=lambda: expanded(e0sq - rho2 * e0sq - (1 - rho2) * e0sq),
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
            "e0sq": unit_to_nonnegative(t["e0sq"]),
            "e2sq": unit_to_nonnegative(t["e0sq"]) * t["s"],
            "e3sq": unit_to_nonnegative(t["e0sq"]) * t["s"] * t["r"],
        },
        holds=lambda q: q["e3sq"] <= q["e0sq"],
        residuals=lambda: expanded((e0sq - e3sq) - ((e0sq - e2sq) + (e2sq - e3sq))),
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
            "L1": unit_to_real(t["L1"]),
            "L2": unit_to_real(t["L2"]),
            "L1n": unit_to_real(t["L1"]) - unit_to_nonnegative(t["d1"]),
            "L2n": unit_to_real(t["L2"]) - unit_to_nonnegative(t["d2"]),
        },
        holds=lambda q: q["L1n"] + q["L2n"] <= q["L1"] + q["L2"],
        residuals=lambda: expanded((L1 + L2) - (L1n + L2n) - ((L1 - L1n) + (L2 - L2n))),
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
        point=lambda t: {"u": unit_to_real(t["u"]), "v": 2 - unit_to_real(t["u"])},
        holds=lambda q: (1 - q["u"]) ** 2 == (1 - q["v"]) ** 2,
        residuals=lambda: expanded((1 - u) ** 2 - (1 - (2 - u)) ** 2),
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
        point=lambda t: {"a1": unit_to_nonnegative(t["a1"]), "a2": unit_to_nonnegative(t["a2"])},
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
        point=lambda t: {"a1": unit_to_nonnegative(t["a1"]), "a2": unit_to_nonnegative(t["a2"])},
        holds=lambda q: (q["a2"] - q["a1"]) ** 2 <= (q["a2"] + q["a1"]) ** 2,
        residuals=lambda: expanded((a2 + a1) ** 2 - (a2 - a1) ** 2 - 4 * a1 * a2),
        how="difference = 4 a1 a2",
        verdict="holds",
    )
    return st


def _k_steps(q: Mapping[str, Any], k: int) -> Any:
    x = q["w"]
    for _ in range(k):
        x = gd_step(x, q["a"], q["b"], eta=q["eta"])
    return x


def _breal_point(t: Mapping[str, Fraction]) -> dict[str, Any]:
    xs = [unit_to_real(t["x1"]), unit_to_real(t["x2"]), unit_to_real(t["x3"])]
    if all(x == 0 for x in xs):
        xs[0] = Fraction(1)  # a > 0 (the ratio b/a needs it)
    p1 = t["p1"]
    p2 = (1 - p1) * t["p2"]
    ps = [p1, p2, 1 - p1 - p2]
    if sum(pi * x * x for pi, x in zip(ps, xs)) == 0:  # the weighted curvature must be > 0 as well
        ps = [Fraction(1, 3)] * 3
    ws = unit_to_real(t["wstar"])
    ys = [ws * x for x in xs]
    return {
        "a": sum(x * x for x in xs),
        "b": sum(x * y for x, y in zip(xs, ys)),
        "ap": sum(pi * x * x for pi, x in zip(ps, xs)),
        "bp": sum(pi * x * y for pi, x, y in zip(ps, xs, ys)),
    }


def _loss_decrease_residuals() -> list[sp.Expr]:
    """LDI: ``L(w) - L(w - η g) - η (2 - η a) g²`` (also the certificate of A5+)."""
    return expanded(
        loss(w, a, b, c=c) - loss(gd_step(w, a, b, eta=eta), a, b, c=c) - eta * (2 - eta * a) * gradient(w, a, b) ** 2
    )


def _softmax_pair_point(t: Mapping[str, Fraction]) -> dict[str, Any]:
    """A weight ``p ∈ [0, 1]`` and two labels ``y1 ≤ y2`` (family B, two-token softmax prediction)."""
    y1_ = unit_to_real(t["y1"])
    return {"p": t["p"], "y1": y1_, "y2": y1_ + unit_to_nonnegative(t["dy"])}
