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
from iclcore.stats import (
    SizeExtrapolation,
    fit_power_law,
    fit_power_law_weighted,
    inverse_size_extrapolation,
    standard_error,
)
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
    "NoiseScaleSweep",
    "noise_scale_sweep",
    "KappaNoiseCheck",
    "kappa_noise_check",
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


def shallow_mean_path(steps: int, eta: float, D: int, *, P: int, sigma: float = 0.0) -> np.ndarray:
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
    *,
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
    mean = shallow_mean_path(steps, eta, D, P=P, sigma=sigma)
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
    eta: float, alpha: float, kappa: float, *, tau: float, sigma: float = 0.0, D: int | None = None
) -> float:
    """Result 10's stationary SGD noise ``C(∞) = b/(1 − a)`` (Eqs. 75, 79).

    ``D`` applies the finite-``D`` Wishart moments of :func:`iclcore.dmft.shallow_sgd.shallow_sgd_theory`.
    """
    th = shallow_sgd_theory(np.array([0]), eta, alpha, kappa=kappa, tau=tau, sigma=sigma, D=D)
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


# --------------------------------------------------------------------------------------------------
# Result 10's three statements: the noise scales as η/τ, not with D, and is where κ enters
# --------------------------------------------------------------------------------------------------


#: Names of the three sizes ``[max(4, D // 2), D, 2D]`` of the finite-size checks in metric names.
_SIZE_NAMES = ("half_D", "at_D", "double_D")


def _size_triple(D: int) -> list[int]:
    """``[max(4, D // 2), D, 2D]``: the sizes of the finite-size checks (three distinct sizes: ``D >= 5``)."""
    D = positive_int(D, "D")
    if D < 5:
        raise ValueError(
            f"D: the finite-size check needs the distinct sizes max(4, D // 2), D, 2D; got D = {D} (need D >= 5)"
        )
    return [max(4, D // 2), D, 2 * D]


@dataclass(frozen=True)
class NoiseScaleSweep:
    """The SGD noise plateau over step sizes and dimensions (:func:`noise_scale_sweep`).

    Attributes
    ----------
    etas : list of float, length ``m``
    scales : ndarray, shape (m,)
        ``η/τ``.
    sizes : list of int
        ``[D/2, D, 2D]`` (at least 4).
    ensembles : dict D -> dict eta -> ShallowSGDEnsemble
    plateaus : dict D -> list of NoisePlateau (one per eta)
    plateau_mean_se : dict D -> ndarray, shape (m, 2)
        Mean and SE of each plateau.
    theory, theory_finite_d : ndarray, shape (m,)
        Result 10's ``C(∞)`` at ``D → ∞`` and with the finite-``D`` moments at ``D``.
    slope_theory : float
        Log-log slope of ``theory`` against ``η/τ`` (the same estimator as for the seeds).
    slopes, slopes_se : ndarray, shape (3,)
        Seed-mean log-log slope of the plateau against ``η/τ`` and its SE, per size.
    slope_limit : SizeExtrapolation
        The slopes extrapolated to ``D → ∞`` in ``1/D``.
    size_plateau : ndarray, shape (3, 2)
        Mean and SE of the plateau at ``eta_ref`` per size.
    size_exponent, size_exponent_se : float
        ``q`` of the weighted fit ``plateau ∝ D^q`` at ``eta_ref``.
    offiso_plateau : ndarray, shape (m,)
        Time average over ``t ≥ 2`` of the off-isotropic fraction at ``D``, per eta.
    """

    etas: list[float]
    scales: np.ndarray
    sizes: list[int]
    ensembles: dict[int, dict[float, ShallowSGDEnsemble]]
    plateaus: dict[int, list[NoisePlateau]]
    plateau_mean_se: dict[int, np.ndarray]
    theory: np.ndarray
    theory_finite_d: np.ndarray
    slope_theory: float
    slopes: np.ndarray
    slopes_se: np.ndarray
    slope_limit: SizeExtrapolation
    size_plateau: np.ndarray
    size_exponent: float
    size_exponent_se: float
    offiso_plateau: np.ndarray

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``, Result 10 (a), (b)); the D sizes as ``half_D``, ``at_D``, ``double_D``."""
        at_D, lim = self.plateau_mean_se[self.sizes[1]], self.slope_limit
        return {
            **{f"r10_eta_slope_{n}": float(v) for n, v in zip(_SIZE_NAMES, self.slopes)},
            "r10_eta_slope_at_D_se": float(self.slopes_se[1]),
            "r10_eta_slope_extrapolated": lim.limit,
            "r10_eta_slope_extrapolated_se": lim.limit_se,
            "r10_eta_slope_extrapolated_curvature": lim.curvature,
            "r10_eta_slope_theory": self.slope_theory,
            "r10_noise_plateau_smallest_eta": float(at_D[0, 0]),
            "r10_noise_plateau_smallest_eta_theory": float(self.theory[0]),
            "r10_D_exponent": self.size_exponent,
            "r10_D_exponent_se": self.size_exponent_se,
            **{f"r10_noise_plateau_{n}": float(v) for n, v in zip(_SIZE_NAMES, self.size_plateau[:, 0])},
            "r10_offiso_plateau_smallest_eta": float(self.offiso_plateau[0]),
            "r10_offiso_plateau_largest_eta": float(self.offiso_plateau[-1]),
        }


def noise_scale_sweep(
    etas: list[float],
    *,
    D: int,
    tau: float,
    seeds: int,
    rng: np.random.Generator,
    eta_ref: float = 0.1,
    t_end: float = 3.5,
) -> NoiseScaleSweep:
    """Result 10 (App. C.1): the SGD noise plateau is of order ``η/τ`` and does not grow with ``D`` at fixed ``τ``.

    At ``α = κ = 1`` and each ``D`` of ``[D/2, D, 2D]`` (at least 4) and each ``η`` of ``etas``: an
    ensemble of ``seeds`` runs (:func:`shallow_sgd_ensemble`) to theory time ``t_end`` and its plateau
    (:func:`noise_plateau`, ``t ∈ [2, t_end]``). Per size the seed-mean log-log slope of the plateau
    against ``η/τ`` (:func:`noise_plateau_slope`), extrapolated to ``D → ∞``
    (:func:`iclcore.stats.inverse_size_extrapolation`); at ``eta_ref`` the weighted fit of the plateau
    as ``D^q`` (:func:`iclcore.stats.fit_power_law_weighted`). The runs draw from ``rng`` size by size,
    then ``η`` by ``η``.

    Returns
    -------
    NoiseScaleSweep
    """
    etas = list(etas)
    if eta_ref not in etas:
        raise ValueError(f"eta_ref: {eta_ref!r} is not one of etas {etas!r}")

    def run(D_k: int, eta: float) -> ShallowSGDEnsemble:
        return shallow_sgd_ensemble(
            D_k, 1.0, 1.0, tau=tau, eta=eta, steps=int(np.ceil(t_end / eta)), seeds=seeds, rng=rng
        )

    x = np.array(etas) / tau
    sizes = _size_triple(D)
    sweeps = {Dk: {eta: run(Dk, eta) for eta in etas} for Dk in sizes}
    plateaus = {Dk: [noise_plateau(sweeps[Dk][e], e) for e in etas] for Dk in sizes}
    th_inf = np.array([noise_plateau_theory(e, 1.0, 1.0, tau=tau) for e in etas])
    th_fd = np.array([noise_plateau_theory(e, 1.0, 1.0, tau=tau, D=D) for e in etas])
    slope_D, slope_D_se = np.array([noise_plateau_slope(plateaus[Dk], x) for Dk in sizes]).T
    size_pl = np.array([(p.mean, p.se) for p in (plateaus[Dk][etas.index(eta_ref)] for Dk in sizes)])
    _, q, q_se = fit_power_law_weighted(np.array(sizes, float), size_pl[:, 0], size_pl[:, 1])
    return NoiseScaleSweep(
        etas=etas,
        scales=x,
        sizes=sizes,
        ensembles=sweeps,
        plateaus=plateaus,
        plateau_mean_se={Dk: np.array([(p.mean, p.se) for p in plateaus[Dk]]) for Dk in sizes},
        theory=th_inf,
        theory_finite_d=th_fd,
        slope_theory=fit_power_law(x, th_inf).slope,
        slopes=slope_D,
        slopes_se=slope_D_se,
        slope_limit=inverse_size_extrapolation(sizes, slope_D, slope_D_se),
        size_plateau=size_pl,
        size_exponent=q,
        size_exponent_se=q_se,
        offiso_plateau=np.array([sweeps[D][e].off_iso[:, int(np.ceil(2.0 / e)) :].mean() for e in etas]),
    )


@dataclass(frozen=True)
class KappaNoiseCheck:
    """``κ`` leaves the mean path alone and scales the noise (:func:`kappa_noise_check`).

    Attributes
    ----------
    kappas : list of float
        Two values.
    ensembles : dict kappa -> ShallowSGDEnsemble
        At ``D``.
    mean_t : list of float
        Per ``κ``: ``|mean| / SE`` over seeds of the time-averaged ``γ_t − γ̄_t``.
    t_critical : float
        Bonferroni two-sided Student-t critical value (family-wise ``level``, ``seeds − 1`` degrees of freedom).
    mean_se : float
        Largest SE of the time-averaged ``γ_t − γ̄_t``.
    ratio, ratio_se : float
        Noise plateau ratio ``N(κ₀)/N(κ₁)`` at ``D`` and its SE.
    ratio_theory, ratio_finite_d : float
        Result 10's ratio at ``D → ∞`` and with the finite-``D`` moments at ``D``.
    sizes : list of int
        ``[D/2, D, 2D]`` (at least 4).
    ratios, ratios_se : ndarray, shape (3,)
        The ratio and its SE per size.
    ratios_finite_d : list of float
        The finite-``D`` theory's ratio per size.
    gap_exponent, gap_exponent_se : float
        ``q`` of the weighted fit ``ratio − ratio_theory ∝ D^q``.
    ratio_limit : SizeExtrapolation
        The ratio extrapolated to ``D → ∞`` in ``1/D``.
    """

    kappas: list[float]
    ensembles: dict[float, ShallowSGDEnsemble]
    mean_t: list[float]
    t_critical: float
    mean_se: float
    ratio: float
    ratio_se: float
    ratio_theory: float
    ratio_finite_d: float
    sizes: list[int]
    ratios: np.ndarray
    ratios_se: np.ndarray
    ratios_finite_d: list[float]
    gap_exponent: float
    gap_exponent_se: float
    ratio_limit: SizeExtrapolation

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``, Result 10 (c))."""
        return {
            "r10_kappa_mean_max_t": float(max(self.mean_t)),
            "r10_kappa_mean_tcrit": self.t_critical,
            "r10_kappa_mean_se": self.mean_se,
            "r10_kappa_noise_ratio": self.ratio,
            "r10_kappa_noise_ratio_se": self.ratio_se,
            "r10_kappa_noise_ratio_theory": self.ratio_theory,
            "r10_kappa_noise_ratio_fd_term": abs(self.ratio_finite_d - self.ratio_theory),
            **{f"r10_kappa_noise_ratio_{n}": float(v) for n, v in zip(_SIZE_NAMES, self.ratios)},
            "r10_kappa_ratio_gap_exponent": self.gap_exponent,
            "r10_kappa_ratio_gap_exponent_se": self.gap_exponent_se,
            "r10_kappa_noise_ratio_extrapolated": self.ratio_limit.limit,
            "r10_kappa_noise_ratio_extrapolated_se": self.ratio_limit.limit_se,
            "r10_kappa_noise_ratio_extrapolated_curvature": self.ratio_limit.curvature,
        }


def kappa_noise_check(
    kappas: list[float],
    *,
    D: int,
    tau: float,
    eta: float,
    seeds: int,
    rng: np.random.Generator,
    level: float = 0.01,
    t_end: float = 3.5,
) -> KappaNoiseCheck:
    """Result 10 (App. C.1): ``κ = K/D`` does not enter the mean path and enters the noise as ``1 + 1/κ``.

    At ``α = 1``, step ``eta`` and each of the two ``kappas``: an ensemble of ``seeds`` runs
    (:func:`shallow_sgd_ensemble`) at ``D``; the time average over all steps of ``γ_t − γ̄_t`` per seed
    (``γ̄`` the exact mean path) with its t statistic over seeds; the plateau ratio
    (:func:`noise_plateau_ratio`) against Result 10's (:func:`noise_plateau_theory`); the same ratio at
    ``D/2`` and ``2D`` (new ensembles, drawn from ``rng`` after those at ``D``), its gap to the theory
    fitted as ``D^q`` and its ``1/D`` extrapolation.

    Returns
    -------
    KappaNoiseCheck
    """
    kappas = list(kappas)
    if len(kappas) != 2:
        raise ValueError(f"kappas: expected two values, got {kappas!r}")

    def run(D_k: int, kappa_k: float) -> ShallowSGDEnsemble:
        return shallow_sgd_ensemble(
            D_k, 1.0, kappa_k, tau=tau, eta=eta, steps=int(np.ceil(t_end / eta)), seeds=seeds, rng=rng
        )

    def theory_ratio(D_k: int | None) -> float:
        return noise_plateau_theory(eta, 1.0, kappas[0], tau=tau, D=D_k) / noise_plateau_theory(
            eta, 1.0, kappas[1], tau=tau, D=D_k
        )

    kap_runs = {k: run(D, k) for k in kappas}
    kap_dmean = [(kap_runs[k].gamma - kap_runs[k].mean_path).mean(axis=1) for k in kappas]
    ratio, ratio_se = noise_plateau_ratio(*(noise_plateau(kap_runs[k], eta) for k in kappas))
    ratio_th = theory_ratio(None)
    sizes = _size_triple(D)
    size_runs = {Dk: kap_runs if Dk == D else {k: run(Dk, k) for k in kappas} for Dk in sizes}
    rat, rat_se = np.array(
        [noise_plateau_ratio(*(noise_plateau(rr[k], eta) for k in kappas)) for rr in size_runs.values()]
    ).T
    _, q, q_se = fit_power_law_weighted(np.array(sizes, float), rat - ratio_th, rat_se)
    from scipy import stats as sp_stats

    return KappaNoiseCheck(
        kappas=kappas,
        ensembles=kap_runs,
        mean_t=[abs(float(dm.mean())) / float(standard_error(dm)) for dm in kap_dmean],
        t_critical=float(sp_stats.t.ppf(1 - level / (2 * len(kappas)), seeds - 1)),
        mean_se=max(float(standard_error(dm)) for dm in kap_dmean),
        ratio=ratio,
        ratio_se=ratio_se,
        ratio_theory=ratio_th,
        ratio_finite_d=theory_ratio(D),
        sizes=sizes,
        ratios=rat,
        ratios_se=rat_se,
        ratios_finite_d=[theory_ratio(Dk) for Dk in sizes],
        gap_exponent=q,
        gap_exponent_se=q_se,
        ratio_limit=inverse_size_extrapolation(sizes, rat, rat_se),
    )
