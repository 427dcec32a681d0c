"""Tests for iclcore.dmft.untied_sgd (untied layers against the recurrent theory, Bordelon et al. §5.1,
Figure 8, App. G.1.2) and the noise scaling of iclcore.dmft.sgd_sweep."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import context_draws
from iclcore.dmft.rrs import rrs_gradient_flow
from iclcore.dmft.sgd_sweep import SweepPoint, noise_scaling
from iclcore.dmft.untied import UntiedSGDRun, untied_noisy_loss, untied_sgd_run
from iclcore.dmft.untied_sgd import (
    batch_bias_metrics,
    label_noise_batch_metrics,
    untied_comparison,
    untied_label_noise_comparison,
    untied_optimum_checks,
    untied_over_balanced_optimum,
)
from iclcore.stats import relative_bias

LAM, OM = power_law_spectrum(4, 1.0, 1.0)


def test_untied_comparison_against_the_recurrent_flow() -> None:
    u = untied_comparison(LAM, OM, depths=(2, 3), B=4, eta=0.5, steps=20, seed=0)
    late = slice(2, None)
    for L in (2, 3):
        np.testing.assert_array_equal(u.flow[L][0], rrs_gradient_flow(u.t, LAM, OM, L=L)[0])
        rb = relative_bias(u.runs[L].gamma[late].mean(axis=1), u.flow[L][0][late], n_blocks=10)
        assert u.bias[L] == rb
        g = u.runs[L].gamma
        assert u.final_split[L] == pytest.approx(abs(g[-1, 0] - g[-1, 1]) / g[-1].mean(), rel=1e-15)
        assert u.layer_spread[L] >= 0
    assert set(u.metrics()) == {"fig8_gamma_late_bias_max_z", "fig8_gamma_late_bias_se_max",
                                "fig8_untied_gamma_max_rel_err", "fig8_layer_spread_L3", "fig8_layer_split_L2_final"}  # fmt: skip
    with pytest.raises(ValueError, match="^depths"):
        untied_comparison(LAM, OM, depths=(1,), B=4, eta=0.5, steps=2, seed=0)


def _points(bias, se):
    return [SweepPoint(0.1, 1, b, s, 0.0, np.zeros(2)) for b, s in zip(bias, se)]


def test_noise_scaling_fit_recovers_a_planted_exponent() -> None:
    x = np.array([1 / 8, 1 / 32, 1 / 128])
    sw = noise_scaling(_points(2.0 * x**0.7, [0.01, 0.002, 5e-4]), x)
    a, p, p_se = sw.power_fit()
    assert a == pytest.approx(2.0, rel=1e-6) and p == pytest.approx(0.7, rel=1e-6) and p_se > 0
    assert sw.z(1) == pytest.approx(2.0 * x[1] ** 0.7 / 0.002)
    m = batch_bias_metrics(sw, [8, 32, 128])
    assert m["fig8_bias_batch_exponent"] == p and m["fig8_bias_large_batch_B"] == 128 and len(m) == 10
    with pytest.raises(ValueError, match="^x"):
        noise_scaling(_points([1.0, 2.0], [0.1, 0.1]), [0.5])
    with pytest.raises(ValueError, match="^batches"):
        batch_bias_metrics(sw, [8, 32])


def test_untied_optimum_is_below_the_balanced_one_and_the_balance_is_unstable() -> None:
    lam_big, om_big = power_law_spectrum(400, 1.0, 1.0)
    opt = untied_optimum_checks((LAM, OM), (lam_big, om_big), (2, 3))
    assert opt.transverse_max < 0  # transversally unstable at every depth
    assert opt.gradient_spread_max < 1e-6  # the layers are exchangeable on the balanced manifold
    assert all(0 < r < 1 for r in opt.ratio_large.values())
    assert opt.ratio(2) == opt.stability[2].untied_loss / opt.stability[2].balanced_loss
    assert opt.metrics(small_depths=(3,))["untied_D_large"] == 400
    # two atoms and two layers: each layer removes one mode, the untied minimum is 0
    assert untied_over_balanced_optimum(np.array([1.0, 0.3]), np.ones(2), 2) == 0.0


def test_label_noise_comparison_without_noise_has_no_noise_term() -> None:
    kw = dict(P=8, L=2, B=4, eta=0.2, steps=10, seeds=2, n_draws=20, seed=5)
    quiet = untied_label_noise_comparison(LAM, OM, sigma=0.0, **kw)
    np.testing.assert_array_equal(quiet.loss_exact, quiet.loss_noise_free)
    np.testing.assert_array_equal(quiet.loss_eq122, quiet.loss_noise_free)
    assert quiet.noise_term_late == 0.0
    noisy = untied_label_noise_comparison(LAM, OM, sigma=0.5, **kw)
    assert noisy.noise_term_late > 0
    np.testing.assert_allclose(noisy.sim_late, noisy.sim_curves[:, 5:10].mean(axis=1), rtol=1e-14)
    # own_late: Eq. 122 on the first run's own layer traces over the late window, recomputed from that run
    run0 = untied_sgd_run(UntiedSGDRun(tuple(LAM), tuple(OM), 2, 4, 0.2, 10, 5 + 9000, P=8, K=len(LAM), sigma=0.5))
    draws = context_draws(LAM, OM, 8, rng=np.random.default_rng(5 + 77), n_draws=20)
    own0 = np.mean(untied_noisy_loss(run0.gamma[:-1][5:10], draws, 0.5)[0])
    assert noisy.own_late.shape == (2,) and noisy.own_late[0] == pytest.approx(own0, rel=1e-12)
    m = noisy.metrics()
    assert m["untied_noise_late_z_eq122"] == pytest.approx(
        abs(noisy.sim_late.mean() - noisy.eq122_late) / noisy.se_total, rel=1e-15
    )


def test_label_noise_batch_metrics_are_the_gaps_to_eq122_per_batch() -> None:
    kw = dict(P=8, L=2, sigma=0.5, eta=0.2, steps=10, seeds=2, n_draws=20, seed=5)
    runs = {B: untied_label_noise_comparison(LAM, OM, B=B, **kw) for B in (1, 4, 16)}
    m = label_noise_batch_metrics(runs)
    for name, B in zip(("quick", "double", "large"), (1, 4, 16)):
        assert m[f"untied_noise_gap_{name}_batch"] == runs[B].sim_late.mean() - runs[B].eq122_late
        assert m[f"untied_noise_gap_{name}_batch_se"] == runs[B].se_total
        excess = runs[B].sim_late - runs[B].own_late
        assert m[f"untied_noise_own_gap_{name}_batch"] == pytest.approx(excess.mean(), rel=1e-15)
    assert m["untied_noise_gap_large_batch_B"] == 16
    # the theory does not depend on the batch: only the SGD side of the gap moves
    assert runs[1].eq122_late == runs[16].eq122_late
    with pytest.raises(ValueError, match="comparisons"):
        label_noise_batch_metrics({4: runs[4], 1: runs[1], 16: runs[16]})
