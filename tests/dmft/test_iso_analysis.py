"""The analyses of the ISO chapter (Bordelon et al. §3.1, App. C, Result 10): the optimum checks of
``iclcore.dmft.iso``, the SGD-against-theory comparisons of ``iclcore.dmft.reduced_sgd``, the Result-10
sweeps of ``iclcore.dmft.sgd_noise`` and the identity draws of ``iclcore.dmft.isotropy``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sp_stats

from iclcore.dmft import data, iso, isotropy, reduced_sgd, sgd_noise
from iclcore.lsq.iterates import in_context_gd_predict
from iclcore.stats import standard_error


def test_optimum_checks_reproduce_catalan_and_result2_gap():
    c = iso.iso_optimum_checks(
        grid_alpha=np.array([0.3, 1.0, 2.5]), grid_depths=(1, 3, 8), gain_alpha=np.geomspace(0.1, 10, 50)
    )
    assert c.catalan_max_abs < 1e-10
    assert c.optimum_L1_alpha1 == pytest.approx(0.5, abs=1e-10)  # 1/(1 + alpha), not the printed 1/4
    # Result 2: L*(alpha, 1) - [1 - alpha]_+ = 1/(1 + alpha) for alpha >= 1
    np.testing.assert_allclose(c.depth_gap, 1 / (1 + np.array(c.gap_alphas)), rtol=1e-8)
    assert c.depth_gap_max_dev < 1e-8
    assert c.gain_max == pytest.approx(float(np.max(c.gain)))
    assert c.gain_argmax_alpha == c.gain_alpha[int(np.argmax(c.gain))]
    assert c.gain_inf_argmax_alpha == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="grid_alpha"):
        iso.iso_optimum_checks(grid_alpha=np.array([1.0, np.nan]))


def test_noise_optimum_moves_to_smaller_gamma_and_matches_depth1_closed_form():
    r = iso.iso_noise_optimum(2.0, 4, (0.0, 0.5, 1.0), depths=(1, 2))
    assert r.max_increment < 0  # gamma* decreases with sigma at every depth checked
    assert r.gamma_star[0] == pytest.approx(iso.iso_optimum_closed_form(2.0, 4)[0], rel=1e-8)
    assert r.depth1_vs_closed_form_max_abs < 1e-8  # Gamma* = (1 + (1 + sigma^2)/alpha)^-1 at L = 1
    with pytest.raises(ValueError, match="sigmas"):
        iso.iso_noise_optimum(2.0, 4, (1.0, 0.5))


def test_flow_reach_time_is_the_first_grid_time_past_the_depth1_closed_form():
    # L = 1: L(t) - L* = exp(-2 a0 t) / a0 with a0 = 1 + 1/alpha, L* = 1/(1 + alpha)
    alpha, t = 2.0, np.linspace(0.0, 5.0, 501)
    a0, lstar = 1 + 1 / alpha, 1 / (1 + alpha)
    t_cross = np.log(1 / (0.05 * lstar * a0)) / (2 * a0)
    got = iso.iso_flow_reach_time(alpha, 1, t)
    assert got == t[np.searchsorted(t, t_cross, side="right")]
    with pytest.raises(ValueError, match="rel"):
        iso.iso_flow_reach_time(alpha, 1, t, rel=1.0)


def test_iso_sgd_grid_times_schedule_and_summaries():
    g = reduced_sgd.iso_sgd_grid(
        [1.0, 2.0], [1], D=4, steps=40, eta0=0.3, anneal_frac=0.25, batch_ratio=2.0, kappa=1.0,
        eval_contexts=50, mc_draws=20, rng=np.random.default_rng(0),
    )  # fmt: skip
    for (a, _), r in g.runs.items():
        eta = 0.3 / (1 + 1 / a)
        assert r.result.t[-1] == pytest.approx(30 * eta + 10 * eta / 10, rel=1e-12)  # last quarter at eta/10
        assert r.loss_theory.shape == r.result.t.shape == r.loss_theory_at_batches.shape
        assert r.final_se > 0
    assert g.n_converged == sum(g.converged.values()) >= 1
    assert g.t_reach_deepest_largest_alpha == iso.iso_flow_reach_time(2.0, 1, np.geomspace(1e-2, 1e5, 400))
    assert g.metrics()["fig1c_t_reach_deepest_largest_alpha"] == g.t_reach_deepest_largest_alpha
    assert g.t_final == max(r.result.t[-1] for r in g.runs.values())
    assert g.max_rel_dev_flow == max(abs(r.final - r.loss_theory[-1]) / r.loss_theory[-1] for r in g.runs.values())
    with pytest.raises(ValueError, match="anneal_frac"):
        reduced_sgd.iso_sgd_grid(
            [1.0], [1], D=4, steps=10, eta0=0.3, anneal_frac=1.5, batch_ratio=1.0, kappa=1.0,
            eval_contexts=10, mc_draws=2, rng=np.random.default_rng(0),
        )  # fmt: skip


def test_shallow_sgd_comparison_statistics_and_initial_conditions():
    c = reduced_sgd.shallow_sgd_comparison(1.0, 1.0, 1.0, D=8, steps=30, eta=0.1, seeds=4, rng=np.random.default_rng(1))
    assert c.loss_theory[0] == 1.0 and c.loss_theory_finite_d[0] == 1.0  # the batch loss of step 1 is at Gamma = 0
    np.testing.assert_array_equal(c.param_error, c.param_error_seeds.mean(axis=0))
    assert c.early_se == pytest.approx(float(standard_error(c.param_error_seeds[:, 4])), rel=1e-15)
    assert c.early_sim == c.param_error[4]
    # the printed initial condition C(0) = 1 differs from the corrected C(0) = 1/a0^2 at the first steps
    assert c.early_printed > c.early_corrected
    assert c.plateau.se > 0
    with pytest.raises(ValueError, match="early"):
        reduced_sgd.shallow_sgd_comparison(1.0, 1.0, 1.0, D=4, steps=3, eta=0.1, seeds=2, rng=np.random.default_rng(0))


def test_shallow_sgd_sweep_takes_the_worst_case_and_the_reference():
    settings = {"tau": [dict(alpha=1.0, kappa=1.0, tau=v) for v in (1.0, 2.0)]}
    s = reduced_sgd.shallow_sgd_sweep(settings, D=4, steps=25, eta=0.1, seeds=3, rng=np.random.default_rng(2))
    cs = s.comparisons["tau"]
    assert s.reference is cs[0]
    assert s.max_rel_dev_param_error == max(c.plateau.deviation for c in cs)
    assert s.plateau_max_excess_z == max(c.plateau.excess_z for c in cs)
    assert s.plateau_loss_max_increment == cs[1].loss_plateau - cs[0].loss_plateau
    with pytest.raises(ValueError, match="settings"):
        reduced_sgd.shallow_sgd_sweep({"tau": []}, D=4, steps=25, eta=0.1, seeds=3, rng=np.random.default_rng(2))


def test_plateau_gap_size_scaling_is_the_seed_statistics_of_the_runs():
    rng, steps, start = np.random.default_rng(4), 30, 19
    g = reduced_sgd.plateau_gap_size_scaling(
        [4, 6, 12], alpha=1.0, kappa=1.0, tau=1.0, steps=steps, eta=0.1, seeds=3, rng=rng
    )
    # replay the same draws: the first size's runs
    runs = reduced_sgd.shallow_iso_sgd_runs(
        4, 1.0, 1.0, tau=1.0, eta=0.1, steps=steps, seeds=3, rng=np.random.default_rng(4)
    )
    th = reduced_sgd.shallow_sgd_theory(np.arange(1, steps + 1), 0.1, 1.0, kappa=1.0, tau=1.0)
    lv = runs.param_error[:, start:].mean(axis=1)
    lvl = th.param_error[start:].mean()
    assert g.gap[0] == pytest.approx(lv.mean() / lvl - 1, rel=1e-12)
    assert g.gap_se[0] == pytest.approx(lv.std(ddof=1) / np.sqrt(3) / lvl, rel=1e-12)
    assert np.isfinite(g.exponent) and g.exponent_se > 0
    assert g.metrics()["fig7_gap_double_D_se"] == g.gap_se[2]
    with pytest.raises(ValueError, match="x, y, se"):
        reduced_sgd.plateau_gap_size_scaling(
            [4, 8], alpha=1.0, kappa=1.0, tau=1.0, steps=steps, eta=0.1, seeds=3, rng=rng
        )


def test_block_mean_relative_deviation_of_a_planted_bias():
    theory = np.linspace(1.0, 2.0, 40)
    sim = theory * (1 + np.where(np.arange(40) < 10, 0.5, 0.02))  # the first block (transient) is left out
    assert reduced_sgd.block_mean_relative_deviation(sim, theory, 10) == pytest.approx(0.02, rel=1e-12)
    with pytest.raises(ValueError, match="window"):
        reduced_sgd.block_mean_relative_deviation(sim, theory, 30)


def test_noise_scale_sweep_sizes_theory_slope_and_extrapolation():
    s = sgd_noise.noise_scale_sweep([0.1, 0.2], D=8, tau=2.0, seeds=3, rng=np.random.default_rng(5), eta_ref=0.1)
    assert s.sizes == [4, 8, 16]
    np.testing.assert_array_equal(s.scales, [0.05, 0.1])
    for Dk in s.sizes:
        np.testing.assert_array_equal(s.plateau_mean_se[Dk][:, 0], [p.mean for p in s.plateaus[Dk]])
    # Result 10: C(inf) = b/(1 - a) is of order eta/tau, so its log-log slope is 1 + O(eta)
    assert s.theory[1] / s.theory[0] == pytest.approx(
        sgd_noise.noise_plateau_theory(0.2, 1.0, 1.0, tau=2.0) / sgd_noise.noise_plateau_theory(0.1, 1.0, 1.0, tau=2.0)
    )
    assert s.slope_theory == pytest.approx(np.log(s.theory[1] / s.theory[0]) / np.log(2), rel=1e-12)
    assert 1.0 < s.slope_theory < 1.5
    assert s.slope_limit.limit_se > 0 and s.size_exponent_se > 0
    m = s.metrics()
    assert m["r10_eta_slope_at_D"] == s.slopes[1] and m["r10_noise_plateau_double_D"] == s.size_plateau[2, 0]
    with pytest.raises(ValueError, match="D"):
        sgd_noise.noise_scale_sweep([0.1, 0.2], D=4, tau=1.0, seeds=3, rng=np.random.default_rng(5))
    with pytest.raises(ValueError, match="eta_ref"):
        sgd_noise.noise_scale_sweep([0.2, 0.4], D=8, tau=1.0, seeds=3, rng=np.random.default_rng(5))


def test_kappa_noise_check_ratio_theory_and_t_critical():
    k = sgd_noise.kappa_noise_check([0.5, 4.0], D=6, tau=2.0, eta=0.2, seeds=3, rng=np.random.default_rng(6))
    th = [sgd_noise.noise_plateau_theory(0.2, 1.0, kp, tau=2.0) for kp in (0.5, 4.0)]
    assert k.ratio_theory == th[0] / th[1] > 1  # fewer evaluation points, more SGD noise
    assert k.ratios_finite_d[1] == k.ratio_finite_d
    assert k.ratios[1] == k.ratio  # the ratio at D reuses the ensembles at D
    assert k.t_critical == pytest.approx(sp_stats.t.ppf(1 - 0.01 / 4, 2), rel=1e-14)
    assert len(k.mean_t) == 2 and k.mean_se > 0
    assert k.metrics()["r10_kappa_noise_ratio_at_D"] == k.ratio
    with pytest.raises(ValueError, match="kappas"):
        sgd_noise.kappa_noise_check([0.5], D=6, tau=2.0, eta=0.2, seeds=3, rng=np.random.default_rng(6))


def test_in_context_gd_identity_holds_to_rounding_and_detects_a_wrong_predictor():
    r = isotropy.in_context_gd_identity(in_context_gd_predict, np.random.default_rng(7), draws=6)
    assert r.attention_dev.shape == r.eq4_dev.shape == r.f_scale.shape == (6,)
    assert r.max_abs < 1e-10 * max(1.0, r.max_abs_f)
    wrong = isotropy.in_context_gd_identity(
        lambda G, X, y, Xq, L: np.zeros(Xq.shape[0]), np.random.default_rng(7), draws=6
    )
    assert wrong.max_abs > 1e-3
    with pytest.raises(ValueError, match="draws"):
        isotropy.in_context_gd_identity(in_context_gd_predict, np.random.default_rng(7), draws=0)


def test_symmetrised_flow_summaries():
    lam, om = data.power_law_spectrum(4, 1.0, 1.0)
    r = isotropy.symmetrised_descent(
        "rrs", 4, 2, n_contexts=3, eta=0.3, steps=10, rng=np.random.default_rng(8), lam=lam, omega=om
    )
    assert r.off_iso_max == float(r.off_iso.max()) < 1e-13
    assert r.gamma_vs_scalar_max_rel < 1e-12
    assert r.metrics("rrs") == {
        "rrs_flow_offiso_max": r.off_iso_max,
        "rrs_flow_gamma_vs_scalar_max_rel": r.gamma_vs_scalar_max_rel,
    }


def test_metrics_name_the_fields_of_the_results():
    c = iso.iso_optimum_checks(grid_alpha=np.array([1.0]), grid_depths=(1,), gain_alpha=np.array([0.5, 1.0, 2.0]))
    m = c.metrics()
    assert m["iso_depth_gap_alpha256"] == c.depth_gap[-1] and m["catalan_vs_quadrature_max_abs"] == c.catalan_max_abs
    n = iso.iso_noise_optimum(2.0, 4, (0.0, 1.0), depths=(1,)).metrics()
    assert set(n) >= {"iso_gammastar_L4_alpha2_sigma0", "iso_gammastar_L4_alpha2_sigma1"}
    settings = {"tau": [dict(alpha=1.0, kappa=1.0, tau=v) for v in (1.0, 2.0)]}
    s = reduced_sgd.shallow_sgd_sweep(settings, D=4, steps=25, eta=0.1, seeds=3, rng=np.random.default_rng(2))
    sm = s.metrics()
    assert (
        sm["fig7_param_error_step5_se"] == s.reference.early_se
        and sm["fig7_first5_rel_dev_printed"] == s.early_dev_printed
    )
    no_ref = reduced_sgd.shallow_sgd_sweep(
        settings, D=4, steps=25, eta=0.1, seeds=3, rng=np.random.default_rng(2), reference=("tau", 3.0)
    )
    with pytest.raises(ValueError, match="reference"):
        no_ref.metrics()
    for values in (m, n, sm):
        assert all(np.isfinite(v) for v in values.values())
