r"""Matérn Gaussian-process forcing and the spectrum of its covariance operator (main paper §1.1, §10).

The forcing is ``f ~ GP(0, k_f)`` with the Matérn-5/2 kernel

.. math::

    k_f(x, y) = s^2 \bigl(1 + \sqrt5 r/ℓ + 5r^2/(3ℓ^2)\bigr) e^{-\sqrt5 r/ℓ}, \qquad r = |x − y|,

sampled at the mesh nodes. The covariance operator ``(T_{k_f} g)(x) = ∫ k_f(x, y) g(y) dy`` on
``L²(0, 1)`` is approximated by its Galerkin (Nyström-type) matrix: the eigenvalues of
``M^{1/2} K_f M^{1/2}`` with ``K_f = [k_f(x_i, x_j)]`` and ``M`` the P1 mass matrix on all nodes.
Main paper §10's GP prompt diversity is ``d_eff^{GP}(τ) = Tr T_{k_f}(T_{k_f} + τI)^{-1} = Σ_i λ_i/(λ_i + τ)``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from iclcore.validation import as_generator, positive_int

__all__ = [
    "matern52",
    "matern_covariance",
    "sample_gp",
    "covariance_operator_spectrum",
    "gp_effective_dimension",
    "full_mass_matrix",
]


def matern52(r: np.ndarray, ell: float, variance: float = 1.0) -> np.ndarray:
    """Matérn-5/2 kernel of the distance ``r ≥ 0`` (any shape)."""
    if not np.isfinite(ell) or ell <= 0:
        raise ValueError(f"ell: length scale must be finite and > 0, got {ell!r}")
    if not np.isfinite(variance) or variance <= 0:
        raise ValueError(f"variance: must be finite and > 0, got {variance!r}")
    s = np.sqrt(5.0) * np.abs(np.asarray(r, float)) / ell
    return variance * (1.0 + s + s**2 / 3.0) * np.exp(-s)


def matern_covariance(x: np.ndarray, ell: float, variance: float = 1.0) -> np.ndarray:
    """``K_f = [k_f(x_i, x_j)]``, shape (N, N), for points ``x`` (N,)."""
    x = np.asarray(x, float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("x: expected a finite 1-D array of points")
    return matern52(x[:, None] - x[None, :], ell, variance)


def sample_gp(cov: np.ndarray, n: int, rng: np.random.Generator, jitter: float = 1e-10) -> np.ndarray:
    """``n`` draws of ``N(0, cov)``, shape (n, N), via a Cholesky factor of ``cov + jitter·tr(cov)/N·I``."""
    n = positive_int(n, "n")
    rng = as_generator(rng)
    C = np.asarray(cov, float)
    N = C.shape[0]
    Lc = np.linalg.cholesky(C + jitter * np.trace(C) / N * np.eye(N))
    return rng.standard_normal((n, N)) @ Lc.T


def full_mass_matrix(n_el: int) -> np.ndarray:
    """P1 mass matrix on all ``n_el + 1`` nodes of the uniform mesh of (0, 1)."""
    n_el = positive_int(n_el, "n_el")
    h = 1.0 / n_el
    main = np.full(n_el + 1, 4.0)
    main[[0, -1]] = 2.0
    return (np.diag(main) + np.eye(n_el + 1, k=1) + np.eye(n_el + 1, k=-1)) * h / 6


def covariance_operator_spectrum(n_el: int, ell: float, variance: float = 1.0) -> np.ndarray:
    """Eigenvalues of ``M^{1/2} K_f M^{1/2}`` (≈ spectrum of ``T_{k_f}``), descending, shape (n_el + 1,).

    Computed as the generalized problem ``M K_f M v = λ M v`` (same eigenvalues).
    """
    x = np.linspace(0.0, 1.0, n_el + 1)
    Mm = full_mass_matrix(n_el)
    Kf = matern_covariance(x, ell, variance)
    lam = eigh(Mm @ Kf @ Mm, Mm, eigvals_only=True)
    return np.clip(lam[::-1], 0.0, None)


def gp_effective_dimension(eigenvalues: np.ndarray, tau: np.ndarray | float) -> np.ndarray | float:
    """``d_eff^{GP}(τ) = Σ_i λ_i/(λ_i + τ)`` (main paper §10) for ``τ > 0`` (scalar or array)."""
    lam = np.asarray(eigenvalues, float)
    t = np.asarray(tau, float)
    if np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ValueError(f"tau: must be finite and > 0, got {tau!r}")
    out = np.sum(lam[None, :] / (lam[None, :] + t.reshape(-1, 1)), axis=1)
    return float(out[0]) if t.ndim == 0 else out.reshape(t.shape)
