"""Prompt spectra: whitened prompt covariance, non-asymptotic concentration, Hessian perturbation.

Implements main paper §4 (prompt generalization) and the prompt side of §12.10 (Figure 10):

* the whitened prompt covariance ``Σ̃_M = Σ_x^{-1/2} Σ̂_M Σ_x^{-1/2}`` with ``Σ̂_M = XᵀX/M``;
  for a Gaussian design ``X = G Σ_x^{1/2}`` it equals ``GᵀG/M`` exactly, whatever ``Σ_x``,
  so its spectrum follows the Marchenko–Pastur law of :mod:`iclcore.spectra.mp` with
  ``γ = K/M``;
* the concentration window ``[(1 - √γ - t)², (1 + √γ + t)²]`` holding with probability at least
  ``1 - 2 exp(-M t²/2)`` (Gaussian singular-value bound of Davidson–Szarek, e.g. Vershynin 2012,
  Cor. 5.35, applied to ``G/√M``), with the corrected lower edge described below;
* the perturbation ``H_M = H_∞ + Δ_M`` of the prompt Hessian, the exact second-order resolvent
  identity and the Neumann-series norm bound;
* the prompt excess risk and its first-order (``1/M``) expansion, compared with ``d_eff/M``.

Lower edge of the window
------------------------
The singular-value bound reads ``|√M - √K| - s <= s_min(G)`` for the ``min(M, K)``-th singular value.
With ``s = t√M`` the correct window for the nonzero eigenvalues is
``[max(0, |1 - √γ| - t)², (1 + √γ + t)²]``. The paper's literal ``(1 - √γ - t)²`` agrees with it
when ``γ <= 1`` and ``t <= 1 - √γ``; otherwise squaring a negative number makes the literal lower edge
*too large* (the statement becomes false), and for ``γ > 1`` the ``K - M`` structural zero
eigenvalues can never lie in the window. ``window_form="paper"`` keeps the literal formula (for
the errata check), ``window_form="sharp"`` (default) is the corrected one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.spectra.mp import mp_atom, mp_cdf
from iclcore.stats import (
    binomial_excess_z,
    fit_power_law,
    pooled_ks_distance,
    power_law_design,
    standard_error,
    weighted_least_squares,
)
from iclcore.validation import as_generator, positive_int, symmetric_psd

__all__ = [
    "WINDOW_FORMS",
    "symmetric_inverse_sqrt",
    "whitened_covariance",
    "whitened_spectrum",
    "WhitenedSpectrumSample",
    "whitened_spectrum_sample",
    "concentration_window",
    "concentration_failure_bound",
    "window_violations",
    "ConcentrationResult",
    "concentration_experiment",
    "ResolventCheck",
    "resolvent_perturbation",
    "prompt_excess_risk_first_order",
    "prompt_excess_risk_mc",
    "haar_rotated_covariance",
    "ConcentrationTable",
    "concentration_table",
    "ConcentrationSummary",
    "concentration_summary",
    "ResolventSweep",
    "resolvent_perturbation_sweep",
    "ExcessRiskExponent",
    "excess_risk_exponent",
]

WINDOW_FORMS = ("sharp", "paper")


def haar_rotated_covariance(eigenvalues: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``Q diag(eigenvalues) Qᵀ`` with a Haar-random orthogonal ``Q`` (a structured, non-diagonal ``Σ_x``).

    Parameters
    ----------
    eigenvalues : ndarray, shape (K,), all > 0
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (K, K), symmetric positive definite.
    """
    rng = as_generator(rng)
    lam = np.asarray(eigenvalues, dtype=float)
    if lam.ndim != 1 or lam.size < 1 or np.any(~np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("eigenvalues: expected a 1-D array of finite positive numbers")
    Q = haar_orthogonal(lam.size, rng)
    S = (Q * lam) @ Q.T
    return 0.5 * (S + S.T)


def symmetric_inverse_sqrt(S: np.ndarray) -> np.ndarray:
    """``S^{-1/2}`` of a symmetric positive definite matrix (one eigendecomposition).

    Parameters
    ----------
    S : ndarray, shape (K, K)
    """
    S = symmetric_psd(S, "Sigma_x", definite=True)
    w, V = np.linalg.eigh(S)
    return (V / np.sqrt(w)) @ V.T


def whitened_covariance(X: np.ndarray, Sigma_x: np.ndarray) -> np.ndarray:
    """Whitened prompt covariance ``Σ̃_M = Σ_x^{-1/2} (XᵀX/M) Σ_x^{-1/2}`` (main paper §4).

    Parameters
    ----------
    X : ndarray, shape (n, M, K) or (M, K)
        Prompt designs (rows ``x_iᵀ``).
    Sigma_x : ndarray, shape (K, K)
        Symmetric positive definite design covariance.

    Returns
    -------
    ndarray, shape (n, K, K) or (K, K)
    """
    X = np.asarray(X, dtype=float)
    if X.ndim not in (2, 3):
        raise ValueError(f"X: expected shape (n, M, K) or (M, K), got {X.shape}")
    W = symmetric_inverse_sqrt(Sigma_x)
    if X.shape[-1] != W.shape[0]:
        raise ValueError(f"X: last axis {X.shape[-1]} does not match Sigma_x of size {W.shape[0]}")
    M = X.shape[-2]
    Z = X @ W  # whitened rows
    S = np.swapaxes(Z, -1, -2) @ Z / M
    return 0.5 * (S + np.swapaxes(S, -1, -2))


def whitened_spectrum(X: np.ndarray, Sigma_x: np.ndarray) -> np.ndarray:
    """Eigenvalues (ascending) of :func:`whitened_covariance`, shape (n, K) or (K,)."""
    return np.linalg.eigvalsh(whitened_covariance(X, Sigma_x))


@dataclass(frozen=True)
class WhitenedSpectrumSample:
    """Whitened sample spectra against the Marchenko–Pastur law (:func:`whitened_spectrum_sample`).

    Attributes
    ----------
    M : int
        Prompt size ``round(K / γ)``.
    eigenvalues : ndarray, shape (n_draws, K)
        Ascending eigenvalues of each whitened ``Σ̃_M``.
    raw : ndarray, shape (n_draws K,)
        Pooled eigenvalues of the raw ``Σ̂_M = XᵀX/M`` (not whitened).
    zero_fraction : float
        Fraction of pooled eigenvalues at rounding level (``< 1e-8`` of the largest): the atom ``1 − 1/γ``.
    ks, ks_se : float
        Kolmogorov distance of the pooled ``min(K, M)`` structurally nonzero eigenvalues from the
        normalised continuous part of the MP law, and the standard error of the pooled cdf at its sup point
        (:func:`iclcore.stats.pooled_ks_distance`).
    """

    M: int
    eigenvalues: np.ndarray
    raw: np.ndarray
    zero_fraction: float
    ks: float
    ks_se: float

    @property
    def nonzero(self) -> np.ndarray:
        """The pooled ``min(K, M)`` structurally nonzero eigenvalues of each draw, flattened."""
        K = self.eigenvalues.shape[1]
        return self.eigenvalues[:, max(0, K - self.M) :].ravel()


def whitened_spectrum_sample(
    Sigma_x: np.ndarray, gamma: float, n_draws: int, *, rng: np.random.Generator
) -> WhitenedSpectrumSample:
    """Draw ``n_draws`` prompts ``X`` (``M = round(K/γ)`` rows ``~ N(0, Σ_x)``) and compare their whitened spectra with MP.

    The whitened covariance ``Σ_x^{-1/2} Σ̂_M Σ_x^{-1/2}`` has the law of a white Wishart matrix, whose
    spectrum tends to the Marchenko–Pastur law of ratio ``γ = K/M`` (an atom ``1 − 1/γ`` at 0 when
    ``γ > 1``). Randomness: one ``rng.standard_normal((n_draws, M, K))``.

    Parameters
    ----------
    Sigma_x : ndarray, shape (K, K)
        Symmetric positive definite.
    gamma : float
        Aspect ratio ``K/M``, positive.
    n_draws : int
        Independent prompts, ``>= 2``.
    rng : numpy.random.Generator

    Returns
    -------
    WhitenedSpectrumSample
    """
    Sigma_x = symmetric_psd(Sigma_x, "Sigma_x", definite=True)
    K = Sigma_x.shape[0]
    M = int(round(K / gamma))
    X = rng.standard_normal((positive_int(n_draws, "n_draws", minimum=2), M, K)) @ np.linalg.cholesky(Sigma_x).T
    ev_draws = whitened_spectrum(X, Sigma_x)  # (draws, K), ascending
    raw = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X / M).ravel()
    ev = ev_draws.ravel()
    zero_frac = float(np.mean(np.abs(ev) < 1e-8 * ev.max()))  # rounding-level eigenvalues
    atom = mp_atom(gamma)
    ks, ks_se = pooled_ks_distance(ev_draws[:, max(0, K - M) :], lambda x: (mp_cdf(x, gamma) - atom) / (1 - atom))
    return WhitenedSpectrumSample(M, ev_draws, raw, zero_frac, ks, ks_se)


def _check_gamma_t(gamma: float, t: float) -> tuple[float, float]:
    g = float(gamma)
    if not math.isfinite(g) or g <= 0:
        raise ValueError(f"gamma: aspect ratio K/M must be finite and > 0, got {gamma!r}")
    tt = float(t)
    if not math.isfinite(tt) or tt < 0:
        raise ValueError(f"t: window half-width must be finite and >= 0, got {t!r}")
    return g, tt


def concentration_window(gamma: float, t: float, window_form: str = "sharp") -> tuple[float, float]:
    """Non-asymptotic spectral window of the whitened prompt covariance (main paper §4).

    Parameters
    ----------
    gamma : float
        ``K/M``.
    t : float, >= 0
        Deviation parameter; the failure probability is at most ``2 exp(-M t²/2)``.
    window_form : {"sharp", "paper"}
        ``"paper"``: ``((1 - √γ - t)², (1 + √γ + t)²)`` literally. ``"sharp"``:
        ``(max(0, |1 - √γ| - t)², (1 + √γ + t)²)``, valid for the ``min(K, M)`` nonzero eigenvalues.

    Returns
    -------
    (lo, hi) : tuple of float
    """
    g, tt = _check_gamma_t(gamma, t)
    if window_form not in WINDOW_FORMS:
        raise ValueError(f"window_form: unknown form {window_form!r}; choose one of {WINDOW_FORMS}")
    s = math.sqrt(g)
    hi = (1.0 + s + tt) ** 2
    if window_form == "paper":
        return (1.0 - s - tt) ** 2, hi
    return max(0.0, abs(1.0 - s) - tt) ** 2, hi


def concentration_failure_bound(M: int, t: float) -> float:
    """``min(1, 2 exp(-M t²/2))``: upper bound on the probability that the window fails."""
    M = positive_int(M, "M")
    _check_gamma_t(1.0, t)
    return min(1.0, 2.0 * math.exp(-M * t * t / 2.0))


def window_violations(eigenvalues: np.ndarray, K: int, M: int, *, t: float, window_form: str = "sharp") -> np.ndarray:
    """Per-draw indicator that some eigenvalue leaves the concentration window.

    Parameters
    ----------
    eigenvalues : ndarray, shape (n, K)
        Ascending spectra of ``Σ̃_M`` (e.g. from :func:`whitened_spectrum`).
    K, M : int
        Dimension and prompt size (``γ = K/M``).
    t : float
    window_form : {"sharp", "paper"}
        With ``"sharp"`` and ``K > M`` only the ``M`` largest (nonzero) eigenvalues are tested; with
        ``"paper"`` all ``K`` are (so the structural zeros count as violations).

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    ev = np.asarray(eigenvalues, dtype=float)
    if ev.ndim != 2 or ev.shape[1] != K:
        raise ValueError(f"eigenvalues: expected shape (n, {K}), got {ev.shape}")
    lo, hi = concentration_window(K / M, t, window_form)
    if window_form == "sharp" and K > M:
        ev = np.sort(ev, axis=1)[:, K - M :]
    return (ev.min(axis=1) < lo) | (ev.max(axis=1) > hi)


@dataclass(frozen=True)
class ConcentrationResult:
    """Violation frequencies of the window over ``n_draws`` prompts.

    Attributes
    ----------
    K, M : int
    t : ndarray, shape (T,)
    frequency : ndarray, shape (T,)
        Empirical violation frequency (sharp window).
    frequency_paper : ndarray, shape (T,)
        Same with the paper's literal lower edge.
    bound : ndarray, shape (T,)
        ``min(1, 2 exp(-M t²/2))``.
    n_draws : int
    lambda_min, lambda_max : ndarray, shape (n_draws,)
        Extreme nonzero eigenvalues of each draw.
    """

    K: int
    M: int
    t: np.ndarray
    frequency: np.ndarray
    frequency_paper: np.ndarray
    bound: np.ndarray
    n_draws: int
    lambda_min: np.ndarray
    lambda_max: np.ndarray

    @property
    def gamma(self) -> float:
        """Aspect ratio ``K/M``."""
        return self.K / self.M


def concentration_experiment(
    K: int,
    M: int,
    t_grid: np.ndarray,
    *,
    n_draws: int,
    rng: np.random.Generator,
    Sigma_x: np.ndarray | None = None,
    batch: int = 256,
) -> ConcentrationResult:
    """Empirical window-violation frequency of ``spec(Σ̃_M)`` for a grid of ``t`` (main paper §4).

    Draws ``n_draws`` Gaussian designs ``x_i ~ N(0, Σ_x)`` (``Σ_x = I`` if ``None``), whitens them
    with :func:`whitened_covariance`, and counts draws with an eigenvalue outside the window.

    Parameters
    ----------
    K, M : int
    t_grid : ndarray, shape (T,), entries >= 0
    n_draws : int
    rng : numpy.random.Generator
    Sigma_x : ndarray (K, K) or None
    batch : int
        Draws per vectorised batch (memory ``batch * M * K``).
    """
    K, M, n_draws, batch = (positive_int(v, n) for n, v in (("K", K), ("M", M), ("n_draws", n_draws), ("batch", batch)))
    rng = as_generator(rng)
    t_grid = np.atleast_1d(np.asarray(t_grid, dtype=float))
    if t_grid.ndim != 1 or np.any(~np.isfinite(t_grid)) or np.any(t_grid < 0):
        raise ValueError("t_grid: expected a 1-D array of finite numbers >= 0")
    S = np.eye(K) if Sigma_x is None else symmetric_psd(Sigma_x, "Sigma_x", definite=True)
    if S.shape != (K, K):
        raise ValueError(f"Sigma_x: expected shape {(K, K)}, got {S.shape}")
    root = np.linalg.cholesky(S)
    spectra = []
    done = 0
    while done < n_draws:
        b = min(batch, n_draws - done)
        X = rng.standard_normal((b, M, K)) @ root.T
        spectra.append(whitened_spectrum(X, S))
        done += b
    ev = np.concatenate(spectra, axis=0)
    nz = ev[:, K - M :] if K > M else ev
    freq = np.array([window_violations(ev, K, M, t=t, window_form="sharp").mean() for t in t_grid])
    freq_p = np.array([window_violations(ev, K, M, t=t, window_form="paper").mean() for t in t_grid])
    bound = np.array([concentration_failure_bound(M, t) for t in t_grid])
    return ConcentrationResult(
        K=K,
        M=M,
        t=t_grid,
        frequency=freq,
        frequency_paper=freq_p,
        bound=bound,
        n_draws=n_draws,
        lambda_min=nz.min(axis=1),
        lambda_max=nz.max(axis=1),
    )


@dataclass(frozen=True)
class ResolventCheck:
    """Perturbation ``H_M = H_∞ + Δ_M`` of the prompt Hessian for a batch of prompts (main paper §4).

    All arrays have a leading prompt axis ``n``.

    Attributes
    ----------
    delta_norm : ndarray (n,)
        ``‖Δ_M‖₂ = ‖Σ̂_M - Σ_x‖₂``.
    diff_norm : ndarray (n,)
        ``‖H_M^{-1} - H_∞^{-1}‖₂``.
    identity_residual : ndarray (n,)
        ``‖(H_M^{-1} - H_∞^{-1}) - (-BΔB + BΔH_M^{-1}ΔB)‖₂ / ‖H_M^{-1} - H_∞^{-1}‖₂`` with
        ``B = H_∞^{-1}`` (rounding level if the identity is exact).
    first_order_residual : ndarray (n,)
        Same with only the first-order term ``-BΔB`` (``O(‖Δ‖)``, not rounding level).
    bound : ndarray (n,)
        ``‖B‖₂² ‖Δ‖₂ / (1 - ‖B‖₂ ‖Δ‖₂)``; ``inf`` where ``‖B‖₂‖Δ‖₂ >= 1`` (bound not applicable).
    applicable : ndarray of bool (n,)
        ``‖B‖₂ ‖Δ‖₂ < 1``.
    """

    delta_norm: np.ndarray
    diff_norm: np.ndarray
    identity_residual: np.ndarray
    first_order_residual: np.ndarray
    bound: np.ndarray
    applicable: np.ndarray


def resolvent_perturbation(Sigma_hat: np.ndarray, Sigma_x: np.ndarray, lam: float) -> ResolventCheck:
    """Check the second-order resolvent identity and the norm bound of main paper §4.

    .. math::
        \\begin{aligned}
        H_M^{-1} - H_∞^{-1} &= -H_∞^{-1} Δ_M H_∞^{-1}\\\\
        &\\quad + H_∞^{-1} Δ_M H_M^{-1} Δ_M H_∞^{-1},\\\\
        \\|H_M^{-1} - H_∞^{-1}\\|_2 &\\le \\frac{\\|H_∞^{-1}\\|_2^2 \\|Δ_M\\|_2}{1 - \\|H_∞^{-1}\\|_2 \\|Δ_M\\|_2},
        \\end{aligned}

    with ``H_M = Σ̂_M + λI``, ``H_∞ = Σ_x + λI``, ``Δ_M = Σ̂_M - Σ_x``.

    Parameters
    ----------
    Sigma_hat : ndarray, shape (n, K, K)
        Empirical covariances ``XᵀX/M``.
    Sigma_x : ndarray, shape (K, K)
        Population covariance (symmetric positive definite).
    lam : float
        Ridge ``λ >= 0`` (``H_M`` must be invertible: ``λ > 0`` or ``M >= K``).
    """
    S = symmetric_psd(Sigma_x, "Sigma_x", definite=True)
    Sh = np.asarray(Sigma_hat, dtype=float)
    if Sh.ndim == 2:
        Sh = Sh[None]
    K = S.shape[0]
    if Sh.ndim != 3 or Sh.shape[1:] != (K, K):
        raise ValueError(f"Sigma_hat: expected shape (n, {K}, {K}), got {Sh.shape}")
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: ridge must be finite and >= 0, got {lam!r}")
    I = np.eye(K)
    H_inf = S + lam * I
    H_M = Sh + lam * I
    if np.linalg.eigvalsh(H_M).min() <= 1e-12 * np.abs(H_M).max():
        raise ValueError("lam: H_M = Sigma_hat + lam I is singular; use lam > 0 or M >= K")
    B = np.linalg.inv(H_inf)
    B = 0.5 * (B + B.T)
    HMi = np.linalg.inv(H_M)
    Delta = Sh - S
    lhs = HMi - B
    first = -B @ Delta @ B
    second = B @ Delta @ HMi @ Delta @ B
    nrm = lambda A: np.linalg.norm(A, ord=2, axis=(-2, -1))  # noqa: E731
    diff = nrm(lhs)
    safe = np.where(diff > 0, diff, 1.0)
    res = nrm(lhs - (first + second)) / safe
    res1 = nrm(lhs - first) / safe
    dn = nrm(Delta)
    b = float(np.linalg.norm(B, 2))
    q = b * dn
    applicable = q < 1
    bound = np.where(applicable, b * b * dn / np.where(applicable, 1 - q, 1.0), np.inf)
    return ResolventCheck(
        delta_norm=dn,
        diff_norm=diff,
        identity_residual=res,
        first_order_residual=res1,
        bound=bound,
        applicable=applicable,
    )


def prompt_excess_risk_first_order(Sigma_x: np.ndarray, Sigma_beta: np.ndarray, sigma: float, *, lam: float) -> float:
    """Constant ``C`` with ``R_prompt(M) - R_prompt(∞) = C/M + O(M^{-2})`` (Gaussian design).

    The prompt risk is ``R_prompt(M) = E‖β̂_M - β‖²_{Σ_x} + σ²`` (the test error of the ridge
    estimator ``β̂_M = H_M^{-1} c_M`` on a fresh query), ``R_prompt(∞)`` uses ``H_∞^{-1} Σ_x β``.
    Expanding ``H_M^{-1} = B - BΔB + BΔBΔB + …`` (``B = H_∞^{-1}``) and using, for Gaussian
    ``x``, ``E[ΔAΔ] = (Σ Aᵀ Σ + Tr(AΣ) Σ)/M``:

    ``C = σ² Tr(BΣBΣ) + λ² Tr{Σ_β [2 BΣB(ΣBΣ + Tr(BΣ)Σ)B + B(Σ BΣB Σ + Tr(BΣBΣ) Σ)B]}`` (symmetrised).

    The variance part ``σ² Tr(Σ²(Σ+λ)^{-2}) <= σ² d_eff`` makes the ``d_eff/M`` scaling of main paper §4
    explicit.

    Parameters
    ----------
    Sigma_x, Sigma_beta : ndarray (K, K)
        Design covariance (SPD) and task second moment ``E[ββᵀ]`` (symmetric PSD).
    sigma : float
        Noise level ``>= 0``.
    lam : float
        Ridge ``> 0``.
    """
    S = symmetric_psd(Sigma_x, "Sigma_x", definite=True)
    Sb = np.asarray(Sigma_beta, dtype=float)
    if Sb.shape != S.shape or not np.allclose(Sb, Sb.T, atol=1e-12):
        raise ValueError(f"Sigma_beta: expected a symmetric matrix of shape {S.shape}")
    if not math.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma: noise level must be finite and >= 0, got {sigma!r}")
    if not math.isfinite(lam) or lam <= 0:
        raise ValueError(f"lam: ridge must be finite and > 0, got {lam!r}")
    K = S.shape[0]
    B = np.linalg.inv(S + lam * np.eye(K))
    BSB = B @ S @ B
    var = sigma**2 * np.trace(BSB @ S)
    # term1: 2 v^T Σ B E[Δ B Δ] v, with E[ΔBΔ] = (Σ B Σ + Tr(BΣ) Σ)/M, v = Bβ
    E1 = S @ B @ S + np.trace(B @ S) * S
    T1 = 2.0 * B @ S @ B @ E1 @ B
    # term2: E[v^T Δ (BΣB) Δ v] = v^T (Σ BΣB Σ + Tr(BΣBΣ) Σ) v / M
    E2 = S @ BSB @ S + np.trace(BSB @ S) * S
    T2 = B @ E2 @ B
    bias = lam**2 * np.trace(Sb @ (0.5 * (T1 + T1.T) + T2))
    return float(var + bias)


def prompt_excess_risk_mc(config: TaskConfig, n_prompts: int, rng: np.random.Generator) -> tuple[float, float]:
    """Monte Carlo prompt excess risk ``R_prompt(M) - R_prompt(∞)`` with its standard error.

    Prompts come from :func:`iclcore.lsq.tasks.sample_prompt_statistics` (exact law of ``(H_M, c_M, β)``
    through the Bartlett decomposition, cost ``O(n K³)``, needs ``M >= K``). Paired estimator: for
    each prompt the same ``β`` enters ``‖β̂_M - β‖²_Σ`` and ``‖β_∞ - β‖²_Σ`` with
    ``β_∞ = H_∞^{-1} Σ_x β``, which removes the task variance.

    Parameters
    ----------
    config : iclcore.lsq.tasks.TaskConfig
        Needs ``lam > 0``; ``config.M`` is the prompt size.
    n_prompts : int, >= 2
    rng : numpy.random.Generator

    Returns
    -------
    (mean, standard_error) : tuple of float
        Compare ``mean`` with ``prompt_excess_risk_first_order(...) / M``.
    """
    if not isinstance(config, TaskConfig):
        raise TypeError(f"config: expected an iclcore.lsq.tasks.TaskConfig, got {type(config).__name__}")
    if config.lam <= 0:
        raise ValueError(f"lam: the prompt excess risk needs a ridge lam > 0, got {config.lam!r}")
    n_prompts = positive_int(n_prompts, "n_prompts", minimum=2)
    S = config.Sigma_x
    B = np.linalg.inv(config.H_infinity)
    out = np.empty(n_prompts)
    batch = 2000
    done = 0
    while done < n_prompts:
        b = min(batch, n_prompts - done)
        pr = sample_prompt_statistics(config, b, rng)
        e_M = pr.z_dagger - pr.beta
        e_inf = pr.beta @ (B @ S).T - pr.beta
        out[done : done + b] = np.einsum("ni,ij,nj->n", e_M, S, e_M) - np.einsum("ni,ij,nj->n", e_inf, S, e_inf)
        done += b
    return float(out.mean()), float(standard_error(out))


# ---------------------------------------------------------------------------
# Aggregates over the concentration windows, the perturbation sweep and the excess-risk curve
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConcentrationTable:
    """All windows ``(γ, t)`` of several :func:`concentration_experiment` runs in one table.

    Attributes
    ----------
    rows : ndarray, shape (W, 6)
        Columns ``γ, M, t, frequency (sharp window), frequency (paper window), bound``.
    n_draws : int
        Prompts behind each frequency.
    checked : ndarray of bool, shape (W,)
        Windows whose bound ``2e^{-Mt²/2}`` is at most the checking level (non-vacuous).
    excess : ndarray, shape (W,)
        ``frequency - bound`` (sharp window).
    excess_z, sd : ndarray, shape (W,)
        :func:`iclcore.stats.binomial_excess_z` of the sharp frequencies against the bounds, and the
        binomial standard deviation of the bound.
    paper_excess_z : ndarray, shape (W,)
        The same for the paper's literal window.
    """

    rows: np.ndarray
    n_draws: int
    checked: np.ndarray
    excess: np.ndarray
    excess_z: np.ndarray
    sd: np.ndarray
    paper_excess_z: np.ndarray


def concentration_table(
    gammas: list[float], results: list[ConcentrationResult], checked_level: float = 0.05
) -> ConcentrationTable:
    """Tabulate the windows of ``results`` (one per ``γ`` of ``gammas``, same ``n_draws``) (main paper §4).

    A frequency may exceed a bound ``< 1`` only by sampling noise: the excess is measured in
    binomial standard deviations of the bound over ``n_draws`` trials.
    """
    if len(gammas) != len(results) or not results:
        raise ValueError(f"gammas: expected one gamma per result, got {len(gammas)} and {len(results)}")
    n = {res.n_draws for res in results}
    if len(n) != 1:
        raise ValueError(f"results: expected one number of draws, got {sorted(n)}")
    n_draws = n.pop()
    rows = np.array(
        [
            (g, res.M, t, f, fp, b)
            for g, res in zip(gammas, results)
            for t, f, fp, b in zip(res.t, res.frequency, res.frequency_paper, res.bound)
        ]
    )
    excess_z, sd = binomial_excess_z(rows[:, 3], rows[:, 5], n_draws)
    return ConcentrationTable(
        rows=rows,
        n_draws=n_draws,
        checked=rows[:, 5] <= checked_level,
        excess=rows[:, 3] - rows[:, 5],
        excess_z=excess_z,
        sd=sd,
        paper_excess_z=binomial_excess_z(rows[:, 4], rows[:, 5], n_draws)[0],
    )


@dataclass(frozen=True)
class ConcentrationSummary:
    """Counts and extremes of a :class:`ConcentrationTable` (main paper §4, §12.10; the errata's window).

    Attributes
    ----------
    n_checked_windows : int
        Windows with a non-vacuous bound.
    violations_checked_windows : int
        Draws violating a checked (sharp) window, summed over the checked windows.
    violations_allowed_by_bound_checked : float
        ``Σ bound × n_draws`` over the checked windows: the count the bounds allow.
    violation_freq_max_checked : float
        Largest sharp frequency in a checked window.
    violation_freq_t0_max, violation_freq_t0_min : float
        Extremes of the sharp frequency at ``t = 0`` (the bare MP edges).
    freq_minus_bound_z_max : float
        Largest binomial z of a sharp frequency above its bound.
    freq_sd_checked_max : float
        Largest binomial standard deviation of a checked bound.
    max_freq_minus_bound : float
        Largest ``frequency - bound``.
    paper_window_excess_z_max : float
        Largest binomial z of the paper's literal window above the bound.
    paper_window_freq_gamma_ge1_min : float
        Smallest paper-window frequency at ``γ >= 1``, ``t > 0`` (1 when the literal window always fails).
    paper_window_freq_gamma_lt1_checked_max : float
        Largest paper-window frequency in a checked window at ``γ < 1``.
    bound_at_first_zero_freq_min : float
        Over the ``γ`` with a window of zero sharp violations, the smallest bound at the first such ``t``.
    """

    n_checked_windows: int
    violations_checked_windows: int
    violations_allowed_by_bound_checked: float
    violation_freq_max_checked: float
    violation_freq_t0_max: float
    violation_freq_t0_min: float
    freq_minus_bound_z_max: float
    freq_sd_checked_max: float
    max_freq_minus_bound: float
    paper_window_excess_z_max: float
    paper_window_freq_gamma_ge1_min: float
    paper_window_freq_gamma_lt1_checked_max: float
    bound_at_first_zero_freq_min: float


def concentration_summary(table: ConcentrationTable) -> ConcentrationSummary:
    """The counts and extremes of :class:`ConcentrationSummary` from a table of windows."""
    rows, checked, n = table.rows, table.checked, table.n_draws
    g_checked = rows[checked]
    g_all = np.unique(rows[:, 0])
    zero = [
        rows[(rows[:, 0] == g) & (rows[:, 3] == 0), 5][0]
        for g in g_all
        if np.any((rows[:, 0] == g) & (rows[:, 3] == 0))
    ]
    return ConcentrationSummary(
        n_checked_windows=int(checked.sum()),
        violations_checked_windows=int(round((g_checked[:, 3] * n).sum())),
        violations_allowed_by_bound_checked=float((g_checked[:, 5] * n).sum()),
        violation_freq_max_checked=float(g_checked[:, 3].max()),
        violation_freq_t0_max=float(rows[rows[:, 2] == 0, 3].max()),
        violation_freq_t0_min=float(rows[rows[:, 2] == 0, 3].min()),
        freq_minus_bound_z_max=float(np.max(table.excess_z)),
        freq_sd_checked_max=float(table.sd[checked].max()),
        max_freq_minus_bound=float(table.excess.max()),
        paper_window_excess_z_max=float(np.max(table.paper_excess_z)),
        paper_window_freq_gamma_ge1_min=float(rows[(rows[:, 0] >= 1) & (rows[:, 2] > 0), 4].min()),
        paper_window_freq_gamma_lt1_checked_max=float(rows[(rows[:, 0] < 1) & checked, 4].max()),
        bound_at_first_zero_freq_min=float(min(zero)),
    )


@dataclass(frozen=True)
class ResolventSweep:
    """:func:`resolvent_perturbation` over a grid of prompt sizes, with its aggregates.

    Attributes
    ----------
    M : ndarray of int, shape (m,)
    checks : list of ResolventCheck, one per ``M``
    identity_residual_max : float
        Largest relative residual of the second-order identity over all prompts.
    first_order_residual_min : float
        Smallest residual of the first-order term alone (not rounding level).
    applicable_prompts : int
        Prompts with ``||H_∞^{-1}|| ||Δ_M|| < 1``.
    norm_bound_ratio_max : float
        Largest ``||H_M^{-1} - H_∞^{-1}|| / bound`` where the bound applies (``nan`` if nowhere).
    tightness : ndarray, shape (m,)
        Median of that ratio per ``M`` (``nan`` where the bound applies to no prompt).
    """

    M: np.ndarray
    checks: list[ResolventCheck]
    identity_residual_max: float
    first_order_residual_min: float
    applicable_prompts: int
    norm_bound_ratio_max: float
    tightness: np.ndarray


def resolvent_perturbation_sweep(
    Sigma_x: np.ndarray, lam: float, M_grid: np.ndarray, *, n_draws: int, rng: np.random.Generator
) -> ResolventSweep:
    """Draw ``n_draws`` Gaussian prompts per ``M`` and check the §4 identity and norm bound on each.

    Randomness: for each ``M`` in order, one ``rng.standard_normal((n_draws, M, K))`` mapped by the
    Cholesky factor of ``Σ_x``; ``Σ̂_M = XᵀX/M`` then goes to :func:`resolvent_perturbation`.
    """
    n_draws = positive_int(n_draws, "n_draws")
    S = symmetric_psd(Sigma_x, "Sigma_x", definite=True)
    root = np.linalg.cholesky(S)
    M_grid = np.asarray(M_grid)
    checks = []
    for M in M_grid:
        X = rng.standard_normal((n_draws, positive_int(M, "M_grid"), S.shape[0])) @ root.T
        checks.append(resolvent_perturbation(np.swapaxes(X, 1, 2) @ X / M, S, lam))
    ratios = [p.diff_norm[p.applicable] / p.bound[p.applicable] for p in checks]
    return ResolventSweep(
        M=M_grid,
        checks=checks,
        identity_residual_max=max(p.identity_residual.max() for p in checks),
        first_order_residual_min=min(p.first_order_residual.min() for p in checks),
        applicable_prompts=sum(int(p.applicable.sum()) for p in checks),
        norm_bound_ratio_max=max((float(np.max(q)) for q in ratios if q.size), default=float("nan")),
        tightness=np.array([np.median(q) if q.size else np.nan for q in ratios]),
    )


@dataclass(frozen=True)
class ExcessRiskExponent:
    """Log-log slope of the prompt excess risk in ``M`` (main paper §4: ``O(d_eff/M)``, slope ``-1``).

    Attributes
    ----------
    slope, slope_se : float
        Plain power-law fit and its standard error propagated from the Monte Carlo errors.
    corrected, corrected_se : float
        Asymptotic slope ``b`` of the weighted fit ``log R = a + b log M + c/M`` and its standard error.
    truncation : float
        ``|b' - b|`` with ``b'`` from the fit with the next correction ``c₂/M²``: what the truncated fit leaves.
    """

    slope: float
    slope_se: float
    corrected: float
    corrected_se: float
    truncation: float


def excess_risk_exponent(M: np.ndarray, excess: np.ndarray, excess_se: np.ndarray) -> ExcessRiskExponent:
    """Fit the exponent of ``R_prompt(M) - R_prompt(∞) ∝ M^b`` from Monte Carlo estimates (main paper §4).

    :func:`iclcore.stats.fit_power_law` gives the plain slope with errors propagated from ``excess_se``
    (independent across ``M``); the corrected slope is a :func:`iclcore.stats.weighted_least_squares`
    fit of ``log excess`` on :func:`iclcore.stats.power_law_design` (``1, log M, 1/M``) with weights the
    inverse squared relative errors ``(excess / excess_se)²``; adding ``1/M²`` estimates the truncation.

    Parameters
    ----------
    M : array_like, shape (n,), positive, ``n >= 4``
    excess, excess_se : array_like, shape (n,), positive
    """
    M = np.asarray(M)
    excess = np.asarray(excess, dtype=float)
    excess_se = np.asarray(excess_se, dtype=float)
    if M.ndim != 1 or M.size < 4 or excess.shape != M.shape or excess_se.shape != M.shape:
        raise ValueError(
            f"M, excess, excess_se: expected three 1-D arrays of one length >= 4, got {M.shape}, "
            f"{excess.shape}, {excess_se.shape}"
        )
    if np.any(excess <= 0) or np.any(excess_se <= 0):
        raise ValueError("excess, excess_se: expected positive values (a log-log fit)")
    fit = fit_power_law(M, excess, y_se=excess_se)
    w = (excess / excess_se) ** 2
    corr = weighted_least_squares(power_law_design(M, 1), np.log(excess), w)
    corrected = float(corr.coef[1])
    corrected_next = float(weighted_least_squares(power_law_design(M, 2), np.log(excess), w).coef[1])
    return ExcessRiskExponent(
        fit.slope, fit.slope_se, corrected, float(corr.coef_se[1]), abs(corrected_next - corrected)
    )
