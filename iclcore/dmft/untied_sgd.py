"""SGD of untied layers against the recurrent theory (Bordelon et al. §5.1, Figure 8; App. G.1.2, Eq. 122).

``L`` independent ``D x D`` matrices ``Γ^ℓ`` from zero, trained by SGD with learning rate ``η D L / 2``
(the paper's ``η = η_0 L``), follow the recurrent flow ``γ̇ = tr ΩΛ²(I − γΛ/L)^{2L−1}`` (Eq. 13) at
``t = η · steps`` on the balanced manifold ``γ^ℓ = γ``, which is invariant but transversally unstable
(:func:`iclcore.dmft.untied.balanced_optimum_stability`). Three comparisons:

* :func:`untied_comparison`: the layer-mean ``γ`` of SGD on population contexts against the flow, the
  layer spread and the split of the two layers of ``L = 2``;
* :func:`untied_batch_sweep`: the late bias of that comparison against the batch size (the flow is the
  ``η/B → 0`` limit);
* :func:`untied_label_noise_comparison`: finite context with label noise against Eq. (122) and its exact
  noise term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.dmft.finite_context import context_draws
from iclcore.dmft.full_attention import LateBiasByDepth
from iclcore.dmft.rrs import rrs_gradient_flow, rrs_loss_grad, rrs_optimum
from iclcore.dmft.sgd_sweep import NoiseScaling, ReducedSGDTask, late_bias_sweep, noise_scaling
from iclcore.dmft.untied import (
    BalancedStability,
    UntiedSGDRun,
    balanced_optimum_stability,
    untied_noisy_flow,
    untied_noisy_loss,
    untied_optimum,
    untied_sgd_run,
)
from iclcore.models.attention import TrainResult
from iclcore.parallel import map_configs
from iclcore.stats import RelativeBias, relative_bias, standard_error
from iclcore.validation import positive_int

__all__ = [
    "UntiedComparison",
    "untied_comparison",
    "untied_batch_sweep",
    "batch_bias_metrics",
    "untied_over_balanced_optimum",
    "UntiedOptimumChecks",
    "untied_optimum_checks",
    "LabelNoiseComparison",
    "untied_label_noise_comparison",
    "label_noise_batch_metrics",
]


@dataclass(frozen=True)
class UntiedComparison(LateBiasByDepth):
    """Untied SGD against the recurrent flow, per depth (:func:`untied_comparison`).

    Attributes
    ----------
    t : ndarray, shape (steps + 1,)
        ``η · (0, ..., steps)``.
    runs : dict ``L -> TrainResult`` (``loss (steps,)``, ``gamma (steps + 1, L)``)
    flow : dict ``L -> (gamma, loss)``, arrays ``(steps + 1,)`` of the recurrent flow
    bias : dict ``L -> RelativeBias`` of the layer-mean ``γ`` over ``t >= t_max / 10`` (10 blocks)
    layer_spread : dict ``L -> float``
        ``max_t (max_ℓ γ^ℓ − min_ℓ γ^ℓ) / mean_ℓ γ^ℓ`` over the same window.
    final_split : dict ``L -> float``
        ``|γ¹ − γ²| / mean_ℓ γ^ℓ`` at the last step.
    """

    t: np.ndarray
    runs: dict[int, TrainResult]
    flow: dict[int, tuple[np.ndarray, np.ndarray]]
    bias: dict[int, RelativeBias]
    layer_spread: dict[int, float]
    final_split: dict[int, float]

    def metrics(self) -> dict[str, float]:
        """The book's metrics of Figure 8 (a-c): the spread at the deepest, the split at the shallowest depth."""
        deep, shallow = max(self.layer_spread), min(self.final_split)
        return {
            "fig8_gamma_late_bias_max_z": self.bias_z_max,
            "fig8_gamma_late_bias_se_max": self.bias_se_max,
            "fig8_untied_gamma_max_rel_err": self.max_rel_err,
            f"fig8_layer_spread_L{deep}": self.layer_spread[deep],
            f"fig8_layer_split_L{shallow}_final": self.final_split[shallow],
        }


def untied_comparison(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    depths: Sequence[int],
    B: int,
    eta: float,
    steps: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> UntiedComparison:
    """SGD of untied layers on population RRS contexts against the recurrent flow (Figure 8 a-c).

    One run per depth ``L >= 2`` (:func:`iclcore.dmft.untied.untied_sgd_run`, torch seed ``seed + 100 + L``),
    tasks of :func:`iclcore.parallel.map_configs`; the flow is :func:`iclcore.dmft.rrs.rrs_gradient_flow`.

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
    depths : sequence of int, each ``>= 2``
    B : int
        Contexts per step.
    eta : float
        Theory time step.
    steps, seed : int
    device : str
    workers : int

    Returns
    -------
    UntiedComparison
    """
    depths = [positive_int(L, "depths", minimum=2) for L in depths]
    t = eta * np.arange(steps + 1)
    jobs = [UntiedSGDRun(tuple(lam), tuple(omega), L, B, eta, steps, seed + 100 + L, device=device) for L in depths]
    results = map_configs(untied_sgd_run, jobs, workers, cost=lambda r: r.L, label="Figure-8 SGD runs")
    runs = dict(zip(depths, results))
    flow = {L: rrs_gradient_flow(t, lam, omega, L=L) for L in depths}
    late = slice(steps // 10, None)
    bias = {L: relative_bias(runs[L].gamma[late].mean(axis=1), flow[L][0][late], n_blocks=10) for L in depths}
    spread = {}
    for L in depths:
        g = runs[L].gamma[late]
        spread[L] = float(np.max((g.max(axis=1) - g.min(axis=1)) / g.mean(axis=1)))
    split = {L: float(abs(runs[L].gamma[-1, 0] - runs[L].gamma[-1, 1]) / runs[L].gamma[-1].mean()) for L in depths}
    return UntiedComparison(t, runs, flow, bias, spread, split)


def untied_batch_sweep(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    L: int,
    eta: float,
    batches: Sequence[int],
    seeds: int,
    horizon: float,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> NoiseScaling:
    """Late bias of untied SGD against the recurrent flow over batch sizes at a fixed step (Figure 8a).

    :func:`iclcore.dmft.sgd_sweep.late_bias_sweep` of untied layers (torch seed ``seed + 5000 + 100 r + B``
    for run ``r``) over ``(eta, B)`` for ``B`` in ``batches``, to the same ``horizon``; the noise scale is
    ``x = 1/B``.

    Returns
    -------
    NoiseScaling
        ``bias`` net of the discretisation, ``se`` over the ``seeds`` runs; ``power_fit()`` gives ``bias ∝ B^{-p}``.
    """

    def task(eta_k: float, B_k: int, n_k: int, r: int) -> ReducedSGDTask:
        return ReducedSGDTask(
            tuple(lam), tuple(omega), L, False, None, eta_k, B_k, n_k, train_seed=seed + 5000 + 100 * r + B_k,
            device=device,
        )  # fmt: skip

    points = late_bias_sweep(
        [(eta, B_k) for B_k in batches],
        task,
        seeds,
        horizon=horizon,
        flow=lambda tt: rrs_gradient_flow(tt, lam, omega, L=L)[0],
        grad=lambda g: rrs_loss_grad(g, lam, omega, L=L),
        workers=workers,
    )
    return noise_scaling(points, 1.0 / np.array(batches, float))


def batch_bias_metrics(sweep: NoiseScaling, batches: Sequence[int]) -> dict[str, float]:
    """The book's metrics of :func:`untied_batch_sweep` over three batches (small, quick, large).

    The fitted exponent ``p`` of ``bias ∝ (1/B)^p`` with its SE, each net bias with its SE, and the
    large batch's bias in units of its SE.
    """
    if len(batches) != 3 or sweep.x.shape != (3,):
        raise ValueError(f"batches: expected the three batches (small, quick, large) of the sweep, got {batches!r}")
    _, p, p_se = sweep.power_fit()
    out = {"fig8_bias_batch_exponent": p, "fig8_bias_batch_exponent_se": p_se}
    for i, name in enumerate(("small", "quick", "large")):
        out[f"fig8_bias_{name}_batch"], out[f"fig8_bias_{name}_batch_se"] = sweep.bias[i], sweep.se[i]
    return out | {"fig8_bias_large_batch_z": sweep.z(2), "fig8_bias_large_batch_B": batches[2]}


def untied_over_balanced_optimum(lam: np.ndarray, omega: np.ndarray, L: int) -> float:
    """Global untied minimum over the balanced (recurrent) one, ``min 𝓛_untied / min_γ 𝓛(γ 1_L)`` (§5.1).

    At most 1 (the balanced manifold lies in the untied landscape);
    :func:`iclcore.dmft.untied.untied_optimum` over :func:`iclcore.dmft.rrs.rrs_optimum`.

    Examples
    --------
    >>> from iclcore.dmft.data import power_law_spectrum
    >>> lam, omega = power_law_spectrum(50, 1.0, 1.0)
    >>> 0 < untied_over_balanced_optimum(lam, omega, 2) < 1  # unequal layer scales reach a lower loss
    True
    """
    return untied_optimum(lam, omega, L)[1] / rrs_optimum(lam, omega, L)[1]


@dataclass(frozen=True)
class UntiedOptimumChecks:
    """The balanced optimum inside the untied landscape, per depth (:func:`untied_optimum_checks`).

    Attributes
    ----------
    stability : dict ``L -> BalancedStability`` at the first spectrum
    ratio_large : dict ``L -> float``, :func:`untied_over_balanced_optimum` at the second (larger) spectrum
    D_large : int, the size of that spectrum
    """

    stability: dict[int, BalancedStability]
    ratio_large: dict[int, float]
    D_large: int

    @property
    def transverse_max(self) -> float:
        """The largest Hessian eigenvalue across the balanced manifold (negative: unstable at every depth)."""
        return float(max(st.transverse for st in self.stability.values()))

    @property
    def gradient_spread_max(self) -> float:
        """The largest relative spread of the layer gradients at a balanced point (0 up to rounding)."""
        return max(st.gradient_spread for st in self.stability.values())

    def ratio(self, L: int) -> float:
        """Untied over balanced minimum at the first spectrum and depth ``L``."""
        return self.stability[L].untied_loss / self.stability[L].balanced_loss

    def metrics(self, small_depths: Sequence[int]) -> dict[str, float]:
        """The book's metrics: curvature, gradient spread, the ratios at ``D_large`` and at ``small_depths`` of the first size."""
        out = {
            "untied_transverse_curvature_max": self.transverse_max,
            "untied_balanced_gradient_max_rel_spread": self.gradient_spread_max,
            "untied_D_large": self.D_large,
        }
        out |= {f"untied_min_over_balanced_min_L{L}": r for L, r in self.ratio_large.items()}
        return out | {f"untied_min_over_balanced_min_L{L}_Dsim": self.ratio(L) for L in small_depths}


def untied_optimum_checks(
    spectrum: tuple[np.ndarray, np.ndarray], large_spectrum: tuple[np.ndarray, np.ndarray], depths: Sequence[int]
) -> UntiedOptimumChecks:
    """Curvature and global optimum of the untied landscape at the balanced optimum, at two sizes (§5.1, Fig. 8c).

    :func:`iclcore.dmft.untied.balanced_optimum_stability` on ``spectrum = (lam, omega)`` (arrays ``(D,)``,
    the size of the SGD runs) and :func:`untied_over_balanced_optimum` on ``large_spectrum`` (arrays
    ``(D_large,)``, close to ``D → ∞``), for each depth ``L >= 2`` in ``depths``.

    Returns
    -------
    UntiedOptimumChecks
    """
    return UntiedOptimumChecks(
        {L: balanced_optimum_stability(*spectrum, L) for L in depths},
        {L: untied_over_balanced_optimum(*large_spectrum, L) for L in depths},
        len(large_spectrum[0]),
    )


@dataclass(frozen=True)
class LabelNoiseComparison:
    """Untied SGD with label noise at finite context against Eq. (122) (:func:`untied_label_noise_comparison`).

    Attributes
    ----------
    t : ndarray, shape (steps + 1,)
    gamma, loss_eq122 : ndarray, shape (steps + 1,)
        The balanced flow on Eq. (122) and its excess loss.
    loss_exact, loss_noise_free : ndarray, shape (steps + 1,)
        Along the same ``γ(t)``: the exact noise term (``Σ̂`` kept) and Eq. (122) without its noise term.
    sim_curves : ndarray, shape (seeds, steps)
        Per-run training loss minus the query noise ``σ²``.
    sim_late : ndarray, shape (seeds,)
        Per-run late excess loss (mean over steps ``[steps/2, steps)``).
    eq122_late, exact_late, gamma_late : float
        Late means of the two theories and of ``γ``.
    eq122_se : float
        Monte Carlo standard error of Eq. (122) at ``gamma_late``.
    noise_term_late : float
        Eq. (122) minus its noise-free part at ``gamma_late``.
    se_total : float
        Standard error of the mean of ``sim_late`` and ``eq122_se`` in quadrature.
    own_late : ndarray, shape (seeds,)
        Per-run late mean of Eq. (122) evaluated on that run's own layer traces ``γ^ℓ(t)`` (not the balanced
        flow): ``sim_late − own_late`` is the SGD's excess over Eq. (122) at the layers it reached.
    """

    t: np.ndarray
    gamma: np.ndarray
    loss_eq122: np.ndarray
    loss_exact: np.ndarray
    loss_noise_free: np.ndarray
    sim_curves: np.ndarray
    sim_late: np.ndarray
    eq122_late: float
    exact_late: float
    gamma_late: float
    eq122_se: float
    noise_term_late: float
    se_total: float
    own_late: np.ndarray | None = None

    def z(self, theory_late: float) -> float:
        """``|mean(sim_late) − theory_late| / se_total``."""
        return abs(self.sim_late.mean() - theory_late) / self.se_total

    def metrics(self) -> dict[str, float]:
        """The book's metrics of the label-noise comparison (power: 3 ``se_total`` against the noise term)."""
        return {
            "untied_noise_late_excess_sim": float(self.sim_late.mean()),
            "untied_noise_late_excess_sim_se": float(standard_error(self.sim_late)),
            "untied_noise_late_excess_eq122": self.eq122_late,
            "untied_noise_late_excess_eq122_se": self.eq122_se,
            "untied_noise_late_excess_exact": self.exact_late,
            "untied_noise_late_excess_se_total": self.se_total,
            "untied_noise_late_z_eq122": self.z(self.eq122_late),
            "untied_noise_late_z_exact": self.z(self.exact_late),
            "untied_noise_term_late": self.noise_term_late,
            "untied_noise_power_over_noise_term": 3 * self.se_total / self.noise_term_late,
            "untied_noise_gamma_late_eq122": self.gamma_late,
        }


def untied_label_noise_comparison(
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    P: int,
    L: int,
    sigma: float,
    B: int,
    eta: float,
    steps: int,
    seeds: int,
    n_draws: int,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
) -> LabelNoiseComparison:
    """Untied layers on contexts of ``P`` tokens with label noise ``σ`` against Eq. (122) (App. G.1.2).

    Theory: :func:`iclcore.dmft.untied.untied_noisy_flow` on ``n_draws`` context covariances (generator
    ``seed + 77``), and along it :func:`iclcore.dmft.untied.untied_noisy_loss` with the exact noise term and
    with ``σ = 0``. SGD: ``seeds`` runs (torch seeds ``seed + 9000 + r``) on ``D`` queries per context with
    noisy labels, tasks of :func:`iclcore.parallel.map_configs`; their loss minus ``σ²`` is the excess loss.
    The late window is steps ``[steps // 2, steps)`` (the loss before the update of step ``k`` is at ``t_k``).

    Returns
    -------
    LabelNoiseComparison
    """
    t = eta * np.arange(steps + 1)
    draws = context_draws(lam, omega, P, rng=np.random.default_rng(seed + 77), n_draws=n_draws)
    gam, loss122 = untied_noisy_flow(t, draws, L, sigma=sigma)
    layers = np.repeat(gam[:, None], L, axis=1)
    loss_exact = untied_noisy_loss(layers, draws, sigma, decoupled=False)[0]
    loss_free = untied_noisy_loss(layers, draws, 0.0)[0]
    late = slice(steps // 2, steps)
    jobs = [
        UntiedSGDRun(tuple(lam), tuple(omega), L, B, eta, steps, seed + 9000 + r, P=P, K=len(lam), sigma=sigma,
                     device=device)
        for r in range(seeds)
    ]  # fmt: skip
    sim_late, curves, own_late = [], [], []
    for res in map_configs(untied_sgd_run, jobs, workers, label="label-noise SGD runs"):
        sim_late.append(np.mean(res.loss[late]) - sigma**2)
        curves.append(res.loss - sigma**2)
        own_late.append(float(np.mean(untied_noisy_loss(res.gamma[:-1][late], draws, sigma)[0])))
    sim_late = np.array(sim_late)
    g_late = float(np.mean(gam[late]))
    at_late, se_late = untied_noisy_loss(np.full(L, g_late), draws, sigma)
    eq122_se = float(se_late)
    noise_term = float(at_late - untied_noisy_loss(np.full(L, g_late), draws, 0.0)[0])
    return LabelNoiseComparison(
        t, gam, loss122, loss_exact, loss_free, np.array(curves), sim_late, float(np.mean(loss122[late])),
        float(np.mean(loss_exact[late])), g_late, eq122_se, noise_term,
        float(np.hypot(standard_error(sim_late), eq122_se)), np.array(own_late),
    )  # fmt: skip


def label_noise_batch_metrics(comparisons: dict[int, LabelNoiseComparison]) -> dict[str, float]:
    """The late gap of SGD over Eq. (122) against the batch size (App. G.1.2; the flow is the ``η/B → 0`` limit).

    ``comparisons`` maps three increasing batch sizes (the notebook's ``B``, ``2B``, ``4B``) to the
    :func:`untied_label_noise_comparison` at that ``B`` (all else equal). For each, the gap
    ``mean(sim_late) − eq122_late`` and its ``se_total`` as ``untied_noise_gap_{quick,double,large}_batch``
    and ``..._se``, and the largest batch as ``untied_noise_gap_large_batch_B``: a size series in ``1/B``
    whose limit is 0 if the gap is the SGD noise of the finite batch (leading order ``η/B``). The same against
    Eq. (122) on each run's own layer traces (``own_late``), ``untied_noise_own_gap_{...}_batch`` and ``..._se``
    (SE over runs of the per-run excess, with the theory's Monte Carlo SE in quadrature), leaves out the
    departure of the traces from the balanced flow (the split of the layers).
    """
    batches = list(comparisons)
    if len(batches) != 3 or batches != sorted(set(batches)):
        raise ValueError(f"comparisons: expected three increasing batch sizes, got {batches!r}")
    out: dict[str, float] = {}
    for name, B in zip(("quick", "double", "large"), batches):
        c = comparisons[B]
        out[f"untied_noise_gap_{name}_batch"] = float(c.sim_late.mean() - c.eq122_late)
        out[f"untied_noise_gap_{name}_batch_se"] = c.se_total
        if c.own_late is None:
            raise ValueError(f"comparisons: the comparison at B = {B} has no own-trace values (own_late)")
        excess = c.sim_late - c.own_late
        out[f"untied_noise_own_gap_{name}_batch"] = float(excess.mean())
        out[f"untied_noise_own_gap_{name}_batch_se"] = float(np.hypot(standard_error(excess), c.eq122_se))
    return out | {"untied_noise_gap_large_batch_B": batches[2]}
