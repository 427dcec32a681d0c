r"""Matérn Gaussian-process forcing and the spectrum of its covariance operator (main paper §1.1, §10).

The forcing is ``f ~ GP(0, k_f)`` with the Matérn-5/2 kernel

.. math::

    k_f(x, y) = s^2 \bigl(1 + \sqrt5 r/ℓ + 5r^2/(3ℓ^2)\bigr) e^{-\sqrt5 r/ℓ}, \qquad r = |x − y|,

sampled at the mesh nodes. The covariance operator ``(T_{k_f} g)(x) = ∫ k_f(x, y) g(y) dy`` on
``L²(0, 1)`` is approximated by its Galerkin (Nyström-type) matrix: the eigenvalues of
``M^{1/2} K_f M^{1/2}`` with ``K_f = [k_f(x_i, x_j)]`` and ``M`` the P1 mass matrix on all nodes.
Main paper §10's GP prompt diversity is ``d_eff^{GP}(τ) = Tr T_{k_f}(T_{k_f} + τI)^{-1} = Σ_i λ_i/(λ_i + τ)``.

Its finite-prompt estimate (:func:`empirical_gp_effective_dimension`) replaces ``K_f`` by the sample
covariance ``F^T F / n`` of ``n`` forcings drawn at the nodes; :func:`gp_effective_dimension_bias`
is the leading ``1/n`` term of its bias for Gaussian draws (second-order perturbation of the trace
function ``Tr g(T)``, ``g(t) = t/(t + τ)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh

from iclcore.stats import standard_error
from iclcore.validation import as_generator, positive_int

__all__ = [
    "matern52",
    "matern_covariance",
    "sample_gp",
    "covariance_operator_spectrum",
    "gp_effective_dimension",
    "full_mass_matrix",
    "covariance_galerkin_spectrum",
    "empirical_gp_effective_dimension",
    "gp_effective_dimension_bias",
    "finite_prompt_effective_dimension",
    "GPPromptDiversity",
    "gp_prompt_diversity",
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


def sample_gp(cov: np.ndarray, n: int, rng: np.random.Generator, *, jitter: float = 1e-10) -> np.ndarray:
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


def covariance_galerkin_spectrum(cov: np.ndarray, n_el: int) -> np.ndarray:
    """Eigenvalues (descending, clipped at 0) of ``M^{1/2} C M^{1/2}`` for nodal covariances ``C``
    (..., n_el + 1, n_el + 1), shape (..., n_el + 1), and the P1 mass matrix ``M`` (:func:`full_mass_matrix`), shape (n_el + 1,).

    With ``C = K_f`` this is :func:`covariance_operator_spectrum`; with ``C`` a sample covariance it is
    the spectrum of the empirical covariance operator (main paper §10)."""
    Mm = full_mass_matrix(n_el)
    C = np.asarray(cov, float)
    if C.shape[-2:] != Mm.shape or not np.all(np.isfinite(C)):
        raise ValueError(f"cov: expected finite {Mm.shape} matrices (..., n, n), got shape {C.shape}")
    w, V = np.linalg.eigh(Mm)
    Mh = (V * np.sqrt(w)) @ V.T
    lam = np.linalg.eigvalsh(Mh @ (0.5 * (C + np.swapaxes(C, -1, -2))) @ Mh)
    return np.clip(lam[..., ::-1], 0.0, None)


def empirical_gp_effective_dimension(samples: np.ndarray, n_el: int, tau: np.ndarray | float) -> np.ndarray | float:
    """Finite-prompt estimate of ``d_eff^{GP}(τ)`` (main paper §10) from ``n`` nodal forcings.

    ``samples`` has shape (n, n_el + 1) (rows ``f_i`` at the nodes, mean zero by assumption); the
    empirical operator is ``T̂_n = M^{1/2} (F^T F / n) M^{1/2}`` and the estimate is
    ``Tr T̂_n (T̂_n + τ I)^{-1}``. Returns a float for scalar ``tau``, else an array of ``tau``'s shape.
    Consistent (``T̂_n → T`` as ``n → ∞``) with bias ``gp_effective_dimension_bias(λ, τ) / n + O(n^-2)``.
    """
    F = np.asarray(samples, float)
    if F.ndim != 2 or F.shape[1] != positive_int(n_el, "n_el") + 1 or not np.all(np.isfinite(F)):
        raise ValueError(f"samples: expected a finite (n, {n_el + 1}) array, got shape {F.shape}")
    lam = covariance_galerkin_spectrum(F.T @ F / F.shape[0], n_el)
    return gp_effective_dimension(lam, tau)


def gp_effective_dimension_bias(eigenvalues: np.ndarray, tau: float) -> float:
    """Leading bias ``b`` in ``E[d̂_n] = d_eff^{GP}(τ) + b/n + O(n^-2)`` for ``n`` Gaussian draws.

    With ``g(t) = t/(t + τ)`` and ``T̂ = T + Δ``, the second-order term of ``Tr g(T̂)`` is
    ``½ Σ_ij Δ_ij² g'^{[1]}(λ_i, λ_j)`` (divided difference of ``g'``; ``g''(λ_i)`` on the diagonal),
    and for Gaussian draws ``E Δ_ij² = (1 + δ_ij) λ_i λ_j / n``, so
    ``b = ½ Σ_ij (1 + δ_ij) λ_i λ_j g'^{[1]}(λ_i, λ_j) ≤ 0`` (``g`` is operator concave).
    ``eigenvalues``: the spectrum of ``T`` (any order, ``≥ 0``)."""
    lam = np.asarray(eigenvalues, float)
    t = float(tau)
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"tau: must be finite and > 0, got {tau!r}")
    if lam.ndim != 1 or not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError("eigenvalues: expected a finite 1-D array of values >= 0")
    g1 = t / (lam + t) ** 2
    a, b = lam[:, None], lam[None, :]
    diff = a - b
    close = np.abs(diff) <= 1e-12 * np.maximum(np.abs(a) + np.abs(b), t)
    g2 = -2.0 * t / (0.5 * (a + b) + t) ** 3
    dd = np.where(close, g2, (g1[:, None] - g1[None, :]) / np.where(close, 1.0, diff))
    return float(0.5 * np.sum((1.0 + np.eye(lam.size)) * a * b * dd))


def finite_prompt_effective_dimension(
    cov: np.ndarray, n_el: int, n_forcings: np.ndarray, *, tau: np.ndarray, n_seeds: int, rng: np.random.Generator
) -> np.ndarray:
    """Finite-prompt estimates of ``d_eff^{GP}(τ)`` (main paper §10) over independent seeds.

    For each ``n`` in ``n_forcings`` and each of ``n_seeds`` independent draws of ``n`` forcings
    ``f_i ~ N(0, cov)`` at the nodes (:func:`sample_gp`'s jitter), returns
    :func:`empirical_gp_effective_dimension` at every ``τ``: shape (len(n_forcings), n_seeds, len(tau)).
    Vectorised over seeds (batched sample covariances and eigenvalues)."""
    rng = as_generator(rng)
    n_seeds = positive_int(n_seeds, "n_seeds", minimum=2)
    sizes = np.asarray(n_forcings)
    if sizes.ndim != 1 or sizes.size == 0 or np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
        raise ValueError(f"n_forcings: expected a 1-D array of positive integers, got {n_forcings!r}")
    taus = np.atleast_1d(np.asarray(tau, float))
    if np.any(taus <= 0) or not np.all(np.isfinite(taus)):
        raise ValueError(f"tau: must be finite and > 0, got {tau!r}")
    C = np.asarray(cov, float)
    N = positive_int(n_el, "n_el") + 1
    if C.shape != (N, N):
        raise ValueError(f"cov: expected shape {(N, N)}, got {C.shape}")
    Lc = np.linalg.cholesky(C + 1e-10 * np.trace(C) / N * np.eye(N))
    out = np.empty((sizes.size, n_seeds, taus.size))
    for j, n in enumerate(sizes.astype(int)):  # sizes differ: one batch per size
        F = rng.standard_normal((n_seeds, n, N)) @ Lc.T
        lam = covariance_galerkin_spectrum(np.swapaxes(F, 1, 2) @ F / n, n_el)
        out[j] = np.sum(lam[:, None, :] / (lam[:, None, :] + taus[None, :, None]), axis=-1)
    return out


@dataclass(frozen=True, eq=False)
class GPPromptDiversity:
    """The finite-prompt estimate of ``d_eff^{GP}(τ)`` (main paper §10) against its Galerkin value.

    Attributes
    ----------
    eigenvalues : ndarray (n_el + 1,)
        Spectrum of the covariance operator ``T_{k_f}``, decreasing (:func:`covariance_operator_spectrum`).
    tau : ndarray (T,)
        Regularisation levels.
    n_forcings : ndarray (S,)
        Forcings ``nM`` per estimate, increasing.
    estimates : ndarray (S, n_seeds, T)
        :func:`finite_prompt_effective_dimension`.
    d_eff : ndarray (T,)
        Galerkin value ``Σ_i λ_i/(λ_i + τ)``.
    bias : ndarray (T,)
        Leading bias coefficient ``b(τ)`` (:func:`gp_effective_dimension_bias`).
    mean, se : ndarray (S, T)
        Mean estimate over the seeds and its standard error.
    z : ndarray (S, T)
        Bias-corrected gap in standard errors, ``(mean − d_eff − b/(nM)) / se``.
    z_raw : ndarray (S, T)
        The same without the ``b/(nM)`` term.
    """

    eigenvalues: np.ndarray
    tau: np.ndarray
    n_forcings: np.ndarray
    estimates: np.ndarray
    d_eff: np.ndarray
    bias: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    z: np.ndarray
    z_raw: np.ndarray

    def metrics(self, labels: tuple[str, ...]) -> dict[str, float | int]:
        """Summary at the largest ``nM``: per ``τ`` (named by ``labels``, one per ``τ``) the Galerkin value
        ``d_eff_gp_<label>``, ``gp_est_<label>`` and its ``_se``, ``gp_bias_coef_<label>``, ``gp_z_<label>``,
        ``gp_z_raw_<label>``; over ``τ`` the largest ``|z|``, ``|z_raw|``, relative gap and relative SE; and
        ``gp_trace``, ``gp_lambda_1``, ``gp_n_max``, ``gp_seeds``."""
        if len(labels) != self.tau.size:
            raise ValueError(f"labels: expected {self.tau.size} labels (one per tau), got {len(labels)}")
        lam = self.eigenvalues
        out: dict[str, float | int] = {
            f"d_eff_gp_{s}": float(gp_effective_dimension(lam, t)) for s, t in zip(labels, self.tau)
        }
        out.update(
            gp_trace=float(lam.sum()),
            gp_lambda_1=float(lam[0]),
            gp_n_max=int(self.n_forcings[-1]),
            gp_seeds=self.estimates.shape[1],
            gp_z_max_abs=float(np.max(np.abs(self.z[-1]))),
            gp_z_raw_max_abs=float(np.max(np.abs(self.z_raw[-1]))),
            gp_rel_gap_max=float(np.max(np.abs(self.mean[-1] - self.d_eff) / self.d_eff)),
            gp_rel_se_max=float(np.max(self.se[-1] / self.d_eff)),
        )
        for s, zc, zr, mn, se_, bb in zip(labels, self.z[-1], self.z_raw[-1], self.mean[-1], self.se[-1], self.bias):
            out.update(
                {
                    f"gp_est_{s}": float(mn),
                    f"gp_est_{s}_se": float(se_),
                    f"gp_bias_coef_{s}": float(bb),
                    f"gp_z_{s}": float(zc),
                    f"gp_z_raw_{s}": float(zr),
                }
            )
        return out


def gp_prompt_diversity(
    *,
    n_el: int,
    ell: float,
    variance: float,
    n_forcings: np.ndarray,
    tau: np.ndarray,
    n_seeds: int,
    rng: np.random.Generator,
) -> GPPromptDiversity:
    """Finite-prompt estimates of ``d_eff^{GP}(τ)`` (main paper §10) graded against ``d_eff + b(τ)/(nM)``.

    The Matérn-5/2 covariance ``k_f`` (length scale ``ell``, variance ``variance``) at the ``n_el + 1``
    mesh nodes; ``n_seeds`` independent draws of ``n`` forcings for each ``n`` in ``n_forcings`` (S,)
    (:func:`finite_prompt_effective_dimension`); their mean and standard error compared with the Galerkin
    value (:func:`gp_effective_dimension`) and its ``1/n`` bias (:func:`gp_effective_dimension_bias`) at
    every ``τ`` in ``tau`` (T,). Definitions in :class:`GPPromptDiversity`.
    """
    lam = covariance_operator_spectrum(n_el, ell, variance)
    taus = np.asarray(tau, float)
    sizes = np.asarray(n_forcings)
    K_f = matern_covariance(np.linspace(0.0, 1.0, n_el + 1), ell, variance)
    est = finite_prompt_effective_dimension(K_f, n_el, sizes, tau=taus, n_seeds=n_seeds, rng=rng)
    d = gp_effective_dimension(lam, taus)
    b = np.array([gp_effective_dimension_bias(lam, t) for t in taus])
    mean = est.mean(axis=1)
    se = standard_error(est, axis=1)
    z = (mean - d - b / sizes[:, None]) / se
    z_raw = (mean - d) / se
    return GPPromptDiversity(lam, taus, sizes, est, d, b, mean, se, z, z_raw)
