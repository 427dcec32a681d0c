"""Replica estimates of the logistic-mode chapter: fixed point, half times, crossing-time SEs."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.logistic.replicas import (
    crossing_time_standard_error,
    fixed_point_estimate,
    half_time_estimate,
    relative_rms,
    tail_window,
)


def _logistic_modes(t, taus, R, rng, noise=0.0):
    """a_alpha(t) = 1 / (1 + exp(-(t - 4 tau_alpha) / tau_alpha)) per replica, with small per-replica time shifts."""
    shift = noise * rng.standard_normal((R, len(taus)))
    arg = (t[:, None, None] - 4 * np.asarray(taus) - shift[None]) / np.asarray(taus)
    return 1.0 / (1.0 + np.exp(-arg))  # (T, R, d)


def test_tail_window_is_the_last_tenth():
    assert tail_window(100) == slice(-10, None)
    assert tail_window(5) == slice(-1, None)


def test_fixed_point_estimate_of_constant_replicas_has_no_spread():
    T, R, d = 20, 3, 4
    M = np.broadcast_to(np.diag([1.0, 2.0, 3.0, 4.0]), (T, R, d, d)).copy()
    est = fixed_point_estimate(M, np.ones(d))
    np.testing.assert_allclose(est.diagonal, [1.0, 2.0, 3.0, 4.0])
    assert est.offdiag == 0.0 and est.se_rel == 0.0
    M[-2:, 0, 0, 0] += 0.3  # one replica off at the end: the SE sees it, relative to the reference
    M[-1, :, 0, 1] = 0.5
    est = fixed_point_estimate(M, np.full(d, 2.0))
    assert est.se_rel == pytest.approx(np.std([1.3, 1.0, 1.0], ddof=1) / np.sqrt(3) / 2.0, rel=1e-12)
    assert est.offdiag == pytest.approx(0.25, rel=1e-12)  # mean over the 2 tail points
    with pytest.raises(ValueError, match="^M:"):
        fixed_point_estimate(M[:, :1], np.ones(d))


def test_half_time_estimate_finds_the_midpoints_and_the_spread_of_their_increment():
    t = np.linspace(0.0, 200.0, 4001)
    taus = [1.0, 2.0, 4.0, 8.0]
    exact = half_time_estimate(t, _logistic_modes(t, taus, 3, np.random.default_rng(0)))
    np.testing.assert_allclose(exact.times, 4 * np.array(taus), atol=0.05)
    assert exact.min_increment_se == pytest.approx(0.0, abs=0.01)
    noisy = half_time_estimate(t, _logistic_modes(t, taus, 50, np.random.default_rng(1), noise=0.3))
    # smallest increment: modes 1 -> 2, each replica's shifts independent with SD 0.3: SE ~ 0.3 sqrt(2) / sqrt(50)
    assert noisy.min_increment_se == pytest.approx(0.3 * np.sqrt(2 / 50), rel=0.3)
    never = _logistic_modes(t, taus, 3, np.random.default_rng(0))
    never[:, 1, 0] = -1.0  # one replica never reaches its half level on mode 1: its increment is undefined
    assert half_time_estimate(t, never).min_increment_se == np.inf


def test_crossing_time_standard_error_is_the_replica_spread_over_sqrt_r():
    t = np.linspace(0.0, 100.0, 2001)
    a = _logistic_modes(t, [2.0, 4.0], 40, np.random.default_rng(2), noise=0.5)
    se = crossing_time_standard_error(t, a, [0.5, 0.5])
    assert se == pytest.approx(np.full(2, 0.5 / np.sqrt(40)), rel=0.3)


def test_relative_rms():
    assert relative_rms([1.0, 3.0], [1.0, 1.0], 2.0) == pytest.approx(np.sqrt(0.5))
