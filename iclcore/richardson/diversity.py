"""Task diversity and difficulty (main paper §10, with §3.2): the finite-task preconditioner.

Task diversity is described by ``spec(Σ_z)``, ``r_eff(Σ_z) = Tr Σ_z/‖Σ_z‖_2`` and the spectral
entropy ``H_z = −Σ_i p_i log p_i`` (``p_i = λ_i(Σ_z)/Tr Σ_z``), and by the number ``N`` of
pretraining tasks. The finite-task estimator ``P̂_N = Z Dᵀ(DDᵀ)^†`` (§3.2) has excess risk
``(1/K) Tr{(P̂_N − P⋆) C (P̂_N − P⋆)ᵀ}``; §3.2 states only ``≍ (σ²_task/K) d_eff/N``.

Closed forms derived in the chapter (section "What sets the excess: a derivation"). Write
``e = z⋆ − P⋆ d`` (so ``E[e dᵀ] = 0``) and ``R⋆ = R(P⋆) = (1/K) E‖e‖²``. Then
``P̂_N − P⋆ = E_N Dᵀ (DDᵀ)^{-1}`` exactly (``N ≥ K``, ``E_N = [e_1 … e_N]``), and

* if ``d ~ N(0, C)`` with ``e`` independent of ``d``:
  ``E[excess] = R⋆ K/(N − K − 1)`` exactly for ``N ≥ K + 2`` (inverse-Wishart mean
  ``E[(DDᵀ)^{-1}] = C^{-1}/(N − K − 1)``) — :func:`gaussian_excess`;
* in general (our ``d = c_M`` is a product of Gaussians and ``e`` is heteroscedastic), to
  leading order in ``1/N``: ``E[excess] = R⋆ d_sand/N + O(N^{-2})`` with the *sandwich dimension*
  ``d_sand = E[‖e‖² dᵀC^{-1}d] / E‖e‖²`` (``= K`` in the Gaussian-independent case) —
  :func:`sandwich_dimension`, :func:`sandwich_excess`. The finite-``N`` version
  ``R⋆ d_sand/(N − K − 1)`` reduces to the exact Gaussian formula; its ``N^{-2}`` term is a
  heuristic, stated as such.

Difficulty (§10): operator difficulty ``κ(H_M)`` (in the least-squares reduction the operator
``A(z)`` of §1.1 is the prompt matrix ``H_M``, which does not depend on ``z``), decoder difficulty
``ρ(I − P H_M)``, ``κ(P H_M)`` and the depth ``L`` needed for a target solver error, as functions
of ``σ², λ, M``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from iclcore.lsq.dynamics import psd_spectrum
from iclcore.lsq.iterates import richardson_error
from iclcore.lsq.moments import Moments, closed_form_moments, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs, sample_prompt_statistics
from iclcore.richardson.decoder import finite_task_experiment
from iclcore.richardson.order_parameters import condition_number, iteration_spectral_radius, preconditioned_spectrum
from iclcore.richardson.subspace import effective_rank
from iclcore.stats import standard_error
from iclcore.validation import positive_int

__all__ = [
    "spectral_entropy",
    "geometric_latent_spectrum",
    "latent_spectrum_with_effective_rank",
    "gaussian_excess",
    "sandwich_dimension",
    "SandwichDimension",
    "sandwich_excess",
    "DiversityPoint",
    "diversity_sweep",
    "ClosedFormComparison",
    "closed_form_comparison",
    "depth_to_target",
    "depth_from_contraction",
    "DifficultyPoint",
    "difficulty_point",
    "difficulty_axis_summary",
]


def spectral_entropy(Sigma: np.ndarray) -> float:
    """``H_z = −Σ_i p_i log p_i``, ``p_i = λ_i(Σ)/Tr Σ`` (main paper §10; natural log, in ``[0, log r]``)."""
    lam = psd_spectrum(Sigma, "Sigma").lam
    if lam.sum() <= 0:
        raise ValueError("Sigma: must be non-zero")
    p = lam / lam.sum()
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


def geometric_latent_spectrum(r: int, ratio: float, trace: float | None = None) -> np.ndarray:
    """``μ_i ∝ ratio^{i}``, ``i = 0..r−1`` (decreasing for ``0 < ratio ≤ 1``), scaled to ``Tr = trace`` (default ``r``)."""
    r = positive_int(r, "r")
    if not math.isfinite(ratio) or not 0 < ratio <= 1:
        raise ValueError(f"ratio: must lie in (0, 1], got {ratio!r}")
    mu = ratio ** np.arange(r, dtype=float)
    t = float(r) if trace is None else float(trace)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"trace: must be positive, got {trace!r}")
    return mu * (t / mu.sum())


def latent_spectrum_with_effective_rank(r: int, r_eff: float, trace: float | None = None) -> np.ndarray:
    """The geometric spectrum (:func:`geometric_latent_spectrum`) whose ``r_eff = Tr/λ_max`` equals ``r_eff``.

    ``r_eff`` must lie in ``(1, r]`` (``r_eff = 1`` needs a rank-one, not positive definite, ``Σ_z``);
    ``r_eff = r`` gives the flat spectrum. Solved by ``scipy.optimize.brentq`` on the ratio.
    """
    r = positive_int(r, "r")
    if not math.isfinite(r_eff) or not 1 < r_eff <= r:
        raise ValueError(f"r_eff: must lie in (1, r={r}], got {r_eff!r}")
    if r_eff == r:
        return geometric_latent_spectrum(r, 1.0, trace)

    def f(q: float) -> float:
        return float(np.sum(q ** np.arange(r))) - r_eff

    q = brentq(f, 1e-12, 1.0, xtol=1e-14)
    return geometric_latent_spectrum(r, q, trace)


def gaussian_excess(R_star: float, K: int, N: np.ndarray | int) -> np.ndarray | float:
    """``R⋆ K/(N − K − 1)``: exact mean excess of ``P̂_N`` for Gaussian ``d`` and independent residuals.

    Parameters
    ----------
    R_star : float ≥ 0
    K : int
    N : int or array of int, all ``≥ K + 2``
    """
    K = positive_int(K, "K")
    Na = np.asarray(N, dtype=float)
    if np.any(Na < K + 2):
        raise ValueError(f"N: the inverse-Wishart mean needs N >= K + 2 = {K + 2}, got min {Na.min():g}")
    out = R_star * K / (Na - K - 1)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class SandwichDimension:
    """``d_sand = E[‖e‖² dᵀC^{-1}d]/E‖e‖²`` with its Monte Carlo standard error.

    Attributes
    ----------
    value, se : float
    n_samples : int
    kurtosis_ratio : float
        ``d_sand/K`` (1 for Gaussian ``d`` with independent residuals).
    """

    value: float
    se: float
    n_samples: int
    kurtosis_ratio: float


def sandwich_dimension(
    config: TaskConfig, moments: Moments, n_samples: int, *, rng: np.random.Generator, chunk: int = 65536
) -> SandwichDimension:
    """Monte Carlo ``d_sand = E[‖e‖² dᵀC^{-1}d] / E‖e‖²``, ``e = z⋆ − P⋆ d`` (chapter derivation).

    Uses the exact pair sampler :func:`iclcore.lsq.tasks.sample_decoder_pairs` and the
    closed-form ``C``, ``P⋆``. The standard error is the delta-method error of the ratio of two
    sample means.
    """
    n_samples = positive_int(n_samples, "n_samples", minimum=2)
    P_star = oracle_preconditioner(moments)
    Cinv = np.linalg.inv(moments.C)
    num, den = [], []
    done = 0
    while done < n_samples:
        m = min(chunk, n_samples - done)
        d, z = sample_decoder_pairs(config, m, rng)
        e2 = np.sum((z - d @ P_star.T) ** 2, axis=1)
        lev = np.einsum("ni,ij,nj->n", d, Cinv, d)
        num.append(e2 * lev)
        den.append(e2)
        done += m
    a = np.concatenate(num)
    b = np.concatenate(den)
    ratio = a.mean() / b.mean()
    resid = (a - ratio * b) / b.mean()
    se = standard_error(resid)
    return SandwichDimension(
        value=float(ratio), se=float(se), n_samples=n_samples, kurtosis_ratio=float(ratio / config.K)
    )


def sandwich_excess(
    R_star: float, d_sand: float, K: int, *, N: np.ndarray | int, finite_n: bool = True
) -> np.ndarray | float:
    """Predicted mean excess ``R⋆ d_sand/(N − K − 1)`` (``finite_n``) or ``R⋆ d_sand/N`` (leading order)."""
    K = positive_int(K, "K")
    Na = np.asarray(N, dtype=float)
    if finite_n and np.any(Na < K + 2):
        raise ValueError(f"N: the finite-N form needs N >= K + 2 = {K + 2}")
    out = R_star * d_sand / ((Na - K - 1) if finite_n else Na)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class DiversityPoint:
    """One task spectrum of the §10 sweep.

    Attributes
    ----------
    mu : ndarray (r,)
        ``spec(Σ_z)``.
    r_eff, H_z : float
    N : ndarray (m,)
    excess_mean, excess_se : ndarray (m,)
        Mean excess of ``P̂_N`` over repetitions and its standard error.
    R_star : float
    d_eff : float
        ``d_eff(0) = rank C`` (§3.2).
    d_sand : SandwichDimension
    """

    mu: np.ndarray
    r_eff: float
    H_z: float
    N: np.ndarray
    excess_mean: np.ndarray
    excess_se: np.ndarray
    R_star: float
    d_eff: float
    d_sand: SandwichDimension


def diversity_sweep(
    config: TaskConfig,
    mu: np.ndarray,
    N_values,
    *,
    n_repeats: int,
    n_sandwich: int,
    rng: np.random.Generator,
) -> DiversityPoint:
    """Excess of ``P̂_N`` against ``N`` for one latent spectrum ``Σ_z = diag(mu)`` (main paper §10, §3.2).

    Reuses :func:`iclcore.richardson.decoder.finite_task_experiment` (the exact excess-risk
    identity per draw) and adds the diversity descriptors and the sandwich dimension.
    """
    mu = np.asarray(mu, float)
    if mu.ndim != 1 or mu.size != config.rank or np.any(mu <= 0):
        raise ValueError(f"mu: need {config.rank} positive latent eigenvalues, got shape {mu.shape}")
    cfg = config.replace(Sigma_z=np.diag(mu), target="beta")
    mom = closed_form_moments(cfg)
    res = finite_task_experiment(cfg, mom, N_values, n_repeats=n_repeats, rng=rng)
    ds = sandwich_dimension(cfg, mom, n_sandwich, rng=rng)
    Sz = np.diag(mu)
    return DiversityPoint(
        mu=mu,
        r_eff=effective_rank(Sz),
        H_z=spectral_entropy(Sz),
        N=res.N,
        excess_mean=res.excess.mean(axis=1),
        excess_se=standard_error(res.excess, axis=1),
        R_star=res.oracle_risk,
        d_eff=res.d_eff,
        d_sand=ds,
    )


@dataclass(frozen=True, eq=False)
class ClosedFormComparison:
    """Sweeps of several spectra against the closed forms of the excess (:func:`closed_form_comparison`).

    Arrays of shape (S, m) are indexed by spectrum and by ``N``.

    Attributes
    ----------
    N : ndarray (m,)
        Numbers of tasks, increasing.
    K : int
    mean : ndarray (S, m)
        Mean excess.
    rse : ndarray (S, m)
        Its relative standard error.
    rse_s : ndarray (S, m)
        ``rse`` plus the relative standard error of ``d_sand`` (the error of a ratio to ``R⋆ d_sand/N``).
    gauss, lead, upper : ndarray (S, m)
        ``R⋆K/(N − K − 1)`` (:func:`gaussian_excess`), ``R⋆ d_sand/N`` and ``R⋆ d_sand/(N − K − 1)``
        (:func:`sandwich_excess`).
    sel_review, sel_asymptotic : ndarray (m,) of bool
        ``N ≥ min_ratio_review K`` and ``N ≥ min_ratio_asymptotic K``.
    c_deff, c_sand : ndarray (S,)
        ``N E[excess]/(R⋆K)`` and ``N E[excess]/(R⋆ d_sand)`` at the largest ``N``.
    slope, slope_se : ndarray (S,)
        Log-log slope of the mean excess against ``N`` over ``sel_asymptotic`` (weighted least squares,
        weights ``1/rse²``) and its standard error: the ``1/N`` rate of §3.2 predicts ``−1``.
    c_order : ndarray (S, m')
        ``N E[excess]/(R⋆ d_eff)`` over ``sel_asymptotic`` (§3.2 as an order statement: a constant in ``N``).
    spread_N, spread_N_se : ndarray (S,)
        ``max_N c_order / min_N c_order`` per spectrum and its standard error ``√2 max rse``.
    """

    N: np.ndarray
    K: int
    mean: np.ndarray
    rse: np.ndarray
    rse_s: np.ndarray
    gauss: np.ndarray
    lead: np.ndarray
    upper: np.ndarray
    sel_review: np.ndarray
    sel_asymptotic: np.ndarray
    c_deff: np.ndarray
    c_sand: np.ndarray
    slope: np.ndarray
    slope_se: np.ndarray
    c_order: np.ndarray
    spread_N: np.ndarray
    spread_N_se: np.ndarray

    def metrics(self) -> dict[str, float]:
        """The verdict quantities: the largest deviation from the Gaussian formula over ``sel_review``
        (``gauss_maxdev_N4`` with the relative SE at that point, and the ratio range), from the leading
        order over ``sel_asymptotic`` (``lead_maxdev_N16``, its SE, the ``(K + 1)/N`` finite-``N`` bound),
        the largest distance outside the bracket ``[lead, upper]`` in SEs, the spreads across spectra of
        ``c_deff`` and ``c_sand`` at the largest ``N`` (SE ``√2`` × the largest relative SE), the slope
        farthest from ``−1`` in SEs (``rate_slope_worst``) with the bias bound ``(K + 1)/(N_min − K − 1)``,
        and the spectrum whose ``c_order`` spread is largest in SEs (``order_spread_N16``)."""
        mean, rse, rse_s, sel4, sel16, Ns, K = (
            self.mean,
            self.rse,
            self.rse_s,
            self.sel_review,
            self.sel_asymptotic,
            self.N,
            self.K,
        )
        dev_g = np.abs(mean / self.gauss - 1)[:, sel4]
        ig = np.unravel_index(np.argmax(dev_g), dev_g.shape)
        dev_l = np.abs(mean / self.lead - 1)[:, sel16]
        il = np.unravel_index(np.argmax(dev_l), dev_l.shape)
        z_out = np.maximum((self.lead - mean) / (mean * rse_s), (mean - self.upper) / (mean * rse_s))[:, sel4]
        top = -1
        slopes, slope_se = self.slope, self.slope_se
        k_worst = int(np.argmax(np.abs(slopes + 1) - 3 * slope_se))
        k_order = int(np.argmax((self.spread_N - 1) / self.spread_N_se))
        return dict(
            gauss_maxdev_N4=dev_g.max(),
            gauss_maxdev_N4_se=rse[:, sel4][ig],
            gauss_ratio_min_N4=(mean / self.gauss)[:, sel4].min(),
            gauss_ratio_max_N4=(mean / self.gauss)[:, sel4].max(),
            lead_maxdev_N16=dev_l.max(),
            lead_maxdev_N16_se=rse_s[:, sel16][il],
            lead_finite_n_bound=(K + 1) / Ns[sel16].min(),
            bracket_max_z_outside=z_out.max(),
            spread_deff_largeN=self.c_deff.max() / self.c_deff.min(),
            spread_deff_largeN_se=float(np.sqrt(2) * rse[:, top].max()),
            spread_sand_largeN=self.c_sand.max() / self.c_sand.min(),
            spread_sand_largeN_se=float(np.sqrt(2) * rse_s[:, top].max()),
            N_largest=Ns[top],
            rate_slope_worst=slopes[k_worst],
            rate_slope_worst_se=slope_se[k_worst],
            rate_slope_bias_bound=(K + 1) / (Ns[sel16].min() - K - 1),
            order_spread_N16=self.spread_N[k_order],
            order_spread_N16_se=self.spread_N_se[k_order],
            order_const_min=self.c_order.min(),
            order_const_max=self.c_order.max(),
        )


def closed_form_comparison(
    points: list[DiversityPoint], N: np.ndarray, K: int, *, min_ratio_review: float, min_ratio_asymptotic: float
) -> ClosedFormComparison:
    """Compare the mean excess of each spectrum's sweep (:func:`diversity_sweep`, all over the same ``N`` (m,))
    with the Gaussian formula and the sandwich forms (main paper §10, §3.2; definitions in
    :class:`ClosedFormComparison`). ``K``: the dimension; ``min_ratio_review``, ``min_ratio_asymptotic``:
    the smallest ``N/K`` of the review's check and of the leading-order checks."""
    if not points:
        raise ValueError("points: expected at least one diversity sweep")
    Ns = np.asarray(N)
    if any(p.excess_mean.shape != Ns.shape for p in points):
        raise ValueError(f"points: every sweep must have one mean excess per N ({Ns.size})")
    gauss = np.array([gaussian_excess(p.R_star, K, Ns) for p in points])
    lead = np.array([sandwich_excess(p.R_star, p.d_sand.value, K, N=Ns, finite_n=False) for p in points])
    upper = np.array([sandwich_excess(p.R_star, p.d_sand.value, K, N=Ns) for p in points])
    mean = np.array([p.excess_mean for p in points])
    rse = np.array([p.excess_se / p.excess_mean for p in points])
    rse_s = rse + np.array([[p.d_sand.se / p.d_sand.value] for p in points])
    sel4 = Ns >= min_ratio_review * K
    sel16 = Ns >= min_ratio_asymptotic * K
    top = -1  # the largest N
    c_deff = Ns[top] * mean[:, top] / (np.array([p.R_star for p in points]) * K)
    c_sand = Ns[top] * mean[:, top] / np.array([p.R_star * p.d_sand.value for p in points])
    slopes, slope_se = _log_log_slopes(Ns[sel16], mean[:, sel16], rse[:, sel16])
    c_order = Ns[sel16] * mean[:, sel16] / (np.array([p.R_star for p in points]) * points[0].d_eff)[:, None]
    spread_N = c_order.max(axis=1) / c_order.min(axis=1)
    spread_N_se = np.sqrt(2) * rse[:, sel16].max(axis=1)
    return ClosedFormComparison(
        Ns,
        K,
        mean,
        rse,
        rse_s,
        gauss,
        lead,
        upper,
        sel4,
        sel16,
        c_deff,
        c_sand,
        slopes,
        slope_se,
        c_order,
        spread_N,
        spread_N_se,
    )


def _log_log_slopes(N: np.ndarray, mean: np.ndarray, rse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``mean`` (S, m): the weighted least-squares slope of ``log mean`` on ``log N`` (weights
    ``1/rse²``, the delta-method variance of ``log mean``) and its standard error.

    The normal equations in the order ``((XᵀWX)^{-1} Xᵀ)(W log mean)``; :func:`iclcore.stats.weighted_least_squares`
    associates the last product the other way and differs in the last bits."""
    slopes, slope_se = [], []
    x = np.log(N)
    for i in range(mean.shape[0]):
        w = 1 / rse[i] ** 2
        X = np.c_[np.ones_like(x), x]
        cov = np.linalg.inv(X.T @ (w[:, None] * X))
        beta = cov @ X.T @ (w * np.log(mean[i]))
        slopes.append(beta[1])
        slope_se.append(np.sqrt(cov[1, 1]))
    return np.array(slopes), np.array(slope_se)


def depth_to_target(P: np.ndarray, H: np.ndarray, z_dagger: np.ndarray, *, target: float, L_max: int) -> int:
    """Smallest ``L`` with ``mean ‖(I − PH)^L z^†‖² ≤ target · mean ‖z^†‖²`` (main paper §10, decoder difficulty ``L``).

    Parameters
    ----------
    P : ndarray (K, K)
    H : ndarray (n, K, K)
    z_dagger : ndarray (n, K)
    target : float in (0, 1)
        Relative solver error to reach.
    L_max : int
        Search range; raises ``ValueError`` (``L_max``) if not reached.
    """
    if not 0 < target < 1:
        raise ValueError(f"target: relative error must lie in (0, 1), got {target!r}")
    L_max = positive_int(L_max, "L_max")
    err = richardson_error(P, H, -np.asarray(z_dagger, float), L=L_max)  # (n, L+1, K)
    rel = np.mean(np.sum(err**2, axis=-1), axis=0) / np.mean(np.sum(np.asarray(z_dagger) ** 2, axis=-1))
    hit = np.nonzero(rel <= target)[0]
    if hit.size == 0:
        raise ValueError(f"L_max: relative error {rel[-1]:.3g} > target {target:g} after {L_max} steps")
    return int(hit[0])


def depth_from_contraction(rho: float, target: float) -> int:
    """``⌈log(target) / (2 log ρ)⌉``: depth at which ``ρ^{2L} ≤ target`` (the certificate's prediction)."""
    if not 0 < rho < 1:
        raise ValueError(f"rho: contraction must lie in (0, 1), got {rho!r}")
    if not 0 < target < 1:
        raise ValueError(f"target: must lie in (0, 1), got {target!r}")
    return int(math.ceil(math.log(target) / (2 * math.log(rho))))


@dataclass(frozen=True)
class DifficultyPoint:
    """Difficulty axes of one task distribution with the oracle ``P⋆`` (means over prompts, with SEs).

    Attributes
    ----------
    kappa_H, kappa_H_se : float
        ``κ(H_M)``.
    kappa_PH, kappa_PH_se : float
        ``κ(P⋆ H_M) = λ_max/λ_min`` of the (real) spectrum of ``P⋆H_M``.
    rho, rho_se : float
        ``ρ(I − P⋆ H_M)``.
    rho_pop : float
        ``ρ(I − P⋆ H_∞)``.
    depth : int
        :func:`depth_to_target` with ``P⋆``; ``-1`` when the target is not reached within
        ``L_max`` (this happens when some prompts have ``ρ(I − P⋆H_M) ≥ 1``, see ``frac_divergent``).
    frac_divergent : float
        Fraction of prompts with ``ρ(I − P⋆ H_M) ≥ 1`` (the iteration diverges on them).
    depth_pred : int
        :func:`depth_from_contraction` at the mean ``ρ``.
    R_star : float
    """

    kappa_H: float
    kappa_H_se: float
    kappa_PH: float
    kappa_PH_se: float
    rho: float
    rho_se: float
    rho_pop: float
    depth: int
    depth_pred: int
    R_star: float
    frac_divergent: float


def difficulty_point(
    config: TaskConfig, n_prompts: int, rng: np.random.Generator, *, target: float, L_max: int
) -> DifficultyPoint:
    """Operator and decoder difficulty (main paper §10) of ``config`` with its oracle ``P⋆ = BC^†``."""
    n_prompts = positive_int(n_prompts, "n_prompts", minimum=2)  # a standard error needs two draws
    cfg = config.replace(target="beta")
    mom = closed_form_moments(cfg)
    P = oracle_preconditioner(mom)
    pr = sample_prompt_statistics(cfg, n_prompts, rng)
    kH = condition_number(pr.H_M)
    spec = preconditioned_spectrum(P, pr.H_M)
    kPH = spec[:, -1] / spec[:, 0]
    rho = np.atleast_1d(iteration_spectral_radius(P, pr.H_M))
    try:
        depth = depth_to_target(P, pr.H_M, pr.z_dagger, target=target, L_max=L_max)
    except ValueError:
        depth = -1  # not reached within L_max (flag documented in DifficultyPoint)
    rho_m = float(rho.mean())
    return DifficultyPoint(
        kappa_H=float(kH.mean()),
        kappa_H_se=float(standard_error(kH)),
        kappa_PH=float(kPH.mean()),
        kappa_PH_se=float(standard_error(kPH)),
        rho=rho_m,
        rho_se=float(standard_error(rho)),
        rho_pop=float(iteration_spectral_radius(P, cfg.H_infinity)),
        depth=depth,
        depth_pred=depth_from_contraction(rho_m, target) if rho_m < 1 else -1,
        R_star=oracle_risk(mom),
        frac_divergent=float(np.mean(rho >= 1)),
    )


def difficulty_axis_summary(name: str, points: list[DifficultyPoint]) -> dict[str, float]:
    """The ends of one difficulty axis (a sweep of one parameter, :func:`difficulty_point` per value).

    Keys ``depth_<name>_first``/``_last``, and the same for ``rho``, ``kappa_PH``, ``kappa_H``, plus
    ``frac_divergent_<name>_max`` over the axis."""
    if not points:
        raise ValueError("points: expected at least one difficulty point")

    def get(f: str) -> np.ndarray:
        return np.array([getattr(p, f) for p in points])

    return {
        f"frac_divergent_{name}_max": get("frac_divergent").max(),
        f"depth_{name}_first": get("depth")[0],
        f"depth_{name}_last": get("depth")[-1],
        f"rho_{name}_first": get("rho")[0],
        f"rho_{name}_last": get("rho")[-1],
        f"kappa_PH_{name}_first": get("kappa_PH")[0],
        f"kappa_PH_{name}_last": get("kappa_PH")[-1],
        f"kappa_H_{name}_first": get("kappa_H")[0],
        f"kappa_H_{name}_last": get("kappa_H")[-1],
    }
