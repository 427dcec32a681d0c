"""The figure functions of ``iclcore.dmft.figures`` draw the expected artists from small results (fixed seeds)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from iclcore.dmft import figures, iso, reduced_sgd, sgd_noise  # noqa: E402


@pytest.fixture(scope="module")
def grid():
    return reduced_sgd.iso_sgd_grid(
        [1.0, 2.0], [1, 4], D=4, steps=40, eta0=0.3, anneal_frac=0.25, batch_ratio=2.0, kappa=1.0,
        eval_contexts=50, mc_draws=20, rng=np.random.default_rng(0),
    )  # fmt: skip


def test_iso_sgd_grid_figure_draws_two_curves_per_run_and_four_markers_per_depth(grid):
    fig, ax = plt.subplots(1, 3)
    figures.plot_iso_sgd_grid(ax, grid)
    # (a), (b): smoothed batch loss and flow per alpha at L = 4, per depth at alpha = 1
    assert [len(a.get_lines()) for a in ax[:2]] == [2 * 2, 2 * 2]
    np.testing.assert_array_equal(ax[0].get_lines()[3].get_ydata(), grid.runs[(2.0, 4)].loss_theory)
    # (c): per depth the Catalan line, the final-loss dots, the finite-D crosses, the flow squares; two limits
    assert len(ax[2].get_lines()) == 4 * 2 + 2
    catalan = ax[2].get_lines()[4]
    np.testing.assert_allclose(catalan.get_ydata(), [iso.iso_optimum_closed_form(a, 4)[1] for a in catalan.get_xdata()])
    assert ax[2].get_title() == "(c) final loss, D = 4"
    plt.close(fig)


def test_iso_sgd_grid_figure_names_a_missing_depth_or_alpha(grid):
    fig, ax = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="depth"):
        figures.plot_iso_sgd_grid(ax, grid, depth=8)
    with pytest.raises(ValueError, match="alpha"):
        figures.plot_iso_sgd_grid(ax, grid, alpha=0.5)
    plt.close(fig)


def test_shallow_sgd_sweep_figure_draws_seven_curves_per_setting():
    settings = {n: [dict(alpha=1.0, kappa=1.0, tau=1.0) | {n: v} for v in (1.0, 2.0)] for n in ("tau", "alpha")}
    s = reduced_sgd.shallow_sgd_sweep(settings, D=4, steps=25, eta=0.1, seeds=3, rng=np.random.default_rng(2))
    fig, ax = plt.subplots(2, 2)
    figures.plot_shallow_sgd_sweep(ax, s)
    assert [len(a.get_lines()) for a in ax[0]] == [4 * 2, 4 * 2]  # sim, corrected, printed, finite-D
    assert [len(a.get_lines()) for a in ax[1]] == [3 * 2, 3 * 2]  # smoothed loss, theory, finite-D
    assert ax[0, 0].get_legend() is not None and ax[1, 0].get_legend() is None
    c = s.comparisons["alpha"][1]
    np.testing.assert_array_equal(ax[0, 1].get_lines()[5].get_ydata(), c.theory.param_error)
    np.testing.assert_array_equal(ax[0, 1].get_lines()[5].get_xdata(), np.arange(1, 26))
    with pytest.raises(ValueError, match="ax"):
        figures.plot_shallow_sgd_sweep(ax[0], s)
    plt.close(fig)


def test_result10_figures_draw_the_sweep_and_the_kappa_check():
    sweep = sgd_noise.noise_scale_sweep([0.1, 0.2], D=8, tau=2.0, seeds=3, rng=np.random.default_rng(5))
    check = sgd_noise.kappa_noise_check([0.5, 4.0], D=6, tau=2.0, eta=0.2, seeds=3, rng=np.random.default_rng(6))
    fig, ax = plt.subplots(1, 4)
    figures.plot_noise_scale_sweep(ax[:2], sweep, tau=2.0)
    figures.plot_kappa_noise_check(ax[2:], check)
    # an errorbar with caps is three lines (data and two caps); (a): an errorbar per size, theory, finite-D theory,
    # off-iso triangles; (b): errorbar, D -> inf level, finite-D; (c): mean and noise per kappa, mean path;
    # (d): errorbar, level, finite-D, gap fit, extrapolation errorbar
    assert [len(a.get_lines()) for a in ax] == [3 * 3 + 3, 3 + 2, 2 * 2 + 1, 3 + 3 + 3]
    np.testing.assert_array_equal(ax[0].get_lines()[9].get_ydata(), sweep.theory)
    assert ax[1].get_lines()[3].get_ydata()[0] == sgd_noise.noise_plateau_theory(0.1, 1.0, 1.0, tau=2.0)
    np.testing.assert_array_equal(ax[2].get_lines()[-1].get_ydata(), check.ensembles[0.5].mean_path)
    assert "SGD: N(κ=1/2) / N(κ=4)" in [t.get_text() for t in ax[3].legend().get_texts()]
    with pytest.raises(ValueError, match="eta_ref"):
        figures.plot_noise_scale_sweep(ax[:2], sweep, tau=2.0, eta_ref=0.2)  # the sweep's plateau vs D is at 0.1
    plt.close(fig)
