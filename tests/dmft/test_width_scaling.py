"""Tests for iclcore.dmft.width_scaling: width and depth bottlenecks of the width-N model (Bordelon et al. §4,
Result 8, Figure 5), its SGD against the flow, the deterministic equivalents against Monte Carlo (Eq. 15)
and the bottleneck exponents."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_optimum
from iclcore.dmft.sgd_sweep import ReducedSGDTask, SweepPoint, noise_scaling
from iclcore.dmft.width_mc import width_spectrum_mc
from iclcore.dmft.width_scaling import (
    WidthLateBias,
    bottleneck_exponents,
    deterministic_equivalent_checks,
    eta_batch_bias_metrics,
    eta_batch_configs,
    one_point_against_draws,
    sgd_gamma_path_or_nan,
    width_depth_scaling,
    width_late_bias_runs,
    width_noise_sweep,
    width_sgd_comparison,
)
from iclcore.stats import batch_means

LAM, OM = power_law_spectrum(64, 1.0, 1.0)


def _scaling(rng):
    t = np.concatenate([[0.0], np.geomspace(1e-2, 1e3, 30)])
    return width_depth_scaling(LAM, OM, widths=[16, 32, 64], depths=[1, 2, 4], pairs=[(16, 2), (32, 4)], N_fixed=16,
                               L_fixed=4, n_draws=2, t=t, rng=rng, width_only_depth=2, depth_only_width=16)  # fmt: skip


def test_width_depth_curves_stay_above_their_bottlenecks() -> None:
    rng = np.random.default_rng(0)
    f = _scaling(rng)
    # the loss of the width-N model is the null-space loss plus non-negative terms (module iclcore.dmft.width_mc)
    for cv in f.by_depth.values():
        assert np.all(cv.loss >= f.width_bn_mc * (1 - 1e-12))
    assert np.all(f.by_width[64].loss >= f.depth_bn * (1 - 1e-12))  # N = D reaches at best the depth bottleneck
    assert f.depth_bn == rrs_optimum(LAM, OM, 4)[1]
    assert f.width_sweep.max_increment == np.max(np.diff(f.width_sweep.final))
    m = f.metrics()
    assert len(m) == 25 and m["depth_bottleneck_L2"] == rrs_optimum(LAM, OM, 2)[1]
    assert m["fig5c_width_bn_N16_mc"] == f.specs[16].null_loss


def test_width_spectra_are_the_sequential_draws_and_advance_the_generator() -> None:
    rng = np.random.default_rng(0)
    f = _scaling(rng)
    ref = np.random.default_rng(0)
    for N in (16, 32, 64):  # the order of the set {16, 32, 64}
        spec = width_spectrum_mc(LAM, OM, N, rng=ref, n_draws=1 if N == 64 else 2)
        np.testing.assert_array_equal(f.specs[N].s, spec.s)
    assert rng.standard_normal() == ref.standard_normal()


def test_width_depth_scaling_needs_the_full_width() -> None:
    with pytest.raises(ValueError, match="^widths"):
        width_depth_scaling(LAM, OM, widths=[16], depths=[1], pairs=[], N_fixed=16, L_fixed=1, n_draws=2,
                            t=np.array([0.0, 1.0]), rng=np.random.default_rng(0))  # fmt: skip


@pytest.mark.slow
def test_width_sgd_comparison_error_model() -> None:
    lam, om = power_law_spectrum(8, 1.0, 1.0)
    c = width_sgd_comparison(lam, om, widths=(2, 8), L=2, B=4, eta=0.5, steps=20, seed=0)
    late = slice(2, None)
    for N, (res, th, g_disc) in c.runs.items():
        g, ref = res.gamma[late, 0], th.gamma[late]
        assert c.max_rel_err[N] == np.max(np.abs(g - ref) / ref)
        bias, se = batch_means(g / ref - 1, 10)
        assert c.bias_z[N] == (abs(bias) - np.mean(np.abs(g_disc[late] / ref - 1))) / se
    assert set(c.metrics()) == {
        "fig5d_sgd_gamma_max_rel_err",
        "fig5d_gamma_late_bias_max_z",
        "fig5d_gamma_late_bias_se_max",
    }


def test_eta_batch_metrics_recover_a_planted_exponent_and_a_perfect_collapse() -> None:
    cfg = eta_batch_configs(0.5, 32)
    x = np.array([e / b for e, b in cfg])
    pts = [SweepPoint(e, b, 0.3 * xi, 0.01 * xi, 0.0, np.zeros(2)) for (e, b), xi in zip(cfg, x)]
    m = eta_batch_bias_metrics(noise_scaling(pts, x), B=32, N=16)
    for name in ("noise", "batch", "eta"):
        assert m[f"fig5d_bias_{name}_exponent"] == pytest.approx(1.0, rel=1e-6)
    assert x[4] == x[1] and m["fig5d_bias_collapse_z"] == 0.0  # (eta/4, B/4) and (eta, B) share eta/B
    assert m["fig5d_bias_large_batch"] == pts[2].bias and m["fig5d_bias_large_batch_B"] == 128 and len(m) == 16
    with pytest.raises(ValueError, match="^sweep"):
        eta_batch_bias_metrics(noise_scaling(pts[:3], x[:3]), B=32, N=16)


def test_width_noise_sweep_scale_is_eta_over_b() -> None:
    lam, om = power_law_spectrum(4, 1.0, 1.0)
    sw = width_noise_sweep(lam, om, N=2, L=2, configs=[(0.5, 4), (0.25, 8)], seeds=2, horizon=5.0, seed=0)
    np.testing.assert_array_equal(sw.x, [0.125, 0.03125])
    assert np.all(np.isfinite(sw.bias)) and np.all(sw.se > 0)
    with pytest.raises(ValueError, match="^horizon"):  # 8 steps: t = 0 would be in the late window
        width_noise_sweep(lam, om, N=2, L=2, configs=[(0.5, 4)], seeds=2, horizon=4.0, seed=0)


def test_width_late_bias_statistics_leave_out_diverged_runs() -> None:
    runs = np.array([[0.01, 0.03, np.nan, 0.02], [0.10, 0.12, 0.11, 0.13], [np.nan, np.nan, np.nan, 0.5]])
    lb = WidthLateBias(np.array([2, 4, 8]), runs, disc=np.array([0.01, 0.0, 0.0]))
    np.testing.assert_allclose(lb.bias[:2], [0.01, 0.115])
    np.testing.assert_allclose(lb.se[:2], [0.01 / np.sqrt(3), np.std([0.10, 0.12, 0.11, 0.13], ddof=1) / 2])
    assert np.isnan(lb.se[2]) and list(lb.diverged) == [1, 0, 3]
    m = lb.metrics()
    assert m["fig5d_gamma_late_bias_runs_max_z"] == pytest.approx(0.115 / lb.se[1])  # the width with 1 run is left out
    assert m["fig5d_gamma_late_bias_runs_se_max"] == pytest.approx(max(lb.se[:2]))
    assert m["fig5d_gamma_late_bias_runs_n"] == 4 and m["fig5d_gamma_late_bias_runs_diverged"] == 4


@pytest.mark.slow
def test_width_late_bias_runs_are_the_sweeps_runs_at_its_width() -> None:
    lam, om = power_law_spectrum(4, 1.0, 1.0)
    lb = width_late_bias_runs(lam, om, widths=(2, 4), L=2, eta=0.5, B=4, steps=10, seeds=2, seed=0)
    sw = width_noise_sweep(lam, om, N=2, L=2, configs=[(0.5, 4)], seeds=2, horizon=5.0, seed=0)
    assert lb.bias[0] == sw.bias[0] and lb.se[0] == sw.se[0] and lb.disc[0] == sw.disc[0]
    assert lb.runs.shape == (2, 2) and lb.diverged.sum() == 0
    blown = sgd_gamma_path_or_nan(ReducedSGDTask(tuple(lam), tuple(om), 2, True, 2, 200.0, 1, 10, train_seed=0))
    assert blown.shape == (11,) and np.all(np.isnan(blown))  # a diverged run is a NaN path, not an exception


def test_one_point_against_draws_detects_a_planted_error_of_the_equivalent() -> None:
    lam, om = power_law_spectrum(60, 1.0, 1.0)
    dec = deterministic_equivalent_checks(
        lam, om, widths=[30], alphas=[], L=2, n_nodes=60, rng=np.random.default_rng(2)
    )
    good = one_point_against_draws(dec, lam, om, L=2, n_draws=200, rng=np.random.default_rng(3))
    assert good.metrics()["de_one_point_draws_max_excess_z"] < 3 and good.metrics()["de_one_point_draws_n"] == 200
    c = dec.one_point[0]
    planted = dataclasses.replace(dec, one_point=[dataclasses.replace(c, de=1.2 * c.de)])
    bad = one_point_against_draws(planted, lam, om, L=2, n_draws=200, rng=np.random.default_rng(3))
    assert bad.metrics()["de_one_point_draws_max_rel"] == pytest.approx(
        1.2 * (1 + good.agreement[0].max_rel) - 1, abs=0.05
    )
    assert bad.metrics()["de_one_point_draws_max_excess_z"] > 10  # a 20 % error of the equivalent is resolved
    with pytest.raises(ValueError, match="^lam"):
        one_point_against_draws(dec, lam[:50], om[:50], L=2, n_draws=8, rng=np.random.default_rng(3))


@pytest.mark.slow
def test_two_point_equivalent_equals_the_one_point_one_at_infinite_context() -> None:
    lam, om = power_law_spectrum(120, 1.0, 1.0)
    dec = deterministic_equivalent_checks(lam, om, widths=[15, 30], alphas=[2.0], L=2, n_nodes=120,
                                          rng=np.random.default_rng(1))  # fmt: skip
    assert max(c.two_point_rel for c in dec.one_point) < 1e-4
    assert all(c.max_rel < 0.5 for c in dec.one_point)
    # the relation printed after Eq. 39 overestimates the finite-context loss; the corrected one does not
    assert dec.two_point[0].paper_ratio_min > 1.5 and dec.two_point[0].max_rel < 0.5
    m = dec.metrics()
    assert m["two_point_N_min"] == 120 and len(m) == 10


def test_bottleneck_exponents_match_result_8() -> None:
    widths, depths = np.unique(np.geomspace(64, 400, 6).astype(int)), np.array([8, 16, 32, 64])
    half = bottleneck_exponents(D=20000, nu=1.0, beta=0.5, widths=widths, depths=depths)
    steep = bottleneck_exponents(D=20000, nu=1.0, beta=1.5, widths=widths, depths=depths)
    assert half.width == pytest.approx(0.5, abs=0.1) and half.depth == pytest.approx(0.5, abs=0.1)
    assert steep.width == pytest.approx(1.0, abs=0.15)  # nu min(beta, 1), not nu beta
    assert steep.width_paper == pytest.approx(1.5, abs=0.2)  # Eq. 113 as printed
    assert set(steep.metrics(paper=True)) - set(steep.metrics()) == {"width_exponent_paper_formula_beta15"}
