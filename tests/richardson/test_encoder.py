"""Tests for iclcore.richardson.encoder: encoder-only recovery b = G⋆ z + ξ (seed 000 §5.1, seed 001 §3)."""

import numpy as np
import pytest

from iclcore._reference import online_encoder_run_naive
from iclcore.richardson.encoder import (
    EncoderProblem,
    _heldout_moments,
    batch_moments,
    encoder_modal_risk,
    encoder_population_trajectory,
    encoder_risk,
    heldout_risk,
    make_encoder_problem,
    online_encoder_run,
    relative_error,
    sample_encoder_data,
    sgd_multiplicative_excess,
    sgd_stationary_sq_error,
)

MU = np.array([1.0, 0.6, 0.35, 0.2])


def _problem(sigma=0.02, q=12, seed=0):
    return make_encoder_problem(q, MU, sigma, rng=np.random.default_rng(seed))


def _G0(p, seed=1):
    return np.random.default_rng(seed).standard_normal((p.q, p.r)) / 2


def test_closed_form_matches_gd_recursion():
    # boxed §5.1 formula vs the literal recursion G_{s+1} = G_s - η(G_s Σ_z - Σ_bz), 1e-12 relative
    p = _problem()
    G0, eta = _G0(p), 0.7
    traj = encoder_population_trajectory(G0, p, eta, steps=np.arange(61))
    G = G0.copy()
    for s in range(61):
        assert np.abs(traj[s] - G).max() <= 1e-12 * np.abs(G).max()
        G = G - eta * (G @ p.Sigma_z - p.Sigma_bz)


def test_modal_risk_equals_trace_risk():
    p = _problem()
    G0, eta = _G0(p), 0.5
    steps = np.array([0, 1, 5, 40, 200])
    trace = encoder_risk(encoder_population_trajectory(G0, p, eta, steps=steps), p)
    modal = encoder_modal_risk(G0, p, eta, steps=steps)
    np.testing.assert_allclose(modal, trace, rtol=1e-12)
    assert modal[-1] == pytest.approx(p.noise_floor, rel=1e-12)  # converged to the floor σ²


def test_risk_matches_monte_carlo():
    # R_enc(G) = σ² + Tr(EΣ_zE^T)/q against the explicit mean of ||Gz - b||²/q on 2e5 samples (5 SE)
    p = _problem(sigma=0.3)
    G = p.G_star + 0.2 * _G0(p)
    z, b, _ = sample_encoder_data(p, 200_000, np.random.default_rng(5))
    per = np.sum((z @ G.T - b) ** 2, axis=1) / p.q
    se = per.std() / np.sqrt(per.size)
    assert abs(per.mean() - encoder_risk(G, p)) < 5 * se


def test_heldout_moment_form_equals_explicit_mean():
    p = _problem(sigma=0.1)
    rng = np.random.default_rng(2)
    z, b, xi = sample_encoder_data(p, 500, rng)
    Gs = p.G_star[None] + 0.1 * rng.standard_normal((4, p.q, p.r))
    np.testing.assert_allclose(_heldout_moments(p, Gs, z, xi), heldout_risk(Gs, z, b), rtol=1e-12)


def test_batch_moments_have_the_sample_law():
    # mean and variance of entries of Σ̂_z and of the noise part of Σ̂_bz vs their exact values:
    # E Σ̂_z = Σ_z, Var(Σ̂_z[i,i]) = 2 Σ_ii²/B, Var((Σ̂_bz - G⋆Σ̂_z)[a,j]) = σ² Σ_jj / B
    p = _problem(sigma=0.5)
    B, n = 20, 40_000
    Sz, Sbz = batch_moments(p, B, n, rng=np.random.default_rng(3))
    S = p.Sigma_z
    np.testing.assert_allclose(Sz.mean(axis=0), S, atol=5 * np.sqrt(2 / (B * n)))
    var00 = Sz[:, 0, 0].var()
    assert var00 == pytest.approx(2 * S[0, 0] ** 2 / B, rel=0.05)  # 4e4 draws: ~1.4 % s.e.
    noise = Sbz - np.einsum("qi,nij->nqj", p.G_star, Sz)
    assert noise[:, 3, 1].var() == pytest.approx(p.sigma**2 * S[1, 1] / B, rel=0.05)
    assert abs(noise[:, 3, 1].mean()) < 5 * np.sqrt(p.sigma**2 * S[1, 1] / B / n)


def test_online_noise_free_large_batch_tracks_population_curve():
    # σ = 0 and a large batch: the SGD iterate follows the exact curve within 5 % in risk
    p = _problem(sigma=0.0)
    res = online_encoder_run(p, _G0(p), 0.3, batch=20_000, n_steps=200, rng=np.random.default_rng(4), n_eval=2000)
    ratio = res.risk_iterate / res.risk_pred
    assert np.all(np.abs(np.log(ratio)) < 0.05)
    np.testing.assert_allclose(res.rel_err_pred, relative_error(res.G_pop, p.G_star), rtol=1e-14)
    # held-out estimate of a noise-free residual: no cancellation at tiny risks
    assert res.risk_heldout[-1] == pytest.approx(res.risk_iterate[-1], rel=0.1)


def test_online_noisy_run_reaches_the_noise_floor():
    p = _problem(sigma=0.02, q=32)
    res = online_encoder_run(p, _G0(p), 0.5, batch=2000, n_steps=400, rng=np.random.default_rng(6), n_eval=100_000)
    assert res.risk_pred[-1] == pytest.approx(4e-4, rel=1e-10)
    # held-out MC on 1e5 × 32 residuals: relative s.e. sqrt(2/3.2e6) ≈ 8e-4; allow 5 s.e.
    assert abs(res.risk_heldout[-1] / res.risk_pred[-1] - 1) < 4e-3
    assert res.sin2[-1] < 1e-4 and res.rel_err[-1] < 3e-3


def test_stationary_sgd_error_matches_time_average():
    # after burn-in, the time average of ||G_s - G⋆||_F² matches the first-order stationary formula
    # (batch 500: multiplicative-noise corrections are O(1/B) ~ 0.2 %; averaging 2000 correlated
    # steps leaves a few % of Monte Carlo spread, hence the 10 % tolerance)
    p = _problem(sigma=0.1, q=16)
    res = online_encoder_run(
        p, p.G_star.copy() + 1e-3, 0.5, batch=500, n_steps=2500, rng=np.random.default_rng(8), n_eval=10
    )
    sq = np.sum((res.G[500:] - p.G_star) ** 2, axis=(1, 2))
    assert sq.mean() == pytest.approx(sgd_stationary_sq_error(p, 0.5, 500), rel=0.1)


def test_vectorised_and_naive_runs_have_the_same_law():
    # same mean final excess risk over 30 seeds (within 4 combined standard errors)
    p = _problem(sigma=0.2, q=6)
    G0 = _G0(p)

    def excess(fn, seed):
        res = fn(p, G0, 0.4, batch=16, n_steps=30, rng=np.random.default_rng(seed), n_eval=50)
        return res.risk_iterate[-1] - p.noise_floor

    a = np.array([excess(online_encoder_run, s) for s in range(30)])
    b = np.array([excess(online_encoder_run_naive, 100 + s) for s in range(30)])
    se = np.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se


def test_bad_inputs():
    p = _problem()
    with pytest.raises(ValueError, match="eta"):
        online_encoder_run(p, _G0(p), 2.5, batch=10, n_steps=5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="eta"):
        encoder_population_trajectory(_G0(p), p, -0.1, steps=[1])
    with pytest.raises(ValueError, match="G0"):
        encoder_population_trajectory(np.zeros((3, 3)), p, 0.1, steps=[1])
    with pytest.raises(ValueError, match="batch"):
        batch_moments(p, 2, 3, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        sample_encoder_data(p, 3, "seed")
    with pytest.raises(ValueError, match="sigma"):
        EncoderProblem(G_star=np.ones((3, 2)), Sigma_z=np.eye(2), sigma=-1.0)
    with pytest.raises(ValueError, match="Sigma_z"):
        EncoderProblem(G_star=np.ones((3, 2)), Sigma_z=np.diag([1.0, 0.0]), sigma=0.1)
    with pytest.raises(ValueError, match="Sigma_z"):
        EncoderProblem(G_star=np.ones((3, 2)), Sigma_z=np.array([[1.0, 0.5], [0.0, 1.0]]), sigma=0.1)
    with pytest.raises(ValueError, match="mu"):
        make_encoder_problem(4, [1.0, -1.0], 0.1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_steps"):
        online_encoder_run(p, _G0(p), 0.1, batch=10, n_steps=0, rng=np.random.default_rng(0))


def test_sgd_multiplicative_excess_scalar_case_is_exact_to_first_order() -> None:
    # r = 1: E e_{s+1}^2 = e_s^2 ((1 - eta mu)^2 + 2 eta^2 mu^2 / B) exactly (chi-square batch moment)
    p = make_encoder_problem(3, np.array([0.8]), 0.0, rng=np.random.default_rng(0))
    eta, B, s = 0.3, 50, 40
    x = 2 * eta**2 * 0.8**2 / (B * (1 - eta * 0.8) ** 2)
    exact = (1 + x) ** s - 1
    est = sgd_multiplicative_excess(p, eta, B, steps=s)
    assert exact <= est <= exact * (1 + s * x)  # expm1(s x) >= (1 + x)^s - 1, equal to first order
    assert sgd_multiplicative_excess(p, eta, B, steps=0) == 0.0


def test_sgd_multiplicative_excess_matches_simulation_r1() -> None:
    # Monte Carlo of the noise-free SGD risk against the population risk (r = 1, small batch: large excess)
    p = make_encoder_problem(2, np.array([1.0]), 0.0, rng=np.random.default_rng(1))
    eta, B, s = 0.4, 8, 25
    Sz, _ = batch_moments(p, B, s * 20000, rng=np.random.default_rng(2))
    fac = (1 - eta * Sz[:, 0, 0]).reshape(20000, s)
    sim = np.mean(np.prod(fac**2, axis=1)) / (1 - eta) ** (2 * s) - 1
    exact = (1 + 2 * eta**2 / (B * (1 - eta) ** 2)) ** s - 1
    # relative MC error of a mean of 20000 products of 25 squared factors: a few percent
    assert sim == pytest.approx(exact, rel=0.1)
    assert sgd_multiplicative_excess(p, eta, B, steps=s) >= exact


def test_sgd_multiplicative_excess_rejects_large_steps() -> None:
    p = make_encoder_problem(2, np.array([1.0, 0.5]), 0.0, rng=np.random.default_rng(3))
    with pytest.raises(ValueError, match="^eta:"):
        sgd_multiplicative_excess(p, 1.5, 10, steps=5)
    with pytest.raises(ValueError, match="^steps:"):
        sgd_multiplicative_excess(p, 0.5, 10, steps=-1)
