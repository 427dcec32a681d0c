"""Tests for iclcore.spectra.prompt (seed 000 §4, §12.10)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.lsq.moments import effective_dimension
from iclcore.lsq.tasks import TaskConfig
from iclcore.spectra.mp import mp_atom, mp_edges
from iclcore.spectra.prompt import (
    concentration_experiment,
    concentration_failure_bound,
    concentration_window,
    haar_rotated_covariance,
    prompt_excess_risk_first_order,
    prompt_excess_risk_mc,
    resolvent_perturbation,
    symmetric_inverse_sqrt,
    whitened_covariance,
    whitened_spectrum,
    whitened_spectrum_sample,
    window_violations,
)


@pytest.fixture
def structured_sigma():
    return haar_rotated_covariance(np.geomspace(20.0, 0.05, 12), np.random.default_rng(3))


def test_rotated_covariance_has_requested_spectrum(structured_sigma):
    np.testing.assert_allclose(np.linalg.eigvalsh(structured_sigma), np.sort(np.geomspace(20.0, 0.05, 12)), rtol=1e-12)
    assert np.abs(structured_sigma - np.diag(np.diag(structured_sigma))).max() > 0.1  # not diagonal


def test_inverse_sqrt(structured_sigma):
    W = symmetric_inverse_sqrt(structured_sigma)
    np.testing.assert_allclose(W @ structured_sigma @ W, np.eye(12), atol=1e-11)


def test_whitening_removes_the_design_covariance(structured_sigma):
    """X = G Σ^{1/2} (symmetric root) gives Σ̃_M = GᵀG/M exactly; with a Cholesky root the spectra agree."""
    rng = np.random.default_rng(0)
    G = rng.standard_normal((5, 30, 12))
    w, V = np.linalg.eigh(structured_sigma)
    root = (V * np.sqrt(w)) @ V.T
    St = whitened_covariance(G @ root, structured_sigma)
    np.testing.assert_allclose(St, np.swapaxes(G, 1, 2) @ G / 30, atol=1e-10)
    L = np.linalg.cholesky(structured_sigma)
    ev = whitened_spectrum(G @ L.T, structured_sigma)
    np.testing.assert_allclose(ev, np.linalg.eigvalsh(np.swapaxes(G, 1, 2) @ G / 30), atol=1e-10)


def test_whitened_spectrum_follows_mp_for_gamma_above_one(structured_sigma):
    rng = np.random.default_rng(1)
    K, M = 12, 6
    L = np.linalg.cholesky(structured_sigma)
    ev = whitened_spectrum(rng.standard_normal((400, M, K)) @ L.T, structured_sigma)
    assert np.mean(ev < 1e-9) == pytest.approx(mp_atom(K / M), abs=1e-12)
    # mean eigenvalue = Tr Σ̃/K has expectation 1 exactly; sd = sqrt(2/(M K))/sqrt(400) = 0.0083: 4 sd
    assert ev.mean() == pytest.approx(1.0, abs=0.035)


def test_window_forms():
    assert concentration_window(0.25, 0.1) == pytest.approx((0.16, 2.56))
    assert concentration_window(0.25, 0.1, "paper") == pytest.approx((0.16, 2.56))
    # t beyond 1 - sqrt(gamma): the sharp lower edge is 0, the paper's literal edge is positive
    assert concentration_window(0.25, 0.7)[0] == 0.0
    assert concentration_window(0.25, 0.7, "paper")[0] == pytest.approx(0.04)
    # gamma > 1: sharp edge uses |1 - sqrt(gamma)|
    assert concentration_window(4.0, 0.1) == pytest.approx((0.81, 9.61))
    assert concentration_window(4.0, 0.1, "paper")[0] == pytest.approx(1.21)
    # t = 0 recovers the MP edges
    assert concentration_window(0.3, 0.0) == pytest.approx(mp_edges(0.3))


def test_failure_bound():
    assert concentration_failure_bound(100, 0.0) == 1.0
    assert concentration_failure_bound(200, 0.3) == pytest.approx(2 * math.exp(-9.0))


def test_violation_frequency_below_bound_and_zero_for_moderate_t():
    """Over 400 draws the frequency must not exceed the bound by more than 4 binomial sd;
    at t = 0.3, M = 160 the bound is 1.5e-3, so we expect (and require) zero violations."""
    rng = np.random.default_rng(7)
    S = haar_rotated_covariance(np.geomspace(5, 0.2, 20), rng)
    t = np.array([0.0, 0.05, 0.15, 0.3])
    for M in (80, 20):  # gamma 0.25 and 1.0
        res = concentration_experiment(20, M, t, n_draws=400, rng=rng, Sigma_x=S)
        sd = np.sqrt(np.clip(res.bound * (1 - res.bound), 1e-12, None) / 400)
        assert np.all(res.frequency <= res.bound + 4 * sd + 1e-12)
        assert np.all(np.diff(res.frequency) <= 1e-12)  # monotone in t
    res = concentration_experiment(20, 160, np.array([0.3]), n_draws=400, rng=rng, Sigma_x=S)
    assert res.frequency[0] == 0.0
    # at t = 0 the finite-M spectrum does cross the MP edges sometimes (edge fluctuations)
    res0 = concentration_experiment(20, 80, np.array([0.0]), n_draws=400, rng=rng)
    assert res0.frequency[0] > 0.0


def test_paper_window_fails_for_gamma_at_least_one():
    rng = np.random.default_rng(8)
    res = concentration_experiment(20, 10, np.array([0.1, 0.5]), n_draws=200, rng=rng)  # gamma = 2
    assert np.all(res.frequency_paper == 1.0)  # structural zeros never lie in the literal window
    assert np.all(res.frequency <= 0.05)


def test_window_violations_counts_by_hand():
    ev = np.array([[0.5, 1.0, 1.5], [0.01, 1.0, 1.5], [0.5, 1.0, 5.0]])
    v = window_violations(ev, 3, 12, t=0.0)  # gamma 0.25: window [0.25, 2.25]
    assert v.tolist() == [False, True, True]


def test_resolvent_identity_to_rounding_and_bound_holds(structured_sigma):
    rng = np.random.default_rng(2)
    K = 12
    L = np.linalg.cholesky(structured_sigma)
    for M, lam in ((30, 0.5), (2000, 1.0), (8, 0.3)):
        X = rng.standard_normal((20, M, K)) @ L.T
        Sh = np.swapaxes(X, 1, 2) @ X / M
        rc = resolvent_perturbation(Sh, structured_sigma, lam)
        assert rc.identity_residual.max() < 1e-12  # exact identity: rounding level (kappa <= 1e3 here)
        assert rc.first_order_residual.min() > 1e-6  # the first-order term alone is not exact
        assert np.all(rc.diff_norm[rc.applicable] <= rc.bound[rc.applicable] * (1 + 1e-12))
    assert rc.applicable.sum() == 0  # M = 8 < K: far outside the Neumann regime
    X = rng.standard_normal((20, 20000, K)) @ L.T
    rc = resolvent_perturbation(np.swapaxes(X, 1, 2) @ X / 20000, structured_sigma, 20.0)
    assert rc.applicable.all()


def test_excess_risk_first_order_matches_monte_carlo():
    """M * excess -> C. At M = 400 we allow 3 standard errors plus a 4% O(1/M) correction."""
    cfg = TaskConfig(K=6, M=400, r=2, sigma=0.5, lam=0.2, cond=20.0)
    C = prompt_excess_risk_first_order(cfg.Sigma_x, cfg.Sigma_beta, cfg.sigma, lam=cfg.lam)
    m, se = prompt_excess_risk_mc(cfg, 40000, np.random.default_rng(5))
    assert abs(400 * m - C) <= 3 * 400 * se + 0.04 * C
    # and C is of order d_eff (variance part <= sigma^2 d_eff)
    d = effective_dimension(cfg.Sigma_x, cfg.lam)
    assert cfg.sigma**2 * 0.5 * d < C < 2 * d


@settings(max_examples=10, deadline=None)
@given(lam=st.floats(0.01, 10.0), sigma=st.floats(0.0, 2.0))
def test_property_variance_part_bounded_by_deff(lam, sigma):
    S = np.diag(np.geomspace(4.0, 0.1, 8))
    C_var = prompt_excess_risk_first_order(S, np.zeros((8, 8)), sigma, lam=lam)
    assert C_var <= sigma**2 * effective_dimension(S, lam) + 1e-12


def test_bad_inputs():
    with pytest.raises(ValueError, match="gamma"):
        concentration_window(-1.0, 0.1)
    with pytest.raises(ValueError, match="t"):
        concentration_window(0.5, -0.1)
    with pytest.raises(ValueError, match="window_form"):
        concentration_window(0.5, 0.1, "loose")
    with pytest.raises(ValueError, match="M"):
        concentration_failure_bound(0, 0.1)
    with pytest.raises(ValueError, match="Sigma_x"):
        symmetric_inverse_sqrt(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="Sigma_x"):
        whitened_covariance(np.ones((4, 2)), np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="X"):
        whitened_covariance(np.ones((4, 3)), np.eye(2))
    with pytest.raises(ValueError, match="eigenvalues"):
        window_violations(np.ones((2, 3)), 4, 10, t=0.1)
    with pytest.raises(ValueError, match="lam"):
        resolvent_perturbation(np.zeros((1, 2, 2)), np.eye(2), 0.0)
    assert effective_dimension(np.eye(2), 0.0) == 2  # one d_eff for the package: lam = 0 gives rank
    with pytest.raises(ValueError, match="lam"):
        effective_dimension(np.eye(2), -1.0)
    with pytest.raises(ValueError, match="t_grid"):
        concentration_experiment(3, 5, np.array([-1.0]), n_draws=2, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        concentration_experiment(3, 5, np.array([1.0]), n_draws=2, rng="seed")
    with pytest.raises(ValueError, match="lam"):
        prompt_excess_risk_mc(TaskConfig(K=3, M=5, lam=0.0), 10, np.random.default_rng(0))
    with pytest.raises(TypeError, match="config"):
        prompt_excess_risk_mc({"K": 3}, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="eigenvalues"):
        haar_rotated_covariance(np.array([1.0, -1.0]), np.random.default_rng(0))


def test_whitened_spectrum_sample_has_the_mp_atom_and_a_small_ks_distance():
    rng = np.random.default_rng(11)
    Sigma = haar_rotated_covariance(np.geomspace(10.0, 1.0, 20), rng)
    wide = whitened_spectrum_sample(Sigma, 2.0, 40, rng=np.random.default_rng(0))  # M = 10 < K = 20
    assert wide.M == 10 and wide.eigenvalues.shape == (40, 20) and wide.raw.shape == (800,)
    assert wide.zero_fraction == pytest.approx(0.5)  # the atom 1 - 1/gamma: K - M structural zeros per draw
    assert wide.nonzero.size == 400 and np.all(wide.nonzero > 1e-6)
    tall = whitened_spectrum_sample(Sigma, 0.25, 200, rng=np.random.default_rng(1))
    assert tall.zero_fraction == 0.0
    assert tall.ks < 5 * tall.ks_se + 0.02  # finite-K edge effects: O(1/K) in the KS distance
    again = whitened_spectrum_sample(Sigma, 0.25, 200, rng=np.random.default_rng(1))
    assert np.array_equal(again.eigenvalues, tall.eigenvalues)  # a fixed function of the generator
    with pytest.raises(ValueError, match="n_draws"):
        whitened_spectrum_sample(Sigma, 0.5, 1, rng=rng)
