"""Depth-1 online SGD of the reduced-Γ model on ISO data, vectorised over independent seeds
(Bordelon et al. App. C.1, Result 10, Eqs. 62–79): the SGD noise around the gradient-flow mean, its
scale ``η/τ``, its dependence on ``D`` at fixed ``τ = B/D``, and the role of ``κ = K/D``.
Conventions (normalised trace, theory time) in :mod:`iclcore.dmft`.

At ``L = 1`` the update of one step is ``Γ ← Γ − η (D/B) Σ_n S_n (Γc_n − β_n) c_nᵀ`` with
``c_n = X_nᵀy_n/P`` and ``S_n = X_{*n}ᵀX_{*n}/K`` (the ``G`` of Eq. 62). Its mean is linear in
``Γ`` and does not involve ``K``: with ``E S = I`` and the exact Wishart moment
``E Σ̂² = (1 + (D+1)/P) I``, the seed-mean of ``Γ_t`` is ``γ̄_t I`` with

.. math::
    \\bar\\gamma_{t+1} = \\bar\\gamma_t + \\eta\\,(1 - a_0'\\bar\\gamma_t),\\qquad a_0' = 1 + (1+\\sigma^2)\\frac{D+1}{P},

exactly at every ``D`` (no ``τ``, no ``κ``). The deviation from this mean,
``N_t = (1/D)|Γ_t − γ̄_t I|²``, is the SGD noise; Result 10 predicts its plateau
``b/(1 − a) = (η/τ)(1 + 1/κ)(a₀ − 1)/(2a₀ + O(η))`` (Eq. 75 with ``C(∞)``): of order ``η/τ``,
independent of ``D`` at fixed ``τ``, and the only place where ``κ`` enters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.dmft.shallow_sgd import shallow_sgd_theory
from iclcore.stats import fit_power_law, standard_error
from iclcore.validation import as_generator, nonnegative_float, positive_float, positive_int

__all__ = [
    "ShallowSGDEnsemble",
    "shallow_mean_path",
    "shallow_sgd_ensemble",
    "noise_plateau_theory",
    "NoisePlateau",
    "noise_plateau",
    "noise_plateau_ratio",
    "noise_plateau_slope",
]


@dataclass(frozen=True)
class ShallowSGDEnsemble:
    """Output of :func:`shallow_sgd_ensemble` (``R`` seeds, ``T`` steps).

    Attributes
    ----------
    gamma : ``tr Γ_t`` per seed, shape ``(R, T)``
    mean_path : exact seed-mean ``γ̄_t`` of :func:`shallow_mean_path`, shape ``(T,)``
    noise : ``(1/D)|Γ_t − γ̄_t I|²`` per seed, shape ``(R, T)``
    off_iso : ``‖Γ_t − (tr Γ_t) I‖_F / ‖Γ_t‖_F`` per seed, shape ``(R, T)``
    param_error : ``(1/D)|Γ_t − I|²`` per seed, shape ``(R, T)``
    D, B, P, K : sizes used
    """

    gamma: np.ndarray
    mean_path: np.ndarray
    noise: np.ndarray
    off_iso: np.ndarray
    param_error: np.ndarray
    D: int
    B: int
    P: int
    K: int


def shallow_mean_path(steps: int, eta: float, D: int, P: int, sigma: float = 0.0) -> np.ndarray:
    """Exact finite-``D`` mean ``γ̄_t``, ``t = 1..steps``, of depth-1 ISO SGD from ``Γ = 0``.

    ``γ̄_t = (1 − (1 − ηa₀')^t)/a₀'`` with ``a₀' = 1 + (1+σ²)(D+1)/P`` (module docstring). Shape ``(steps,)``.
    """
    steps = positive_int(steps, "steps")
    eta = positive_float(eta, "eta")
    D = positive_int(D, "D")
    P = positive_int(P, "P")
    sigma = nonnegative_float(sigma, "sigma")
    a0 = 1.0 + (1.0 + sigma**2) * (D + 1.0) / P
    return (1.0 - (1.0 - eta * a0) ** np.arange(1, steps + 1, dtype=float)) / a0


def shallow_sgd_ensemble(
    D: int,
    alpha: float,
    kappa: float,
    tau: float,
    eta: float,
    steps: int,
    seeds: int,
    rng: np.random.Generator,
    sigma: float = 0.0,
) -> ShallowSGDEnsemble:
    """``seeds`` independent depth-1 online-SGD runs on ISO data (Eq. 5), advanced together.

    ``P = round(αD)``, ``K = round(κD)``, ``B = round(τD)`` (each at least 1); every step draws
    ``B`` fresh contexts per seed and applies the ``G`` of Eq. 62, ``Γ ← Γ − η(D/B)Σ_n S_n(Γc_n −
    β_n)c_nᵀ`` (the same update as :func:`iclcore.dmft.reduced_sgd.simulate_reduced_gamma_sgd` at
    ``L = 1``, with ``S_n v`` computed as ``X_*ᵀ(X_* v)/K`` so that no ``D x D`` matrix per context is
    formed). Cost ``O(R B (P+K) D)`` per step.

    Raises
    ------
    ValueError
        on bad sizes, or if the iterates blow up (``eta`` too large for ``tau``).
    """
    D = positive_int(D, "D")
    alpha = positive_float(alpha, "alpha")
    kappa = positive_float(kappa, "kappa")
    tau = positive_float(tau, "tau")
    eta = positive_float(eta, "eta")
    steps = positive_int(steps, "steps")
    R = positive_int(seeds, "seeds")
    sigma = nonnegative_float(sigma, "sigma")
    rng = as_generator(rng)
    P, K, B = (max(1, int(round(v * D))) for v in (alpha, kappa, tau))
    mean = shallow_mean_path(steps, eta, D, P, sigma)
    Gam = np.zeros((R, D, D))
    eye = np.eye(D)
    gamma = np.empty((R, steps))
    noise = np.empty((R, steps))
    off = np.empty((R, steps))
    perr = np.empty((R, steps))
    for s in range(steps):
        beta = rng.standard_normal((R, B, D, 1)) / np.sqrt(D)
        X = rng.standard_normal((R, B, P, D))
        y = X @ beta
        if sigma > 0:
            y = y + sigma * rng.standard_normal((R, B, P, 1))
        c = (np.swapaxes(X, -1, -2) @ y)[..., 0] / P  # (R, B, D)
        err = c @ np.swapaxes(Gam, -1, -2) - beta[..., 0]  # rows Γc_n − β_n
        Xs = rng.standard_normal((R, B, K, D))
        Serr = (np.swapaxes(Xs, -1, -2) @ (Xs @ err[..., None]))[..., 0] / K
        Gam = Gam - eta * (D / B) * (np.swapaxes(Serr, -1, -2) @ c)
        if not np.all(np.isfinite(Gam)) or np.abs(Gam).max() > 1e8:
            raise ValueError(f"eta: SGD diverged at step {s} (step size {eta} too large for tau = {tau})")
        tr = np.trace(Gam, axis1=1, axis2=2) / D
        gamma[:, s] = tr
        noise[:, s] = np.sum((Gam - mean[s] * eye) ** 2, axis=(1, 2)) / D
        dev = np.sum((Gam - tr[:, None, None] * eye) ** 2, axis=(1, 2))
        off[:, s] = np.sqrt(dev / np.sum(Gam**2, axis=(1, 2)))
        perr[:, s] = np.sum((Gam - eye) ** 2, axis=(1, 2)) / D
    return ShallowSGDEnsemble(
        gamma=gamma, mean_path=mean, noise=noise, off_iso=off, param_error=perr, D=D, B=B, P=P, K=K
    )


def noise_plateau_theory(
    eta: float, alpha: float, kappa: float, tau: float, sigma: float = 0.0, D: int | None = None
) -> float:
    """Result 10's stationary SGD noise ``C(∞) = b/(1 − a)`` (Eqs. 75, 79).

    ``D`` applies the finite-``D`` Wishart moments of :func:`iclcore.dmft.shallow_sgd.shallow_sgd_theory`.
    """
    th = shallow_sgd_theory(np.array([0]), eta, alpha, kappa, tau, sigma=sigma, D=D)
    return th.b / (1.0 - th.a)


@dataclass(frozen=True)
class NoisePlateau:
    """The SGD noise plateau of an ensemble (:func:`noise_plateau`).

    Attributes
    ----------
    mean : float
        Seed mean of the per-seed plateaus.
    se : float
        Its standard error over the independent seeds.
    per_seed : ndarray, shape (R,)
        Each seed's time average of ``N_t`` over the plateau window.
    """

    mean: float
    se: float
    per_seed: np.ndarray


def noise_plateau(ens: ShallowSGDEnsemble, eta: float, t_start: float = 2.0) -> NoisePlateau:
    """Plateau of the SGD noise ``N_t`` of an ensemble: per seed, its mean over theory time ``t ≥ t_start``.

    Steps ``s ≥ ⌈t_start/η⌉`` to the end of the run (theory time ``t = η s``); with ``t_start = 2``
    the transient of the mean path has decayed by ``e^{-2 a₀'η s} ≤ e^{-8}`` (``a₀' ≥ 2`` at
    ``α = 1``), and the value estimates Result 10's ``C(∞)`` (:func:`noise_plateau_theory`).
    The standard error is over the ``R >= 2`` independent seeds.

    Parameters
    ----------
    ens : ShallowSGDEnsemble
        ``R`` seeds, ``T > ⌈t_start/η⌉`` steps.
    eta : float
        The step size the ensemble was run with.
    t_start : float
        Start of the window in theory time.

    Returns
    -------
    NoisePlateau
    """
    eta = positive_float(eta, "eta")
    first = int(np.ceil(positive_float(t_start, "t_start") / eta))
    if first >= ens.noise.shape[1]:
        raise ValueError(f"t_start: the window starts at step {first}, after the run's {ens.noise.shape[1]} steps")
    v = ens.noise[:, first:].mean(axis=1)
    return NoisePlateau(float(v.mean()), float(standard_error(v)), v)


def noise_plateau_ratio(a: NoisePlateau, b: NoisePlateau) -> tuple[float, float]:
    """The ratio ``a.mean / b.mean`` of two independent plateaus and its delta-method standard error.

    ``se = (a/b) sqrt((se_a/a)² + (se_b/b)²)`` (independent ensembles: no covariance term).

    Returns
    -------
    (ratio, se) : floats
    """
    if a.mean <= 0 or b.mean <= 0:
        raise ValueError(f"a, b: noise plateaus must be positive, got {a.mean!r}, {b.mean!r}")
    ratio = a.mean / b.mean
    return ratio, ratio * float(np.hypot(a.se / a.mean, b.se / b.mean))


def noise_plateau_slope(plateaus: list[NoisePlateau], scales: np.ndarray) -> tuple[float, float]:
    """Log-log slope of the noise plateau against a scale (e.g. ``η/τ``), per seed, with its standard error.

    For each seed, the least-squares slope of ``log`` plateau against ``log`` scale
    (:func:`iclcore.stats.fit_power_law`) over the ensembles (which share their seeds' count ``R``);
    the result is the seed mean of the slopes and its standard error over the seeds (independent).
    Result 10 predicts slope 1 as ``η/τ → 0`` (the noise is of order ``η/τ``).

    Parameters
    ----------
    plateaus : list of NoisePlateau, length ``n >= 2``
        One per scale, each with ``R >= 2`` seeds.
    scales : array_like, shape (n,)
        Positive, at least two distinct values.

    Returns
    -------
    (slope, se) : floats
    """
    per_seed = np.array([p.per_seed for p in plateaus])  # (n, R)
    sl = fit_power_law(scales, per_seed).slope
    return float(sl.mean()), float(standard_error(sl))
