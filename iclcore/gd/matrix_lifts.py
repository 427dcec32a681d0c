"""Our matrix lifts of the scalar ladder of Nagy (not in the paper): ``e+ = (I - P H) e``, the
descent condition, the Newton step and layer-varying steps, with numerical and exact helpers.

Each lift is a :class:`~iclcore.gd.statements.Statement` (:func:`matrix_lift_statements`);
:mod:`iclcore.gd.identities` collects, certifies and evaluates them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from iclcore.gd.statements import Statement, unit_to_nonnegative, unit_to_real
from iclcore.validation import symmetric_psd

__all__ = [
    "matrix_loss_decrease",
    "layer_varying_error",
    "rational_orthogonal",
    "descent_condition_holds",
    "matrix_lift_statements",
]


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
    H = [[unit_to_real(t["h00"]), unit_to_real(t["h01"])], [unit_to_real(t["h01"]), unit_to_real(t["h11"])]]
    P = [[unit_to_real(t["p00"]), unit_to_real(t["p01"])], [unit_to_real(t["p10"]), unit_to_real(t["p11"])]]
    return {
        "H": H,
        "P": P,
        "w": [unit_to_real(t["w0"]), unit_to_real(t["w1"])],
        "ws": [unit_to_real(t["s0"]), unit_to_real(t["s1"])],
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
    Q = rational_orthogonal([unit_to_real(t["s0"])], 2)
    lam = [unit_to_nonnegative(t["l0"]), unit_to_nonnegative(t["l0"]) + unit_to_nonnegative(t["l1"])]
    H = [[sum(Q[i][k] * lam[k] * Q[j][k] for k in range(2)) for j in range(2)] for i in range(2)]
    Hinv = [[sum(Q[i][k] / lam[k] * Q[j][k] for k in range(2)) for j in range(2)] for i in range(2)]
    return {
        "H": H,
        "P": Hinv,
        "w": [unit_to_real(t["w0"]), unit_to_real(t["w1"])],
        "ws": [unit_to_real(t["ws0"]), unit_to_real(t["ws1"])],
    }


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
    Q = rational_orthogonal([unit_to_real(t["s0"]), unit_to_real(t["s1"]), unit_to_real(t["s2"])], d)
    lam = [
        1 + unit_to_nonnegative(t["l0"]),
        1 + unit_to_nonnegative(t["l0"]) + unit_to_nonnegative(t["l1"]) + Fraction(1, 7),
        1 + unit_to_nonnegative(t["l0"]) + unit_to_nonnegative(t["l1"]) + unit_to_nonnegative(t["l2"]) + Fraction(2, 7),
    ]
    H = [[sum(Q[i][k] * lam[k] * Q[j][k] for k in range(d)) for j in range(d)] for i in range(d)]
    e0 = [unit_to_real(t[f"e{i}"]) for i in range(d)]
    return {"H": H, "lam": lam, "e0": e0}


def matrix_lift_statements() -> list[Statement]:
    """Our matrix lifts of the scalar ladder (not in Nagy), as :class:`~iclcore.gd.statements.Statement` objects."""
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
