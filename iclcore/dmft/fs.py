"""FS setting of the reduced-Γ model (Bordelon et al. §3.2, App. D): ``α = ∞``, ``Σ = diag(λ)``,
``Ω = diag(ω)``; mode flows, loss curves and out-of-distribution loss under rotated covariances.
Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import expm

from iclcore.validation import (
    as_generator,
    check_depth,
    positive_int,
    spectrum_pair,
    symmetric_psd,
)

__all__ = [
    "fs_loss",
    "fs_mode_flow",
    "fs_mode_flow_paper",
    "fs_loss_curve",
    "random_skew",
    "rotated_covariance",
    "ood_loss",
    "FSDepthComparison",
    "fs_depth_comparison",
    "OODBrittleness",
    "ood_brittleness",
    "fs_paper_solution_deviation",
]


# --------------------------------------------------------------------------------------------------
# FS setting (Bordelon et al. §3.2, App. D): α = ∞, Σ = diag(λ), Ω = diag(ω)
# --------------------------------------------------------------------------------------------------


def fs_loss(gamma_k: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """FS loss of a diagonal ``Γ = diag(γ_k)`` at ``α = ∞`` (Bordelon et al. Eq. 84): ``(1/D) Σ ω_k λ_k u_k^{2L}``.

    ``u_k = 1 - λ_k γ_k / L``; for ``L = inf`` the factor is ``exp(-2λ_kγ_k)``.

    Parameters
    ----------
    gamma_k : array_like, shape ``(..., D)``
    lam, omega : shape ``(D,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    g = np.asarray(gamma_k, dtype=float)
    if g.shape[-1:] != lam.shape:
        raise ValueError(f"gamma_k: last axis must have length {lam.size}, got shape {g.shape}")
    Lf = float(check_depth(L, allow_inf=True))
    fac = np.exp(-2.0 * lam * g) if math.isinf(Lf) else (1.0 - lam * g / Lf) ** (2 * int(Lf))
    return (omega * lam * fac).mean(axis=-1)


def _fs_flow_exponent(
    t: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Validate the FS flow arguments; return ``lam, omega, L`` and ``x_k = ω_k λ_k³ t`` of shape ``(T, D)``."""
    lam, omega = spectrum_pair(lam, omega)
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("t: expected a 1-D array of finite non-negative times")
    Lf = float(check_depth(L, allow_inf=True))
    return lam, omega, Lf, t[:, None] * (omega * lam**3)[None, :]


def fs_mode_flow(t: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """Closed-form FS eigenvalue dynamics ``γ_k(t)`` from 0 under ``dγ_k/dt = ω_kλ_k²u_k^{2L-1}`` (Eq. 10).

    With ``x_k = ω_k λ_k³ t``:

    * ``L = 1``: ``γ_k = (1 - e^{-x_k}) / λ_k``;
    * ``L >= 2``: ``γ_k = (L/λ_k)(1 - u_k)``, ``u_k = [1 + 2(L-1)x_k/L]^{-1/(2L-2)}``;
    * ``L = inf``: ``γ_k = ln(1 + 2x_k) / (2λ_k)`` (Result 4 prints ``ln(1 + 4x_k)``, the solution of
      the factor-2 flow of Eq. 85; see :func:`fs_mode_flow_paper`).

    Parameters
    ----------
    t : array_like, shape ``(T,)``, times ``>= 0``
    lam, omega : shape ``(D,)``
    L : int or math.inf

    Returns
    -------
    numpy.ndarray, shape ``(T, D)``
    """
    lam, omega, Lf, x = _fs_flow_exponent(t, lam, omega, L)
    if math.isinf(Lf):
        return np.log1p(2.0 * x) / (2.0 * lam)
    if Lf == 1:
        return -np.expm1(-x) / lam
    u = (1.0 + 2.0 * (Lf - 1.0) * x / Lf) ** (-1.0 / (2.0 * Lf - 2.0))
    return Lf / lam * (1.0 - u)


def fs_mode_flow_paper(t: np.ndarray, lam: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Result 4 as printed: ``γ_k(t) = ln(1 + 4ω_kλ_k³t)/(2λ_k)`` (the ``L → ∞`` solution of Eq. 85).

    Equals :func:`fs_mode_flow` at ``L = inf`` evaluated at time ``2t``: Eq. 85 is the flow without
    the ``½`` of Eq. 10. Kept to show the convention mismatch. Shape ``(T, D)``.
    """
    lam, omega = spectrum_pair(lam, omega)
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or np.any(t < 0):
        raise ValueError("t: expected a 1-D array of non-negative times")
    return np.log1p(4.0 * t[:, None] * (omega * lam**3)[None, :]) / (2.0 * lam)


def fs_loss_curve(t: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """FS loss along the flow, in closed form (shape ``(T,)``).

    Per mode ``ω_kλ_k e^{-2x_k}`` (L = 1), ``ω_kλ_k [1 + 2(L-1)x_k/L]^{-L/(L-1)}`` (L >= 2),
    ``ω_kλ_k / (1 + 2x_k)`` (L = inf), averaged over ``k`` (normalised trace).
    """
    lam, omega, Lf, x = _fs_flow_exponent(t, lam, omega, L)
    if math.isinf(Lf):
        fac = 1.0 / (1.0 + 2.0 * x)
    elif Lf == 1:
        fac = np.exp(-2.0 * x)
    else:
        fac = (1.0 + 2.0 * (Lf - 1.0) * x / Lf) ** (-Lf / (Lf - 1.0))
    return (fac * (omega * lam)[None, :]).mean(axis=1)


def random_skew(D: int, rng: np.random.Generator) -> np.ndarray:
    """Random skew-symmetric ``S = (G - Gᵀ)/√(2D)``, ``G`` i.i.d. N(0,1) (our normalisation; Bordelon et al. leaves it open).

    ``exp(θS)`` is a random rotation whose angles grow linearly with θ (spectral radius of ``S`` ≈ √2).
    """
    D = positive_int(D, "D")
    rng = as_generator(rng)
    G = rng.standard_normal((D, D))
    return (G - G.T) / math.sqrt(2.0 * D)


def rotated_covariance(Sigma: np.ndarray, S: np.ndarray, theta: float) -> np.ndarray:
    """``exp(θS) Σ exp(-θS)`` for skew-symmetric ``S`` (Bordelon et al. Result 5; ``exp(θS)`` is orthogonal)."""
    Sigma = symmetric_psd(Sigma, "Sigma")
    S = np.asarray(S, dtype=float)
    if S.shape != Sigma.shape:
        raise ValueError(f"S: expected shape {Sigma.shape}, got {S.shape}")
    if np.abs(S + S.T).max() > 1e-12 * max(1.0, float(np.abs(S).max())):
        raise ValueError("S: matrix is not skew-symmetric")
    if not math.isfinite(float(theta)):
        raise ValueError("theta: must be finite")
    R = expm(float(theta) * S)
    out = R @ Sigma @ R.T
    return 0.5 * (out + out.T)


def ood_loss(Gamma: np.ndarray, Sigma_test: np.ndarray, Omega_test: np.ndarray, *, L: int) -> float:
    """Out-of-distribution loss of a trained ``Γ`` at ``α = ∞`` (Bordelon et al. Eq. 11, generalised).

    .. math::
        \\mathcal L_{OOD} = \\mathrm{tr}\\,\\Omega'\\,[(I - L^{-1}\\Gamma\\Sigma')^L]^\\top\\Sigma'(I - L^{-1}\\Gamma\\Sigma')^L .

    With the converged FS solution ``Γ = LΣ^{-1}`` this is Eq. 11, ``(I - Σ^{-1}Σ')^L``.

    Parameters
    ----------
    Gamma : (D, D) ; Sigma_test, Omega_test : (D, D) symmetric PSD ; L : int
    """
    Sigma_test = symmetric_psd(Sigma_test, "Sigma_test")
    Omega_test = symmetric_psd(Omega_test, "Omega_test")
    Gamma = np.asarray(Gamma, dtype=float)
    if Gamma.shape != Sigma_test.shape:
        raise ValueError(f"Gamma: expected shape {Sigma_test.shape}, got {Gamma.shape}")
    Lf = check_depth(L)
    D = Gamma.shape[0]
    A = np.linalg.matrix_power(np.eye(D) - Gamma @ Sigma_test / Lf, Lf)
    return float(np.trace(Omega_test @ A.T @ Sigma_test @ A) / D)


# --------------------------------------------------------------------------------------------------
# Checks of the FS theory: depth ordering, brittleness under rotation, the printed solution (Fig. 3)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FSDepthComparison:
    """FS loss curves at several depths (:func:`fs_depth_comparison`).

    Attributes
    ----------
    curves : dict L -> ndarray, shape (T,)
        :func:`fs_loss_curve` at each depth, in the order given.
    min_rel_gap : float
        ``min_{t, L} (loss_{L'}(t) − loss_L(t)) / loss_L(t)`` over consecutive depths ``L < L'``:
        positive when a deeper model is worse at every time.
    """

    curves: dict[int | float, np.ndarray]
    min_rel_gap: float


def fs_depth_comparison(
    t: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, depths: list[int | float]
) -> FSDepthComparison:
    """FS loss curves at increasing depths and the smallest relative gap between consecutive ones (§3.2, Fig. 3b).

    Parameters
    ----------
    t : ndarray, shape (T,)
    lam, omega : ndarray, shape (D,)
    depths : list of int or math.inf
        Increasing, at least two.

    Returns
    -------
    FSDepthComparison
    """
    if len(depths) < 2 or any(b <= a for a, b in zip(depths, depths[1:])):
        raise ValueError(f"depths: expected at least two increasing depths, got {depths!r}")
    curves = {L: fs_loss_curve(t, lam, omega, L=L) for L in depths}
    stack = np.array(list(curves.values()))
    return FSDepthComparison(curves, float(np.min(np.diff(stack, axis=0) / stack[:-1])))


@dataclass(frozen=True)
class OODBrittleness:
    """Out-of-distribution loss of ``Γ = LΣ⁻¹`` under rotations ``exp(θS)`` (:func:`ood_brittleness`).

    Attributes
    ----------
    each : ndarray, shape (samples, depths, thetas)
        The loss per random ``S``, depth and angle.
    mean : ndarray, shape (depths, thetas)
        Its mean over ``S``.
    min_rel_increment : float
        ``min (loss(θ_{j+1}) / loss(θ_j) − 1)`` over samples, depths and ``j >= 1`` (relative: the loss at
        small ``θ`` is tiny).
    at_theta0 : float
        ``max |mean loss at θ_0|`` over the depths (0 at ``θ = 0``: ``Γ = LΣ⁻¹`` is optimal in distribution).
    """

    each: np.ndarray
    mean: np.ndarray
    min_rel_increment: float
    at_theta0: float


def ood_brittleness(
    lam: np.ndarray,
    omega: np.ndarray,
    depths: list[int],
    *,
    thetas: np.ndarray,
    samples: int,
    rng: np.random.Generator,
) -> OODBrittleness:
    """Brittleness of the learned preconditioner (Result 5, Eq. 11, Fig. 3c), averaged over random rotations.

    For each of ``samples`` skew-symmetric ``S`` (:func:`random_skew`), each angle ``θ`` and each depth
    ``L``: :func:`ood_loss` of the converged ``Γ = LΣ⁻¹`` on ``Σ′ = exp(θS)Σexp(−θS)`` and ``Ω′``
    rotated alike (:func:`rotated_covariance`).

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
        ``Σ = diag(lam)``, ``Ω = diag(omega)``.
    depths : list of int
    thetas : ndarray, shape (m,)
        Increasing angles, ``m >= 3``, starting at 0.
    samples : int
    rng : numpy.random.Generator

    Returns
    -------
    OODBrittleness
    """
    lam, omega = spectrum_pair(lam, omega)
    samples = positive_int(samples, "samples")
    thetas = np.asarray(thetas, dtype=float)
    if thetas.ndim != 1 or thetas.size < 3:
        raise ValueError(f"thetas: expected at least three angles, got {thetas!r}")
    rng = as_generator(rng)
    Sig, Om = np.diag(lam), np.diag(omega)
    each = np.zeros((samples, len(depths), thetas.size))
    for n in range(samples):
        S = random_skew(lam.size, rng)
        for j, th_ in enumerate(thetas):
            Sp, Op = rotated_covariance(Sig, S, th_), rotated_covariance(Om, S, th_)
            for i, L in enumerate(depths):
                each[n, i, j] = ood_loss(L * np.diag(1 / lam), Sp, Op, L=L)
    mean = each.mean(axis=0)
    return OODBrittleness(
        each=each,
        mean=mean,
        min_rel_increment=float(np.min(each[:, :, 2:] / each[:, :, 1:-1] - 1)),
        at_theta0=float(np.max(np.abs(mean[:, 0]))),
    )


def fs_paper_solution_deviation(t: np.ndarray, lam: np.ndarray, omega: np.ndarray) -> tuple[float, float]:
    """The printed Result-4 solution against the ``L = ∞`` flow of Eq. 10 at ``t`` and at ``2t`` (App. D).

    Returns
    -------
    (at_t, at_2t) : floats
        ``max |γ_paper(t) / γ_Eq10(t) − 1|`` and the same against ``γ_Eq10(2t)`` (the printed solution
        runs on a clock twice as fast).
    """
    paper = fs_mode_flow_paper(t, lam, omega)
    return (
        float(np.max(np.abs(paper / fs_mode_flow(t, lam, omega, L=math.inf) - 1))),
        float(np.max(np.abs(paper / fs_mode_flow(2 * t, lam, omega, L=math.inf) - 1))),
    )
