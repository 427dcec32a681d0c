"""The analyses of the FS/RRS chapter (Bordelon et al. §3.2–3.3, App. D–F, Result 8): the FS checks of
``iclcore.dmft.fs``, the SGD comparisons of ``iclcore.dmft.reduced_sgd`` and the exponent table of
``iclcore.dmft.scaling``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclcore.dmft import data, fs, reduced_sgd, rrs, scaling


def test_fs_depth_comparison_deeper_is_worse_at_every_time():
    lam, om = data.power_law_spectrum(50, 1.0, 1.0)
    t = np.geomspace(1e-2, 1e6, 40)
    c = fs.fs_depth_comparison(t, lam, om, depths=[1, 4, math.inf])
    assert list(c.curves) == [1, 4, math.inf]
    np.testing.assert_array_equal(c.curves[4], fs.fs_loss_curve(t, lam, om, L=4))
    stack = np.array(list(c.curves.values()))
    assert c.min_rel_gap == float(np.min((stack[1:] - stack[:-1]) / stack[:-1])) > 0
    with pytest.raises(ValueError, match="depths"):
        fs.fs_depth_comparison(t, lam, om, depths=[4, 1])


def test_ood_brittleness_vanishes_at_theta0_and_grows_with_the_angle():
    lam, om = data.power_law_spectrum(6, 0.5, 1.0)
    thetas = np.linspace(0.0, 1.0, 5)
    b = fs.ood_brittleness(lam, om, [1, 4], thetas=thetas, samples=3, rng=np.random.default_rng(0))
    assert b.each.shape == (3, 2, 5)
    np.testing.assert_array_equal(b.mean, b.each.mean(axis=0))
    assert b.at_theta0 < 1e-20  # Gamma = L Sigma^-1 is optimal in distribution
    assert b.min_rel_increment > 0
    # the first sample replayed by hand
    S = fs.random_skew(6, np.random.default_rng(0))
    Sp, Op = (fs.rotated_covariance(np.diag(v), S, thetas[2]) for v in (lam, om))
    assert b.each[0, 1, 2] == fs.ood_loss(4 * np.diag(1 / lam), Sp, Op, L=4)
    with pytest.raises(ValueError, match="thetas"):
        fs.ood_brittleness(lam, om, [1], thetas=thetas[:2], samples=1, rng=np.random.default_rng(0))


def test_printed_fs_solution_is_the_flow_at_twice_the_time():
    lam, om = data.power_law_spectrum(8, 1.0, 1.0)
    at_t, at_2t = fs.fs_paper_solution_deviation(np.geomspace(1e-2, 1e3, 30), lam, om)
    assert at_2t < 1e-12
    assert at_t > 0.05


def test_fs_sgd_comparison_follows_the_closed_form_flow():
    lam, om = data.power_law_spectrum(4, 1.0, 1.0)
    eta = 0.5 / float(np.max(om * lam**3))
    c = reduced_sgd.fs_sgd_comparison(lam, om, [1, 4], steps=400, eta=eta, modes=[1, 2], rng=np.random.default_rng(1))
    r4 = c.runs[4]
    assert c.mode_flow.shape == r4.gamma_diag.shape
    np.testing.assert_array_equal(c.mode_flow, fs.fs_mode_flow(r4.record_t, lam, om, L=4))
    worst = max(
        reduced_sgd.block_mean_relative_deviation(r.batch_loss, fs.fs_loss_curve(r.t_loss, lam, om, L=L), 20)
        for L, r in c.runs.items()
    )
    assert c.loss_deviation == worst
    assert 0 < c.mode_deviation < 0.5  # SGD noise around the flow, not a different flow
    with pytest.raises(ValueError, match="mode_depth"):
        reduced_sgd.fs_sgd_comparison(lam, om, [1], steps=40, eta=eta, modes=[1], rng=np.random.default_rng(1))


def test_rrs_sgd_comparison_scales_the_step_with_depth():
    lam, om = data.power_law_spectrum(4, 1.0, 1.0)
    c = reduced_sgd.rrs_sgd_comparison(lam, om, [1, 8], steps=60, eta=0.5, rng=np.random.default_rng(2))
    assert c.runs[1].t[-1] == pytest.approx(60 * 0.5 / 4, rel=1e-12)  # eta min(1, L/4)
    assert c.runs[8].t[-1] == pytest.approx(60 * 0.5, rel=1e-12)
    np.testing.assert_array_equal(c.loss_theory[8], rrs.rrs_gradient_flow(c.runs[8].t_loss, lam, om, L=8)[1])
    assert c.loss_deviation == max(
        reduced_sgd.block_mean_relative_deviation(r.batch_loss, c.loss_theory[L], 20) for L, r in c.runs.items()
    )


def test_exponent_table_rows_are_the_fits_and_the_predicted_exponents():
    table = scaling.scaling_exponent_table(20000)
    assert len(table) == 18
    assert list(table)[-2:] == ["width_nu2_beta3", "context_nu2_beta3"]
    row = table["tfs_nu0p5_beta1"]
    f = scaling.fitted_scaling_exponent("t_fs", 0.5, 1.0, D=20000)
    e = scaling.scaling_exponents(0.5, 1.0)
    assert (row.resource, row.fitted, row.drift) == ("t (FS)", f.exponent, f.drift)
    assert (row.printed, row.corrected) == (e["t_fs_paper"], e["t_fs_corrected"])
    # the fitted time and bottleneck laws agree with the corrected exponents within 3 drift (the book's error model)
    for key, r in table.items():
        if not key.startswith("depth"):
            assert abs(r.fitted - r.corrected) <= 3 * r.drift, key
    with pytest.raises(ValueError, match="D"):
        scaling.scaling_exponent_table(0)


def test_compute_optimal_shape_exponent_ratio_and_propagated_drift():
    width = scaling.ExponentRow("N", 2.0, 0.1, 3.0, 2.0)
    depth = scaling.ExponentRow("L", 1.0, 0.05, 1.0, 1.0)
    ex, drift = scaling.compute_optimal_shape_exponent(width, depth)
    assert ex == 2.0
    assert drift == pytest.approx(math.hypot(0.1, 2.0 * 0.05), rel=1e-15)
    with pytest.raises(ValueError, match="depth"):
        scaling.compute_optimal_shape_exponent(width, scaling.ExponentRow("L", 0.0, 0.05, 1.0, 1.0))
