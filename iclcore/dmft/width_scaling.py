"""Width and depth bottlenecks of deep linear attention, checked (Bordelon et al. §4, Result 8, Figure 5, App. A, F).

Four analyses of the width-``N``, depth-``L`` reduced model on randomly rotated power-law data at
``P = ∞`` (:mod:`iclcore.dmft.width_mc`, :mod:`iclcore.dmft.width_de`):

* :func:`width_depth_scaling` (Figure 5 a-c): gradient-flow loss curves over widths, depths and both
  together; the final losses must fall monotonically (each step resolved against the Monte Carlo error
  of the projections) towards the depth and width bottlenecks.
* :func:`width_sgd_comparison` and :func:`width_noise_sweep` (Figure 5d): SGD of the width model against
  its flow; the late bias net of the discretisation, and its scaling with the noise ``η/B``.
* :func:`deterministic_equivalent_checks`: the one-point and Appendix-A two-point deterministic equivalents
  (Eq. 15) against Monte Carlo, with the relation printed after Eq. 39 for comparison.
* :func:`bottleneck_exponents`: the width-bottleneck exponent (corrected and as printed in Eq. 113) and
  the depth-bottleneck exponent at large ``D``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_optimum
from iclcore.dmft.scaling import scalar_descent_path, width_bottleneck, width_bottleneck_paper
from iclcore.dmft.sgd_sweep import NoiseScaling, ReducedSGDTask, late_bias_sweep, noise_scaling, reduced_sgd_gamma_path
from iclcore.dmft.width_de import two_point_loss_de, width_loss_de
from iclcore.dmft.width_mc import (
    GradientFlow,
    WidthSGDRun,
    WidthSpectrum,
    width_gradient_flow,
    width_landscape_job,
    width_landscape_jobs,
    width_loss,
    width_loss_draws,
    width_loss_grad,
    width_loss_se,
    width_min_loss,
    width_sgd_run,
    width_spectrum_job,
    width_spectrum_jobs,
    width_spectrum_mc,
)
from iclcore.models.attention import TrainResult
from iclcore.parallel import map_configs
from iclcore.spectra.mp import mp_quadrature
from iclcore.stats import (
    MonteCarloAgreement,
    batch_means,
    fit_power_law_drift,
    fit_power_law_exponent,
    increment_z_scores,
    monte_carlo_agreement,
    paired_increment_z_scores,
    standard_error,
)
from iclcore.validation import positive_int

__all__ = [
    "ResourceSweep",
    "WidthDepthCurves",
    "width_depth_scaling",
    "WidthSGDComparison",
    "width_sgd_comparison",
    "eta_batch_configs",
    "width_noise_sweep",
    "eta_batch_bias_metrics",
    "WidthLateBias",
    "sgd_gamma_path_or_nan",
    "width_late_bias_runs",
    "OnePointCheck",
    "TwoPointCheck",
    "DeterministicEquivalentChecks",
    "deterministic_equivalent_checks",
    "OnePointAgainstDraws",
    "one_point_against_draws",
    "BottleneckExponents",
    "bottleneck_exponents",
]


# --------------------------------------------------------------------------------------------
# Figure 5 (a)-(c): width, depth and compute
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceSweep:
    """Final losses along a sweep of one resource, their Monte Carlo standard errors and the z-scores of the steps.

    Attributes
    ----------
    final, se : ndarray, shape (n,)
        Final loss at each point and its standard error.
    increment_z : ndarray, shape (n - 1,)
        Each consecutive change over its standard error (:func:`iclcore.stats.increment_z_scores` for
        independent points, :func:`iclcore.stats.paired_increment_z_scores` for paired ones).
    """

    final: np.ndarray
    se: np.ndarray
    increment_z: np.ndarray

    @property
    def max_increment(self) -> float:
        """The largest consecutive change (negative: the loss falls at every step)."""
        return float(np.max(np.diff(self.final)))

    @property
    def increment_z_max(self) -> float:
        """The least resolved step, in standard errors."""
        return float(np.max(self.increment_z))

    @property
    def se_max(self) -> float:
        """The largest standard error."""
        return float(np.max(self.se))


@dataclass(frozen=True)
class WidthDepthCurves:
    """Gradient-flow curves of the width-``N`` model over width, depth and both (:func:`width_depth_scaling`).

    Attributes
    ----------
    t : ndarray, shape (n_t,)
    specs : dict ``N -> WidthSpectrum`` (pooled projections; one at ``N = D``)
    by_width : dict ``N -> GradientFlow`` at depth ``L_fixed`` (panel a)
    by_depth : dict ``L -> GradientFlow`` at width ``N_fixed`` (panel b)
    joint : dict ``(N, L) -> GradientFlow`` along the pairs (panel c)
    width_only, depth_only : dicts ``(N, L) -> GradientFlow``: the pairs' widths at one depth, their depths at one width
    depth_bn : float
        Depth bottleneck ``min_γ tr ΩΛ(I − γΛ/L)^{2L}`` at ``L_fixed`` (:func:`iclcore.dmft.rrs.rrs_optimum`).
    width_bn_mc, width_bn_de, width_bn_paper : float
        Width bottleneck at ``N_fixed``: the null-space loss of the projections, the corrected deterministic
        equivalent and Eq. (113) as printed.
    widths, depths : ndarray
        Panel (a) widths and panel (b) depths.
    width_sweep, depth_sweep, joint_sweep : ResourceSweep
        Final losses of panel (a) and (c) (independent projections per width: differences in quadrature)
        and the ``t → ∞`` losses of panel (b) (the same projections at every depth: paired differences).
    depth_bn_width_only, width_bn_depth_only : float
        Depth bottleneck at ``width_only_depth`` and width bottleneck (Monte Carlo) at ``depth_only_width``.
    L_fixed, N_fixed, width_only_depth, depth_only_width : int
        The settings of the sweeps.
    """

    t: np.ndarray
    specs: dict[int, WidthSpectrum]
    by_width: dict[int, GradientFlow]
    by_depth: dict[int, GradientFlow]
    joint: dict[tuple[int, int], GradientFlow]
    width_only: dict[tuple[int, int], GradientFlow]
    depth_only: dict[tuple[int, int], GradientFlow]
    depth_bn: float
    width_bn_mc: float
    width_bn_de: float
    width_bn_paper: float
    widths: np.ndarray
    depths: np.ndarray
    width_sweep: ResourceSweep
    depth_sweep: ResourceSweep
    joint_sweep: ResourceSweep
    depth_bn_width_only: float
    width_bn_depth_only: float
    L_fixed: int
    N_fixed: int
    width_only_depth: int
    depth_only_width: int

    def metrics(self) -> dict[str, float]:
        """The book's metrics of Figure 5 (a)-(c)."""
        a, b, c = self.width_sweep, self.depth_sweep, self.joint_sweep
        D = max(self.specs)
        return {
            "fig5a_final_max_increment": a.max_increment,
            "fig5a_final_over_depth_bn_min": float(np.min(a.final) / self.depth_bn),
            "fig5a_increment_z_max": a.increment_z_max,
            "fig5a_final_se_max": a.se_max,
            "fig5b_increment_z_max": b.increment_z_max,
            "fig5b_min_loss_se_max": b.se_max,
            "fig5c_increment_z_max": c.increment_z_max,
            "fig5c_final_se_max": c.se_max,
            "fig5b_min_loss_max_increment": b.max_increment,
            "fig5b_min_loss_over_width_bn_mc_min": float(np.min(b.final) / self.width_bn_mc),
            f"fig5b_min_loss_L{self.depths[-1]}_over_width_bn_mc": b.final[-1] / self.width_bn_mc,
            "fig5c_joint_final_max_increment": c.max_increment,
            "fig5c_joint_final_last": float(c.final[-1]),
            "fig5c_width_only_final_best": float(min(cv.loss[-1] for cv in self.width_only.values())),
            "fig5c_depth_only_final_best": float(min(cv.loss[-1] for cv in self.depth_only.values())),
            f"depth_bottleneck_L{self.width_only_depth}": self.depth_bn_width_only,
            f"fig5c_width_bn_N{self.depth_only_width}_mc": self.width_bn_depth_only,
            f"depth_bottleneck_L{self.L_fixed}": self.depth_bn,
            "fig5a_full_width_final_over_depth_bn": self.by_width[D].loss[-1] / self.depth_bn,
            "fig5b_deep_final_over_width_bn_mc": self.by_depth[max(self.by_depth)].loss[-1] / self.width_bn_mc,
            "width_bn_mc": self.width_bn_mc,
            "width_bn_de": self.width_bn_de,
            "width_bn_paper": self.width_bn_paper,
            "width_bn_de_vs_mc_rel": abs(self.width_bn_de / self.width_bn_mc - 1),
            "width_bn_paper_vs_mc_ratio": self.width_bn_paper / self.width_bn_mc,
        }


def width_depth_scaling(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    widths: Sequence[int],
    depths: Sequence[int],
    pairs: Sequence[tuple[int, int]],
    N_fixed: int,
    L_fixed: int,
    n_draws: int,
    t: np.ndarray,
    rng: np.random.Generator,
    width_only_depth: int = 4,
    depth_only_width: int = 32,
    workers: int = 1,
) -> WidthDepthCurves:
    """Gradient-flow loss curves of the width-``N`` model over width, depth and compute (Figure 5 a-c, Result 8).

    One spectrum per width (:func:`iclcore.dmft.width_mc.width_spectrum_mc`, ``n_draws`` projections pooled,
    one at ``N = D``), drawn from ``rng`` in a fixed order (the set of ``widths ∪ {N_fixed}``, then the pairs'
    new widths) as independent tasks of :func:`iclcore.parallel.map_configs`; ``rng`` is advanced past them.
    The flows are :func:`iclcore.dmft.width_mc.width_gradient_flow`. Panel (a): ``widths`` at ``L_fixed``,
    final losses with the Monte Carlo SE at the final ``γ`` (:func:`iclcore.dmft.width_mc.width_loss_se`);
    panel (b): ``depths`` at ``N_fixed``, the ``t → ∞`` loss ``min_γ`` per depth with paired per-projection
    differences (:func:`iclcore.dmft.width_mc.width_loss_draws`); panel (c): the ``pairs`` ``(N, L)``, and
    their widths at ``width_only_depth`` and their depths at ``depth_only_width``.

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
    widths, depths : sequences of int, increasing; ``widths`` contains ``D``
    pairs : sequence of ``(N, L)``; their widths must include ``depth_only_width``
    N_fixed, L_fixed : int
    n_draws : int
        Projections pooled per width ``< D``.
    t : ndarray, shape (n_t,)
        Non-decreasing times from 0.
    rng : numpy.random.Generator
    width_only_depth, depth_only_width : int
    workers : int

    Returns
    -------
    WidthDepthCurves
    """
    D = len(lam)
    if D not in widths:
        raise ValueError(f"widths: expected the full width D={D} among the widths, got {list(widths)!r}")
    spec_N = list(set(widths) | {N_fixed})
    spec_N += [N for N, _ in pairs if N not in spec_N]
    if depth_only_width not in spec_N:
        raise ValueError(f"depth_only_width: expected one of the widths {sorted(spec_N)}, got {depth_only_width}")
    jobs = width_spectrum_jobs(lam, omega, spec_N, n_draws=[1 if N == D else n_draws for N in spec_N], rng=rng)
    results = map_configs(width_spectrum_job, jobs, workers, cost=lambda j: j.n_draws * j.N**2, label="width spectra")
    specs = dict(zip(spec_N, results))
    by_width = {N: width_gradient_flow(specs[N], L_fixed, t) for N in widths}
    depth_bn = rrs_optimum(lam, omega, L_fixed)[1]
    by_depth = {L: width_gradient_flow(specs[N_fixed], L, t) for L in depths}
    joint = {(N, L): width_gradient_flow(specs[N], L, t) for N, L in pairs}
    width_only = {(N, width_only_depth): width_gradient_flow(specs[N], width_only_depth, t) for N, _ in pairs}
    depth_only = {(depth_only_width, L): width_gradient_flow(specs[depth_only_width], L, t) for _, L in pairs}
    fa = np.array([by_width[N].loss[-1] for N in widths])
    fa_se = np.array([width_loss_se(by_width[N].gamma[-1], specs[N], L_fixed) for N in widths])
    fb = np.array([width_min_loss(specs[N_fixed], L)[1] for L in depths])
    fb_draws = np.array([width_loss_draws(width_min_loss(specs[N_fixed], L)[0], specs[N_fixed], L) for L in depths])
    fc = np.array([joint[p].loss[-1] for p in pairs])
    fc_se = np.array([width_loss_se(joint[(N, L)].gamma[-1], specs[N], L) for N, L in pairs])
    return WidthDepthCurves(
        t=t,
        specs=specs,
        by_width=by_width,
        by_depth=by_depth,
        joint=joint,
        width_only=width_only,
        depth_only=depth_only,
        depth_bn=depth_bn,
        width_bn_mc=specs[N_fixed].null_loss,
        width_bn_de=width_bottleneck(lam, omega, N_fixed),
        width_bn_paper=width_bottleneck_paper(lam, omega, N_fixed),
        widths=np.array(widths),
        depths=np.array(depths),
        width_sweep=ResourceSweep(fa, fa_se, increment_z_scores(fa, fa_se)),
        depth_sweep=ResourceSweep(fb, standard_error(fb_draws, axis=1), paired_increment_z_scores(fb_draws)),
        joint_sweep=ResourceSweep(fc, fc_se, increment_z_scores(fc, fc_se)),
        depth_bn_width_only=rrs_optimum(lam, omega, width_only_depth)[1],
        width_bn_depth_only=specs[depth_only_width].null_loss,
        L_fixed=L_fixed,
        N_fixed=N_fixed,
        width_only_depth=width_only_depth,
        depth_only_width=depth_only_width,
    )


# --------------------------------------------------------------------------------------------
# Figure 5 (d): SGD of the width model against its flow
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WidthSGDComparison:
    """SGD of the width model against its gradient flow, per width (:func:`width_sgd_comparison`).

    Attributes
    ----------
    t : ndarray, shape (steps + 1,)
    runs : dict ``N -> (TrainResult, GradientFlow, ndarray)``: the SGD run, the flow and the expected
        dynamics in the SGD's discrete steps (:func:`iclcore.dmft.width_mc.width_sgd_run`)
    max_rel_err : dict ``N -> float``, ``max_t |γ_SGD − γ_flow| / γ_flow`` over ``t >= t_max / 10``
    bias_z : dict ``N -> float``, ``(|mean relative bias| − discretisation) / SE`` (batch means, 10 blocks)
    bias_se : dict ``N -> float``, that SE
    """

    t: np.ndarray
    runs: dict[int, tuple[TrainResult, GradientFlow, np.ndarray]]
    max_rel_err: dict[int, float]
    bias_z: dict[int, float]
    bias_se: dict[int, float]

    def metrics(self) -> dict[str, float]:
        """The book's metrics of Figure 5 (d)."""
        return {
            "fig5d_sgd_gamma_max_rel_err": max(self.max_rel_err.values()),
            "fig5d_gamma_late_bias_max_z": float(max(self.bias_z.values())),
            "fig5d_gamma_late_bias_se_max": float(max(self.bias_se.values())),
        }


def width_sgd_comparison(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    widths: Sequence[int],
    L: int,
    B: int,
    eta: float,
    steps: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> WidthSGDComparison:
    """SGD of the tied width-``N`` model on population contexts against its flow (Figure 5d).

    One :class:`iclcore.dmft.width_mc.WidthSGDRun` per width (frame seed ``seed + N``, torch seed
    ``seed + 100 + N``, theory seed ``seed + 7``), tasks of :func:`iclcore.parallel.map_configs`. Over
    ``t >= t_max / 10`` the relative residual ``γ_SGD / γ_flow − 1`` has its mean and batch-means SE (10
    blocks); the error model subtracts the mean absolute relative difference of the discrete expected
    dynamics from the flow before dividing by the SE.

    Returns
    -------
    WidthSGDComparison
    """
    t = eta * np.arange(steps + 1)
    jobs = [
        WidthSGDRun(tuple(lam), tuple(omega), N, L, B, eta, steps, frame_seed=seed + N, train_seed=seed + 100 + N,
                    theory_seed=seed + 7, device=device)
        for N in widths
    ]  # fmt: skip
    runs = dict(zip(widths, map_configs(width_sgd_run, jobs, workers, cost=lambda r: r.N, label="width SGD runs")))
    late = slice(steps // 10, None)
    err, z, se = {}, {}, {}
    for N, (res, th, g_disc) in runs.items():
        err[N] = np.max(np.abs(res.gamma[late, 0] - th.gamma[late]) / th.gamma[late])
        bias, se[N] = batch_means(res.gamma[late, 0] / th.gamma[late] - 1, 10)
        disc = float(np.mean(np.abs(g_disc[late] / th.gamma[late] - 1)))
        z[N] = (abs(bias) - disc) / se[N]
    return WidthSGDComparison(t, runs, err, z, se)


def eta_batch_configs(eta: float, B: int) -> list[tuple[float, int]]:
    """The five ``(η, B)`` of the Figure-5d sweep: ``B/4, B, 4B`` at ``η``, then ``η/2, η/4`` at ``B/4``.

    Examples
    --------
    >>> eta_batch_configs(0.5, 32)
    [(0.5, 8), (0.5, 32), (0.5, 128), (0.25, 8), (0.125, 8)]
    """
    return [(eta, max(1, B // 4)), (eta, B), (eta, 4 * B), (eta / 2, max(1, B // 4)), (eta / 4, max(1, B // 4))]


def width_noise_sweep(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    N: int,
    L: int,
    configs: Sequence[tuple[float, int]],
    seeds: int,
    horizon: float,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> NoiseScaling:
    """Late bias of the width-``N`` model's SGD against its flow over ``(η, B)`` (Figure 5d, App. C.1).

    :func:`iclcore.dmft.sgd_sweep.late_bias_sweep` of tied width-``N`` runs (run ``r``: torch seed
    ``seed + 1000 (r + 1) + 100 + N``, frame seed ``seed + 1000 (r + 1) + N``) against the flow on a spectrum
    of 2000 projections (generator ``seed + 7``); the noise scale is ``x = η/B``. A diverging run raises
    :class:`FloatingPointError`.

    Returns
    -------
    NoiseScaling
    """
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(seed + 7), n_draws=2000)

    def task(eta_k: float, B_k: int, n_k: int, r: int) -> ReducedSGDTask:
        return ReducedSGDTask(
            tuple(lam), tuple(omega), L, True, N, eta_k, B_k, n_k, train_seed=seed + 1000 * (r + 1) + 100 + N,
            frame_seed=seed + 1000 * (r + 1) + N, device=device,
        )  # fmt: skip

    points = late_bias_sweep(
        configs,
        task,
        seeds,
        horizon=horizon,
        flow=lambda tt: width_gradient_flow(spec, L, tt).gamma,
        grad=lambda g: width_loss_grad(g, spec, L),
        workers=workers,
    )
    return noise_scaling(points, [e / b for e, b in configs])


def eta_batch_bias_metrics(sweep: NoiseScaling, *, B: int, N: int) -> dict[str, float]:
    """The book's metrics of the Figure-5d sweep over :func:`eta_batch_configs` (five points).

    Fitted exponents of ``bias ∝ (η/B)^p`` over all points, the batch sweep (points 0-2) and the step sweep
    (points 0, 3, 4); the net biases at the small, quick and large batch; and the collapse of points 4
    and 1, which share ``η/B``, in units of their standard errors in quadrature.
    """
    if sweep.x.shape != (5,):
        raise ValueError(f"sweep: expected the five points of eta_batch_configs, got {sweep.x.size}")
    out = {}
    for name, idx in (("noise", None), ("batch", [0, 1, 2]), ("eta", [0, 3, 4])):
        _, out[f"fig5d_bias_{name}_exponent"], out[f"fig5d_bias_{name}_exponent_se"] = sweep.power_fit(idx)
    large = int(np.argmin(sweep.x))
    for name, i in (("large", large), ("quick", 1), ("small", 0)):
        out[f"fig5d_bias_{name}_batch"], out[f"fig5d_bias_{name}_batch_se"] = sweep.bias[i], sweep.se[i]
    return out | {
        "fig5d_bias_large_batch_z": sweep.z(large),
        "fig5d_bias_large_batch_B": 4 * B,
        "fig5d_bias_sweep_N": N,
        "fig5d_bias_collapse_z": sweep.collapse_z(4, 1),
    }


# --------------------------------------------------------------------------------------------
# Figure 5 (d): independent runs per width
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WidthLateBias:
    """The late bias of ``γ`` against the flow per width, over independent SGD runs (:func:`width_late_bias_runs`).

    Attributes
    ----------
    widths : ndarray of int, shape (k,)
    runs : ndarray, shape (k, seeds)
        Each run's late relative bias of ``γ`` (mean over ``t >= t_max / 10``), before subtracting ``disc``;
        NaN where the run diverged.
    disc : ndarray, shape (k,)
        The signed discretisation bias (the expected dynamics in the SGD's discrete steps against the flow).
    """

    widths: np.ndarray
    runs: np.ndarray
    disc: np.ndarray

    @property
    def diverged(self) -> np.ndarray:
        """Diverged runs per width, shape (k,)."""
        return np.sum(~np.isfinite(self.runs), axis=1)

    @property
    def bias(self) -> np.ndarray:
        """Mean late relative bias over the runs that did not diverge, net of ``disc``, shape (k,)."""
        return np.array([np.mean(r[np.isfinite(r)]) for r in self.runs]) - self.disc

    @property
    def se(self) -> np.ndarray:
        """Standard error of :attr:`bias` over the runs that did not diverge (NaN with fewer than 2), shape (k,)."""
        return np.array([standard_error(r[np.isfinite(r)]) if np.isfinite(r).sum() >= 2 else np.nan for r in self.runs])

    @property
    def z(self) -> np.ndarray:
        """``|bias| / se`` per width, shape (k,)."""
        return np.abs(self.bias) / self.se

    def metrics(self) -> dict[str, float]:
        """The book's metrics: the largest ``z`` and SE over the widths with two runs or more, the runs per
        width and the number of diverged runs over all widths."""
        ok = np.isfinite(self.se)
        return {
            "fig5d_gamma_late_bias_runs_max_z": float(np.max(self.z[ok])) if ok.any() else 0.0,
            "fig5d_gamma_late_bias_runs_se_max": float(np.max(self.se[ok])) if ok.any() else 0.0,
            "fig5d_gamma_late_bias_runs_n": int(self.runs.shape[1]),
            "fig5d_gamma_late_bias_runs_diverged": int(self.diverged.sum()),
        }


def sgd_gamma_path_or_nan(task: ReducedSGDTask) -> np.ndarray:
    """:func:`iclcore.dmft.sgd_sweep.reduced_sgd_gamma_path`, or NaNs (shape ``(steps + 1,)``) where it diverged."""
    try:
        return reduced_sgd_gamma_path(task)
    except FloatingPointError:
        return np.full(task.steps + 1, np.nan)


def width_late_bias_runs(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    widths: Sequence[int],
    L: int,
    eta: float,
    B: int,
    steps: int,
    seeds: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> WidthLateBias:
    """Late bias of ``γ(t)`` of the width-``N`` SGD against its flow, per width, over ``seeds`` independent runs.

    The statistic of Figure 5(d) (§4, Eq. 14: ``γ(t)`` follows the scalar flow ``dγ/dt = -½ L'(γ)``) with the
    standard error over independent runs in place of batch means along one run: each run draws its own Haar
    frame and batches, so the SE contains the spread between runs and between frames. The runs, the flow
    (2000 projections, generator ``seed + 7``), the late window ``t >= t_max / 10`` and the signed
    discretisation bias are those of :func:`width_noise_sweep` (run ``r``: torch seed
    ``seed + 1000 (r + 1) + 100 + N``, frame seed ``seed + 1000 (r + 1) + N``), so at the sweep's width and
    ``(η, B)`` the point is the sweep's. A diverging run is recorded as NaN, not raised.

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
    widths : sequence of int, each ``<= D``
    L, B, steps : int; eta : float (``t = η · steps``)
    seeds : int >= 2, runs per width
    seed : int; device : str; workers : int

    Returns
    -------
    WidthLateBias
    """
    if len(widths) == 0:
        raise ValueError("widths: expected at least one width")
    seeds = positive_int(seeds, "seeds", minimum=2)
    steps = positive_int(steps, "steps", minimum=10)
    tasks = [
        ReducedSGDTask(
            tuple(lam), tuple(omega), L, True, N, eta, B, steps, train_seed=seed + 1000 * (r + 1) + 100 + N,
            frame_seed=seed + 1000 * (r + 1) + N, device=device,
        )
        for N in widths for r in range(seeds)
    ]  # fmt: skip
    paths = map_configs(sgd_gamma_path_or_nan, tasks, workers, cost=lambda t: t.N, label="width SGD replicas")
    t = eta * np.arange(steps + 1)
    late = slice(int(steps * 0.1 + 1e-9), None)
    runs, disc = np.empty((len(widths), seeds)), np.empty(len(widths))
    for i, N in enumerate(widths):
        spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(seed + 7), n_draws=2000)
        th = width_gradient_flow(spec, L, t).gamma
        disc[i] = np.mean(
            scalar_descent_path(lambda g: width_loss_grad(g, spec, L), 0.5 * eta, steps)[late] / th[late] - 1
        )
        with np.errstate(invalid="ignore"):
            runs[i] = [np.mean(p[late] / th[late] - 1) for p in paths[i * seeds : (i + 1) * seeds]]
    return WidthLateBias(np.array(widths, dtype=int), runs, disc)


# --------------------------------------------------------------------------------------------
# Deterministic equivalents against Monte Carlo (Eq. 15, App. A)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnePointCheck:
    """The one-point deterministic equivalent of the width model at ``P = ∞`` against Monte Carlo, at one width.

    Attributes
    ----------
    N : int
    spectrum : WidthSpectrum
        Six pooled projections (the Monte Carlo curve).
    g_star : float
        Its minimiser.
    gammas : ndarray, shape (6,)
        ``(0.1, ..., 1) γ*``.
    de, two_point : ndarray, shapes (6,) and (3,)
        :func:`iclcore.dmft.width_de.width_loss_de` at ``gammas`` and the two-point formula at ``gammas[::2]``.
    edge_de : float
        The one-point equivalent at ``1.25 γ*``, beyond the minimiser.
    max_rel, two_point_rel, edge_rel : float
        ``max |DE / MC − 1|``, ``max |two-point / one-point − 1|``, ``|DE / MC − 1|`` at ``1.25 γ*``.
    agreement : MonteCarloAgreement
        The DE against six independent single projections, discretisation ``1/N``.
    """

    N: int
    spectrum: WidthSpectrum
    g_star: float
    gammas: np.ndarray
    de: np.ndarray
    two_point: np.ndarray
    edge_de: float
    max_rel: float
    two_point_rel: float
    edge_rel: float
    agreement: MonteCarloAgreement


@dataclass(frozen=True)
class TwoPointCheck:
    """The two-point deterministic equivalent at finite context ``α = P/D``, ``N = D``, against Monte Carlo.

    Attributes
    ----------
    alpha : float
    gammas : ndarray, shape (n,)
        The Monte Carlo grid; the equivalents are at ``gammas[::8]``.
    mc : ndarray, shape (n,)
        Mean of six Monte Carlo landscapes.
    de, paper : ndarray, shape (ceil(n / 8),)
        The corrected equivalent and the one with the relation printed after Eq. 39.
    max_rel, paper_ratio_min : float
        ``max |DE / MC − 1|`` and ``min paper / MC``.
    agreement : MonteCarloAgreement
        The DE against the six landscapes, discretisation ``1/D``.
    """

    alpha: float
    gammas: np.ndarray
    mc: np.ndarray
    de: np.ndarray
    paper: np.ndarray
    max_rel: float
    paper_ratio_min: float
    agreement: MonteCarloAgreement


@dataclass(frozen=True)
class DeterministicEquivalentChecks:
    """Result of :func:`deterministic_equivalent_checks`: one check per width and per ``α``, at dimension ``D``."""

    one_point: list[OnePointCheck]
    two_point: list[TwoPointCheck]
    D: int

    def metrics(self) -> dict[str, float]:
        """The book's metrics of the deterministic-equivalent checks."""
        op, tp = self.one_point, self.two_point
        return {
            "de_one_point_vs_mc_max_rel": max(c.max_rel for c in op),
            "de_one_point_vs_mc_max_excess_z": float(max(c.agreement.max_excess_z for c in op)),
            "de_one_point_mc_rel_se_max": float(max(c.agreement.max_rel_se for c in op)),
            "de_one_point_vs_mc_edge_rel": max(c.edge_rel for c in op),
            "two_point_vs_one_point_max_rel": max(c.two_point_rel for c in op),
            "two_point_wishart_vs_mc_max_rel": max(c.max_rel for c in tp),
            "paper_relation_over_mc_min_ratio": min(c.paper_ratio_min for c in tp),
            "two_point_max_excess_z": float(max(c.agreement.max_excess_z for c in tp)),
            "two_point_mc_rel_se_max": float(max(c.agreement.max_rel_se for c in tp)),
            "two_point_N_min": self.D,
        }


def deterministic_equivalent_checks(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    widths: Sequence[int],
    alphas: Sequence[float],
    L: int,
    n_nodes: int,
    rng: np.random.Generator,
    workers: int = 1,
) -> DeterministicEquivalentChecks:
    """One-point (``P = ∞``) and two-point (finite ``α``) deterministic equivalents against Monte Carlo (Eq. 15, App. A).

    The Monte Carlo draws from ``rng`` in this order: per width a 6-projection spectrum and 6 single ones;
    per ``α`` six landscapes (:func:`iclcore.dmft.width_mc.width_landscape_jobs`, ``N = D``, on
    ``linspace(0.1, 1.8 L, 40)``) and one context ``Z`` (``αD x D``, which sets the contour's reach). The
    draws are independent tasks of :func:`iclcore.parallel.map_configs`; ``rng`` is advanced past them.
    The one-point equivalent (:func:`iclcore.dmft.width_de.width_loss_de`, contour reach ``1.2`` times the
    top Monte Carlo eigenvalue) must agree with the two-point formula of a free product with the
    projection's two-atom law; at finite ``α`` the two-point formula takes the Marchenko–Pastur quadrature
    of :func:`iclcore.spectra.mp.mp_quadrature` (80 nodes), with the corrected relation and with the one
    printed after Eq. 39 (``paper_typo=True``).

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
    widths : sequence of int, ``< D``
    alphas : sequence of float, context lengths ``P = int(α D)``
    L : int
        Depth.
    n_nodes : int
        Contour nodes of the one-point equivalent (the two-point one uses ``max(n_nodes // 2, 100)``).
    rng : numpy.random.Generator
    workers : int

    Returns
    -------
    DeterministicEquivalentChecks
    """
    D = len(lam)
    grid_b = np.linspace(0.1, 2.0 * L * 0.9, 40)
    spec_jobs = width_spectrum_jobs(
        lam, omega, [N for N in widths for _ in range(7)], n_draws=[6, 1, 1, 1, 1, 1, 1] * len(widths), rng=rng
    )
    land_jobs, Z = [], {}
    for alpha in alphas:
        land_jobs += width_landscape_jobs(grid_b, lam, omega, N=D, L=L, rng=rng, P=int(alpha * D), n_draws=1, repeats=6)
        Z[alpha] = rng.standard_normal((int(alpha * D), D)) * np.sqrt(lam)
    specs = map_configs(
        width_spectrum_job, spec_jobs, workers, cost=lambda j: j.n_draws * j.N**2,
        label="deterministic-equivalent spectra",
    )  # fmt: skip
    lands = map_configs(width_landscape_job, land_jobs, workers, cost=lambda j: j.P, label="finite-context landscapes")
    n_half = max(n_nodes // 2, 100)
    one_point = []
    for i, N in enumerate(widths):
        sp = specs[7 * i]
        g_star, _ = width_min_loss(sp, L)
        gp = np.linspace(0.1, 1.0, 6) * g_star  # up to the minimiser; beyond it the top outlier mode dominates
        kmax = 1.2 * sp.s.max()
        de = width_loss_de(gp, lam, omega, N=N, L=L, k_max=kmax, n_nodes=n_nodes)
        tp = two_point_loss_de(
            gp[::2],
            lam,
            np.array([0.0, D / N]),
            b_weights=np.array([1 - N / D, N / D]),
            C=omega,
            T=lam,
            L=L,
            k_max=kmax,
            n_nodes=n_half,
        )
        draws = np.array([width_loss(gp, specs[7 * i + 1 + k], L) for k in range(6)])
        de_edge = width_loss_de([1.25 * g_star], lam, omega, N=N, L=L, k_max=kmax, n_nodes=n_nodes)[0]
        one_point.append(
            OnePointCheck(
                N, sp, g_star, gp, de, tp, de_edge,
                max_rel=np.max(np.abs(de / width_loss(gp, sp, L) - 1)),
                two_point_rel=np.max(np.abs(tp / de[::2] - 1)),
                edge_rel=abs(de_edge / width_loss(1.25 * g_star, sp, L) - 1),
                agreement=monte_carlo_agreement(de, draws, 1.0 / N),
            )
        )  # fmt: skip
    two_point = []
    for i, alpha in enumerate(alphas):
        P = int(alpha * D)
        mc_runs = np.array([lands[6 * i + k][0] for k in range(6)])
        mc = mc_runs.mean(0)
        kmax = 1.3 * np.linalg.eigvalsh(Z[alpha].T @ Z[alpha] / P).max()
        gp = grid_b[::8]
        bn, bw = mp_quadrature(1 / alpha, 80)
        de = two_point_loss_de(gp, lam, bn, b_weights=bw, C=np.ones(D), T=omega * lam, L=L, k_max=kmax, n_nodes=n_half)
        ty = two_point_loss_de(
            gp, lam, bn, b_weights=bw, C=np.ones(D), T=omega * lam, L=L, k_max=kmax, n_nodes=n_half, paper_typo=True
        )
        two_point.append(
            TwoPointCheck(
                alpha, grid_b, mc, de, ty,
                max_rel=np.max(np.abs(de / mc[::8] - 1)),
                paper_ratio_min=np.min(ty / mc[::8]),
                agreement=monte_carlo_agreement(de, mc_runs[:, ::8], 1.0 / D),
            )
        )  # fmt: skip
    return DeterministicEquivalentChecks(one_point, two_point, D)


@dataclass(frozen=True)
class OnePointAgainstDraws:
    """The one-point deterministic equivalents of :func:`deterministic_equivalent_checks` against more independent
    projections (:func:`one_point_against_draws`).

    Attributes
    ----------
    widths : ndarray of int, shape (k,)
    agreement : list of MonteCarloAgreement, length k
        Per width, the equivalent on the check's grid against ``n_draws`` single projections, discretisation ``1/N``.
    n_draws : int
    """

    widths: np.ndarray
    agreement: list[MonteCarloAgreement]
    n_draws: int

    def metrics(self) -> dict[str, float]:
        """The book's metrics: the largest excess ``z``, relative difference and relative SE, and the draws."""
        return {
            "de_one_point_draws_max_excess_z": float(max(a.max_excess_z for a in self.agreement)),
            "de_one_point_draws_max_rel": float(max(a.max_rel for a in self.agreement)),
            "de_one_point_draws_rel_se_max": float(max(a.max_rel_se for a in self.agreement)),
            "de_one_point_draws_n": self.n_draws,
        }


def one_point_against_draws(
    checks: DeterministicEquivalentChecks,
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    L: int,
    n_draws: int,
    rng: np.random.Generator,
    workers: int = 1,
) -> OnePointAgainstDraws:
    """The one-point deterministic equivalent (Result 7, Eqs. 15-16 at ``P = ∞``) against ``n_draws`` new projections.

    For each width of ``checks.one_point``, the equivalent already computed on its grid (``γ`` up to the
    minimiser) is compared (:func:`iclcore.stats.monte_carlo_agreement`, discretisation ``1/N``) with the mean
    of ``n_draws`` independent single projections drawn from ``rng`` (one pooled job per width,
    :func:`iclcore.dmft.width_mc.width_loss_draws`), so that the Monte Carlo standard error rests on more draws
    than the check's six.

    Parameters
    ----------
    checks : DeterministicEquivalentChecks, computed on ``lam, omega`` (shape (D,)) at depth ``L``
    n_draws : int >= 4
    rng : numpy.random.Generator, advanced past the draws
    workers : int

    Returns
    -------
    OnePointAgainstDraws
    """
    n_draws = positive_int(n_draws, "n_draws", minimum=4)
    if len(lam) != checks.D:
        raise ValueError(f"lam: expected the checks' dimension D={checks.D}, got {len(lam)}")
    widths = [c.N for c in checks.one_point]
    jobs = width_spectrum_jobs(lam, omega, widths, n_draws=[n_draws] * len(widths), rng=rng)
    specs = map_configs(width_spectrum_job, jobs, workers, cost=lambda j: j.n_draws * j.N**2, label="one-point draws")
    agreement = [
        monte_carlo_agreement(c.de, width_loss_draws(c.gammas, sp, L), 1.0 / c.N)
        for c, sp in zip(checks.one_point, specs)
    ]
    return OnePointAgainstDraws(np.array(widths, dtype=int), agreement, n_draws)


# --------------------------------------------------------------------------------------------
# Bottleneck exponents at large D (Result 8, Eq. 113 corrected)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BottleneckExponents:
    """Exponents of the width and depth bottlenecks at one source exponent (:func:`bottleneck_exponents`).

    Attributes
    ----------
    beta : float
    widths, depths : ndarray
    width_bn, width_bn_paper : ndarray, shape (len(widths),)
        Corrected width bottleneck and Eq. (113) as printed.
    depth_bn : ndarray, shape (len(depths),)
        ``min_γ tr ΩΛ(I − γΛ/L)^{2L}``.
    width, width_paper, depth : float
        Log-log decay exponents.
    width_drift : float
        Drift of the width exponent between the halves of the widths.
    depth_err : float
        Drift of the depth exponent plus its change when ``D`` is cut to ``D/4``.
    """

    beta: float
    widths: np.ndarray
    depths: np.ndarray
    width_bn: np.ndarray
    width_bn_paper: np.ndarray
    depth_bn: np.ndarray
    width: float
    width_paper: float
    depth: float
    width_drift: float
    depth_err: float

    def metrics(self, paper: bool = False) -> dict[str, float]:
        """The book's metrics ``..._beta{β without the point}``; with ``paper`` the exponent of Eq. 113 as printed."""
        tag = f"beta{self.beta:g}".replace(".", "")
        out = {
            f"width_exponent_{tag}": self.width,
            f"depth_exponent_{tag}": self.depth,
            f"width_exponent_{tag}_drift": self.width_drift,
            f"depth_exponent_{tag}_drift": self.depth_err,
        }
        return out | ({f"width_exponent_paper_formula_{tag}": self.width_paper} if paper else {})


def bottleneck_exponents(
    *, D: int, nu: float, beta: float, widths: np.ndarray, depths: np.ndarray
) -> BottleneckExponents:
    """Decay exponents of the width bottleneck in ``N`` and the depth bottleneck in ``L`` (Result 8, App. F.2, F.4).

    On the power law of size ``D`` (:func:`iclcore.dmft.data.power_law_spectrum`): the corrected width
    bottleneck (:func:`iclcore.dmft.scaling.width_bottleneck`, exponent ``ν min(β, 1)``), Eq. (113) as printed
    (:func:`iclcore.dmft.scaling.width_bottleneck_paper`, ``νβ``) and the depth bottleneck
    (:func:`iclcore.dmft.rrs.rrs_optimum`, ``β``), fitted log-log (:func:`iclcore.stats.fit_power_law_exponent`).
    The error of the depth fit adds the change of the fit on the first ``D/4`` modes to its drift.

    Returns
    -------
    BottleneckExponents
    """
    la, om = power_law_spectrum(D, nu, beta)
    wb = np.array([width_bottleneck(la, om, int(n)) for n in widths])
    wp = np.array([width_bottleneck_paper(la, om, int(n)) for n in widths])
    db = np.array([rrs_optimum(la, om, int(L))[1] for L in depths])
    la4, om4 = power_law_spectrum(D // 4, nu, beta)
    db4 = np.array([rrs_optimum(la4, om4, int(L))[1] for L in depths])
    depth = fit_power_law_exponent(depths, db)
    return BottleneckExponents(
        beta, np.asarray(widths), np.asarray(depths), wb, wp, db,
        width=fit_power_law_exponent(widths, wb),
        width_paper=fit_power_law_exponent(widths, wp),
        depth=depth,
        width_drift=fit_power_law_drift(widths, wb),
        depth_err=fit_power_law_drift(depths, db) + abs(depth - fit_power_law_exponent(depths, db4)),
    )  # fmt: skip
