"""Tests of iclcore.richardson.proof_ladder: each rung's closed form matches its iteration to rounding."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.dynamics import covariance_from_spectrum, decoder_moments, quadratic_minimizer
from iclcore.richardson.proof_ladder import (
    check_times,
    closure_bases,
    commuting_closure_control,
    commuting_rung,
    decoder_rung,
    encoder_rung,
    noncommuting_rung,
    quadratic_gd_rung,
)

# ~1 rounding error per step and entry over <= 80 steps of well-conditioned problems
RTOL = 1e-12
STEPS = 80


def test_quadratic_gd_rung_modal_formula_matches_iteration_and_weights_are_a_distribution():
    rng = np.random.default_rng(1)
    K = 5
    Q = np.linalg.qr(rng.standard_normal((K, K)))[0]
    C, B, S = decoder_moments(covariance_from_spectrum(np.linspace(0.5, 1.5, K), Q), np.eye(K), 0.2)
    P_star = quadratic_minimizer(B, C)
    eta = 0.5 / np.linalg.eigvalsh(C)[-1]
    rung = quadratic_gd_rung(np.zeros((K, K)), P_star, (C, B, S), eta=eta, steps=STEPS, with_weights=True)
    assert rung.risk_modal.shape == rung.risk_iteration.shape == (STEPS + 1,)
    assert rung.max_error <= RTOL * rung.risk_modal[0]
    assert rung.max_error_population <= 1e-10 * rung.risk_modal[0]  # a difference of two O(1) risks
    assert rung.max_error_trajectory_rel <= RTOL
    np.testing.assert_allclose(rung.weights.sum(axis=1), 1.0, rtol=RTOL)
    assert np.all((rung.entropy >= 0) & (rung.entropy <= 1 + RTOL))
    assert np.all(np.diff(rung.risk_modal) < 0)  # gradient descent in the stable window decreases the risk
    assert quadratic_gd_rung(np.zeros((K, K)), P_star, (C, B, S), eta=eta, steps=STEPS).weights is None


def test_decoder_rung_step_is_the_requested_fraction_of_the_stability_bound():
    rung = decoder_rung(np.random.default_rng(0), K=6, cond=20.0, noise_var=0.1, eta_frac=0.25, steps=STEPS)
    assert rung.max_error <= RTOL * rung.risk_modal[0]
    assert rung.weights.shape == (STEPS + 1, 6)
    # redraw the same operator: eta * lambda_max(C) = 2 eta_frac
    rng = np.random.default_rng(0)
    H = covariance_from_spectrum(np.geomspace(1 / 20.0, 1.0, 6), haar_orthogonal(6, rng))
    Sigma = covariance_from_spectrum(rng.uniform(0.5, 1.5, 6), haar_orthogonal(6, rng))
    C = decoder_moments(H, Sigma, 0.1)[0]
    assert rung.eta * np.linalg.eigvalsh(C)[-1] == pytest.approx(0.5, rel=1e-14)


def test_encoder_rung_initial_risk_is_the_unnormalised_signal_energy():
    # from G_0 = 0 the excess risk is E||G* z||^2 = tr(G* Sigma_z G*^T) (scale 1)
    rng = np.random.default_rng(3)
    rung = encoder_rung(rng, K=7, r=4, noise_var=0.1, eta_frac=0.45, steps=STEPS)
    rng = np.random.default_rng(3)
    Sigma = covariance_from_spectrum(np.geomspace(0.05, 1.0, 4), haar_orthogonal(4, rng))
    G_star = rng.standard_normal((7, 4)) / np.sqrt(28)
    assert rung.risk_modal[0] == pytest.approx(np.trace(G_star @ Sigma @ G_star.T), rel=RTOL)
    assert rung.max_error <= RTOL * rung.risk_modal[0]
    assert rung.weights is None


def test_commuting_rung_scalar_closure_is_exact_and_the_family_commutes():
    idx = check_times(STEPS, 10)
    rung = commuting_rung(
        np.random.default_rng(2), r=4, noise_var=0.1, eta_e_frac=0.45, eta_d_frac=0.25, steps=STEPS, L=3, check_idx=idx
    )
    assert np.all(rung.error <= 1e-10 * rung.risk_matrix)
    assert rung.max_error_modes_rel <= 1e-11
    assert rung.max_error_product_sum_rel <= 1e-11
    assert rung.commutator <= 1e-10
    np.testing.assert_allclose(rung.mode_terms.sum(axis=1), rung.risk_closure, rtol=RTOL)
    control = commuting_closure_control(rung, 3, idx)
    assert control.mismatch <= 1e-8
    assert control.log_ratio <= 1e-8


def test_noncommuting_rung_product_sum_is_exact_but_no_fixed_basis_closure_tracks_it():
    rng = np.random.default_rng(4)
    idx = check_times(STEPS, 10)
    com = commuting_rung(rng, r=4, noise_var=0.1, eta_e_frac=0.45, eta_d_frac=0.25, steps=STEPS, L=3, check_idx=idx)
    nc = noncommuting_rung(rng, com.model, eta_e_frac=0.45, eta_d_frac=0.25, steps=STEPS, L=3, check_idx=idx)
    assert nc.max_error_product_sum_rel <= 1e-11
    np.testing.assert_allclose(nc.risk_product_sum, nc.risk_matrix, rtol=1e-9)
    assert nc.commutator > 1e-3
    assert set(nc.closure_risks) == set(closure_bases(nc.trajectory, idx))
    assert nc.best_mismatch == min(nc.mismatches.values())
    assert nc.best_log_ratio == min(nc.log_ratios.values())
    assert nc.best_mismatch > 1e3 * commuting_closure_control(com, 3, idx).mismatch


def test_closure_bases_are_orthogonal():
    rng = np.random.default_rng(5)
    idx = check_times(STEPS, 8)
    com = commuting_rung(rng, r=3, noise_var=0.1, eta_e_frac=0.45, eta_d_frac=0.25, steps=STEPS, L=2, check_idx=idx)
    for Q in closure_bases(com.trajectory, idx).values():
        np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)


def test_check_times_are_sorted_unique_and_span_the_run():
    t = check_times(200, 40)
    assert t[0] == 0 and t[-1] == 200 and np.all(np.diff(t) > 0) and t.size <= 40
    assert check_times(3, 40).tolist() == [0, 1, 2, 3]


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="n_check"):
        check_times(10, 0)
    with pytest.raises(ValueError, match="steps"):
        decoder_rung(np.random.default_rng(0), K=3, cond=2.0, noise_var=0.1, eta_frac=0.25, steps=0)
    with pytest.raises(ValueError, match="rng"):
        encoder_rung(None, K=3, r=2, noise_var=0.1, eta_frac=0.25, steps=5)
