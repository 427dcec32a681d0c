"""Training regimes of the logistic-mode model compared with the paper's theory and the exact flow
(Mainali & Teixeira §3-§4, Figs. 1-4, and the null blocks ``p1``, ``q2``).

A regime is one spectrum ``s`` of the input covariance, one context length ``N`` and one SGD step size
``eta``. :func:`simulate_regime` trains the reduced model (``p1 = q2 = 0``) by online SGD on ``R``
independent data streams and integrates, on the same time grid, the paper's logistic solution (13)
(with the measured task variances ``c_alpha`` and with ``c = 1``) and the exact averaged flow of the
stated model (:func:`iclcore.logistic.exact.integrate_mode_flow`). The other functions compare them:

* :func:`fixed_point_comparison`: the end-of-training ``U^T p2 q1 U`` against ``[s_inf(S)]^{-1}`` and the
  exact fixed point (Fig. 1);
* :func:`trajectory_comparison`: ``a_alpha(t)``, the conserved ``C`` and the half-saturation times (Fig. 2);
* :func:`end_loss_comparison`, :func:`plateau_analysis`: the final loss against ``L(inf)`` (A114) and the
  cliffs of the loss (14) (Fig. 3);
* :func:`mode_probes`, :func:`extrema_count_scaling`: the curvature and marginalized-rank probes of §4
  against the per-mode times, their uniform-placement null and the finite-size check of their extrema
  counts (Fig. 4);
* :func:`fixed_point_checks`: Monte Carlo of the true loss at the paper's fixed point and the
  second-order step of ``C``;
* :func:`null_block_run`, :func:`null_block_metrics`: all four blocks trained (the null blocks ``p1``,
  ``q2`` as an initial condition);
* :func:`isotropic_fixed_point_deviation`: the exact fixed point at ``S = I`` against the ZFB formula.

Each result's ``metrics(...)`` gives the flat metric names of the notebook ``logistic_modes``.
Arrays: ``T`` log points, ``R`` replicas, ``d`` modes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from iclcore.logistic import exact, model, sgd, theory
from iclcore.logistic.probes import CurvatureProbes, curvature_probes, replica_sweep_extrema_counts
from iclcore.logistic.replicas import (
    FixedPointEstimate,
    crossing_time_standard_error,
    fixed_point_estimate,
    half_time_estimate,
    relative_rms,
)
from iclcore.models.probes import (
    marginalized_effective_rank,
    moving_average,
    nearest_event_offset,
    uniform_window_null_hits,
)
from iclcore.stats import fit_power_law, standard_error
from iclcore.validation import positive_float, positive_int

__all__ = [
    "NORM_CURVATURE_OFFSET",
    "max_relative_deviation",
    "RegimeRun",
    "simulate_regime",
    "FixedPointChecks",
    "fixed_point_checks",
    "FixedPointComparison",
    "fixed_point_comparison",
    "TrajectoryComparison",
    "trajectory_comparison",
    "EndLoss",
    "end_loss_comparison",
    "PlateauAnalysis",
    "plateau_analysis",
    "ModeProbes",
    "mode_probes",
    "ExtremaScaling",
    "extrema_count_scaling",
    "NullBlockRun",
    "null_block_run",
    "null_block_metrics",
    "isotropic_fixed_point_deviation",
]

#: on the logistic solution, ``d² sqrt(Σ a)/dt²`` peaks about this many timescales ``tau_alpha`` before
#: ``t_half,alpha`` and has a trough as far after it
NORM_CURVATURE_OFFSET = 0.66


def max_relative_deviation(x: ArrayLike, y: ArrayLike) -> float:
    """``max |x / y − 1|`` over all entries (broadcast).

    Examples
    --------
    >>> max_relative_deviation([1.0, 3.0], [1.0, 2.0])
    0.5
    """
    return float(np.max(np.abs(np.asarray(x) / np.asarray(y) - 1)))


@dataclass(frozen=True)
class RegimeRun:
    """One regime simulated and its two theories on the same grid (:func:`simulate_regime`).

    Attributes
    ----------
    s : ndarray, shape (d,)
        Spectrum of the input covariance.
    N, P : int
        Context length and number of tasks.
    eta, init_scale : float
        SGD step size; ``p2(0) = q1(0) = init_scale I``, so ``a_alpha(0) = a0 = init_scale²``.
    prob : LogisticProblem
    res : SGDResult
    a : ndarray, shape (T, R, d)
        Simulated ``a_alpha = diag(U^T p2 q1 U)``.
    t : ndarray, shape (T,)
        Log times (epochs).
    a_paper, a_paper1 : ndarray, shape (T, d)
        The logistic solution (13) with the measured ``c_alpha`` and with ``c = 1`` (the paper verbatim).
    p_exact, q_exact : ndarray, shape (T, d)
        The exact averaged flow; ``a_exact = p_exact q_exact``.
    seconds : float
        Wall time of the simulation and the theories.
    """

    s: np.ndarray
    N: int
    P: int
    eta: float
    init_scale: float
    prob: model.LogisticProblem
    res: sgd.SGDResult
    a: np.ndarray
    t: np.ndarray
    a_paper: np.ndarray
    a_paper1: np.ndarray
    p_exact: np.ndarray
    q_exact: np.ndarray
    seconds: float

    @property
    def a0(self) -> float:
        """``a_alpha(0) = init_scale²``."""
        return self.init_scale**2

    @property
    def a_exact(self) -> np.ndarray:
        """``a_alpha`` of the exact flow, shape (T, d)."""
        return self.p_exact * self.q_exact

    @property
    def d(self) -> int:
        """Number of modes."""
        return self.prob.d


def simulate_regime(
    s: ArrayLike,
    N: int,
    P: int,
    *,
    config: sgd.SGDConfig,
    rng: np.random.Generator,
) -> RegimeRun:
    """Online SGD of the reduced model on ``P`` antithetic tasks, with the paper's (13) and the exact flow.

    Draws the task set (:func:`iclcore.logistic.model.make_problem`, antithetic) and then the SGD
    streams (:func:`iclcore.logistic.sgd.run_sgd`) from ``rng``, in that order.

    Parameters
    ----------
    s : array_like, shape (d,)
        Spectrum of the input covariance.
    N, P : int
        Context length and number of tasks.
    config : SGDConfig
        Step size, batch, epochs, init scale, replicas and log interval.
    rng : numpy.random.Generator

    Returns
    -------
    RegimeRun
    """
    s = np.asarray(s, dtype=float)
    prob = model.make_problem(s, N, P, rng=rng, antithetic=True)
    t0 = time.time()
    res = sgd.run_sgd(prob, config, rng)
    mp = sgd.mode_products(res)
    t = res.t
    eta, init_scale = config.eta, config.init_scale
    a0 = init_scale**2
    a_paper = theory.logistic_solution(t, a0, s, N=N, eta=eta, P=P, c=prob.c)
    a_paper1 = theory.logistic_solution(t, a0, s, N=N, eta=eta, P=P)
    pe, qe = exact.integrate_mode_flow(t, init_scale, init_scale, s=s, N=N, eta=eta, P=P, theory="exact", c=prob.c)
    return RegimeRun(s, N, P, eta, init_scale, prob, res, mp["a"], t, a_paper, a_paper1, pe, qe, time.time() - t0)


@dataclass(frozen=True)
class FixedPointChecks:
    """Two identities at the paper's fixed point of one regime (:func:`fixed_point_checks`).

    Attributes
    ----------
    mc_loss, mc_se : float
        Monte Carlo loss of the true model (query column in ``Gamma_hat``) and its standard error.
    exact_loss, paper_loss : float
        The exact expected loss and the paper's (14) at the same point.
    dC_ratio : ndarray, shape (n_eta,)
        ``ΔC / eta²`` of one SGD step at each step size.
    dC_pred : float
        ``|g_p|² − |g_q|²``, the eta-independent prediction.
    """

    mc_loss: float
    mc_se: float
    exact_loss: float
    paper_loss: float
    dC_ratio: np.ndarray
    dC_pred: float

    def metrics(self) -> dict[str, float]:
        """The notebook's ``mc_C_*`` and ``dC_second_order_relerr`` metrics."""
        m, se = self.mc_loss, self.mc_se
        return {
            "mc_C_loss": m,
            "mc_C_se": se,
            "mc_C_exact": self.exact_loss,
            "mc_C_paper": self.paper_loss,
            "mc_C_exact_z": abs(m - self.exact_loss) / se,
            "mc_C_paper_z": abs(m - self.paper_loss) / se,
            "dC_second_order_relerr": float(np.max(np.abs(self.dC_ratio / self.dC_pred - 1))),
        }


def fixed_point_checks(
    run: RegimeRun,
    *,
    B: int,
    n_contexts: int,
    etas: ArrayLike,
    rng_loss: np.random.Generator,
    rng_step: np.random.Generator,
) -> FixedPointChecks:
    """Monte Carlo loss at the paper's fixed point ``p = q = (1/s_inf)^{1/2}`` and the second-order step of ``C``.

    (i) :func:`iclcore.logistic.exact.monte_carlo_loss` with ``n_contexts`` contexts against
    :func:`iclcore.logistic.exact.exact_mode_loss` and the paper's (14); (ii) one SGD step with ``B``
    contexts changes ``C`` by exactly ``eta² (|g_p|² − |g_q|²)``
    (:func:`iclcore.logistic.model.conserved_quantity_step_ratio`).
    """
    p_star = np.sqrt(theory.paper_fixed_point(run.s, run.N))
    pT_star, q_star = model.mode_blocks(run.prob, p_star)
    mc_mean, mc_se = exact.monte_carlo_loss(pT_star, q_star, run.prob, n_contexts=n_contexts, rng=rng_loss)
    mc_exact = float(exact.exact_mode_loss(p_star, p_star, run.s, N=run.N, c=run.prob.c))
    mc_paper = float(theory.paper_loss(p_star**2, run.s, run.N, c=run.prob.c))
    ratio, pred = model.conserved_quantity_step_ratio(
        pT_star, q_star, run.prob, batch=B, etas=tuple(etas), rng=rng_step
    )
    return FixedPointChecks(mc_mean, mc_se, mc_exact, mc_paper, np.asarray(ratio), float(pred))


@dataclass(frozen=True)
class FixedPointComparison:
    """Measured fixed point against the paper's and the exact one (:func:`fixed_point_comparison`).

    Attributes
    ----------
    estimate : FixedPointEstimate
        Tail and replica mean of ``U^T p2 q1 U`` (``matrix`` (d, d), ``diagonal`` (d,)).
    paper, exact : ndarray, shape (d,)
        ``[s_inf(S)]^{-1}`` and the exact fixed point of the stated model.
    """

    estimate: FixedPointEstimate
    paper: np.ndarray
    exact: np.ndarray

    def metrics(self, name: str) -> dict[str, float]:
        """The notebook's ``fp_<name>_*`` metrics."""
        sim = self.estimate.diagonal
        return {
            f"fp_{name}_sim_vs_paper_maxrel": max_relative_deviation(sim, self.paper),
            f"fp_{name}_sim_vs_exact_maxrel": max_relative_deviation(sim, self.exact),
            f"fp_{name}_exact_vs_paper_maxrel": max_relative_deviation(self.exact, self.paper),
            f"fp_{name}_offdiag_max": self.estimate.offdiag,
            f"fp_{name}_sim_se_rel_max": self.estimate.se_rel,
        }


def fixed_point_comparison(run: RegimeRun) -> FixedPointComparison:
    """The fixed point of Fig. 1: :func:`iclcore.logistic.replicas.fixed_point_estimate` of ``U^T p2 q1 U``
    (SE relative to the paper's ``1/s_inf``), the paper's ``1/s_inf`` and
    :func:`iclcore.logistic.exact.exact_fixed_point`."""
    blk = run.res.blocks_mode_basis()
    paper = theory.paper_fixed_point(run.s, run.N)
    fixed = exact.exact_fixed_point(run.s, run.N, run.prob.c)
    return FixedPointComparison(fixed_point_estimate(blk["p2"] @ blk["q1"], paper), paper, fixed)


@dataclass(frozen=True)
class TrajectoryComparison:
    """``a_alpha(t)``, the norms, ``C`` and the half times of one regime (:func:`trajectory_comparison`).

    Attributes
    ----------
    p_norm2, q_norm2, C : ndarray, shape (T, R)
        ``‖p2‖_F²``, ``‖q1‖_F²`` and ``C = ‖p2‖_F² − ‖q1‖_F²`` of the simulation.
    C_flow : float
        Largest ``|C(t)|`` along the exact flow and the paper's flow (both conserve ``C = 0``).
    rms_exact, rms_paper, rms_paper1 : float
        RMS of ``(mean_R a − theory) / a_exact(end)`` against the exact flow, (13) with ``c_alpha`` and with
        ``c = 1``; ``rms_se``: the same of the replica standard error.
    th_sim : ndarray, shape (d,)
        Measured half-saturation times; ``th_inc_se``: SE of their smallest increment.
    th_exact, th_paper, th_paper1 : ndarray, shape (d,)
        Half times of the exact flow and of (13) with ``c_alpha`` and with ``c = 1``.
    pq_split_exact : float
        ``max |p_alpha − q_alpha|`` of the exact flow at the end.
    """

    p_norm2: np.ndarray
    q_norm2: np.ndarray
    C: np.ndarray
    C_flow: float
    rms_exact: float
    rms_paper: float
    rms_paper1: float
    rms_se: float
    th_sim: np.ndarray
    th_inc_se: float
    th_exact: np.ndarray
    th_paper: np.ndarray
    th_paper1: np.ndarray
    pq_split_exact: float

    def metrics(self, name: str) -> dict[str, float]:
        """The notebook's ``traj_``, ``thalf_``, ``C_`` and ``pq_split_exact_`` metrics of regime ``name``."""
        C_end, norm_end = float(self.C[-1].mean()), float(self.p_norm2[-1].mean())
        return {
            f"traj_{name}_rms_vs_exact": self.rms_exact,
            f"traj_{name}_rms_vs_paper": self.rms_paper,
            f"traj_{name}_rms_vs_paper_c1": self.rms_paper1,
            f"thalf_{name}_sim_vs_paper_maxrel": max_relative_deviation(self.th_sim, self.th_paper),
            f"thalf_{name}_sim_vs_paper_c1_maxrel": max_relative_deviation(self.th_sim, self.th_paper1),
            f"thalf_{name}_sim_vs_exact_maxrel": max_relative_deviation(self.th_sim, self.th_exact),
            f"C_{name}_end_over_norm": abs(C_end) / norm_end,
            f"C_{name}_end": C_end,
            f"C_{name}_end_se": float(standard_error(self.C[-1])),
            f"C_flow_max_abs_{name}": self.C_flow,
            f"traj_{name}_rms_se": self.rms_se,
            f"thalf_{name}_min_increment": float(np.min(np.diff(self.th_sim))),
            f"thalf_{name}_min_increment_se": self.th_inc_se,
            f"pq_split_exact_{name}": self.pq_split_exact,
        }


def trajectory_comparison(run: RegimeRun) -> TrajectoryComparison:
    """Fig. 2: the simulated ``a_alpha(t)`` against both theories, the conserved ``C`` and the half times.

    ``C`` of the paper's ODEs (9)-(10) and of the exact flow (both invariant under ``p → c p``,
    ``q → q / c``) is integrated from ``p = q``; half times: :func:`iclcore.logistic.replicas.half_time_estimate`
    (simulation), :func:`iclcore.logistic.exact.crossing_times` (exact flow), :func:`iclcore.logistic.theory.half_time`.
    """
    t, a, d = run.t, run.a, run.d
    pn = np.sum(run.res.pT[..., :, d:] ** 2, axis=(-2, -1))
    qn = np.sum(run.res.q[..., :d, :] ** 2, axis=(-2, -1))
    C = model.conserved_quantity(run.res.pT, run.res.q)
    p_pap, q_pap = exact.integrate_mode_flow(
        t, run.init_scale, run.init_scale, s=run.s, N=run.N, eta=run.eta, P=run.P, theory="paper", c=run.prob.c
    )
    C_flow = max(
        float(np.max(np.abs(np.sum(pp**2, 1) - np.sum(qq**2, 1))))
        for pp, qq in ((run.p_exact, run.q_exact), (p_pap, q_pap))
    )
    a_mean = a.mean(1)
    scale = run.a_exact[-1]
    th = half_time_estimate(t, a)
    return TrajectoryComparison(
        p_norm2=pn,
        q_norm2=qn,
        C=C,
        C_flow=C_flow,
        rms_exact=relative_rms(a_mean, run.a_exact, scale),
        rms_paper=relative_rms(a_mean, run.a_paper, scale),
        rms_paper1=relative_rms(a_mean, run.a_paper1, scale),
        rms_se=relative_rms(standard_error(a, axis=1), 0.0, scale),
        th_sim=th.times,
        th_inc_se=th.min_increment_se,
        th_exact=exact.crossing_times(t, run.a_exact, run.a_exact[-1] / 2),
        th_paper=theory.half_time(run.a0, run.s, run.N, eta=run.eta, P=run.P, c=run.prob.c),
        th_paper1=theory.half_time(run.a0, run.s, run.N, eta=run.eta, P=run.P),
        pq_split_exact=float(np.max(np.abs(run.p_exact[-1] - run.q_exact[-1]))),
    )


@dataclass(frozen=True)
class EndLoss:
    """The final loss of one regime against the theories' minima (:func:`end_loss_comparison`).

    Attributes
    ----------
    sim, sim_se : float
        Mean SGD loss over the window and its standard error over replicas.
    paper_inf : float
        The paper's ``L(inf)`` (A114, ``c = 1``); ``paper_inf_c``: (14) at ``1/s_inf`` with the measured ``c``.
    exact_min : float
        The exact expected loss at the exact fixed point.
    """

    sim: float
    sim_se: float
    paper_inf: float
    paper_inf_c: float
    exact_min: float

    def metrics(self, name: str) -> dict[str, float]:
        """The notebook's ``loss_<name>_*`` metrics."""
        return {
            f"loss_{name}_sim_end": self.sim,
            f"loss_{name}_sim_end_se": self.sim_se,
            f"loss_{name}_paper_Linf": self.paper_inf,
            f"loss_{name}_paper_Linf_c": self.paper_inf_c,
            f"loss_{name}_exact_min": self.exact_min,
            f"loss_{name}_sim_vs_paper_rel": abs(self.sim / self.paper_inf_c - 1),
            f"loss_{name}_sim_vs_paper_verbatim_rel": abs(self.sim / self.paper_inf - 1),
            f"loss_{name}_sim_vs_exact_rel": abs(self.sim / self.exact_min - 1),
        }


def end_loss_comparison(run: RegimeRun, window: slice) -> EndLoss:
    """The SGD loss averaged over the log points ``window`` (and the replicas) against ``L(inf)`` (A114),
    (14) at the paper's fixed point and :func:`iclcore.logistic.exact.exact_fixed_point_loss`."""
    if not isinstance(window, slice):
        raise ValueError(f"window: expected a slice of log points, got {window!r}")
    s, N, c = run.s, run.N, run.prob.c
    return EndLoss(
        sim=float(run.res.loss[window].mean()),
        sim_se=float(standard_error(run.res.loss_replicas[window].mean(0))),
        paper_inf=theory.paper_loss_infinity(s, N),
        paper_inf_c=float(theory.paper_loss(theory.paper_fixed_point(s, N), s, N, c=c)),
        exact_min=exact.exact_fixed_point_loss(s, N, c),
    )


@dataclass(frozen=True)
class PlateauAnalysis:
    """Loss plateaus and cliffs of one regime (:func:`plateau_analysis`, Fig. 3).

    Attributes
    ----------
    L_paper, L_exact : ndarray, shape (T,)
        (14) on the logistic solution with the measured ``c``, and the exact loss along the exact flow.
    t_epoch, L_epoch : ndarray, shape (T',)
        Per-epoch moving mean of the SGD loss (A93) and its centred times.
    Linf_paper, Linf_exact : float
        The paper's ``L(inf)`` (A114) and the exact minimum.
    t_cliff, tau : ndarray, shape (d,)
        Predicted cliff times and timescales of (13).
    cliff_offset, cliff_se : ndarray, shape (d,)
        ``|t_cliff,sim − t_cliff| / tau`` (crossing of a third of ``1/s_inf`` by the replica mean) and the
        replica SE of the crossing time over ``tau``.
    n_learned : int
        Modes whose replica mean reaches half of ``1/s_inf``.
    curvature : ndarray, shape (d,)
        ``max_t |d²L_alpha/dt²|`` of each mode's share of (14) (the other modes held at their start).
    """

    L_paper: np.ndarray
    L_exact: np.ndarray
    t_epoch: np.ndarray
    L_epoch: np.ndarray
    Linf_paper: float
    Linf_exact: float
    t_cliff: np.ndarray
    tau: np.ndarray
    cliff_offset: np.ndarray
    cliff_se: np.ndarray
    n_learned: int
    curvature: np.ndarray

    def metrics(self, name: str) -> dict[str, float]:
        """The notebook's ``cliff_<name>_*`` and ``probe_<name>_curvature_ratio`` metrics."""
        curv = list(self.curvature)
        return {
            f"probe_{name}_curvature_ratio": max(curv) / min(curv),
            f"cliff_{name}_n_learned": self.n_learned,
            f"cliff_{name}_max_offset_tau": float(np.max(self.cliff_offset)),
            f"cliff_{name}_time_se_over_tau_max": float(np.nanmax(self.cliff_se)),
        }


def plateau_analysis(run: RegimeRun) -> PlateauAnalysis:
    """Fig. 3: the loss (14) and the exact loss, the per-epoch SGD loss, and the measured cliffs against
    :func:`iclcore.logistic.theory.cliff_time` in units of :func:`iclcore.logistic.theory.timescales`."""
    t, s, N, c = run.t, run.s, run.N, run.prob.c
    tau = theory.timescales(s, run.eta, run.P, c=c)
    per_epoch = int(round(1 / (t[1] - t[0])))
    L_ep = moving_average(run.res.loss[1:], per_epoch)
    t_ep = t[1 : 1 + L_ep.size] + (per_epoch - 1) / 2 * (t[1] - t[0])
    level = theory.paper_fixed_point(s, N)
    a_mean = run.a.mean(1)
    t_cliff = theory.cliff_time(run.a0, s, N, eta=run.eta, P=run.P, c=c)
    curvature = []
    for k in range(run.d):
        a_k = np.repeat(run.a_paper[:1], len(t), axis=0)
        a_k[:, k] = run.a_paper[:, k]
        Lk = theory.paper_loss(a_k, s, N, c=c)
        curvature.append(float(np.max(np.abs(np.gradient(np.gradient(Lk, t), t)))))
    return PlateauAnalysis(
        L_paper=theory.paper_loss(run.a_paper, s, N, c=c),
        L_exact=exact.exact_mode_loss(run.p_exact, run.q_exact, s, N=N, c=c),
        t_epoch=t_ep,
        L_epoch=L_ep,
        Linf_paper=theory.paper_loss_infinity(s, N),
        Linf_exact=exact.exact_fixed_point_loss(s, N, c),
        t_cliff=t_cliff,
        tau=tau,
        cliff_offset=np.abs(exact.crossing_times(t, a_mean, level / 3) - t_cliff) / tau,
        cliff_se=crossing_time_standard_error(t, run.a, level / 3) / tau,
        n_learned=int(np.sum(np.isfinite(exact.crossing_times(t, a_mean, level / 2)))),
        curvature=np.array(curvature),
    )


@dataclass(frozen=True)
class ModeProbes:
    """The probes of §4 on one regime against the per-mode times (:func:`mode_probes`, Fig. 4).

    Attributes
    ----------
    curvature : CurvatureProbes
        (A) ``A''(lag)`` of the loss autocorrelation and (B) ``d²‖p2‖_F/dt²``, simulation and theory.
    avg, window : int
        Log points of the moving average and of the Savitzky-Golay window.
    tau, t_half_paper, t_cliff_paper, t_half_exact, t_cliff_exact : ndarray, shape (d,)
        Timescales and the per-mode times of (13) and of the exact flow.
    mer_sim, mer_theory : ndarray, shape (T, n_drop + 1)
        Marginalized effective rank of ``diag(a(t))``, modes removed fastest first.
    off_A2, off_A2_paper : ndarray, shape (d,)
        Offset (in ``tau``) of the nearest ``A''`` peak from the exact and the paper's cliff times.
    off_norm_up, off_norm_down : ndarray, shape (d,)
        Offset of the nearest norm-curvature peak (trough) from ``t_half ∓`` :data:`NORM_CURVATURE_OFFSET` ``tau``.
    mer_minima : ndarray, shape (n_drop,)
        Times of the minima of the marginalized curves; ``off_mer``, ``off_mer_paper``: their offsets from
        the exact and the paper's half times.
    null_A2, null_joint : ndarray of int, shape (draws,)
        Modes found by uniformly placed ``A''`` peaks, and by both probes, under the null.
    mode_window : float
        A probe finds a mode if its extremum lies within ``mode_window * tau``.
    """

    curvature: CurvatureProbes
    avg: int
    window: int
    tau: np.ndarray
    t_half_paper: np.ndarray
    t_cliff_paper: np.ndarray
    t_half_exact: np.ndarray
    t_cliff_exact: np.ndarray
    mer_sim: np.ndarray
    mer_theory: np.ndarray
    off_A2: np.ndarray
    off_A2_paper: np.ndarray
    off_norm_up: np.ndarray
    off_norm_down: np.ndarray
    mer_minima: np.ndarray
    off_mer: np.ndarray
    off_mer_paper: np.ndarray
    null_A2: np.ndarray
    null_joint: np.ndarray
    mode_window: float

    def metrics(self) -> dict[str, float]:
        """The notebook's ``probe_*`` metrics of one run (95% quantiles of the null counts: a count above
        it is found by fewer than 5% of uniform placements)."""
        cp, w = self.curvature, self.mode_window
        return {
            "probe_A2_max_offset_tau": float(np.max(self.off_A2)),
            "probe_A2_max_offset_tau_paper": float(np.max(self.off_A2_paper)),
            "probe_A2_modes_found": int(np.sum(self.off_A2 <= w)),
            "probe_A2_n_peaks": int(len(cp.A2_peaks)),
            "probe_norm_peak_max_offset_tau": float(np.max(self.off_norm_up)),
            "probe_norm_trough_max_offset_tau": float(np.max(self.off_norm_down)),
            "probe_norm_modes_found": int(np.sum((self.off_norm_up <= w) & (self.off_norm_down <= w))),
            "probe_norm_n_extrema": int(len(cp.norm_peaks) + len(cp.norm_troughs)),
            "probe_A2_n_peaks_theory": int(cp.n_A2_peaks_theory),
            "probe_norm_n_extrema_theory": int(cp.n_norm_extrema_theory),
            "probe_mer_max_offset_tau": float(np.max(self.off_mer)),
            "probe_mer_max_offset_tau_paper": float(np.max(self.off_mer_paper)),
            "probe_null_min_modes_q95": int(np.quantile(self.null_joint, 0.95, method="inverted_cdf")),
            "probe_A2_null_modes_q95": int(np.quantile(self.null_A2, 0.95, method="inverted_cdf")),
        }


def mode_probes(
    run: RegimeRun, *, avg_steps: int, mode_window: float, rng: np.random.Generator, n_drop: int = 3
) -> ModeProbes:
    """The curvature probes (:func:`iclcore.logistic.probes.curvature_probes`) and the marginalized effective
    rank of ``diag(a)`` (:func:`iclcore.models.probes.marginalized_effective_rank`) of one regime, located
    against the per-mode times of the exact flow and of (13), with a uniform-placement null
    (:func:`iclcore.models.probes.uniform_window_null_hits`, 2000 draws from ``rng``).

    Loss and norm are averaged over ``avg_steps`` SGD steps (``max(1, avg_steps // log_every)`` log points),
    then differentiated over about 0.9 of the fastest timescale; ``A''`` peaks are matched to the cliff
    times, the norm curvature's peak and trough to ``t_half ∓ 0.66 tau``, the marginalized-rank minima to
    the half times.
    """
    positive_float(mode_window, "mode_window")
    positive_int(avg_steps, "avg_steps")
    t, d = run.t, run.d
    c = run.prob.c
    tau = theory.timescales(run.s, run.eta, run.P, c=c)
    th_pap = theory.half_time(run.a0, run.s, run.N, eta=run.eta, P=run.P, c=c)
    tc_pap = theory.cliff_time(run.a0, run.s, run.N, eta=run.eta, P=run.P, c=c)
    th_ex = exact.crossing_times(t, run.a_exact, run.a_exact[-1] / 2)
    tc_ex = exact.crossing_times(t, run.a_exact, run.a_exact[-1] / 3)
    dt = t[1] - t[0]
    avg = max(1, avg_steps // run.res.config.log_every)
    window = 2 * int(0.9 * tau[0] / dt) + 1
    cp = curvature_probes(
        t,
        run.res.loss[1:],
        theory.paper_loss(run.a_paper, run.s, run.N, c=c)[1:],
        norm_sim=np.sqrt(np.sum(run.res.pT[..., :, d:] ** 2, axis=(-2, -1))).mean(1),
        norm_theory=np.sqrt(run.a_paper.sum(1)),
        avg=avg,
        window=window,
    )
    mer_sim = marginalized_effective_rank(np.abs(run.a.mean(1)), n_drop, drop_order=np.arange(d))
    mer_th = marginalized_effective_rank(run.a_paper, n_drop, drop_order=np.arange(d))
    up, down = th_ex - NORM_CURVATURE_OFFSET * tau, th_ex + NORM_CURVATURE_OFFSET * tau
    mer_min = np.array([t[np.argmin(mer_sim[:, k])] for k in range(n_drop)])
    lag_body = cp.lag[cp.body]
    null_A2 = uniform_window_null_hits(
        len(cp.A2_peaks), (lag_body[0], lag_body[-1]), tc_ex, halfwidths=mode_window * tau, rng=rng
    )
    null_n = uniform_window_null_hits(
        len(cp.norm_peaks),
        (cp.t_norm[0], cp.t_norm[-1]),
        up,
        halfwidths=mode_window * tau,
        rng=rng,
        paired=(len(cp.norm_troughs), down),
    )
    return ModeProbes(
        curvature=cp,
        avg=avg,
        window=window,
        tau=tau,
        t_half_paper=th_pap,
        t_cliff_paper=tc_pap,
        t_half_exact=th_ex,
        t_cliff_exact=tc_ex,
        mer_sim=mer_sim,
        mer_theory=mer_th,
        off_A2=nearest_event_offset(cp.A2_peaks, tc_ex, tau),
        off_A2_paper=nearest_event_offset(cp.A2_peaks, tc_pap, tau),
        off_norm_up=nearest_event_offset(cp.norm_peaks, up, tau),
        off_norm_down=nearest_event_offset(cp.norm_troughs, down, tau),
        mer_minima=mer_min,
        off_mer=np.abs(mer_min - th_ex[:n_drop]) / tau[:n_drop],
        off_mer_paper=np.abs(mer_min - th_pap[:n_drop]) / tau[:n_drop],
        null_A2=null_A2,
        null_joint=np.minimum(null_A2, null_n),
        mode_window=mode_window,
    )


@dataclass(frozen=True)
class ExtremaScaling:
    """Probe extrema counts against the number of averaged replicas (:func:`extrema_count_scaling`).

    Attributes
    ----------
    R_fit : list of int
        Replica counts of the fit (``1, 2`` and ``R_shown``), sorted.
    R_shown : list of int
        ``R_max // 4``, ``R_max // 2`` (at least 1 and 2) and ``R_max``.
    counts : ndarray of int, shape (len(R_fit), 2)
        ``A''`` peaks and norm extrema on the mean of the first ``R`` replicas.
    theory : tuple of int
        The same counts on the noise-free theory curves.
    slopes, slope_se : ndarray, shape (2,)
        Log-log least-squares slope of the excess count (an excess of 0 counted as 0.5) against ``R``, and
        its standard error from the fit residuals (nested subsets are not independent: indicative).
    """

    R_fit: list[int]
    R_shown: list[int]
    counts: np.ndarray
    theory: tuple[int, int]
    slopes: np.ndarray
    slope_se: np.ndarray

    def metrics(self) -> dict[str, float]:
        """The notebook's ``probe_fs_*`` metrics."""
        shown = self.counts[[self.R_fit.index(R_) for R_ in self.R_shown]]
        return {
            **{f"probe_fs_R_{i}": int(R_) for i, R_ in enumerate(self.R_shown)},
            **{f"probe_fs_A2_n_peaks_{i}": int(c) for i, c in enumerate(shown[:, 0])},
            **{f"probe_fs_norm_n_extrema_{i}": int(c) for i, c in enumerate(shown[:, 1])},
            "probe_fs_A2_excess_slope": float(self.slopes[0]),
            "probe_fs_norm_excess_slope": float(self.slopes[1]),
            "probe_fs_A2_excess_slope_se": float(self.slope_se[0]),
            "probe_fs_norm_excess_slope_se": float(self.slope_se[1]),
            "probe_fs_n_sizes": len(self.R_fit),
        }


def extrema_count_scaling(
    run: RegimeRun, probes: ModeProbes, *, R_max: int, B: int, epochs: float, rng: np.random.Generator
) -> ExtremaScaling:
    """Finite-size check of the probe extrema counts (ledger row logistic-10).

    One extra SGD run of the regime's task set with ``R_max`` replicas (same step size, init and log
    interval, ``B`` contexts, ``epochs``; streams from ``rng``); the probes of ``probes`` (same averaging,
    window, lag body and norm times) on the mean of the first ``R`` replicas
    (:func:`iclcore.logistic.probes.replica_sweep_extrema_counts`), and a power law of the excess count
    over the theory's against ``R`` (:func:`iclcore.stats.fit_power_law`).
    """
    positive_int(R_max, "R_max", minimum=2)
    cfg = run.res.config
    cfg_fs = sgd.SGDConfig(
        eta=run.eta, B=B, epochs=epochs, init_scale=run.init_scale, replicas=R_max, log_every=cfg.log_every
    )
    res_fs = sgd.run_sgd(run.prob, cfg_fs, rng)
    R_shown = [max(1, R_max // 4), max(2, R_max // 2), R_max]
    R_fit = sorted({1, 2, *R_shown})
    cp = probes.curvature
    counts = replica_sweep_extrema_counts(
        res_fs.loss_replicas,
        res_fs.pT,
        R_fit,
        avg=probes.avg,
        dt=run.t[1] - run.t[0],
        window=probes.window,
        body=cp.body,
        t_norm=cp.t_norm,
    )
    th = (cp.n_A2_peaks_theory, cp.n_norm_extrema_theory)
    fits = [fit_power_law(R_fit, np.maximum(counts[:, j] - th[j], 0.5)) for j in range(2)]
    return ExtremaScaling(
        R_fit, R_shown, counts, th, np.array([f.slope for f in fits]), np.array([f.slope_se for f in fits])
    )


@dataclass(frozen=True)
class NullBlockRun:
    """All four blocks trained on one replica (:func:`null_block_run`).

    Attributes
    ----------
    t : ndarray, shape (T,)
    p1_norm, q2_norm : ndarray, shape (T,)
        ``‖p1‖_F`` and ``‖q2‖_F``.
    a, b : ndarray, shape (T, d)
        ``diag(U^T p2 q1 U)`` and ``diag(U^T p1 q2 U)`` (the null route).
    m1, m3 : float
        Largest absolute first and third empirical task moments.
    exact : ndarray, shape (d,)
        Exact fixed point of the task set.
    """

    t: np.ndarray
    p1_norm: np.ndarray
    q2_norm: np.ndarray
    a: np.ndarray
    b: np.ndarray
    m1: float
    m3: float
    exact: np.ndarray


def null_block_run(
    s: ArrayLike,
    N: int,
    P: int,
    *,
    config: sgd.SGDConfig,
    rng: np.random.Generator,
    antithetic: bool,
) -> NullBlockRun:
    """A new task set (antithetic or iid, from ``rng``) trained with ``config`` (``train_null``, one replica)."""
    prob = model.make_problem(s, N, P, rng=rng, antithetic=antithetic)
    res = sgd.run_sgd(prob, config, rng)
    blk = res.blocks_mode_basis()
    mp = sgd.mode_products(res)
    mom = model.task_moments(prob)
    return NullBlockRun(
        t=res.t,
        p1_norm=np.sqrt(np.sum(blk["p1"][:, 0] ** 2, axis=(-2, -1))),
        q2_norm=np.sqrt(np.sum(blk["q2"][:, 0] ** 2, axis=(-2, -1))),
        a=mp["a"][:, 0],
        b=mp["b"][:, 0],
        m1=float(np.abs(mom["m1"]).max()),
        m3=float(np.abs(mom["m3"]).max()),
        exact=exact.exact_fixed_point(s, N, prob.c),
    )


def null_block_metrics(small: NullBlockRun, iid: NullBlockRun, large: NullBlockRun) -> dict[str, float]:
    """The notebook's ``null_*`` metrics of the three settings: antithetic tasks with a small and a large
    null init, iid tasks with null init 0."""
    a_l, b_l = large.a[-1], large.b[-1]
    return {
        "null_small_p1_start": float(small.p1_norm[0]),
        "null_small_q2_start": float(small.q2_norm[0]),
        "null_large_p1_start": float(large.p1_norm[0]),
        "null_large_q2_start": float(large.q2_norm[0]),
        "null_small_p1": float(small.p1_norm[-1]),
        "null_small_q2": float(small.q2_norm[-1]),
        "null_small_a_vs_exact_maxrel": max_relative_deviation(small.a[-1], small.exact),
        "null_iid_p1": float(iid.p1_norm[-1]),
        "null_iid_q2": float(iid.q2_norm[-1]),
        "null_iid_m3": iid.m3,
        "null_iid_a_min": float(np.min(iid.a[-1])),
        "null_large_p1": float(large.p1_norm[-1]),
        "null_large_q2": float(large.q2_norm[-1]),
        "null_large_b_share": float(np.sum(np.abs(b_l)) / (np.sum(np.abs(a_l)) + np.sum(np.abs(b_l)))),
    }


def isotropic_fixed_point_deviation(d: int, Ns: ArrayLike) -> float:
    """``max_N max_alpha |a*_alpha / a_ZFB − 1|`` at ``S = I_d``: the exact fixed point of the stated model
    (:func:`iclcore.logistic.exact.exact_fixed_point`, ``c = 1``) against the ZFB formula
    ``((N + 1)/N + d/N)^{-1}``, which it equals algebraically (so the result is rounding)."""
    positive_int(d, "d")
    return max(
        float(np.max(np.abs(exact.exact_fixed_point(np.ones(d), n_, None) / (1.0 / ((n_ + 1) / n_ + d / n_)) - 1)))
        for n_ in Ns
    )
