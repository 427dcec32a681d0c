"""Regimes of the logistic-mode model against the paper's theory and the exact flow (iclcore.logistic.regimes)."""

import numpy as np
import pytest

from iclcore.logistic import exact, regimes, theory
from iclcore.logistic.model import make_problem
from iclcore.logistic.replicas import tail_window
from iclcore.logistic.sgd import SGDConfig


@pytest.fixture(scope="module")
def run() -> regimes.RegimeRun:
    """A small regime: four modes with timescales 1:2:4:8, a large init so that all four are learned."""
    cfg = SGDConfig(eta=0.05, B=8, epochs=60, init_scale=0.1, replicas=3, log_every=2)
    return regimes.simulate_regime(2.0 ** (-np.arange(4) / 2), 16, 16, config=cfg, rng=np.random.default_rng(0))


def test_max_relative_deviation_is_the_largest_ratio_error() -> None:
    assert regimes.max_relative_deviation([2.0, 0.5, 1.0], [1.0, 1.0, 1.0]) == 1.0
    assert regimes.max_relative_deviation(np.full((2, 3), 3.0), 3.0) == 0.0


def test_regime_starts_at_the_init_and_both_theories_share_its_grid(run) -> None:
    T = run.t.size
    assert run.a.shape == (T, 3, 4) and run.a_paper.shape == run.a_paper1.shape == run.a_exact.shape == (T, 4)
    np.testing.assert_allclose(run.a[0], run.a0, rtol=1e-12)  # a_alpha(0) = init_scale^2 on every replica
    np.testing.assert_allclose(run.a_paper[0], run.a0, rtol=1e-9)
    np.testing.assert_allclose(run.a_exact[0], run.a0, rtol=1e-9)
    np.testing.assert_array_equal(run.a_exact, run.p_exact * run.q_exact)
    cfg = run.res.config
    again = regimes.simulate_regime(run.s, run.N, run.P, config=cfg, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(again.a, run.a)  # seeded: the same draws


def test_fixed_point_comparison_reads_the_end_of_training(run) -> None:
    fp = regimes.fixed_point_comparison(run)
    np.testing.assert_array_equal(fp.paper, theory.paper_fixed_point(run.s, run.N))
    np.testing.assert_allclose(np.diag(fp.estimate.matrix), fp.estimate.diagonal)
    m = fp.metrics("X")
    assert m["fp_X_sim_vs_exact_maxrel"] == regimes.max_relative_deviation(fp.estimate.diagonal, fp.exact)
    assert m["fp_X_sim_vs_exact_maxrel"] < 0.1  # all four modes saturated at the exact fixed point


def test_both_flows_conserve_C_and_the_half_times_follow_the_modes(run) -> None:
    tr = regimes.trajectory_comparison(run)
    assert tr.C_flow < 1e-8  # a theorem of both flows (p -> c p, q -> q / c invariance), integrated from p = q
    np.testing.assert_allclose(tr.C, tr.p_norm2 - tr.q_norm2, atol=1e-12)
    assert np.all(np.diff(tr.th_sim) > 0) and np.all(np.diff(tr.th_paper) > 0)  # larger s_alpha is learned first
    m = tr.metrics("X")
    assert m["thalf_X_min_increment"] == float(np.min(np.diff(tr.th_sim)))
    assert m["C_X_end_over_norm"] == abs(m["C_X_end"]) / float(tr.p_norm2[-1].mean())


def test_end_loss_over_the_whole_run_is_the_mean_loss(run) -> None:
    everything = regimes.end_loss_comparison(run, slice(None))
    assert everything.sim == float(run.res.loss.mean())
    end = regimes.end_loss_comparison(run, tail_window(run.t.size))
    # the minimum of the exact expected loss lies below the mean SGD loss at the end of training
    assert end.exact_min <= end.sim
    m = end.metrics("X")
    assert m["loss_X_sim_vs_exact_rel"] == abs(end.sim / end.exact_min - 1)
    with pytest.raises(ValueError, match="window"):
        regimes.end_loss_comparison(run, 5)


def test_plateaus_give_one_cliff_per_mode(run) -> None:
    pl = regimes.plateau_analysis(run)
    np.testing.assert_array_equal(
        pl.t_cliff, theory.cliff_time(run.a0, run.s, run.N, eta=run.eta, P=run.P, c=run.prob.c)
    )
    assert pl.n_learned == 4 and pl.t_epoch.shape == pl.L_epoch.shape
    # a mode's share of the loss bends more when its s_alpha is larger (curvature ~ s^6 c / tau^2)
    assert np.all(np.diff(pl.curvature) < 0)
    assert pl.metrics("X")["probe_X_curvature_ratio"] == pl.curvature.max() / pl.curvature.min()


def test_mode_probes_and_their_null(run) -> None:
    pb = regimes.mode_probes(run, avg_steps=16, mode_window=0.5, rng=np.random.default_rng(1))
    assert pb.avg == 16 // run.res.config.log_every and pb.window % 2 == 1
    assert pb.mer_sim.shape == (run.t.size, 4) and pb.mer_minima.shape == (3,)
    assert np.all(pb.off_A2 >= 0) and np.all(pb.off_mer >= 0)
    assert pb.null_joint.shape == (2000,) and np.all(pb.null_joint <= pb.null_A2) and pb.null_A2.max() <= 4
    m = pb.metrics()
    assert m["probe_A2_modes_found"] == int(np.sum(pb.off_A2 <= 0.5))
    with pytest.raises(ValueError, match="mode_window"):
        regimes.mode_probes(run, avg_steps=16, mode_window=0.0, rng=np.random.default_rng(1))


def test_extrema_scaling_counts_every_replica_size(run) -> None:
    pb = regimes.mode_probes(run, avg_steps=16, mode_window=0.5, rng=np.random.default_rng(1))
    fs = regimes.extrema_count_scaling(run, pb, R_max=4, B=8, epochs=60, rng=np.random.default_rng(2))
    assert fs.R_fit == [1, 2, 4] and fs.R_shown == [1, 2, 4]
    assert fs.counts.shape == (3, 2) and np.all(np.isfinite(fs.slopes))
    m = fs.metrics()
    assert m["probe_fs_n_sizes"] == 3 and m["probe_fs_R_2"] == 4
    with pytest.raises(ValueError, match="R_max"):
        regimes.extrema_count_scaling(run, pb, R_max=1, B=8, epochs=60, rng=np.random.default_rng(2))


def test_fixed_point_checks_second_order_step_of_C(run) -> None:
    ch = regimes.fixed_point_checks(
        run,
        B=16,
        n_contexts=4000,
        etas=(1e-1, 1e-2),
        rng_loss=np.random.default_rng(3),
        rng_step=np.random.default_rng(4),
    )
    m = ch.metrics()
    assert m["dC_second_order_relerr"] < 1e-8  # one step changes C by exactly eta^2 (|g_p|^2 - |g_q|^2)
    assert m["mc_C_exact_z"] < 5  # the Monte Carlo loss agrees with the exact expected loss


def test_null_blocks_on_antithetic_tasks() -> None:
    s = np.array([1.0, 0.5])
    cfg = SGDConfig(
        eta=0.05, B=4, epochs=4, init_scale=0.1, null_init_scale=0.01, train_null=True, replicas=1, log_every=4
    )
    runs = [
        regimes.null_block_run(s, 8, 8, config=cfg, rng=np.random.default_rng(k), antithetic=k != 1) for k in range(3)
    ]
    assert runs[0].m1 < 1e-15 and runs[0].m3 < 1e-15  # antithetic tasks: every odd empirical moment vanishes
    assert runs[1].m1 > 0.01  # iid tasks: it does not
    prob = make_problem(s, 8, 8, rng=np.random.default_rng(0), antithetic=True)
    np.testing.assert_array_equal(runs[0].exact, exact.exact_fixed_point(s, 8, prob.c))
    m = regimes.null_block_metrics(*runs)
    assert 0.0 <= m["null_large_b_share"] <= 1.0
    assert m["null_small_p1_start"] == float(runs[0].p1_norm[0]) > 0


def test_exact_fixed_point_is_the_zfb_formula_at_isotropic_S() -> None:
    assert regimes.isotropic_fixed_point_deviation(4, (4, 16, 64)) < 1e-13
    assert regimes.isotropic_fixed_point_deviation(2, (3,)) < 1e-13
    with pytest.raises(ValueError, match="d"):
        regimes.isotropic_fixed_point_deviation(0, (4,))
