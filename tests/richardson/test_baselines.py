"""Tests for iclcore.richardson.baselines (same-task comparison of preconditioners at depth L) and
iclcore.richardson.preconditioner_diagnostics."""

import numpy as np
import pytest

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.richardson.baselines import (
    LinearSystems,
    best_scaled_parameter,
    compare_baselines,
    depth_error,
    depth_losses,
    depth_risk,
    free_linear_baseline,
    free_linear_risk_and_grad,
    replica_gap_standard_error,
    replica_win_rate,
    scaled_family_risk,
)


def _systems(n=400, seed=0, K=6, M=24, target="beta"):
    cfg = TaskConfig(K=K, M=M, sigma=0.2, cond=8.0, target=target)
    return cfg, LinearSystems.from_prompts(sample_prompt_statistics(cfg, n, np.random.default_rng(seed)))


def test_depth_error_matches_matrix_power():
    _, s = _systems(n=20)
    rng = np.random.default_rng(1)
    P = 0.3 * np.eye(s.K) + 0.01 * rng.standard_normal((s.K, s.K))
    L = 7
    e = depth_error(P, s, L)[:, -1]
    T = np.eye(s.K) - P @ s.H
    ref = -np.einsum("nij,nj->ni", np.linalg.matrix_power(T, L), s.x_dagger) + s.x_dagger - s.x_star
    assert np.max(np.abs(e - ref)) <= 1e-12 * max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("kind", ["scalar", "jacobi"])
def test_closed_form_family_risk_equals_iteration(kind):
    _, s = _systems(n=50)
    L = 9
    theta = 0.4
    closed = scaled_family_risk(s, kind, theta, L=L)
    if kind == "scalar":
        P = theta * np.eye(s.K)[None].repeat(s.n, 0)
    else:
        P = theta * np.eye(s.K)[None] / np.diagonal(s.H, axis1=1, axis2=2)[:, None, :]
    assert abs(closed - depth_risk(P, s, L)) <= 1e-12 * closed


def test_best_scalar_is_a_minimum():
    _, s = _systems(n=200)
    L = 8
    eta, r = best_scaled_parameter(s, "scalar", L)
    for f in (0.97, 1.03):
        assert scaled_family_risk(s, "scalar", eta * f, L=L) >= r * (1 - 1e-12)


def test_free_linear_gradient_matches_finite_differences():
    _, s = _systems(n=30)
    rng = np.random.default_rng(3)
    P = 0.2 * np.eye(s.K) + 0.02 * rng.standard_normal((s.K, s.K))
    L = 5
    _, g = free_linear_risk_and_grad(P, s, L)
    h = 1e-6
    for i, j in [(0, 0), (1, 3), (5, 2)]:
        E = np.zeros_like(P)
        E[i, j] = h
        fd = (depth_risk(P + E, s, L) - depth_risk(P - E, s, L)) / (2 * h)
        # central difference: truncation O(h^2 * third derivative) + rounding O(eps * R / h)
        assert abs(fd - g[i, j]) <= 1e-7 * max(1.0, abs(g[i, j]))


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_task_blocks_change_only_the_rounding(chunk):
    """depth_error and free_linear_risk_and_grad run the tasks in blocks of ``chunk``; every block
    size gives the one-block values to rounding, for a shared and a per-task P."""
    _, s = _systems(n=30)
    rng = np.random.default_rng(4)
    P = 0.2 * np.eye(s.K) + 0.02 * rng.standard_normal((s.K, s.K))
    Pn = P + 0.01 * rng.standard_normal((s.n, s.K, s.K))
    L = 6
    for Q in (P, Pn):
        ref = depth_error(Q, s, L, chunk=s.n)
        assert np.max(np.abs(depth_error(Q, s, L, chunk=chunk) - ref)) <= 1e-13 * np.max(np.abs(ref))
    r0, g0 = free_linear_risk_and_grad(P, s, L, chunk=s.n)
    r1, g1 = free_linear_risk_and_grad(P, s, L, chunk=chunk)
    assert abs(r1 - r0) <= 1e-13 * r0
    assert np.max(np.abs(g1 - g0)) <= 1e-13 * np.max(np.abs(g0))
    with pytest.raises(ValueError, match="chunk"):
        depth_error(P, s, L, chunk=0)


def test_free_linear_at_depth_one_is_the_training_oracle():
    """At L = 1, R_1(P) is the quadratic (1/K) mean‖P d − x⋆‖², minimised by B̂ Ĉ^{-1} (theorem)."""
    _, s = _systems(n=300)
    b = free_linear_baseline(s, 1, P0=np.zeros((s.K, s.K)))
    C = s.d.T @ s.d / s.n
    B = s.x_star.T @ s.d / s.n
    P_hat = np.linalg.solve(C, B.T).T
    assert np.max(np.abs(b.P - P_hat)) <= 1e-6 * np.max(np.abs(P_hat))
    assert b.converged and b.n_iter >= 1
    short = free_linear_baseline(s, 4, P0=np.zeros((s.K, s.K)), max_iter=2)
    assert short.converged is False and short.n_iter == 2


@pytest.mark.slow
def test_comparison_ordering_and_floor():
    cfg, train = _systems(n=600, seed=4)
    _, test = _systems(n=600, seed=5)
    L = 6
    comp = compare_baselines(train, test, L, H_inf=cfg.H_infinity, moments=closed_form_moments(cfg))
    # exact solve: x_L = x† for every L >= 1, so its risk is the floor (1/K) mean‖x† − x⋆‖²
    floor = np.mean(np.sum((test.x_dagger - test.x_star) ** 2, axis=1)) / test.K
    assert abs(comp.test_risk["exact"] - floor) <= 1e-12 * floor
    # the free P starts at P⋆ and only decreases the training risk (construction)
    assert comp.baselines["free"].train_risk <= comp.baselines["oracle"].train_risk
    # the closed-form oracle is used when moments are passed
    assert np.allclose(comp.baselines["oracle"].P, oracle_preconditioner(closed_form_moments(cfg)))
    assert set(comp.test_curves) == set(comp.test_risk)
    assert comp.test_curves["scalar"].shape == (L + 1,)


@pytest.mark.slow
def test_deterministic():
    _, train = _systems(n=200, seed=6)
    a = free_linear_baseline(train, 4)
    b = free_linear_baseline(train, 4)
    assert np.array_equal(a.P, b.P)


def test_bad_input():
    _, s = _systems(n=10)
    with pytest.raises(ValueError, match="L"):
        depth_risk(np.eye(s.K), s, -1)
    with pytest.raises(ValueError, match="P"):
        depth_risk(np.eye(s.K + 1), s, 2)
    with pytest.raises(ValueError, match="^P: must be finite"):
        depth_risk(np.full((s.K, s.K), np.nan), s, 2)  # a shared P is checked like a per-task stack
    shared = s.preconditioner_stack(0.5 * np.eye(s.K))
    assert shared.shape == (s.n, s.K, s.K) and np.all(shared == 0.5 * np.eye(s.K))
    with pytest.raises(ValueError, match="kind"):
        scaled_family_risk(s, "gauss", 0.1, L=2)
    with pytest.raises(ValueError, match="H"):
        LinearSystems(H=np.ones((2, 3, 3)) + np.arange(3)[None, :, None], d=np.zeros((2, 3)), x_star=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="methods"):
        compare_baselines(s, s, 2, methods=("newton",))


def test_decoder_diagnostics_theorems():
    from iclcore.richardson.preconditioner_diagnostics import decoder_diagnostics

    cfg, s = _systems(n=300, seed=8, target="ridge")
    L = 5
    rng = np.random.default_rng(9)
    P = 0.25 * np.eye(s.K) + 0.05 * rng.standard_normal((s.n, s.K, s.K))
    dg = decoder_diagnostics(P, s, L, P_oracle=np.eye(s.K))
    assert dg.violation_rate == 0.0  # submultiplicativity (theorem)
    assert dg.ratio_of_means <= 1.0 + 1e-12  # E‖e_L‖² <= E ρ^{2L}‖e_0‖² (theorem)
    assert dg.risk_dagger == pytest.approx(dg.risk_star, rel=1e-12)  # target = x†
    # P = 0: ρ = 1 for every task and the risk is E‖x†‖²/K
    d0 = decoder_diagnostics(np.zeros((s.K, s.K)), s, L, P_oracle=np.eye(s.K))
    assert d0.rho_mean == pytest.approx(1.0, abs=1e-14) and d0.frac_rho_lt1 == 0.0
    assert d0.risk_dagger == pytest.approx(np.mean(np.sum(s.x_dagger**2, 1)) / s.K, rel=1e-12)
    # shared P: both distances and both stable ranks coincide; srank(I) = K
    d1 = decoder_diagnostics(np.eye(s.K), s, L, P_oracle=2 * np.eye(s.K))
    assert d1.rel_dist_mean_P == pytest.approx(0.5) and d1.rel_dist_per_task == pytest.approx(0.5)
    assert d1.srank_mean_P == pytest.approx(s.K) and d1.srank_per_task == pytest.approx(s.K)


def test_latent_decomposition_matches_encdec_for_shared_P():
    from iclcore.richardson.encdec import (
        latent_systems,
        make_lowrank_model,
        risk_decomposition,
        sample_lowrank_prompts,
    )
    from iclcore.richardson.preconditioner_diagnostics import latent_decomposition

    rng = np.random.default_rng(10)
    model = make_lowrank_model(8, 2, 24, sigma=0.2, lam=0.01, cond_x=5.0, mu_z=np.array([0.3, 0.1]), rng=rng)
    prompts = sample_lowrank_prompts(model, 300, rng)
    U = np.linalg.qr(model.U_star + 0.1 * rng.standard_normal((8, 2)))[0]
    P = np.array([[0.5, 0.05], [0.02, 0.7]])
    L = 4
    A, d, _ = latent_systems(U, prompts)
    ours = latent_decomposition(U, P, A[0], d=d[0], beta=prompts.beta, Sigma_x=model.Sigma_x, L=L)
    ref = risk_decomposition(U[None], P[None], prompts, Sigma_x=model.Sigma_x, L=L)
    for k in ("e2e", "floor", "dec", "cross", "rho_mean"):
        assert getattr(ours, k) == pytest.approx(float(getattr(ref, k)[0]), rel=1e-10)
    assert ours.decomposition_gap <= 1e-12 * ours.e2e  # exact identity (theorem)
    assert ours.identity_gap <= 1e-12
    assert ours.violation_rate == 0.0


def test_latent_decomposition_standard_errors_are_those_of_the_prompt_means():
    from iclcore.richardson.encdec import latent_systems, make_lowrank_model, sample_lowrank_prompts
    from iclcore.richardson.preconditioner_diagnostics import latent_decomposition

    rng = np.random.default_rng(11)
    model = make_lowrank_model(8, 2, 24, sigma=0.2, lam=0.01, cond_x=5.0, mu_z=np.array([0.3, 0.1]), rng=rng)
    prompts = sample_lowrank_prompts(model, 400, rng)
    U = np.linalg.qr(model.U_star + 0.1 * rng.standard_normal((8, 2)))[0]
    P = np.array([[0.5, 0.05], [0.02, 0.7]])
    A, d, _ = latent_systems(U, prompts)
    full = latent_decomposition(U, P, A[0], d=d[0], beta=prompts.beta, Sigma_x=model.Sigma_x, L=4)
    # exact checks on two disjoint halves of the prompts: the means average to the full mean, and the
    # standard errors obey the sum-of-squares decomposition of the per-prompt values
    halves = [
        latent_decomposition(U, P, A[0][s], d=d[0][s], beta=prompts.beta[s], Sigma_x=model.Sigma_x, L=4)
        for s in (slice(0, 200), slice(200, 400))
    ]
    for k in ("floor", "dec", "ratio_mean", "rho_mean"):
        assert np.mean([getattr(h, k) for h in halves]) == pytest.approx(getattr(full, k), rel=1e-12)
        se_full, se_half = getattr(full, f"{k}_se"), [getattr(h, f"{k}_se") for h in halves]
        assert se_full > 0
        # sums of squares: 199 (s1^2 + s2^2) <= 399 s^2 (the between-halves term is >= 0), s_h^2 = 200 se_h^2
        assert (se_half[0] ** 2 + se_half[1] ** 2) * 199 * 200 <= se_full**2 * 399 * 400 * (1 + 1e-12)
    assert full.e2e_se == pytest.approx(np.std(full.e2e_losses, ddof=1) / np.sqrt(400), rel=1e-12)


def test_depth_losses_average_to_the_depth_risk():
    _, s = _systems(n=50)
    P = 0.2 * np.eye(s.K)
    losses = depth_losses(P, s, 5)
    assert losses.shape == (50,) and np.all(losses >= 0)
    assert losses.mean() == pytest.approx(depth_risk(P, s, 5), rel=1e-12)


def test_replica_win_rate_counts_wins_and_adds_the_replica_spread():
    """The exact solve wins on every task against a crude step; identical replicas add no spread, so the
    standard error is then the binomial one; a rival equal to P never loses (strict inequality)."""
    _, b = _systems(n=200)
    s = LinearSystems(H=b.H, d=b.d, x_star=b.x_dagger)
    crude = 0.01 * np.eye(s.K)
    exact = np.linalg.inv(s.H)
    good = np.stack([exact, exact, exact])
    assert replica_win_rate(good, crude, s, L=3) == (1.0, 0.0)
    mid = 0.3 * np.eye(s.K) / np.mean(np.diagonal(s.H, axis1=1, axis2=2))
    reps = np.stack([mid, 1.05 * mid, 0.95 * mid])
    w, se = replica_win_rate(reps, 0.9 * mid, s, L=3)
    rates = [np.mean(depth_losses(P, s, 3) < depth_losses(0.9 * mid, s, 3)) for P in reps]
    assert w == rates[0]
    binomial = np.sqrt(w * (1 - w) / s.n)
    assert se == pytest.approx(np.sqrt(binomial**2 + np.var(rates, ddof=1)), rel=1e-12)
    assert replica_win_rate(np.stack([crude, crude]), crude, s, L=3) == (0.0, 0.0)


def test_replica_gap_standard_error_is_the_worst_paired_error_plus_the_replica_spread():
    _, s = _systems(n=100)
    P = 0.2 * np.eye(s.K)
    reps = np.stack([P, 1.1 * P, 0.9 * P])
    rivals = [0.1 * np.eye(s.K), 0.3 * np.eye(s.K)]
    learned = depth_losses(P, s, 4)
    paired = [np.std(learned - depth_losses(R, s, 4), ddof=1) / np.sqrt(s.n) for R in rivals]
    spread = np.std([depth_risk(Q, s, 4) for Q in reps], ddof=1)
    ref = np.sqrt(max(paired) ** 2 + spread**2)
    assert replica_gap_standard_error(reps, rivals, s, L=4) == pytest.approx(ref, rel=1e-12)
