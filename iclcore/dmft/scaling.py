"""Scaling-law bottlenecks (Bordelon et al. Result 8, App. F.2, F.4): width and context
bottlenecks (closed form, as printed, Monte Carlo), the predicted exponents and the exponents fitted
on theory curves (the fits themselves are :mod:`iclcore.stats`).
Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.fs import fs_loss_curve
from iclcore.dmft.rrs import rrs_loss, rrs_optimum, rrs_time_of_gamma
from iclcore.stats import fit_power_law_drift, fit_power_law_exponent
from iclcore.validation import (
    as_generator,
    positive_float,
    positive_int,
    spectrum_pair,
)

__all__ = [
    "scalar_descent_path",
    "width_bottleneck",
    "width_bottleneck_paper",
    "width_bottleneck_mc",
    "context_bottleneck",
    "context_bottleneck_paper",
    "context_bottleneck_mc",
    "scaling_exponents",
    "EXPONENT_RESOURCES",
    "FittedExponent",
    "fitted_scaling_exponent",
    "ExponentRow",
    "scaling_exponent_table",
    "compute_optimal_shape_exponent",
]

EXPONENT_RESOURCES = ("t_fs", "t_rrs", "L", "N", "P")


# --------------------------------------------------------------------------------------------------
# Scaling-law bottlenecks (Bordelon et al. Result 8, App. F.2, F.4)
# --------------------------------------------------------------------------------------------------


def _solve_kappa(lam: np.ndarray, n_eff: float, name: str) -> float:
    """Root ``κ > 0`` of ``Σ_k λ_k/(κ + λ_k) = n_eff`` (requires ``0 < n_eff < D``)."""
    D = lam.size
    if not 0 < n_eff < D:
        raise ValueError(f"{name}: must lie strictly between 0 and D = {D}, got {n_eff!r}")
    f = lambda logk: float(np.sum(lam / (math.exp(logk) + lam)) - n_eff)  # noqa: E731
    lo, hi = math.log(lam.min()) - 40.0, math.log(lam.max()) + 40.0
    return math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-14))


def _bottleneck_kappa(
    lam: np.ndarray, omega: np.ndarray, n: int, name: str
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """Validate ``lam, omega`` and the size ``n`` (``N`` or ``P``); return them and κ with ``Σ λ/(κ+λ) = n``."""
    lam, omega = spectrum_pair(lam, omega)
    n = positive_int(n, name)
    return lam, omega, n, _solve_kappa(lam, float(n), name)


def _bottleneck_mc_args(
    lam: np.ndarray, omega: np.ndarray, n: int, name: str, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, int, int, np.random.Generator, int]:
    """Validate the bottleneck Monte Carlo arguments (``n = N`` or ``P``, below ``D``).

    Returns ``lam, omega, n, D, rng, draws``.
    """
    lam, omega = spectrum_pair(lam, omega)
    n = positive_int(n, name)
    D = lam.size
    if n >= D:
        raise ValueError(f"{name}: must be smaller than D = {D}, got {n}")
    return lam, omega, n, D, as_generator(rng), positive_int(draws, "draws")


def width_bottleneck(lam: np.ndarray, omega: np.ndarray, N: int) -> float:
    """Width bottleneck ``lim_{t,L→∞, P=∞} L(N) = tr[ΩΛ κ(κ + Λ)^{-1}]``, ``Σ_k λ_k/(κ+λ_k) = N``.

    The infinite-time, infinite-depth model removes everything the rank-``N`` random projection
    can see; what remains is the bias of projecting onto a random ``N``-dimensional subspace
    weighted by ``Λ^{1/2}``, whose deterministic equivalent is ``κ(κ+Λ)^{-1}`` (linear in κ).
    Bordelon et al. Eq. 113 prints the squared form ``κ²(κ+Λ)^{-2}``; see :func:`width_bottleneck_paper`.
    """
    lam, omega, N, kap = _bottleneck_kappa(lam, omega, N, "N")
    return float(np.mean(omega * lam * kap / (kap + lam)))


def width_bottleneck_paper(lam: np.ndarray, omega: np.ndarray, N: int) -> float:
    """Eq. 113 as printed: ``tr[ΩΛ κ²(κ+Λ)^{-2}]`` with the same κ (kept for the comparison)."""
    lam, omega, N, kap = _bottleneck_kappa(lam, omega, N, "N")
    return float(np.mean(omega * lam * kap**2 / (kap + lam) ** 2))


def width_bottleneck_mc(
    lam: np.ndarray, omega: np.ndarray, N: int, *, rng: np.random.Generator, draws: int = 4
) -> float:
    """Monte Carlo of the width bottleneck: ``E tr[ΩΛ (I - Π_N)]``, ``Π_N`` the orthogonal projector onto
    ``range(Λ^{1/2} U)`` for a Haar ``D x N`` frame ``U`` (the null space of ``K = Λ^{1/2}UUᵀΛ^{1/2}``
    is what ``(I - γK/L)^{2L}`` keeps as ``γ, L → ∞``)."""
    lam, omega, N, D, rng, draws = _bottleneck_mc_args(lam, omega, N, "N", rng, draws)
    out = []
    for _ in range(draws):
        U = np.linalg.qr(rng.standard_normal((D, N)))[0]
        Q = np.linalg.qr(np.sqrt(lam)[:, None] * U)[0]  # orthonormal basis of range(Λ^{1/2}U)
        seen = np.sum(omega[:, None] * lam[:, None] * Q**2) / D
        out.append(np.mean(omega * lam) - seen)
    return float(np.mean(out))


def context_bottleneck(lam: np.ndarray, omega: np.ndarray, P: int) -> float:
    """Context bottleneck ``lim_{t,L→∞, N=D} L(P)``: the bias of min-norm interpolation from ``P < D`` points.

    .. math::
        \\begin{gathered}
        \\mathcal L_\\infty(P) = \\frac{\\kappa^2\\,\\mathrm{tr}[\\Omega\\Lambda(\\kappa+\\Lambda)^{-2}]}
            {1 - P^{-1}\\sum_k \\lambda_k^2(\\kappa+\\lambda_k)^{-2}},\\\\
        \\sum_k \\frac{\\lambda_k}{\\kappa+\\lambda_k} = P .
        \\end{gathered}

    Bordelon et al. Eq. 116 omits the denominator (:func:`context_bottleneck_paper`).
    """
    lam, omega, P, kap = _bottleneck_kappa(lam, omega, P, "P")
    num = kap**2 * np.mean(omega * lam / (kap + lam) ** 2)
    den = 1.0 - np.sum(lam**2 / (kap + lam) ** 2) / P
    return float(num / den)


def context_bottleneck_paper(lam: np.ndarray, omega: np.ndarray, P: int) -> float:
    """Eq. 116 as printed: ``tr[ΩΛ κ²(κ+Λ)^{-2}]`` (no ``1 - df₂/P`` denominator)."""
    lam, omega, P, kap = _bottleneck_kappa(lam, omega, P, "P")
    return float(kap**2 * np.mean(omega * lam / (kap + lam) ** 2))


def context_bottleneck_mc(
    lam: np.ndarray, omega: np.ndarray, P: int, *, rng: np.random.Generator, draws: int = 4
) -> float:
    """Monte Carlo of the context bottleneck: ``E tr[Ω(I-Π_X)Λ(I-Π_X)]``, ``Π_X`` the projector onto the
    row span of ``X`` (``P x D`` with rows ``~ N(0, Λ)``): the limit of ``(I - γΣ̂/L)^L`` as ``γ, L → ∞``."""
    lam, omega, P, D, rng, draws = _bottleneck_mc_args(lam, omega, P, "P", rng, draws)
    out = []
    for _ in range(draws):
        X = rng.standard_normal((P, D)) * np.sqrt(lam)
        Q = np.linalg.qr(X.T)[0]  # (D, P) basis of the row span
        # tr[Ω (I-Π) Λ (I-Π)] with diagonal Ω, Λ
        QtL = Q.T * lam  # (P, D)
        QtO = Q.T * omega
        t1 = np.sum(omega * lam)
        t2 = 2.0 * np.sum(Q * (Q * (omega * lam)[:, None]))
        t3 = np.sum((QtO @ Q) * (QtL @ Q))
        out.append((t1 - t2 + t3) / D)
    return float(np.mean(out))


def scaling_exponents(nu: float, beta: float) -> dict[str, float]:
    """Printed and corrected scaling exponents of Bordelon et al. (Results 4, 8; Eqs. 89, 97, 100, 113, 116).

    Keys ``*_paper`` hold the printed exponent, ``*_corrected`` ours:

    * ``t_rrs``: ``β/(2+β)`` (Eq. 97; confirmed),
    * ``t_fs``: printed ``β/(ν+νβ+1)``; corrected ``νβ/(νβ+2ν+1)`` (cut-off ``k* = t^{1/(νβ+2ν+1)}``),
    * ``L``: ``β`` (Eq. 100),
    * ``N``: printed ``νβ``; corrected ``ν min(β, 1)``,
    * ``P``: printed ``νβ``; corrected ``ν min(β, 2)``.
    """
    nu = positive_float(nu, "nu")
    beta = positive_float(beta, "beta")
    return {
        "t_rrs_paper": beta / (2.0 + beta),
        "t_rrs_corrected": beta / (2.0 + beta),
        "t_fs_paper": beta / (nu + nu * beta + 1.0),
        "t_fs_corrected": nu * beta / (nu * beta + 2.0 * nu + 1.0),
        "L_paper": beta,
        "L_corrected": beta,
        "N_paper": nu * beta,
        "N_corrected": nu * min(beta, 1.0),
        "P_paper": nu * beta,
        "P_corrected": nu * min(beta, 2.0),
    }


@dataclass(frozen=True)
class FittedExponent:
    """A decay exponent fitted on a theory curve (:func:`fitted_scaling_exponent`).

    Attributes
    ----------
    exponent : float
        Least-squares slope ``-d log loss / d log resource`` (:func:`iclcore.stats.fit_power_law_exponent`).
    drift : float
        Its pre-asymptotic error estimate (:func:`iclcore.stats.fit_power_law_drift`).
    x, loss : ndarray (n,)
        The resource values and losses that were fitted.
    """

    exponent: float
    drift: float
    x: np.ndarray
    loss: np.ndarray


def fitted_scaling_exponent(resource: str, nu: float, beta: float, *, D: int) -> FittedExponent:
    """Fit the decay exponent of one resource on the power-law theory (Bordelon et al. Result 8, Table 1).

    Data ``λ_k = k^{-ν}``, ``ω_k λ_k ∝ k^{-νβ-1}`` with ``D`` modes (:func:`iclcore.dmft.data.power_law_spectrum`).
    The fitting windows (fixed here, not tuned to the result):

    * ``"t_fs"``: the ``L = ∞`` FS loss curve (:func:`iclcore.dmft.fs.fs_loss_curve`) at 20 log-spaced
      times from when mode 20 to when mode ``D/100`` is learned (``t_k = k^{νβ+2ν+1}/(ω_1λ_1³)``);
    * ``"t_rrs"``: the exact ``L = ∞`` RRS flow, parametrised by ``γ ∈ [10, min(300, (D/50)^ν)]``
      (20 log-spaced values; :func:`iclcore.dmft.rrs.rrs_time_of_gamma`, :func:`iclcore.dmft.rrs.rrs_loss`);
    * ``"L"``: the optimal RRS loss ``min_γ`` at depths ``L = 8, 16, …, 128`` (:func:`iclcore.dmft.rrs.rrs_optimum`);
    * ``"N"``, ``"P"``: the width and context bottlenecks (:func:`width_bottleneck`,
      :func:`context_bottleneck`) at ``100, 200, …, 1600``.

    Parameters
    ----------
    resource : {"t_fs", "t_rrs", "L", "N", "P"}
    nu, beta : float
        Capacity and source exponents, positive.
    D : int
        Number of modes; large enough for the window (``D > 2000`` for ``t_fs``, ``D > 1600`` for
        ``N`` and ``P``, ``(D/50)^ν > 10`` for ``t_rrs``).

    Returns
    -------
    FittedExponent
    """
    if resource not in EXPONENT_RESOURCES:
        raise ValueError(f"resource: expected one of {EXPONENT_RESOURCES}, got {resource!r}")
    nu = positive_float(nu, "nu")
    beta = positive_float(beta, "beta")
    D = positive_int(D, "D")
    lam, om = power_law_spectrum(D, nu, beta)
    if resource == "t_fs":
        if D / 100 <= 20:
            raise ValueError(f"D: the t_fs window (modes 20..D/100) needs D > 2000, got {D}")
        k_t = lambda k: k ** (nu * beta + 2 * nu + 1) / float(om[0] * lam[0] ** 3)  # noqa: E731
        x = np.geomspace(k_t(20.0), k_t(D / 100), 20)
        y = fs_loss_curve(x, lam, om, L=math.inf)
    elif resource == "t_rrs":
        g_max = min(300.0, (D / 50) ** nu)
        if g_max <= 10.0:
            raise ValueError(f"D: the t_rrs window needs (D/50)^nu > 10, got D={D}, nu={nu}")
        g = np.geomspace(10.0, g_max, 20)
        x, y = rrs_time_of_gamma(g, lam, om, L=math.inf), rrs_loss(g, lam, om, L=math.inf)
    elif resource == "L":
        x = np.array([8.0, 16.0, 32.0, 64.0, 128.0])
        y = np.array([rrs_optimum(lam, om, int(L))[1] for L in x])
    else:
        x = np.array([100.0, 200.0, 400.0, 800.0, 1600.0])
        if D <= x[-1]:
            raise ValueError(f"D: the {resource} window (100..1600) needs D > 1600, got {D}")
        fn = width_bottleneck if resource == "N" else context_bottleneck
        y = np.array([fn(lam, om, int(n)) for n in x])
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return FittedExponent(fit_power_law_exponent(x, y), fit_power_law_drift(x, y), x, y)


@dataclass(frozen=True)
class ExponentRow:
    """One row of :func:`scaling_exponent_table`.

    Attributes
    ----------
    resource : str
        The resource's label (``"t (FS)"``, ``"t (RRS)"``, ``"L"``, ``"N"``, ``"P"``).
    fitted, drift : float
        :func:`fitted_scaling_exponent`'s exponent and drift.
    printed, corrected : float
        The exponent as printed and as corrected (:func:`scaling_exponents`).
    """

    resource: str
    fitted: float
    drift: float
    printed: float
    corrected: float


#: The cases of the exponent table: (key prefix, resource, exponents key, label, [(nu, beta), ...]).
_EXPONENT_CASES = (
    ("tfs", "t_fs", "t_fs", "t (FS)", [(1.0, 1.0), (1.0, 0.5), (0.5, 1.0), (2.0, 1.0)]),
    ("trrs", "t_rrs", "t_rrs", "t (RRS)", [(1.0, 0.5), (1.0, 1.0), (1.0, 2.0)]),
    ("depth", "L", "L", "L", [(1.0, 0.5), (1.0, 1.0), (1.0, 2.0), (2.0, 0.5), (2.0, 1.5)]),
)
_BOTTLENECK_BETAS = (0.5, 1.5, 3.0)


def _tag(x: float) -> str:
    """``1.5 -> "1p5"``: a number in a metric key."""
    return f"{x:g}".replace(".", "p")


def scaling_exponent_table(D: int) -> dict[str, ExponentRow]:
    """Fitted decay exponents against the printed and the corrected ones (Bordelon et al. Result 8, Table 1).

    Keys ``"<resource>_nu<ν>_beta<β>"`` (``"tfs"``, ``"trrs"``, ``"depth"``, ``"width"``, ``"context"``,
    numbers as ``1p5``): the FS time law at four ``(ν, β)``, the RRS time law at ``ν = 1`` and three ``β``,
    the depth law at five ``(ν, β)``, and the width and context laws at ``ν = 2`` (at ``ν = 1`` the
    degrees of freedom diverge like ``log D``) for ``β ∈ {0.5, 1.5, 3}``, each fitted on ``D`` modes by
    :func:`fitted_scaling_exponent`.

    Returns
    -------
    dict str -> ExponentRow
        In the order above (width and context alternate).
    """
    D = positive_int(D, "D")
    table = {}
    for prefix, resource, key, label, cases in _EXPONENT_CASES:
        for nu, beta in cases:
            f, e = fitted_scaling_exponent(resource, nu, beta, D=D), scaling_exponents(nu, beta)
            table[f"{prefix}_nu{_tag(nu)}_beta{_tag(beta)}"] = ExponentRow(
                label, f.exponent, f.drift, e[f"{key}_paper"], e[f"{key}_corrected"]
            )
    for beta in _BOTTLENECK_BETAS:
        e = scaling_exponents(2.0, beta)
        for prefix, resource in (("width", "N"), ("context", "P")):
            f = fitted_scaling_exponent(resource, 2.0, beta, D=D)
            table[f"{prefix}_nu2_beta{_tag(beta)}"] = ExponentRow(
                resource, f.exponent, f.drift, e[f"{resource}_paper"], e[f"{resource}_corrected"]
            )
    return table


def compute_optimal_shape_exponent(width: ExponentRow, depth: ExponentRow) -> tuple[float, float]:
    """Exponent of the compute-optimal shape ``L ∝ N^{a_N/a_L}`` from the width and depth laws (Result 8).

    With loss ``∝ N^{-a_N}`` and ``∝ L^{-a_L}``, balancing the two bottlenecks gives ``L ∝ N^{a_N/a_L}``
    (printed: ``L ∝ N^ν``). The drift is propagated from both fits:
    ``hypot(d_N/a_L, a_N d_L/a_L²)``.

    Returns
    -------
    (exponent, drift) : floats
    """
    aN, dN, aL, dL = width.fitted, width.drift, depth.fitted, depth.drift
    if aL == 0:
        raise ValueError("depth: the fitted depth exponent is 0, the shape exponent is undefined")
    return aN / aL, float(np.hypot(dN / aL, aN * dL / aL**2))


def scalar_descent_path(grad: Callable[[float], float], step: float, steps: int, *, gamma0: float = 0.0) -> np.ndarray:
    """The expected dynamics of a scalar order parameter in discrete steps: ``γ_{k+1} = γ_k − step · L'(γ_k)``.

    The SGD runs of the width and untied-layer chapters (Bordelon et al. §4, Figs. 5 and 8) move ``γ``
    by ``(η/2) L'(γ)`` per step in expectation; the difference between this path and the gradient flow
    at the same times ``t_k = η k`` is the discretisation term of their error model (``step = η/2``).
    A loop, not a closed form: ``L'`` is nonlinear in ``γ``.

    Parameters
    ----------
    grad : callable
        ``L'(γ)`` for a scalar ``γ`` (e.g. :func:`iclcore.dmft.rrs.rrs_loss_grad` with its spectrum bound).
    step : float, > 0
        Step multiplying the gradient.
    steps : int, >= 0
        Number of steps.
    gamma0 : float
        Start.

    Returns
    -------
    ndarray, shape (steps + 1,)
        ``γ_0, …, γ_steps``.

    Examples
    --------
    >>> scalar_descent_path(lambda g: g - 1.0, 0.5, 3)
    array([0.   , 0.5  , 0.75 , 0.875])
    """
    step = positive_float(step, "step")
    steps = positive_int(steps, "steps", minimum=0)
    path = np.empty(steps + 1)
    path[0] = gamma0
    for k in range(steps):
        path[k + 1] = path[k] - step * float(grad(path[k]))
    return path
