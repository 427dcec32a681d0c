"""Tests for the outer-dynamics study of iclcore.richardson.decoder: replicas, the risk trajectory against
the population prediction, the held-out depth study and its certificates, EB coverage, baselines and the
single-run standard errors (main paper §2-3.1, §12; MMNN report §2, §4)."""

import numpy as np
import pytest

from iclcore.lsq.dynamics import gd_trajectory
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs, sample_prompt_statistics
from iclcore.richardson.decoder import (
    OnlineRun,
    eb_coverage_study,
    held_out_depth_study,
    learned_against_baselines,
    max_stable_step,
    online_decoder_training,
    risk_trajectory,
    single_run_errors,
    train_decoder_replicas,
)

CFG = TaskConfig(K=5, M=40, sigma=0.2, cond=4.0)
MOM = closed_form_moments(CFG)
P_STAR = oracle_preconditioner(MOM)
ETA = max_stable_step(MOM.C, 0.5)


def _gd_run(n_steps=30, checkpoints=(0, 5, 10, 20, 30)) -> OnlineRun:
    """The exact population GD trajectory from P_0 = 0, dressed as an online run."""
    cps = np.array(checkpoints)
    P = gd_trajectory(np.zeros((CFG.K, CFG.K)), P_STAR, MOM.C, eta=ETA, steps=cps)
    return OnlineRun(steps=cps, P=P, eta=ETA, batch_size=1)


def test_replicas_reproduce_the_reported_run_and_continue_its_prompt_stream():
    runs = train_decoder_replicas(CFG, ETA, steps=6, batch=16, seed=3, n_checkpoints=4, n_replicas=2)
    rng = np.random.default_rng(3)
    ref = online_decoder_training(CFG, ETA, 6, batch_size=16, rng=rng, checkpoints=np.array([0, 2, 4, 6]))
    assert np.array_equal(runs.run.steps, [0, 2, 4, 6])
    assert np.array_equal(runs.run.P, ref.P)
    assert runs.final.shape == (3, CFG.K, CFG.K) and np.array_equal(runs.final[0], ref.P[-1])
    assert not np.allclose(runs.final[1], runs.final[0]) and not np.allclose(runs.final[2], runs.final[1])
    assert runs.rng.random() == rng.random()
    # more checkpoints than outer times: the rounded duplicates are dropped
    assert np.array_equal(
        train_decoder_replicas(CFG, ETA, steps=2, batch=4, seed=0, n_checkpoints=9, n_replicas=0).run.steps, [0, 1, 2]
    )
    with pytest.raises(ValueError, match="n_replicas"):
        train_decoder_replicas(CFG, ETA, steps=2, batch=4, seed=0, n_checkpoints=2, n_replicas=-1)


def test_population_gd_run_has_exactly_the_predicted_risk():
    d, z = sample_decoder_pairs(CFG, 20000, np.random.default_rng(0))
    traj = risk_trajectory(_gd_run(), MOM, n_steps=30, d=d, z_star=z, s_transient=10)
    assert np.array_equal(traj.dense_steps, np.arange(31))
    assert traj.predicted_dense.shape == (31,) and np.array_equal(
        traj.predicted, traj.predicted_dense[[0, 5, 10, 20, 30]]
    )
    assert np.max(traj.population_rel_discrepancy) < 1e-12  # R(P_s) of population GD is the prediction
    assert np.allclose(traj.rel_err, traj.rel_err_gd, rtol=1e-12)
    assert traj.rel_err[0] == 1.0 and traj.cos_defect[0] == 1.0  # P_0 = 0
    assert np.allclose(traj.modal_weights.sum(1), 1.0) and np.allclose(traj.group_weights.sum(1), 1.0)
    assert np.array_equal(traj.after_transient, [False, False, True, True, True])
    # held-out risk: within sampling error of the exact risk of the same P
    assert np.max(np.abs(traj.observed - traj.population) / traj.observed_se) < 4
    m = traj.metrics()
    assert m["R_direct_final"] == m["R_obs_final"] == traj.observed[-1]
    assert m["max_rel_discrepancy_after_transient"] <= m["max_rel_discrepancy"]
    with pytest.raises(ValueError, match="n_steps"):
        risk_trajectory(_gd_run(), MOM, n_steps=29, d=d, z_star=z, s_transient=10)


def test_depth_study_certifies_and_its_floor_has_the_inverse_wishart_mean():
    cfg = CFG.replace(lam=0.0)
    ev = sample_prompt_statistics(cfg, 4000, np.random.default_rng(1))
    P = np.stack([P_STAR, 0.3 * P_STAR])
    study = held_out_depth_study(P, P_STAR, ev, config=cfg, L=40, n_contraction_checkpoints=2, clip=1.0, delta=0.05)
    assert study.violation_rate == 0.0 and study.identity_error < 1e-12
    assert np.array_equal(study.contraction_index, [0, 1]) and study.contractions.shape == (4, 2)
    assert np.allclose(
        study.final_operator_norm, study.certificate.bounds[:, 1] / study.certificate.bounds[:, 0], rtol=1e-12
    )
    # z_L - z* = (z^dagger - z*) + (z_L - z^dagger): by Cauchy-Schwarz the target risk is the floor up to
    # R_sol + 2 sqrt(R_sol floor) at every checkpoint
    R_sol, floor = study.solution_risk, study.ridge_floor
    assert np.all(np.abs(study.target_risk - floor) <= R_sol + 2 * np.sqrt(R_sol * floor) + 1e-15)
    assert study.oracle_target_risk == study.target_risk[0]
    floors = np.sum((ev.z_dagger - ev.z_star) ** 2, 1) / cfg.K
    assert abs(floors.mean() - study.ridge_floor_closed_form) < 4 * floors.std(ddof=1) / np.sqrt(floors.size)
    assert study.eb_depth.upper >= study.certificate.error_norms[:, -1].mean() ** 2 / cfg.K
    assert "R_floor_closed_form" in study.metrics()
    ridge = held_out_depth_study(
        P, P_STAR, ev, config=cfg.replace(lam=0.1), L=3, n_contraction_checkpoints=1, clip=1.0, delta=0.05
    )
    assert ridge.ridge_floor_closed_form is None and "R_floor_closed_form" not in ridge.metrics()
    with pytest.raises(ValueError, match="P"):
        held_out_depth_study(P_STAR, P_STAR, ev, config=cfg, L=3, n_contraction_checkpoints=1, clip=1.0, delta=0.05)


def test_eb_coverage_holds_and_the_plain_mean_fails_on_the_bernoulli_law():
    kw = dict(L=5, n_pool=2000, n_sample=100, n_repeats=400, clip=1.0, delta=0.1, p_bernoulli=0.3, n_bernoulli=20)
    study = eb_coverage_study(0.5 * P_STAR, np.zeros_like(P_STAR), CFG, rng=np.random.default_rng(2), **kw)
    se = np.sqrt(0.1 * 0.9 / 400)
    assert min(study.coverage.values()) >= 0.9 - 3 * se
    assert study.plain_mean_bernoulli < 0.8  # a "bound" that is only the sample mean covers about half the time
    assert 0.0 <= study.clipped_fraction_initial <= 1.0
    again = eb_coverage_study(0.5 * P_STAR, np.zeros_like(P_STAR), CFG, rng=np.random.default_rng(2), **kw)
    assert again == study
    assert study.metrics()["coverage_min"] == min(study.coverage.values())
    with pytest.raises(ValueError, match="p_bernoulli"):
        eb_coverage_study(P_STAR, P_STAR, CFG, rng=np.random.default_rng(2), **{**kw, "p_bernoulli": 1.0})


def test_learned_against_baselines_scores_the_exact_solve_at_zero_and_a_rival_against_itself_never_wins():
    rng = np.random.default_rng(4)
    train, test = sample_prompt_statistics(CFG, 200, rng), sample_prompt_statistics(CFG, 150, rng)
    reps = np.stack([P_STAR, 0.98 * P_STAR, 1.02 * P_STAR])
    base = learned_against_baselines(reps, train, test, H_inf=CFG.H_infinity, L=6, L_small=2)
    cmp_L, cmp_small = base.comparisons
    assert cmp_L.L == 6 and cmp_small.L == 2 and base.depths == (6, 2)
    assert cmp_L.test_risk["exact"] < 1e-20 and cmp_small.test_risk["exact"] < 1e-20
    assert base.learned_risk[0] < base.learned_risk[1]  # deeper Richardson with a contracting P
    m = base.metrics()
    assert set(base.win_rates) == {f"baseline{t}_win_{r}" for t in ("", "_small") for r in ("scalar", "h_inf")}
    assert m["baseline_scalar_eta"] == cmp_L.baselines["scalar"].param
    # the scalar baseline's own P as the learned P: ties everywhere, no wins
    eta_I = cmp_L.baselines["scalar"].param * np.eye(CFG.K)
    selfish = learned_against_baselines(np.stack([eta_I, eta_I]), train, test, H_inf=CFG.H_infinity, L=6, L_small=2)
    assert selfish.win_rates["baseline_win_scalar"] == (0.0, 0.0)
    with pytest.raises(ValueError, match="P_replicas"):
        learned_against_baselines(P_STAR[None], train, test, H_inf=CFG.H_infinity, L=6, L_small=2)


def test_single_run_errors_of_identical_replicas_are_the_prompt_standard_errors():
    rng = np.random.default_rng(5)
    d, z = sample_decoder_pairs(CFG, 3000, rng)
    ev = sample_prompt_statistics(CFG, 300, rng)
    traj = risk_trajectory(_gd_run(), MOM, n_steps=30, d=d, z_star=z, s_transient=10)
    run_P = _gd_run().P
    depth = held_out_depth_study(run_P, P_STAR, ev, config=CFG, L=4, n_contraction_checkpoints=3, clip=1.0, delta=0.05)
    same = np.stack([run_P[-1]] * 3)
    se = single_run_errors(same, P_STAR, ev, trajectory=traj, depth=depth, L=4, d=d, z_star=z, clip=1.0, delta=0.05)
    assert se["n_replicas"] == 2 and se["rel_err_final_se"] == 0.0 and se["table_stable_rank_se"] < 1e-12
    assert se["R_obs_final_se"] == pytest.approx(traj.observed_se[-1], rel=1e-12)
    assert se["direct_over_depth"] == traj.observed[-1] / depth.target_risk[-1]
    loss_target = np.sum((depth.final_error[:, -1] + ev.z_dagger - ev.z_star) ** 2, 1) / CFG.K
    assert loss_target.mean() == pytest.approx(depth.target_risk[-1], rel=1e-10)
    assert se["R_depth_final_se"] == pytest.approx(loss_target.std(ddof=1) / np.sqrt(300), rel=1e-12)
    spread = single_run_errors(
        np.stack([run_P[-1], 0.9 * run_P[-1]]),
        P_STAR,
        ev,
        trajectory=traj,
        depth=depth,
        L=4,
        d=d,
        z_star=z,
        clip=1.0,
        delta=0.05,
    )
    assert spread["rel_err_final_se"] > 0 and spread["R_obs_final_se"] > se["R_obs_final_se"]
    with pytest.raises(ValueError, match="P_replicas"):
        single_run_errors(same[:1], P_STAR, ev, trajectory=traj, depth=depth, L=4, d=d, z_star=z, clip=1.0, delta=0.05)
