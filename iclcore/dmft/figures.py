"""Figures of the reduced-Γ model: SGD against its theory (Bordelon et al. Figures 1 and 7; App. C.1, Result 10).

Each function draws the panels of one figure of the paper (or of the book's check of a result) from the
result objects of this family onto the matplotlib ``Axes`` it is given, and returns nothing: the
caller makes the figure, adds legends where the function does not, and saves it
(:func:`iclcore.plotting.finish_figure`). The functions only compute what they draw (theory curves
on a fine grid, smoothed batch losses); every number the book reports comes from the result objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from string import ascii_lowercase
from typing import TYPE_CHECKING

import numpy as np

from iclcore.dmft.iso import iso_optimum_closed_form
from iclcore.dmft.reduced_sgd import IsoSGDGrid, ShallowSGDSweep
from iclcore.dmft.sgd_noise import KappaNoiseCheck, NoiseScaleSweep, noise_plateau_theory
from iclcore.models.probes import trailing_average

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "plot_iso_sgd_grid",
    "plot_shallow_sgd_sweep",
    "plot_noise_scale_sweep",
    "plot_kappa_noise_check",
]


def plot_iso_sgd_grid(ax: Sequence[Axes], grid: IsoSGDGrid, *, depth: int = 4, alpha: float = 1.0) -> None:
    """Figure 1 (a)–(c) of Bordelon et al.: ISO SGD of the reduced-Γ model against the gradient flow (Eq. 7).

    ``ax`` holds three axes. (a) At depth ``depth``, one colour per ``α``: the batch loss smoothed over
    5 steps (thin) and the flow (thick) against theory time ``t = Σ η``. (b) The same at ``alpha`` for
    every depth. (c) Per depth against ``α``: the Catalan optimum (line,
    :func:`~iclcore.dmft.iso.iso_optimum_closed_form`), the Monte Carlo final loss with 2 SE (dots), the
    finite-``D`` optimum (crosses), the flow at the final time (open squares), the ``L → ∞`` limit
    ``[1 − α]₊`` and the printed depth-1 value ``(1 + α)⁻²``. The ``α`` and depths are those of
    ``grid.runs`` in the order they were run; ``(depth, ·)`` and ``(·, alpha)`` must be among them.
    Labels are set; legends are left to the caller.
    """
    alphas = list(dict.fromkeys(a for a, _ in grid.runs))
    depths = list(dict.fromkeys(L for _, L in grid.runs))
    if depth not in depths:
        raise ValueError(f"depth: {depth!r} is not one of the grid's depths {depths}")
    if alpha not in alphas:
        raise ValueError(f"alpha: {alpha!r} is not one of the grid's alphas {alphas}")
    curves = [
        [(grid.runs[(a, depth)], f"α = {a:g}") for a in alphas],
        [(grid.runs[(alpha, L)], f"L = {L}") for L in depths],
    ]
    titles = [f"(a) L = {depth}, varying α", f"(b) α = {alpha:g}, varying L"]
    for j, panel in enumerate(curves):
        for i, (r, lab) in enumerate(panel):
            ax[j].plot(
                r.result.t_loss[1:], trailing_average(r.result.batch_loss, 5)[1:], color=f"C{i}", alpha=0.55, lw=1
            )
            ax[j].plot(r.result.t, r.loss_theory, color=f"C{i}", lw=2, label=lab)
        ax[j].set(xscale="log", yscale="log", xlabel="t = Σ η", title=titles[j])
    ax[0].set_ylabel("ICL loss")
    afine = np.linspace(0.2, 5.0, 200)
    for i, L in enumerate(depths):
        rs = [grid.runs[(a, L)] for a in alphas]
        ax[2].plot(afine, [iso_optimum_closed_form(a, L)[1] for a in afine], color=f"C{i}", label=f"L = {L}")
        ax[2].errorbar(alphas, [r.final for r in rs], yerr=[2 * r.final_se for r in rs], fmt="o", color=f"C{i}", ms=4)
        ax[2].plot(alphas, [r.finite_d for r in rs], "x", color=f"C{i}", ms=5)
        ax[2].plot(alphas, [r.loss_theory[-1] for r in rs], "s", mfc="none", color=f"C{i}", ms=6)
    ax[2].plot(afine, np.maximum(0, 1 - afine), "k--", lw=1, label="L → ∞: [1-α]₊")
    ax[2].plot(afine, 1 / (1 + afine) ** 2, ":", color="0.4", label="printed (1+α)⁻²")
    D = next(iter(grid.runs.values())).result.Gamma.shape[0]
    ax[2].set(yscale="log", xlabel="α = P/D", title=f"(c) final loss, D = {D}", ylim=(1e-3, 1.2))


def plot_shallow_sgd_sweep(ax: np.ndarray, sweep: ShallowSGDSweep) -> None:
    """Figure 7 of Bordelon et al.: depth-1 SGD against the theory of App. C.1 (Result 10, Eqs. 78–79).

    ``ax`` has shape ``(2, m)`` with one column per swept parameter of ``sweep.comparisons`` (in its
    order), one colour per value. Top row: the seed-mean parameter error ``(1/D)|Γ − I|²`` (dots) with
    the corrected theory (solid, ``C(0) = a₀⁻²``), the printed Eqs. 78–79 (dashed, ``C(0) = 1``) and
    the theory with finite-``D`` Wishart moments (dotted); a legend per column. Bottom row: the
    seed-mean batch loss smoothed over 3 steps (dots) with the theory's ICL loss one step earlier
    (solid) and its finite-``D`` version (dotted). Both rows on a log scale against the SGD step.
    """
    if np.shape(ax) != (2, len(sweep.comparisons)):
        raise ValueError(f"ax: expected a (2, {len(sweep.comparisons)}) array of axes, got shape {np.shape(ax)}")
    for j, (name, comps) in enumerate(sweep.comparisons.items()):
        for i, c in enumerate(comps):
            lab, col, steps = f"{name} = {getattr(c, name):g}", f"C{i}", np.arange(1, len(c.param_error) + 1)
            ax[0, j].plot(steps, c.param_error, "o", ms=2.5, color=col)
            ax[0, j].plot(steps, c.theory.param_error, color=col, label=lab)
            ax[0, j].plot(steps, c.theory_printed.param_error, "--", color=col, lw=1)
            ax[0, j].plot(steps, c.theory_finite_d.param_error, ":", color=col, lw=1.2)
            ax[1, j].plot(steps, trailing_average(c.batch_loss, 3), "o", ms=2.5, color=col)
            ax[1, j].plot(steps, c.loss_theory, color=col, label=lab)
            ax[1, j].plot(steps, c.loss_theory_finite_d, ":", color=col, lw=1.2)
        ax[0, j].set(title=f"(7{ascii_lowercase[j]}) varying {name}", yscale="log")
        ax[0, j].legend()
        ax[1, j].set(xlabel="SGD step t", yscale="log")
    ax[0, 0].set_ylabel("(1/D)|Γ − I|²")
    ax[1, 0].set_ylabel("ICL loss")


def plot_noise_scale_sweep(ax: Sequence[Axes], sweep: NoiseScaleSweep, *, tau: float, eta_ref: float = 0.1) -> None:
    """Result 10 (a), (b) of Bordelon et al. (App. C.1): the SGD noise plateau scales as ``η/τ``, not with ``D``.

    ``ax`` holds two axes. (a) The plateau of ``(1/D)|Γ − γ̄ I|²`` with its SE against ``η/τ`` per
    size (labelled with the fitted slope), Result 10's ``C(∞) = b/(1 − a)`` at ``D → ∞`` (solid) and
    with finite-``D`` moments at the middle size (dotted), and the squared off-isotropic fraction
    rescaled to the smallest plateau (triangles); the title gives the slope extrapolated to
    ``D → ∞``. (b) The plateau at ``eta_ref`` against ``D`` with Result 10 at ``D → ∞`` and with
    finite-``D`` moments (:func:`~iclcore.dmft.sgd_noise.noise_plateau_theory` at ``α = κ = 1``,
    batch ratio ``tau``); ``eta_ref`` must be the ``eta_ref`` the sweep was run with. Legends are left to the caller.
    """
    x, off, lim, D = sweep.scales, sweep.offiso_plateau, sweep.slope_limit, sweep.sizes[1]
    if eta_ref not in sweep.etas or not np.array_equal(
        sweep.size_plateau[1], sweep.plateau_mean_se[D][sweep.etas.index(eta_ref)]
    ):
        raise ValueError(f"eta_ref: {eta_ref!r} is not the step size of the sweep's plateau against D")
    for i, Dk in enumerate(sweep.sizes):
        ax[0].errorbar(
            x,
            *sweep.plateau_mean_se[Dk].T,
            fmt="o",
            ms=4,
            capsize=2,
            color=f"C{i}",
            label=f"SGD, D = {Dk}: slope {sweep.slopes[i]:.3f} ± {sweep.slopes_se[i]:.3f}",
        )
    ax[0].plot(x, sweep.theory, "k-", lw=1, label=f"Result 10, C(∞) = b/(1−a): slope {sweep.slope_theory:.3f}")
    ax[0].plot(x, sweep.theory_finite_d, "k:", lw=1, label=f"same, finite-D moments (D = {D})")
    rescaled = off**2 * sweep.plateau_mean_se[D][0, 0] / off[0] ** 2
    ax[0].plot(x, rescaled, "^", color="C4", ms=4, label=f"(off-iso fraction)², rescaled, D = {D}")
    ax[0].set(
        xscale="log",
        yscale="log",
        xlabel="η/τ",
        ylabel="(1/D)|Γ − γ̄ I|²",
        title=f"(a) slope at D → ∞: {lim.limit:.3f} ± {lim.limit_se:.3f} (theory {sweep.slope_theory:.3f})",
    )
    ax[0].set_xticks(x, [f"{v:g}" for v in x])
    ax[0].minorticks_off()
    ax[1].errorbar(sweep.sizes, *sweep.size_plateau.T, fmt="o", capsize=2, label="SGD noise plateau")
    ax[1].axhline(noise_plateau_theory(eta_ref, 1.0, 1.0, tau=tau), color="k", lw=1, label="Result 10 (D → ∞)")
    finite_d = [noise_plateau_theory(eta_ref, 1.0, 1.0, tau=tau, D=Dk) for Dk in sweep.sizes]
    ax[1].plot(sweep.sizes, finite_d, "k:", label="finite-D moments")
    q, q_se = sweep.size_exponent, sweep.size_exponent_se
    ax[1].set(xscale="log", xlabel="D (τ, α, κ fixed)", title=f"(b) η = {eta_ref:g}: plateau ∝ D^{q:.2f} ± {q_se:.2f}")


def plot_kappa_noise_check(ax: Sequence[Axes], check: KappaNoiseCheck) -> None:
    """Result 10 (c), (d) of Bordelon et al. (App. C.1): ``κ = K/D`` leaves the mean path and scales the noise.

    ``ax`` holds two axes. (c) Per ``κ`` the seed-mean ``tr Γ`` (solid) and 10 × the seed-mean noise
    (dashed) against the SGD step, with the exact mean path ``γ̄`` (dotted, no ``κ``). (d) The noise
    ratio ``N(κ₁)/N(κ₂)`` with its SE against ``D``, Result 10's ratio at ``D → ∞`` (solid) and with
    finite-``D`` moments (dotted), the fitted gap ``∝ D^q`` (dashed) and the ``a + c/D`` extrapolation
    (square, drawn at 4 × the largest ``D``). Legends are left to the caller.
    """
    for i, (k, r) in enumerate(check.ensembles.items()):
        steps = np.arange(1, r.gamma.shape[1] + 1)
        ax[0].plot(steps, r.gamma.mean(axis=0), color=f"C{i}", label=f"κ = {k:g}: seed-mean tr Γ")
        ax[0].plot(steps, r.noise.mean(axis=0) * 10, "--", color=f"C{i}", label=f"κ = {k:g}: 10 × noise")
    ax[0].plot(steps, check.ensembles[check.kappas[0]].mean_path, "k:", label="exact mean γ̄ (no κ)")
    ax[0].set(
        xlabel="SGD step",
        title=f"(c) κ: mean unchanged, noise ratio {check.ratio:.2f} (theory {check.ratio_theory:.2f})",
    )
    k1, k2 = (Fraction(k).limit_denominator(1000) for k in check.kappas)
    ax[1].errorbar(
        check.sizes, check.ratios, yerr=check.ratios_se, fmt="o", capsize=2, label=f"SGD: N(κ={k1}) / N(κ={k2})"
    )
    ax[1].axhline(check.ratio_theory, color="k", lw=1, label="Result 10 (D → ∞)")
    ax[1].plot(check.sizes, check.ratios_finite_d, "k:", label="finite-D moments")
    dd = np.geomspace(check.sizes[0], 4 * check.sizes[-1], 40)
    gap = (check.ratios[1] - check.ratio_theory) * (dd / check.sizes[1]) ** check.gap_exponent
    ax[1].plot(
        dd,
        check.ratio_theory + gap,
        "C3--",
        lw=1,
        label=f"gap ∝ D^{check.gap_exponent:.2f} ± {check.gap_exponent_se:.2f}",
    )
    lim = check.ratio_limit
    lab = f"a + c/D fit at D → ∞: {lim.limit:.2f} ± {lim.limit_se:.2f}"
    ax[1].errorbar([4 * check.sizes[-1]], [lim.limit], yerr=[lim.limit_se], fmt="s", color="C2", capsize=2, label=lab)
    ax[1].set(
        xscale="log",
        xlabel="D (square: the 1/D extrapolation, drawn at 4 × the largest D)",
        title="(d) κ noise ratio against D",
    )
