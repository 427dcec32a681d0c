"""Aggregates of the prompt-spectrum checks (iclcore.spectra.prompt, main paper §4): the table of
concentration windows and its summary, the resolvent perturbation sweep over M and the fitted exponent of
the prompt excess risk."""

import math

import numpy as np
import pytest

from iclcore.spectra.prompt import (
    ConcentrationResult,
    concentration_experiment,
    concentration_summary,
    concentration_table,
    excess_risk_exponent,
    haar_rotated_covariance,
    resolvent_perturbation,
    resolvent_perturbation_sweep,
)


def _result(K, M, freq, freq_paper):
    t = np.array([0.0, 1.0])
    bound = np.array([min(1.0, 2 * math.exp(-M * tt**2 / 2)) for tt in t])
    nan = np.full(1000, np.nan)
    return ConcentrationResult(K, M, t, np.array(freq), np.array(freq_paper), bound, 1000, nan, nan)


def test_summary_of_a_hand_made_table():
    # gamma 1/4 (M = 16): the window at t = 1 is checked (bound 2e^-8) and never violated;
    # gamma 2 (M = 4): bound 2e^-2 = 0.27 is vacuous; the paper's window fails in every draw
    table = concentration_table(
        [0.25, 2.0], [_result(4, 16, [0.3, 0.0], [0.3, 0.0]), _result(8, 4, [0.2, 0.01], [1.0, 1.0])]
    )
    assert table.rows.shape == (4, 6)
    np.testing.assert_array_equal(table.checked, [False, True, False, False])
    s = concentration_summary(table)
    assert s.n_checked_windows == 1 and s.violations_checked_windows == 0
    assert s.violations_allowed_by_bound_checked == pytest.approx(1000 * 2 * math.exp(-8), rel=1e-12)
    assert (s.violation_freq_t0_max, s.violation_freq_t0_min) == (0.3, 0.2)
    assert s.paper_window_freq_gamma_ge1_min == 1.0 and s.paper_window_freq_gamma_lt1_checked_max == 0.0
    assert s.bound_at_first_zero_freq_min == pytest.approx(2 * math.exp(-8), rel=1e-12)
    assert s.max_freq_minus_bound == pytest.approx(-2 * math.exp(-8), rel=1e-12)  # every frequency below its bound
    assert s.freq_minus_bound_z_max < 0 < s.paper_window_excess_z_max


def test_gaussian_windows_hold_within_binomial_noise():
    # the sharp window's bound 2e^{-Mt^2/2} is a theorem: no frequency exceeds it by 4 binomial sd
    rng = np.random.default_rng(3)
    gammas, K = [0.25, 1.0, 2.0], 10
    res = [concentration_experiment(K, round(K / g), np.array([0.0, 0.3, 0.6]), n_draws=300, rng=rng) for g in gammas]
    s = concentration_summary(concentration_table(gammas, res))
    assert s.freq_minus_bound_z_max <= 4
    assert s.violation_freq_t0_max > 0.05  # at t = 0 the finite-K edges are crossed often


def test_resolvent_sweep_reproduces_the_single_checks_and_the_identity():
    Sigma = haar_rotated_covariance(np.geomspace(4.0, 0.25, 6), np.random.default_rng(0))
    M_grid = np.array([10, 40, 160])
    sweep = resolvent_perturbation_sweep(Sigma, 0.5, M_grid, n_draws=20, rng=np.random.default_rng(1))
    rng, root = np.random.default_rng(1), np.linalg.cholesky(Sigma)
    for M, check in zip(M_grid, sweep.checks):
        X = rng.standard_normal((20, M, 6)) @ root.T
        np.testing.assert_array_equal(
            check.diff_norm, resolvent_perturbation(np.swapaxes(X, 1, 2) @ X / M, Sigma, 0.5).diff_norm
        )
    assert sweep.identity_residual_max < 1e-12 < sweep.first_order_residual_min
    assert sweep.applicable_prompts == sum(int(c.applicable.sum()) for c in sweep.checks) > 0
    assert sweep.norm_bound_ratio_max <= 1 + 1e-12  # the Neumann bound holds where it applies
    assert np.all(sweep.tightness[np.isfinite(sweep.tightness)] <= sweep.norm_bound_ratio_max)


def test_exponent_of_an_exact_power_law():
    M = np.array([40, 80, 160, 320, 640, 1280])
    ex = 3.0 * M**-1.3
    e = excess_risk_exponent(M, ex, 0.01 * ex)
    assert abs(e.slope + 1.3) < 1e-12 and abs(e.corrected + 1.3) < 1e-9 and e.truncation < 1e-9


def test_corrected_exponent_removes_a_finite_size_term():
    # excess = C/M (1 + 20/M): the plain slope is biased away from -1, the 1/M-corrected one is not
    M = np.array([40, 80, 160, 320, 640, 1280])
    ex = 5.0 / M * (1 + 20.0 / M)
    e = excess_risk_exponent(M, ex, 0.01 * ex)
    assert abs(e.slope + 1) > 0.05
    assert abs(e.corrected + 1) < 0.2 * abs(e.slope + 1)
    # the change on adding 1/M^2 is of the order of the bias the truncated fit leaves
    assert 0.5 * abs(e.corrected + 1) < e.truncation < 2 * abs(e.corrected + 1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="excess"):
        excess_risk_exponent(np.arange(1, 6), -np.ones(5), np.ones(5))
    with pytest.raises(ValueError, match="M, excess"):
        excess_risk_exponent(np.arange(1, 4), np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="gammas"):
        concentration_table([0.25], [])
    with pytest.raises(ValueError, match="n_draws"):
        resolvent_perturbation_sweep(np.eye(2), 0.5, np.array([4]), n_draws=0, rng=np.random.default_rng(0))
