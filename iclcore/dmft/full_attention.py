"""Full linear attention against its reduced theory (Bordelon et al. §5.1-5.2, Result 9, Figure 6, App. G.2).

Three comparisons of the deep linear-attention network of Eq. (3) (block structure, tied layers) with
the one-dimensional theory ``γ = c s⁵``, ``ṡ = -c s⁴ 𝓛'(c s⁵)``:

* :func:`power_five_comparisons` (Figure 6 a-b): SGD with the decaying step ``η_k = η / (1 + k / k_0)``
  against the balanced flow on the exact finite-``P`` landscape, on the theory clock ``t_k = Σ_{j<k} η_j``;
  the late relative bias of ``γ`` with its batch-means standard error and the theory's Monte Carlo error.
* :func:`power_five_time_exponents` (Figure 6e, Eq. 22): the late-time exponent of the loss under the
  ``w⁵`` flow, ``𝓛 ~ t^{-5β/(5β+2)}``, against the ``γ`` flow, ``𝓛 ~ t^{-β/(2+β)}`` (Eq. 97), at
  ``L = P = ∞``, with its finite-``D`` trend extrapolated as ``a + b D^{-q}``.
* :func:`readout_comparison` (§5.2, Eq. 124): the network with trainable read-in and read-out against
  the flow of Eq. (124) and against the same theory in the SGD's own discrete steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import context_draws
from iclcore.dmft.readout import (
    FullAttentionRun,
    PowerFiveTheory,
    PowerLawFlowJob,
    ReadoutFlow,
    ReadoutRun,
    ReadoutSGDRun,
    full_attention_run,
    power_five_theory,
    power_law_flow,
    readout_descent_path,
    readout_flow,
    readout_peak_standard_error,
    readout_sgd_run,
)
from iclcore.dmft.rrs import rrs_loss
from iclcore.models.attention import TrainResult, power_five_constant
from iclcore.parallel import map_configs
from iclcore.stats import (
    RelativeBias,
    fit_offset_power_law,
    fit_power_law_drift,
    fit_power_law_exponent,
    relative_bias,
    standard_error,
)
from iclcore.validation import positive_float, positive_int

__all__ = [
    "decaying_step_times",
    "LateBiasByDepth",
    "PowerFiveComparison",
    "power_five_comparisons",
    "TimeExponentFits",
    "power_five_time_exponents",
    "ReadoutComparison",
    "readout_comparison",
]


def decaying_step_times(eta: float, decay: float, steps: int) -> np.ndarray:
    """Theory clock of SGD with the step ``η_k = η / (1 + k / k_0)``: ``t_k = Σ_{j<k} η_j`` (Figure 6).

    Parameters
    ----------
    eta : float
        Initial step ``η > 0``.
    decay : float
        Decay scale ``k_0 > 0`` (steps).
    steps : int
        Number of steps.

    Returns
    -------
    ndarray, shape (steps + 1,)
        ``t_0 = 0, t_1 = η_0, ..., t_steps``.

    Examples
    --------
    >>> decaying_step_times(1.0, 1.0, 3).tolist()
    [0.0, 1.0, 1.5, 1.8333333333333333]
    """
    eta, decay, steps = positive_float(eta, "eta"), positive_float(decay, "decay"), positive_int(steps, "steps")
    return np.concatenate([[0.0], np.cumsum(eta * (1.0 / (1.0 + np.arange(steps) / decay)))])


class LateBiasByDepth:
    """Maxima over depths of a ``bias`` attribute, a dict ``L -> RelativeBias`` (:func:`iclcore.stats.relative_bias`)."""

    bias: dict[int, RelativeBias]

    @property
    def max_rel_err(self) -> float:
        """``max_L max_t |series / reference − 1|`` over the late window."""
        return max(b.max_abs for b in self.bias.values())

    @property
    def bias_z_max(self) -> float:
        """The largest late bias over its batch-means standard error."""
        return float(max(b.z for b in self.bias.values()))

    @property
    def bias_se_max(self) -> float:
        """The largest batch-means standard error of the late bias."""
        return float(max(b.se for b in self.bias.values()))


@dataclass(frozen=True)
class PowerFiveComparison(LateBiasByDepth):
    """SGD of the Figure-6 network against the ``γ = c s⁵`` theory, per depth, for one kind of data.

    Attributes
    ----------
    theory : dict ``L -> PowerFiveTheory`` (``gamma``, ``loss`` of shape ``(steps + 1,)``, ``mc_sd``)
    runs : dict ``L -> TrainResult`` (``loss (steps,)``, ``gamma (steps + 1, 1)``)
    bias : dict ``L -> RelativeBias`` of the SGD ``γ`` against the theory over the late half of the steps
    """

    theory: dict[int, PowerFiveTheory]
    runs: dict[int, TrainResult]
    bias: dict[int, RelativeBias]

    @property
    def bias_z_with_theory_max(self) -> float:
        """The largest late bias over the standard error with the theory's Monte Carlo error in quadrature."""
        return max(b.z_with_reference for b in self.bias.values())

    @property
    def theory_mc_sd_max(self) -> float:
        """The largest relative Monte Carlo standard deviation of the theory's late mean ``γ``."""
        return max(th.mc_sd for th in self.theory.values())

    def final_loss_sim(self, L: int, last: int = 40) -> float:
        """Mean SGD training loss over the ``last`` steps at depth ``L``."""
        return float(np.mean(self.runs[L].loss[-last:]))

    def metrics(self, prefix: str, final_depths: Sequence[int] = ()) -> dict[str, float]:
        """The book's metrics of this comparison, named ``{prefix}_...``; final losses at ``final_depths``."""
        out = {
            f"{prefix}_gamma_max_rel_err": self.max_rel_err,
            f"{prefix}_gamma_late_bias_max_z": self.bias_z_max,
            f"{prefix}_gamma_late_bias_se_max": self.bias_se_max,
            f"{prefix}_gamma_late_bias_max_z_theory_mc": self.bias_z_with_theory_max,
            f"{prefix}_theory_mc_rel_sd_max": self.theory_mc_sd_max,
        }
        for L in final_depths:
            out[f"{prefix}_final_loss_L{L}_sim"] = self.final_loss_sim(L)
            out[f"{prefix}_final_loss_L{L}_theory"] = float(self.theory[L].loss[-1])
        return out


def power_five_comparisons(
    spectra: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    P: int,
    K: int,
    B: int,
    depths: Sequence[int],
    s0: float,
    eta: float,
    decay: float,
    steps: int,
    mc_draws: int,
    mc_tables: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> dict[str, PowerFiveComparison]:
    """SGD of full linear attention against the ``γ = c s⁵`` flow on the finite-``P`` landscape (Figure 6 a-b).

    For each kind of data (``"iso"`` or ``"rrs"``) the theory is :func:`iclcore.dmft.readout.power_five_theory`
    on ``mc_draws`` context covariances (generator ``seed`` for ``"iso"``, ``seed + 1`` for ``"rrs"``) with
    ``c = 2/D²``; the SGD runs (:func:`iclcore.dmft.readout.full_attention_run`, torch seed
    ``seed + 10 L + [kind == "rrs"]``) are independent tasks of :func:`iclcore.parallel.map_configs`.
    The late window is the second half of the steps; the bias is :func:`iclcore.stats.relative_bias`
    with 10 batch-means blocks and the theory's Monte Carlo SD as reference error.

    Parameters
    ----------
    spectra : dict ``kind -> (lam, omega)``, arrays ``(D,)``; kinds ``"iso"`` and/or ``"rrs"``
    P, K, B : int
        Labelled tokens and queries per context, contexts per step.
    depths : sequence of int
    s0, eta, decay : float
        Balanced initial scale, initial step and decay scale (:func:`decaying_step_times`).
    steps, mc_draws, mc_tables : int
        SGD steps; context covariances of the theory; independent blocks of them for its Monte Carlo error.
    seed : int
    device : str
        Torch device of the trainings.
    workers : int
        Processes for :func:`iclcore.parallel.map_configs`.

    Returns
    -------
    dict ``kind -> PowerFiveComparison``
    """
    if not spectra or any(kind not in ("iso", "rrs") for kind in spectra):
        raise ValueError(f"spectra: expected kinds 'iso' and/or 'rrs', got {sorted(spectra)!r}")
    t = decaying_step_times(eta, decay, steps)
    theory = {}
    for kind, (lam, omega) in spectra.items():
        c = power_five_constant(len(lam))
        draws = context_draws(lam, omega, P, rng=np.random.default_rng(seed + (kind == "rrs")), n_draws=mc_draws)
        theory[kind] = {
            L: power_five_theory(draws, L, t, c=c, s0=s0, n_tables=mc_tables, late_start=steps // 2) for L in depths
        }
    keys = [(kind, L) for kind in spectra for L in depths]
    runs = [
        FullAttentionRun(
            kind,
            tuple(spectra[kind][0]),
            tuple(spectra[kind][1]),
            P,
            K,
            B,
            L,
            s0,
            eta,
            decay,
            steps,
            seed + 10 * L + (kind == "rrs"),
            device=device,
        )  # fmt: skip
        for kind, L in keys
    ]
    results = map_configs(full_attention_run, runs, workers, cost=lambda r: r.L, label="Figure-6 SGD runs")
    out = {}
    late = slice(steps // 2, None)
    for kind in spectra:
        res = {L: r for (k, L), r in zip(keys, results) if k == kind}
        th = theory[kind]
        bias = {L: relative_bias(res[L].gamma[late, 0], th[L].gamma[late], th[L].mc_sd, n_blocks=10) for L in depths}
        out[kind] = PowerFiveComparison(th, res, bias)
    return out


@dataclass(frozen=True)
class TimeExponentFits:
    """Late-time exponents of the loss under the ``w⁵`` and ``γ`` flows (:func:`power_five_time_exponents`).

    Attributes
    ----------
    t : ndarray, shape (n_t,)
    loss_w5, loss_gamma : ndarray, shape (n_t,)
        Loss along the ``w⁵`` flow and the ``γ`` flow at the largest ``D``.
    exponent, drift : dict ``"w5"``/``"gamma"`` -> float
        Log-log decay exponent of the loss over the window and its drift between the window's halves
        (:func:`iclcore.stats.fit_power_law_exponent`, :func:`iclcore.stats.fit_power_law_drift`).
    w_growth, w_growth_drift : float
        Growth exponent of the scale ``s`` of the ``w⁵`` flow over the same window and its drift.
    sizes : ndarray, shape (4,)
        ``D/8, D/4, D/2, D``.
    exponent_by_size : ndarray, shape (4,)
        The ``w⁵`` exponent at each size (its window grows with ``D``).
    beta : float
        The source exponent.
    trend : (a, b, q)
        Fit ``exponent(D) = a + b D^{-q}`` over the four sizes.
    trend_fewer : (a, b, q)
        The same fit over the three smallest sizes (its ``a`` against ``trend``'s: the extrapolation error).
    """

    t: np.ndarray
    loss_w5: np.ndarray
    loss_gamma: np.ndarray
    exponent: dict[str, float]
    drift: dict[str, float]
    w_growth: float
    w_growth_drift: float
    sizes: np.ndarray
    exponent_by_size: np.ndarray
    beta: float
    trend: tuple[float, float, float]
    trend_fewer: tuple[float, float, float]

    @property
    def eq22(self) -> float:
        """The predicted ``w⁵`` exponent ``5β/(5β+2)`` (Eq. 22)."""
        return 5 * self.beta / (5 * self.beta + 2)

    @property
    def extrapolation_err(self) -> float:
        """``|a(4 sizes) − a(3 sizes)|``."""
        return abs(self.trend[0] - self.trend_fewer[0])

    def metrics(self) -> dict[str, float]:
        """The book's metrics of the Figure-6e fits."""
        return {
            "w5_time_exponent_fit": self.exponent["w5"],
            "w5_time_exponent_eq22": self.eq22,
            "gamma_time_exponent_fit": self.exponent["gamma"],
            "w5_time_exponent_drift": self.drift["w5"],
            "gamma_time_exponent_drift": self.drift["gamma"],
            "w_growth_exponent_fit": self.w_growth,
            "w_growth_exponent_drift": self.w_growth_drift,
            "w_growth_exponent_corrected": 1 / (5 * self.beta + 2),
            "w5_time_exponent_fit_D8th": self.exponent_by_size[0],
            "w5_time_exponent_fit_D4th": self.exponent_by_size[1],
            "w5_time_exponent_fit_D2nd": self.exponent_by_size[2],
            "w5_time_exponent_size_q": self.trend[2],
            "w5_time_exponent_extrapolated": self.trend[0],
            "w5_time_exponent_extrapolation_err": self.extrapolation_err,
        }


def _flow_window(gamma: np.ndarray, D: int | np.integer, nu: float) -> np.ndarray:
    """The fitting window ``100 < γ < 10^{-2} D^ν`` (boolean mask); at least two times in it, else a ValueError naming D."""
    sel = (gamma > 100) & (gamma < 1e-2 * D**nu)
    if sel.sum() < 2:
        raise ValueError(
            f"D: the fitting window 100 < gamma < 1e-2 D^nu holds {int(sel.sum())} of the flow's times at D={D} "
            f"(nu={nu}); the exponent fits need D/8 well above 1e4^(1/nu)"
        )
    return sel


def power_five_time_exponents(*, D: int, nu: float, beta: float, t: np.ndarray, workers: int = 1) -> TimeExponentFits:
    """Late-time loss exponents of the ``w⁵`` and ``γ`` flows at ``L = P = ∞`` (Figure 6e, Eqs. 22, 97, 127).

    On the power law of size ``D`` (:func:`iclcore.dmft.data.power_law_spectrum`) the ``w⁵`` flow
    (``γ = c s⁵`` with ``c = 1`` from ``s0 = 0.3``) gives ``𝓛 ~ t^{-5β/(5β+2)}`` and ``s ~ t^{1/(5β+2)}``
    corrected (Eq. 127 prints ``5/(5β+2)``), the ``γ`` flow ``𝓛 ~ t^{-β/(2+β)}``; both are fitted over
    ``100 < γ < 10^{-2} D^ν``. The ``w⁵`` fit is repeated at ``D/8, D/4, D/2`` and extrapolated as
    ``a + b D^{-q}`` (:func:`iclcore.stats.fit_offset_power_law`), and again without the largest size.
    The five flows are tasks of :func:`iclcore.parallel.map_configs`.

    Parameters
    ----------
    D : int
        Largest dimension, ``>= 8``.
    nu, beta : float
        Capacity and source exponents.
    t : ndarray, shape (n_t,)
        Increasing times.
    workers : int

    Returns
    -------
    TimeExponentFits
    """
    D = positive_int(D, "D", minimum=8)
    sizes = np.array([D // 8, D // 4, D // 2, D])
    jobs = [PowerLawFlowJob(int(D_k), nu, beta, tuple(t), "w5", 1.0, 0.3) for D_k in sizes]
    jobs.append(PowerLawFlowJob(D, nu, beta, tuple(t), "gamma"))
    flows = map_configs(
        power_law_flow, jobs, workers, cost=lambda j: j.D * (1 + (j.kind == "gamma")), label="power-law flows"
    )
    lam, omega = power_law_spectrum(D, nu, beta)
    s_w5, gam_w5 = flows[3]
    exponent, drift, loss = {}, {}, {}
    for name, gam in (("w5", gam_w5), ("gamma", flows[4][1])):
        loss[name] = rrs_loss(gam, lam, omega, L=np.inf)
        sel = _flow_window(gam, D, nu)
        exponent[name] = fit_power_law_exponent(t[sel], loss[name][sel])
        drift[name] = fit_power_law_drift(t[sel], loss[name][sel])
    sel = _flow_window(gam_w5, D, nu)
    w_growth = -fit_power_law_exponent(t[sel], s_w5[sel])
    w_growth_drift = fit_power_law_drift(t[sel], s_w5[sel])
    by_size = []
    for D_k, (_, gam_k) in zip(sizes[:-1], flows[:3]):
        lam_k, om_k = power_law_spectrum(int(D_k), nu, beta)
        sel_k = _flow_window(gam_k, D_k, nu)
        by_size.append(fit_power_law_exponent(t[sel_k], rrs_loss(gam_k, lam_k, om_k, L=np.inf)[sel_k]))
    by_size = np.array(by_size + [exponent["w5"]])
    trend = fit_offset_power_law(sizes, by_size, p0=[by_size[-1], by_size[0] - by_size[-1], 0.5])
    trend_fewer = fit_offset_power_law(sizes[:-1], by_size[:-1], p0=trend)
    return TimeExponentFits(
        t,
        loss["w5"],
        loss["gamma"],
        exponent,
        drift,
        w_growth,
        w_growth_drift,
        sizes,
        by_size,
        beta,
        trend,
        trend_fewer,
    )


@dataclass(frozen=True)
class ReadoutComparison:
    """SGD with trainable read-in and read-out against Eq. (124) (:func:`readout_comparison`).

    Attributes
    ----------
    t : ndarray, shape (steps + 1,)
        ``η · (0, ..., steps)``.
    flow, path : ReadoutFlow
        The gradient flow of Eq. (124) and the same theory in the SGD's discrete steps.
    peak_theory_se : float
        Monte Carlo standard error of ``max_t m`` of ``path``.
    runs : list of ReadoutRun
    m : ndarray, shape (seeds, steps + 1)
        ``m = a_o a_y`` of each run.
    """

    t: np.ndarray
    flow: ReadoutFlow
    path: ReadoutFlow
    peak_theory_se: float
    runs: list[ReadoutRun]
    m: np.ndarray

    @property
    def peak(self) -> np.ndarray:
        """``max_t m`` per run, shape (seeds,)."""
        return self.m.max(axis=1)

    @property
    def overshoot(self) -> np.ndarray:
        """``max_t m / m(t_end) − 1`` per run, shape (seeds,)."""
        return self.peak / self.m[:, -1] - 1

    @property
    def peak_se_total(self) -> float:
        """Standard error of the mean SGD peak and of the theory's peak in quadrature."""
        return float(np.hypot(standard_error(self.peak), self.peak_theory_se))

    @property
    def overshoot_theory(self) -> float:
        """``max_t m / m(t_end) − 1`` of the theory in the SGD's steps (``path``)."""
        return float(self.path.m.max() / self.path.m[-1] - 1)

    @property
    def final_loss_sim(self) -> float:
        """Mean over runs of the training loss over the last 20 steps."""
        return float(np.mean([rr.loss[-20:].mean() for rr in self.runs]))

    def peak_z(self, theory: ReadoutFlow) -> float:
        """``|mean SGD peak − max_t m_theory| / peak_se_total`` against ``theory`` (``path`` or ``flow``)."""
        return float(abs(self.peak.mean() - theory.m.max()) / self.peak_se_total)

    def metrics(self) -> dict[str, float]:
        """The book's metrics of the read-out comparison."""
        peak, overshoot = self.peak, self.overshoot
        return {
            "readout_m_peak_sim": float(peak.mean()),
            "readout_m_peak_sim_se": float(standard_error(peak)),
            "readout_m_peak_theory": float(self.path.m.max()),
            "readout_m_peak_flow": float(self.flow.m.max()),
            "readout_m_peak_theory_se": self.peak_theory_se,
            "readout_m_peak_se_total": self.peak_se_total,
            "readout_m_peak_z": self.peak_z(self.path),
            "readout_m_peak_z_flow": self.peak_z(self.flow),
            "readout_m_final_sim": float(self.m[:, -1].mean()),
            "readout_m_final_theory": float(self.path.m[-1]),
            "readout_m_overshoot": float(overshoot.mean()),
            "readout_m_overshoot_se": float(standard_error(overshoot)),
            "readout_m_overshoot_theory": self.overshoot_theory,
            "readout_final_loss_theory": float(self.path.loss[-1]),
            "readout_final_loss_sim": self.final_loss_sim,
        }


def readout_comparison(
    *,
    D: int,
    P: int,
    K: int,
    B: int,
    L: int,
    s0: float,
    a0: float,
    eta: float,
    steps: int,
    seeds: int,
    n_draws: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> ReadoutComparison:
    """Blow-up and recovery of the read-out scale ``m = a_o a_y``: SGD against Eq. (124) (§5.2, App. G.2).

    Isotropic data. The theory is :func:`iclcore.dmft.readout.readout_flow` (``c = 2/D²``) and
    :func:`iclcore.dmft.readout.readout_descent_path` on ``n_draws`` context covariances at ``D, P``
    (generator ``seed + 88``), with the Monte Carlo error of the path's peak over 4 blocks; ``seeds``
    SGD runs (torch seeds ``seed + 7000 + r``, constant step ``eta``, from ``a_o = a_y = a0``, ``s = s0``)
    are tasks of :func:`iclcore.parallel.map_configs`.

    Returns
    -------
    ReadoutComparison
    """
    D = positive_int(D, "D")
    draws = context_draws(np.ones(D), np.ones(D), P, rng=np.random.default_rng(seed + 88), n_draws=n_draws)
    t = eta * np.arange(steps + 1)
    flow = readout_flow(t, draws, L, c=power_five_constant(D), a_o0=a0, a_y0=a0, s0=s0)
    path = readout_descent_path(draws, L, D, eta=eta, steps=steps, a0=a0, s0=s0)
    peak_se = readout_peak_standard_error(draws, L, D, eta=eta, steps=steps, a0=a0, s0=s0, n_blocks=4)
    jobs = [ReadoutSGDRun(D, P, K, B, L, s0, a0, eta, steps, seed + 7000 + r, device=device) for r in range(seeds)]
    runs = map_configs(readout_sgd_run, jobs, workers, label="read-out SGD runs")
    return ReadoutComparison(t, flow, path, peak_se, runs, np.array([rr.a_o * rr.a_y for rr in runs]))
