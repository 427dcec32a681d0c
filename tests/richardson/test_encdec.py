"""Tests for iclcore.richardson.encdec: latent system, moving oracle, tracking identity, risk decomposition,
§6.4 continuous-time triangular dynamics and the §6.6 product/sum formula (seed 000 §6)."""

import numpy as np
import pytest

from iclcore._reference import run_encdec_naive
from iclcore.richardson.closure import commutator_defect, tracking_error_product_sum
from iclcore.richardson.encdec import (
    EncDecConfig,
    LatentMoments,
    LowRankModel,
    continuous_triangular,
    decoder_gd,
    encdec_dynamics,
    latent_systems,
    make_lowrank_model,
    moving_oracle,
    polar_factor,
    risk_decomposition,
    run_encdec,
    sample_lowrank_prompts,
)

SMALL = EncDecConfig(K=8, r=2, M=32, sigma=0.3, mu_z=(0.2, 0.05), n_train=24, n_eval=128, L=5, steps=60)


@pytest.fixture(scope="module")
def run():
    return run_encdec(SMALL, eval_every=6)


def test_tracking_identity_holds_at_every_step(run):
    # boxed §6.2 identity, relative to max|P⋆|: rounding level at every one of the 60 steps
    assert run.identity_residual.shape == (SMALL.steps,)
    assert run.identity_residual.max() < 1e-13


def test_oracle_solves_normal_equation(run):
    lhs = run.P_star @ run.C
    assert np.abs(lhs - run.B).max() <= 1e-12 * np.abs(run.B).max()


def test_product_sum_formula_reproduces_tracked_error(run):
    # §6.6: E_s from E_0, C_t and the oracle drifts D_t by ordered products equals the tracked
    # P_s - P⋆(U_s) of the real run (the decoder iterates enter only through P_0)
    E = run.P - run.P_star
    steps = np.array([0, 1, 7, 30, SMALL.steps])
    D = run.P_star[:-1] - run.P_star[1:]
    got = tracking_error_product_sum(E[0], run.C[:-1], D, eta=run.eta_d, steps=steps)
    assert np.abs(got - E[steps]).max() <= 1e-12 * np.abs(E).max()


def test_product_order_matters_when_C_do_not_commute(run):
    # reversing the ordered product gives a different E_s: the §6.5 scalar closure does not apply
    assert commutator_defect(run.C[::6]) > 1e-3
    E0 = run.P[0] - run.P_star[0]
    s = SMALL.steps
    zero = np.zeros_like(run.C[:s])
    fwd = tracking_error_product_sum(E0, run.C[:s], zero, eta=run.eta_d, steps=[s])[0]
    rev = tracking_error_product_sum(E0, run.C[:s][::-1].copy(), zero, eta=run.eta_d, steps=[s])[0]
    assert np.abs(rev - fwd).max() > 1e-8 * np.abs(fwd).max()


def test_risk_identities_at_rounding_level(run):
    R = run.risks
    # iterated z_L vs closed form z† - (I - PA)^L z†, and e2e = floor + dec + 2 cross
    assert np.all(R.identity_gap <= 1e-12 * R.e2e)
    assert np.all(R.decomposition_gap <= 1e-12 * R.e2e)
    # §6.3 bound chain and the pointwise Richardson certificate
    assert np.all(R.dec <= R.dec_mid * (1 + 1e-12))
    assert np.all(R.dec_mid <= R.dec_bound * (1 + 1e-12))
    assert np.all(R.violations == 0)


def test_vectorised_run_matches_naive_loops():
    small = EncDecConfig(K=6, r=2, M=24, sigma=0.3, mu_z=(0.2, 0.05), n_train=10, n_eval=12, L=4, steps=15)
    fast = run_encdec(small, eval_every=15)
    slow = run_encdec_naive(small)
    assert np.abs(fast.G - slow["G"]).max() <= 1e-12 * np.abs(slow["G"]).max()
    assert np.abs(fast.P - slow["P"]).max() <= 1e-10 * np.abs(slow["P"]).max()
    R = fast.risks
    np.testing.assert_allclose([R.e2e[-1], R.floor[-1], R.dec[-1]], slow["risks_last"], rtol=1e-10)


def test_noise_free_true_subspace_recovers_latent_exactly():
    # σ = 0, λ = 0, U = U⋆: A = U⋆ᵀΣ̂U⋆, d = A z, so z† = z and the floor risk vanishes
    rng = np.random.default_rng(0)
    model = make_lowrank_model(6, 2, 20, sigma=0.0, lam=0.0, cond_x=3.0, mu_z=np.array([1.0, 0.5]), rng=rng)
    pr = sample_lowrank_prompts(model, 50, rng)
    A, d, zd = latent_systems(model.U_star, pr)
    assert np.abs(zd[0] - pr.z).max() < 1e-12
    P = np.linalg.inv(A[0].mean(axis=0))[None]
    R = risk_decomposition(model.U_star[None], P, pr, Sigma_x=model.Sigma_x, L=3)
    assert R.floor[0] < 1e-24


def test_decoder_gd_converges_to_fixed_oracle():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3, 3))
    C = np.broadcast_to(X @ X.T + np.eye(3), (400, 3, 3)).copy()
    B = np.broadcast_to(rng.standard_normal((3, 3)), (400, 3, 3)).copy()
    mom = LatentMoments(C=C, B=B)
    eta = 1.0 / np.linalg.eigvalsh(C[0])[-1]
    P = decoder_gd(np.zeros((3, 3)), mom, eta)
    assert np.abs(P[-1] - moving_oracle(mom)[0]).max() < 1e-8


def test_polar_factor():
    rng = np.random.default_rng(2)
    G = rng.standard_normal((7, 3))
    U = polar_factor(G)
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-14)
    S = U.T @ G  # (G^T G)^{1/2}: symmetric positive definite
    np.testing.assert_allclose(S, S.T, atol=1e-13)
    assert np.linalg.eigvalsh(S).min() > 0


def test_continuous_time_limit_of_the_discrete_run():
    # §6.4: GD is forward Euler of the triangular ODE; halving η (and doubling the steps)
    # halves the gap to the ODE solution (first order), measured at the same physical times.
    cfg = EncDecConfig(K=8, r=2, M=32, sigma=0.3, mu_z=(0.2, 0.05), n_train=24, n_eval=16, L=5, steps=40)
    base = encdec_dynamics(cfg)
    t = np.arange(0, cfg.steps + 1, 4.0)
    _, Pc = continuous_triangular(
        base.G0,
        base.G_hat,
        base.Sz,
        prompts=base.train,
        P0=np.zeros((2, 2)),
        eta_e=base.eta_e,
        eta_d=base.eta_d,
        t_eval=t,
        rtol=1e-10,
        atol=1e-13,
    )
    gaps = []
    for k in (1, 2, 4):
        dyn = encdec_dynamics(cfg, steps=cfg.steps * k, eta_e=base.eta_e / k, eta_d=base.eta_d / k)
        gaps.append(np.abs(dyn.P[:: 4 * k] - Pc).max())
    assert 1.6 < gaps[0] / gaps[1] < 2.5 and 1.6 < gaps[1] / gaps[2] < 2.5


def test_training_run_does_not_depend_on_the_evaluation_size():
    a = encdec_dynamics(SMALL)
    b = encdec_dynamics(EncDecConfig(**{**SMALL.__dict__, "n_eval": 7}))
    assert np.array_equal(a.P, b.P) and np.array_equal(a.G, b.G)


def test_subspace_certificates_on_the_run(run):
    # the valid Davis–Kahan variant bounds the true sin² wherever it is finite
    ok = np.isfinite(run.dk2_weyl)
    assert ok.sum() > 10
    assert np.all(run.sin2[ok] <= run.dk2_weyl[ok] * (1 + 1e-10))


def test_bad_inputs():
    with pytest.raises(ValueError, match="mu_z"):
        EncDecConfig(r=3, mu_z=(1.0, 2.0))
    with pytest.raises(ValueError, match="eta_d_rel"):
        EncDecConfig(eta_d_rel=2.5)
    with pytest.raises(ValueError, match="U_star"):
        LowRankModel(Sigma_x=np.eye(3), U_star=np.ones((3, 1)), Sigma_z=np.eye(1), M=5, sigma=0.1, lam=0.1)
    with pytest.raises(ValueError, match="lam"):
        LowRankModel(Sigma_x=np.eye(3), U_star=np.eye(3)[:, :1], Sigma_z=np.eye(1), M=2, sigma=0.1, lam=0.0)
    with pytest.raises(ValueError, match="G"):
        polar_factor(np.zeros((4, 2)))
    C = np.broadcast_to(np.eye(2), (3, 2, 2)).copy()
    with pytest.raises(ValueError, match="eta_d"):
        decoder_gd(np.zeros((2, 2)), LatentMoments(C=C, B=C), 2.5)
    with pytest.raises(ValueError, match="steps"):
        tracking_error_product_sum(C[0], C[:-1], C[:-1], eta=0.1, steps=[5])
    with pytest.raises(TypeError, match="rng"):
        sample_lowrank_prompts(
            LowRankModel(Sigma_x=np.eye(3), U_star=np.eye(3)[:, :1], Sigma_z=np.eye(1), M=5, sigma=0.1, lam=0.1),
            4,
            "seed",
        )
    with pytest.raises(ValueError, match="U"):
        risk_decomposition(np.zeros((2, 3)), np.zeros((1, 1, 1)), None, Sigma_x=np.eye(3), L=2)
    rng = np.random.default_rng(0)
    m = make_lowrank_model(4, 1, 8, sigma=0.1, lam=0.1, cond_x=2.0, mu_z=np.array([1.0]), rng=rng)
    pr = sample_lowrank_prompts(m, 3, rng)
    with pytest.raises(ValueError, match="L"):
        risk_decomposition(m.U_star[None], np.eye(1)[None], pr, Sigma_x=m.Sigma_x, L=0)
    with pytest.raises(ValueError, match="r"):
        make_lowrank_model(4, 5, 8, sigma=0.1, lam=0.1, cond_x=2.0, mu_z=np.ones(5), rng=rng)
