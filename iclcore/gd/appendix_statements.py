"""The statements of Nagy App. A as :class:`~iclcore.gd.statements.Statement` records: the
families V (the attention construction), M (the matrix ladder) and MN (arbitrary dimension;
reconstructed, their printed statements are cut by a lost "<").

Conventions and the record are in :mod:`iclcore.gd.statements`; :mod:`iclcore.gd.identities`
collects, certifies and evaluates them.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from iclcore.gd.statements import MN_D, Statement, expanded, unit_to_nonnegative, unit_to_real

__all__ = ["appendix_statements"]

# real sympy symbols: the scalar model (Nagy §1) and the construction's weights (App. A)
a, b, w, ap, kappa, vo, qk, g1, g2, g1n, g2n, k1, k2, l1, l2 = sp.symbols(
    "a b w ap kappa vo qk g1 g2 g1n g2n k1 k2 l1 l2", real=True
)


def appendix_statements() -> list[Statement]:
    """The families V, M and MN of Nagy App. A, in the paper's order."""
    st: list[Statement] = []

    def add(**kw: Any) -> None:
        st.append(Statement(**kw))

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
        point=lambda t: {k: unit_to_real(t[k]) for k in ("kappa", "a", "b", "w")},
        holds=lambda q: q["kappa"] * (q["b"] - q["a"] * q["w"]) == -(q["kappa"] * (q["a"] * q["w"] - q["b"])),
        residuals=lambda: expanded(kappa * (b - a * w) + kappa * (a * w - b)),
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
        point=lambda t: {"vo": unit_to_nonnegative(t["vo"]), "qk": unit_to_nonnegative(t["qk"])},
        holds=lambda q: q["vo"] * q["qk"] > 0,
        residuals=lambda: expanded(vo * qk - vo * qk),
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
        point=lambda t: {"ap": unit_to_nonnegative(t["ap"]), "kappa": 1 / unit_to_nonnegative(t["ap"])},
        holds=lambda q: q["kappa"] * q["ap"] == 1,
        residuals=lambda: expanded((1 / ap) * ap - 1),
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
        point=lambda t: {k: unit_to_real(t[k]) for k in ("k1", "k2", "g1", "g2")},
        holds=lambda q: (
            (q["k1"] * q["g1"]) ** 2 + (q["k2"] * q["g2"]) ** 2
            == q["k1"] ** 2 * q["g1"] ** 2 + q["k2"] ** 2 * q["g2"] ** 2
        ),
        residuals=lambda: expanded((-k1 * g1) ** 2 + (-k2 * g2) ** 2 - k1**2 * g1**2 - k2**2 * g2**2),
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
            "g1": unit_to_real(t["g1"]),
            "g2": unit_to_real(t["g2"]),
            "g1n": unit_to_real(t["g1"]) * t["s1"],
            "g2n": unit_to_real(t["g2"]) * t["s2"],
        },
        holds=lambda q: q["g1n"] ** 2 + q["g2n"] ** 2 <= q["g1"] ** 2 + q["g2"] ** 2,
        residuals=lambda: expanded((g1**2 + g2**2) - (g1n**2 + g2n**2) - ((g1**2 - g1n**2) + (g2**2 - g2n**2))),
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
        point=lambda t: {
            "l1": unit_to_nonnegative(t["l1"]),
            "l2": unit_to_nonnegative(t["l1"]) + unit_to_nonnegative(t["d"]),
            "kappa": 1 / unit_to_nonnegative(t["l1"]),
        },
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
        point=lambda t: {
            "kappa": unit_to_real(t["kappa"]),
            "l1": unit_to_real(t["l1"]),
            "l2": unit_to_real(t["l1"]) + unit_to_nonnegative(t["d"]),
        },
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
        point=lambda t: {"g": [unit_to_real(t[f"g{k}"]) for k in range(MN_D)]},
        holds=lambda q: sum(x**2 for x in q["g"]) >= 0,
        residuals=lambda: expanded(sum(x**2 for x in gs) - sum(x**2 for x in gs)),
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
            "g": [unit_to_real(t[f"g{k}"]) for k in range(MN_D)],
            "gn": [unit_to_real(t[f"g{k}"]) * t[f"s{k}"] for k in range(MN_D)],
        },
        holds=lambda q: sum(x**2 for x in q["gn"]) <= sum(x**2 for x in q["g"]),
        residuals=lambda: expanded(
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
        point=lambda t: {
            "g": [unit_to_real(t[f"g{k}"]) for k in range(MN_D)],
            "k": [unit_to_real(t[f"k{k}"]) for k in range(MN_D)],
        },
        holds=lambda q: (
            sum((-kk * gg) ** 2 for kk, gg in zip(q["k"], q["g"]))
            == sum(kk**2 * gg**2 for kk, gg in zip(q["k"], q["g"]))
        ),
        residuals=lambda: expanded(
            sum((-kk * gg) ** 2 for kk, gg in zip(ks, gs)) - sum(kk**2 * gg**2 for kk, gg in zip(ks, gs))
        ),
        how=f"sympy expand = 0 (d = {MN_D}; term by term, Finset.sum_congr)",
        verdict="holds (reconstructed)",
    )
    return st
