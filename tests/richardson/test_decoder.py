"""Tests for iclcore.richardson.decoder (seed 000 §3–4, §12; seed 001 §4)."""

import numpy as np
import pytest

from iclcore._reference import online_decoder_training_naive
from iclcore.linalg import stable_rank
from iclcore.lsq.dynamics import gd_iterate
from iclcore.lsq.moments import closed_form_moments, decoder_risk, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics, sample_prompts
from iclcore.richardson.decoder import (
    checkpoint_table,
    cosine_defect,
    depth_risk,
    empirical_decoder_risk,
    finite_task_estimator,
    finite_task_excess_risk,
    finite_task_experiment,
    linear_attention_readout,
    max_stable_step,
    online_decoder_training,
    predicted_risk_curve,
    prompt_contraction,
    relative_error,
    richardson_identity_residual,
    ridge_matching_contraction,
)

CFG = TaskConfig(K=6, M=30, sigma=0.2, cond=5.0)


def test_linear_attention_readout_is_P_c():
    p = sample_prompts(CFG, 4, np.random.default_rng(0))
    P = np.random.default_rng(1).standard_normal((6, 6))
    assert np.allclose(linear_attention_readout(p.X, p.y, P), p.c_M @ P.T, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="P"):
        linear_attention_readout(p.X, p.y, np.eye(5))
    with pytest.raises(ValueError, match="X, y"):
        linear_attention_readout(p.X, p.y[:, :3], P)


def test_online_batched_equals_naive():
    m = closed_form_moments(CFG)
    eta = max_stable_step(m.C, 0.5)
    run = online_decoder_training(CFG, eta, 7, batch_size=16, rng=np.random.default_rng(2), checkpoints=[0, 3, 7])
    Pn = online_decoder_training_naive(CFG, eta, 7, batch_size=16, rng=np.random.default_rng(2))
    assert run.P.shape == (3, 6, 6) and list(run.steps) == [0, 3, 7]
    assert np.allclose(run.P[-1], Pn, rtol=1e-12, atol=1e-13)
    assert np.all(run.P[0] == 0)


def test_online_mean_follows_population_gd():
    """Averaged over 200 independent online runs, P_s matches P_0 − η Σ(P C − B) (the GD loop) within
    the MC error; and a single large-batch run tracks the exact risk curve within 2%."""
    m = closed_form_moments(CFG)
    eta = max_stable_step(m.C, 0.5)
    Ps = np.stack(
        [
            online_decoder_training(CFG, eta, 5, batch_size=8, rng=np.random.default_rng(100 + i), checkpoints=[5]).P[0]
            for i in range(200)
        ]
    )
    gd = gd_iterate(np.zeros((6, 6)), m.B, m.C, eta=eta, n_steps=5)[-1]
    se = Ps.std(0) / np.sqrt(200)
    assert np.all(np.abs(Ps.mean(0) - gd) <= 5 * se + 1e-12)
    run = online_decoder_training(
        CFG, eta, 60, batch_size=2000, rng=np.random.default_rng(3), checkpoints=[0, 10, 30, 60]
    )
    R_pop = decoder_risk(run.P, m)
    pred = predicted_risk_curve(np.zeros((6, 6)), m, eta, steps=run.steps)
    assert np.all(np.abs(R_pop / pred - 1) < 0.02)


def test_predicted_curve_endpoints():
    m = closed_form_moments(CFG)
    eta = max_stable_step(m.C, 1.0)
    c = predicted_risk_curve(np.zeros((6, 6)), m, eta, steps=[0, 100000])
    assert np.isclose(c[0], np.trace(m.S) / 6, rtol=1e-12)  # R(0) = E‖z⋆‖²/K
    assert np.isclose(c[1], oracle_risk(m), rtol=1e-10)


def test_empirical_and_depth_risk():
    m = closed_form_moments(CFG)
    P = oracle_preconditioner(m)
    p = sample_prompt_statistics(CFG, 20000, np.random.default_rng(4))
    # empirical direct risk of P⋆ vs oracle floor: std error ~1% at n=20000, allow 4%
    assert abs(empirical_decoder_risk(P, p.d, p.z_star) - oracle_risk(m)) < 0.04 * oracle_risk(m)
    # stack-aware
    r = empirical_decoder_risk(np.stack([P, 0 * P]), p.d, p.z_star)
    assert r.shape == (2,) and np.isclose(r[1], np.mean(np.sum(p.z_star**2, 1)) / 6)
    # depth-0 solver error is ‖z†‖²/K
    small = sample_prompt_statistics(CFG, 50, np.random.default_rng(5))
    assert np.isclose(depth_risk(P, small, 0, reference="solution"), np.mean(np.sum(small.z_dagger**2, 1)) / 6)
    # a damped population inverse contracts every prompt (eig(Σ̂Σ⁻¹) < 2 at M/K = 5), so the solver error vanishes
    assert depth_risk(0.5 * np.linalg.inv(CFG.H_infinity), small, 300, reference="solution") < 1e-20
    with pytest.raises(ValueError, match="reference"):
        depth_risk(P, small, 2, reference="x")


def test_alignment_metrics():
    A = np.eye(3)
    assert relative_error(2 * A, A) == pytest.approx(1.0)
    assert cosine_defect(2 * A, A) == pytest.approx(0.0, abs=1e-15)
    assert cosine_defect(np.diag([1.0, -1.0, 0.0]), A) == pytest.approx(1.0)
    assert stable_rank(A) == pytest.approx(3.0)
    assert stable_rank(np.diag([1.0, 0.0, 0.0])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="A"):
        stable_rank(np.zeros((2, 2)))


def test_finite_task_estimator_normal_equation_and_identity():
    rng = np.random.default_rng(6)
    from iclcore.lsq.tasks import sample_decoder_pairs

    d, z = sample_decoder_pairs(CFG, 40, rng)
    P = finite_task_estimator(d, z)
    assert np.allclose(P @ (d.T @ d), z.T @ d, rtol=1e-9, atol=1e-10)  # P̂ Ĉ = B̂
    m = closed_form_moments(CFG)
    exc = finite_task_excess_risk(P, oracle_preconditioner(m), m.C)
    assert np.isclose(decoder_risk(P, m) - oracle_risk(m), exc, rtol=1e-9)
    # N < K: minimum-norm interpolator
    d2, z2 = d[:3], z[:3]
    P2 = finite_task_estimator(d2, z2)
    assert np.allclose(d2 @ P2.T, z2, atol=1e-10)
    with pytest.raises(ValueError, match="d, z"):
        finite_task_estimator(d, z[:, :2])


def test_finite_task_scaling():
    """Mean excess ≈ R(P⋆) K/(N−K−1) within 35% at N = 200 (K=6, 60 repeats), and decreasing in N."""
    m = closed_form_moments(CFG)
    res = finite_task_experiment(CFG, m, [50, 200, 800], n_repeats=60, rng=np.random.default_rng(7))
    mean = res.excess.mean(1)
    assert res.identity_gap < 1e-12
    assert res.d_eff == 6
    assert mean[0] > mean[1] > mean[2]
    # optimism: the training risk is below the population risk R(P⋆) + excess
    assert np.all(res.train_risk.mean(1) < res.oracle_risk + mean)
    ref = res.oracle_risk * 6 / (200 - 7)
    assert abs(mean[1] / ref - 1) < 0.35


def test_prompt_contraction_and_ridge_fit():
    cfg = TaskConfig(K=8, M=64, sigma=0.1, cond=20.0)
    pc = prompt_contraction(cfg, [16, 64, 256, 4096])
    assert np.all(np.diff(pc.spectral_radius) < 0)  # more examples, better contraction
    # diagonal Σ_x and isotropic tasks: P⋆ and H_∞ commute, radius = norm
    assert np.allclose(pc.spectral_radius, pc.operator_norm, rtol=1e-10)
    # large-M limit: P⋆ → Σ_x^{-1}, I − P⋆Σ_x → 0
    assert prompt_contraction(cfg, [10**7]).spectral_radius[0] < 1e-3
    lam = ridge_matching_contraction(cfg, 64, 0.9 * pc.spectral_radius[1])
    assert np.isclose(
        prompt_contraction(cfg.replace(lam=lam), [64]).spectral_radius[0], 0.9 * pc.spectral_radius[1], rtol=1e-8
    )
    with pytest.raises(ValueError, match="target_radius"):
        ridge_matching_contraction(cfg, 64, 5.0)
    with pytest.raises(ValueError, match="M_values"):
        prompt_contraction(cfg, [])


def test_checkpoint_table_fields():
    m = closed_form_moments(CFG)
    P = oracle_preconditioner(m)
    p = sample_prompt_statistics(CFG, 300, np.random.default_rng(8))
    t = checkpoint_table(P, P, p, L=10)
    assert t["violation_rate"] == 0.0
    assert t["rel_dist_oracle"] == 0.0
    assert t["eb_upper"] >= t["depth_risk"]
    assert 0 <= t["ratio_mean"] <= t["ratio_max"] <= 1 + 1e-10
    assert t["mean_spectral_radius"] <= t["mean_contraction"] + 1e-12


def test_training_bad_input():
    m = closed_form_moments(CFG)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="eta"):
        online_decoder_training(CFG, 3.0 / np.linalg.eigvalsh(m.C).max(), 3, batch_size=4, rng=rng)
    with pytest.raises(ValueError, match="n_steps"):
        online_decoder_training(CFG, 0.01, -1, batch_size=4, rng=rng)
    with pytest.raises(ValueError, match="batch_size"):
        online_decoder_training(CFG, 0.01, 3, batch_size=0, rng=rng)
    with pytest.raises(ValueError, match="P0"):
        online_decoder_training(CFG, 0.01, 3, batch_size=4, rng=rng, P0=np.eye(3))
    with pytest.raises(ValueError, match="checkpoints"):
        online_decoder_training(CFG, 0.01, 3, batch_size=4, rng=rng, checkpoints=[5])
    with pytest.raises(ValueError, match="fraction"):
        max_stable_step(m.C, 2.0)


def test_richardson_identity_residual_vanishes_for_the_solution_and_sees_a_wrong_one():
    cfg = TaskConfig(K=5, M=20, sigma=0.1, cond=4.0)
    ev = sample_prompt_statistics(cfg, 30, np.random.default_rng(0))
    P = 0.5 * np.linalg.inv(cfg.H_infinity)
    assert richardson_identity_residual(P, ev.H_M, ev.d, z_dagger=ev.z_dagger, L=8) <= 1e-12 * np.abs(ev.z_dagger).max()
    wrong = ev.z_dagger + 0.01
    assert richardson_identity_residual(P, ev.H_M, ev.d, z_dagger=wrong, L=8) > 1e-3
