"""iclcore.stats regressions: lines, power laws and least squares with standard errors, win rates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclcore.stats import (
    batch_means,
    binomial_excess_z,
    binomial_standard_error,
    fit_line,
    fit_offset_power_law,
    fit_power_law,
    fit_power_law_drift,
    fit_power_law_exponent,
    fit_power_law_weighted,
    fit_weighted_line,
    inverse_size_extrapolation,
    least_squares,
    monte_carlo_agreement,
    power_law_design,
    relative_bias,
    weighted_least_squares,
    win_rate,
)


def test_fit_line_residual_standard_error_matches_scipy_linregress() -> None:
    import scipy.stats

    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 5.0, 12)
    y = 1.5 - 0.7 * x + 0.3 * rng.standard_normal(x.size)
    f = fit_line(x, y)
    ref = scipy.stats.linregress(x, y)
    assert f.slope == pytest.approx(ref.slope, rel=1e-12)
    assert f.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert f.slope_se == pytest.approx(ref.stderr, rel=1e-10)
    assert f.intercept_se == pytest.approx(ref.intercept_stderr, rel=1e-10)
    assert (f.n, f.x_min, f.x_max) == (12, 0.0, 5.0)


def test_fit_line_slope_standard_error_is_the_spread_of_the_slope_over_noise_draws() -> None:
    """Both error models: residual SEs and SEs propagated from given y errors match the Monte Carlo spread."""
    rng = np.random.default_rng(1)
    x = np.linspace(1.0, 3.0, 8)
    se = np.linspace(0.05, 0.4, 8)  # heteroscedastic, known
    y = 2.0 + x + se * rng.standard_normal((4000, 8))
    slopes = np.array([fit_line(x, yy).slope for yy in y[:400]])
    propagated = fit_line(x, y[0], y_se=se)
    mc = np.polyfit(x, y.T, 1)[0]
    assert propagated.slope_se == pytest.approx(mc.std(), rel=0.05)
    homo = 0.2 + 0 * x
    y_h = 2.0 + x + 0.2 * rng.standard_normal((400, 8))
    resid_se = np.array([fit_line(x, yy).slope_se for yy in y_h])
    assert np.mean(resid_se) == pytest.approx(fit_line(x, y_h[0], y_se=homo).slope_se, rel=0.1)
    assert slopes.mean() == pytest.approx(1.0, abs=4 * slopes.std() / math.sqrt(slopes.size))


def test_fit_line_of_several_series_equals_the_fits_one_by_one() -> None:
    rng = np.random.default_rng(2)
    x = np.arange(6.0)
    Y = rng.standard_normal((6, 3))
    f = fit_line(x, Y)
    for j in range(3):
        g = fit_line(x, Y[:, j])
        assert f.slope[j] == pytest.approx(g.slope, rel=1e-12)
        assert f.slope_se[j] == pytest.approx(g.slope_se, rel=1e-12)


def test_fit_line_two_points_has_no_residual_standard_error() -> None:
    f = fit_line([0.0, 1.0], [0.0, 2.0])
    assert f.slope == pytest.approx(2.0) and math.isnan(f.slope_se)


def test_fit_line_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="^x:"):
        fit_line([1.0], [1.0])
    with pytest.raises(ValueError, match="^x:"):
        fit_line([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="^y:"):
        fit_line([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="x, y"):
        fit_line([1.0, 2.0], [1.0, np.nan])
    with pytest.raises(ValueError, match="^y_se:"):
        fit_line([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], y_se=[-1.0, 1.0, 1.0])


def test_fit_weighted_line_matches_the_normal_equations_and_ignores_a_noisy_point() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 2.0, 3.0, 10.0])
    se = np.array([0.1, 0.1, 0.1, 1e4])
    f = fit_weighted_line(x, y, se)
    assert f.slope == pytest.approx(1.0, abs=1e-6) and f.intercept == pytest.approx(0.0, abs=1e-6)
    X = np.column_stack([np.ones(4), x])
    ref = weighted_least_squares(X, y, 1.0 / se**2)
    assert [f.intercept, f.slope] == pytest.approx(list(ref.coef), rel=1e-9)
    assert [f.intercept_se, f.slope_se] == pytest.approx(list(ref.coef_se), rel=1e-9)
    with pytest.raises(ValueError, match="^y_se:"):
        fit_weighted_line(x, y, 0 * se)


def test_fit_power_law_recovers_exponent_amplitude_and_window() -> None:
    x = np.geomspace(2.0, 200.0, 9)
    f = fit_power_law(x, 5.0 * x**-1.25)
    assert f.exponent == pytest.approx(1.25, rel=1e-12)
    assert f.amplitude == pytest.approx(5.0, rel=1e-12)
    assert f.slope_se == pytest.approx(0.0, abs=1e-12)
    assert (f.x_min, f.x_max) == pytest.approx((2.0, 200.0))
    with pytest.raises(ValueError, match="positive"):
        fit_power_law(x, -x)


def test_fit_power_law_relative_errors_give_the_log_slope_standard_error() -> None:
    x = np.array([40.0, 80.0, 160.0, 320.0])
    y = 1.0 / x
    se = 0.1 * y
    f = fit_power_law(x, y, y_se=se)
    xc = np.log(x) - np.log(x).mean()
    assert f.slope_se == pytest.approx(0.1 / math.sqrt(np.sum(xc**2)), rel=1e-12)


def test_fit_power_law_weighted_recovers_exponent_and_its_standard_error() -> None:
    """Noisy samples y = A x^p (SE given, some y near zero or negative): the fitted p is within a few
    of its reported SEs, and over repeated noise draws the spread of p matches the mean reported SE."""
    x = np.array([1 / 256, 1 / 128, 1 / 64, 1 / 32, 1 / 16])
    se = np.full(x.size, 2e-3)
    rng = np.random.default_rng(3)
    ps, pses = [], []
    for _ in range(200):
        y = 2.0 * x**1.2 + se * rng.standard_normal(x.size)
        a, p, p_se = fit_power_law_weighted(x, y, se)
        ps.append(p)
        pses.append(p_se)
    ps = np.array(ps)
    assert abs(ps.mean() - 1.2) < 4 * ps.std() / np.sqrt(ps.size) + 0.02
    assert 0.7 < ps.std() / np.mean(pses) < 1.4
    # exact data: the fit is exact
    a, p, _ = fit_power_law_weighted(x, 3.0 * x**-0.5, se)
    assert a == pytest.approx(3.0, rel=1e-6) and p == pytest.approx(-0.5, abs=1e-6)
    with pytest.raises(ValueError):
        fit_power_law_weighted(x[:2], x[:2], se[:2])
    with pytest.raises(ValueError):
        fit_power_law_weighted(x, x, -se)


def test_fit_power_law_drift_zero_for_pure_power_law_and_sees_curvature() -> None:
    """A pure power law has no drift; y = x^-1 (1 + 1/x) has a local slope that moves across the
    window, and the drift is the difference of the half-window fits."""
    x = np.geomspace(1.0, 1e3, 20)
    assert fit_power_law_drift(x, 3.0 * x**-0.7) == pytest.approx(0.0, abs=1e-10)
    y = x**-1.0 * (1 + 1 / x)
    d = fit_power_law_drift(x, y)
    assert d == pytest.approx(abs(fit_power_law_exponent(x[:10], y[:10]) - fit_power_law_exponent(x[10:], y[10:])))
    assert d > 0.05
    with pytest.raises(ValueError, match="x, y"):
        fit_power_law_drift(x[:3], y[:3])


def test_fit_offset_power_law_extrapolates_the_limit() -> None:
    x = np.array([64.0, 128.0, 256.0, 512.0, 1024.0])
    a, b, q = fit_offset_power_law(x, 0.3 - 4.0 * x**-0.7, p0=[0.2, -1.0, 0.5])
    assert (a, b, q) == pytest.approx((0.3, -4.0, 0.7), rel=1e-6)
    with pytest.raises(ValueError, match="^p0:"):
        fit_offset_power_law(x, x, p0=[1.0, 2.0])


def test_least_squares_with_a_finite_size_correction_recovers_the_asymptotic_slope() -> None:
    """log y = a + b log x + c/x exactly: the corrected fit returns b, a plain log-log fit does not."""
    x = np.array([50.0, 100.0, 200.0, 400.0, 800.0])
    y = np.exp(0.5 - 1.0 * np.log(x) + 30.0 / x)
    f = least_squares(power_law_design(x, 1), np.log(y))
    assert f.coef == pytest.approx([0.5, -1.0, 30.0], rel=1e-8)
    assert abs(fit_power_law(x, y).slope + 1.0) > 0.05  # the plain log-log slope is biased by the correction
    draws = np.column_stack([np.log(y), np.log(y) + 0.1])
    assert least_squares(power_law_design(x, 1), draws).coef[1] == pytest.approx([-1.0, -1.0], rel=1e-8)


def test_least_squares_standard_errors_match_the_line_fit() -> None:
    rng = np.random.default_rng(4)
    x = np.linspace(0.0, 1.0, 10)
    y = x + 0.1 * rng.standard_normal(10)
    f = least_squares(np.column_stack([np.ones(10), x]), y)
    g = fit_line(x, y)
    assert f.coef_se == pytest.approx([g.intercept_se, g.slope_se], rel=1e-9)


def test_weighted_least_squares_equal_weights_give_ordinary_least_squares() -> None:
    rng = np.random.default_rng(5)
    X = power_law_design(np.geomspace(10.0, 1000.0, 7), 2)
    y = rng.standard_normal(7)
    assert weighted_least_squares(X, y, np.full(7, 3.0)).coef == pytest.approx(least_squares(X, y).coef, rel=1e-8)
    with pytest.raises(ValueError, match="^weights:"):
        weighted_least_squares(X, y, np.zeros(7))
    with pytest.raises(ValueError, match="^design:"):
        weighted_least_squares(X[:2], y[:2], np.ones(2))


def test_win_rate_is_a_share_with_binomial_standard_error() -> None:
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 400))
    w, se = win_rate(a, b)
    assert w == np.mean(a < b)
    assert se == pytest.approx(math.sqrt(w * (1 - w) / 400), rel=1e-15)
    # coverage of the binomial SE: rates over fresh draws spread by about the SE
    rates = [win_rate(*rng.standard_normal((2, 400)))[0] for _ in range(300)]
    assert np.std(rates) == pytest.approx(binomial_standard_error(0.5, 400), rel=0.15)
    with pytest.raises(ValueError, match="^p:"):
        binomial_standard_error(1.5, 10)
    with pytest.raises(ValueError, match="losses"):
        win_rate([1.0], [1.0, 2.0])


def test_inverse_size_extrapolation_recovers_the_limit_and_measures_curvature() -> None:
    D = np.array([8.0, 16.0, 32.0])
    se = np.full(3, 0.01)
    e = inverse_size_extrapolation(D, 2.0 + 3.0 / D, se)
    assert e.limit == pytest.approx(2.0, rel=1e-12) and e.curvature == pytest.approx(0.0, abs=1e-12)
    assert e.limit_se == pytest.approx(fit_weighted_line(1.0 / D, 2.0 + 3.0 / D, se).intercept_se, rel=1e-15)
    curved = 2.0 + 3.0 / D + 20.0 / D**2  # an O(1/D^2) term: the curvature term sees it
    e2 = inverse_size_extrapolation(D, curved, se)
    assert e2.curvature == pytest.approx(abs(e2.limit - (2 * curved[2] - curved[1])), rel=1e-12)
    assert e2.curvature > 0.01
    with pytest.raises(ValueError, match="2D"):
        inverse_size_extrapolation([8.0, 16.0, 24.0], [1.0, 1.0, 1.0], se)


def test_relative_bias_batch_means_and_z_scores() -> None:
    rng = np.random.default_rng(7)
    ref = np.linspace(1.0, 2.0, 400)
    series = ref * (1.02 + 0.01 * rng.standard_normal(400))
    b = relative_bias(series, ref, reference_sd=0.003, n_blocks=10)
    r = series / ref - 1
    assert b.max_abs == pytest.approx(np.max(np.abs(r)), rel=1e-15)
    m, se = batch_means(r, 10)
    assert (b.bias, b.se) == (m, se)
    assert b.z == pytest.approx(abs(m) / se) and b.z_with_reference == pytest.approx(abs(m) / math.hypot(se, 0.003))
    assert b.bias == pytest.approx(0.02, abs=4 * b.se)
    with pytest.raises(ValueError, match="reference_sd"):
        relative_bias(series, ref, reference_sd=-1.0)


def test_monte_carlo_agreement_grades_a_prediction_against_draws() -> None:
    rng = np.random.default_rng(8)
    draws = 2.0 * (1.0 + 0.05 * rng.standard_normal((1000, 4)))
    good = monte_carlo_agreement(np.full(4, 2.0), draws)
    assert np.array_equal(good.mean, draws.mean(0))
    assert good.max_rel_se == pytest.approx(0.05 / math.sqrt(1000), rel=0.1)
    assert good.max_excess_z < 4 and good.halves_z < 4
    biased = monte_carlo_agreement(np.full(4, 2.02), draws)  # 1 % off: many standard errors
    assert biased.max_excess_z > 4
    # a stated discretisation term absorbs a known relative error
    assert monte_carlo_agreement(np.full(4, 2.02), draws, discretisation=0.02).max_excess_z < 4
    drifting = draws + np.linspace(0.0, 0.2, 1000)[:, None]  # not converged: the halves disagree
    assert monte_carlo_agreement(np.full(4, 2.1), drifting).halves_z > 4
    with pytest.raises(ValueError, match="^prediction:"):
        monte_carlo_agreement(np.ones(3), draws)


def test_binomial_excess_z_measures_a_frequency_above_its_bound() -> None:
    z, sd = binomial_excess_z([0.06, 0.05, 0.0], [0.05, 0.05, 0.0], 400)
    assert sd[0] == pytest.approx(math.sqrt(0.05 * 0.95 / 400), rel=1e-15)
    assert z[0] == pytest.approx(0.01 / sd[0], rel=1e-9)
    assert z[1] < 0 and z[2] < 0  # equality (also 0 = 0 at a zero bound) is no excess
    rng = np.random.default_rng(9)
    freqs = rng.binomial(400, 0.05, size=2000) / 400  # frequencies of a true bound: z of order one
    assert np.mean(binomial_excess_z(freqs, np.full(2000, 0.05), 400)[0] > 3) < 0.01
    with pytest.raises(ValueError, match="bound"):
        binomial_excess_z([0.1], [0.1, 0.2], 10)
    with pytest.raises(ValueError, match="frequency, bound"):
        binomial_excess_z([1.5], [0.1], 10)
