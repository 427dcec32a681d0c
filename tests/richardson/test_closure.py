"""Tests of iclcore.richardson.closure: commuting scalar closure, non-commuting matrix dynamics, §7 counterexample."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.linalg import haar_orthogonal, joint_diagonalizer
from iclcore.lsq.dynamics import covariance_from_spectrum, gd_iterate
from iclcore.richardson.closure import (
    closure_mismatch,
    commutator_defect,
    encdec_iterate,
    fixed_basis_closure_risk,
    mode_product_sum,
    mode_recursion,
    pinched_coefficients,
    richardson_matrix_risk,
    richardson_mode_risk,
    tracking_error_iterate,
    tracking_error_product_sum,
)
from iclcore.richardson.counterexample import counterexample, counterexample_eigenvalues
from iclcore.richardson.latent_model import CommutingModel, LatentModel

# Identities hold to rounding: ~1 rounding error per step and entry, <= 150 steps,
# well-conditioned A (cond <= ~50) -> ~1e-13 relative; we assert 1e-12.
RTOL = 1e-12


def make_commuting(rng: np.random.Generator, r: int) -> CommutingModel:
    return CommutingModel(
        h=np.exp(rng.uniform(np.log(0.3), np.log(2.0), r)),
        gstar=rng.uniform(0.8, 1.2, r),
        sigma=np.exp(rng.uniform(np.log(0.1), np.log(1.0), r)),
        noise_var=0.1,
        V=haar_orthogonal(r, rng),
    )


def make_noncommuting(rng: np.random.Generator, r: int) -> LatentModel:
    cm = make_commuting(rng, r)
    return LatentModel(
        H=covariance_from_spectrum(cm.h, haar_orthogonal(r, rng)),
        Gstar=haar_orthogonal(r, rng) @ np.diag(cm.gstar) @ haar_orthogonal(r, rng).T,
        Sigma_z=covariance_from_spectrum(cm.sigma, haar_orthogonal(r, rng)),
        noise_var=0.1,
    )


def stable_eta_d(model: LatentModel, G0: np.ndarray, eta_e: float, n: int, frac: float) -> float:
    G = gd_iterate(G0, model.Sigma_bz, model.Sigma_z, eta=eta_e, n_steps=n)
    lam = max(np.linalg.eigvalsh(c)[-1] for c in model.C(G))
    return frac * 2.0 / lam


def commuting_run(seed: int, r: int = 5, S: int = 120, L: int = 3, frac_d: float = 0.5):
    rng = np.random.default_rng(seed)
    cm = make_commuting(rng, r)
    g0 = rng.uniform(0.3, 0.6, r)
    eta_e = 0.9 / cm.sigma.max()  # η_e σ_i < 1: g_i(s) moves monotonically, never crosses 0
    g = cm.encoder_modes(g0, eta_e, S)
    co = cm.coefficients(g)
    eta_d = frac_d * 2.0 / co.c.max()
    p0 = rng.uniform(0.0, 0.2, r)
    traj = encdec_iterate(cm.latent_model(), cm.matrix(g0), cm.matrix(p0), eta_e=eta_e, eta_d=eta_d, n_steps=S)
    return cm, g, co, p0, eta_e, eta_d, traj, L


# ----------------------------------------------------------------------------- latent model


def test_latent_model_moments_by_monte_carlo():
    rng = np.random.default_rng(0)
    model = make_noncommuting(rng, 3)
    G = np.eye(3) + 0.3 * rng.standard_normal((3, 3))
    n = 200_000
    z = rng.standard_normal((n, 3)) @ np.linalg.cholesky(model.Sigma_z).T
    c = (z @ model.Gstar.T) @ model.H.T + np.sqrt(model.noise_var) * rng.standard_normal((n, 3))
    d = c @ G  # d = G^T c, as rows
    zdag = np.linalg.solve(model.A(G), d.T).T
    # entries are O(1); 2e5 samples -> standard errors ~ 1e-2 at most, tolerance 0.1 relative-to-scale
    scale = np.abs(model.C(G)).max()
    np.testing.assert_allclose(d.T @ d / n, model.C(G), atol=0.05 * scale)
    np.testing.assert_allclose(zdag.T @ d / n, model.B(G), atol=0.05 * np.abs(model.B(G)).max())
    np.testing.assert_allclose(zdag.T @ zdag / n, model.zdag_cov(G), atol=0.05 * np.abs(model.zdag_cov(G)).max())
    # the oracle solves P C = B and equals A^{-1}
    np.testing.assert_allclose(model.oracle(G) @ model.C(G), model.B(G), atol=1e-12 * scale)


def test_commuting_model_coefficients_are_eigenvalues_of_the_matrices():
    rng = np.random.default_rng(1)
    cm = make_commuting(rng, 4)
    g = rng.uniform(0.4, 1.1, (3, 4))
    co = cm.coefficients(g)
    lm = cm.latent_model()
    G = np.stack([cm.matrix(x) for x in g])
    V = cm.V
    for mats, vals in ((lm.A(G), co.a), (lm.C(G), co.c), (lm.B(G), co.b), (lm.zdag_cov(G) / 4, co.w)):
        np.testing.assert_allclose(pinched_coefficients(V, mats), vals, rtol=1e-12)
        # and they are diagonal in V
        rot = np.einsum("ia,nij,jb->nab", V, mats, V)
        off = rot - np.einsum("naa->na", rot)[:, :, None] * np.eye(4)[None]
        assert np.abs(off).max() <= 1e-12 * np.abs(mats).max()


# ----------------------------------------------------------------------------- commuting closure


def test_commuting_closure_matches_matrix_iteration():
    cm, g, co, p0, eta_e, eta_d, traj, L = commuting_run(2)
    # encoder: scalar closed form g_i(s) vs matrix iteration G_s
    G_closed = np.stack([cm.matrix(x) for x in g])
    assert np.abs(G_closed - traj.G).max() <= RTOL * np.abs(traj.G).max()
    # decoder modes: product/sum == recursion == matrix iteration
    p_rec = mode_recursion(p0, co.c[:-1], co.b[:-1], eta=eta_d)
    p_ps = mode_product_sum(p0, co.c[:-1], co.b[:-1], eta=eta_d)
    assert np.abs(p_rec - p_ps).max() <= RTOL * np.abs(p_rec).max()
    P_closed = np.stack([cm.matrix(x) for x in p_ps])
    assert np.abs(P_closed - traj.P).max() <= RTOL * np.abs(traj.P).max()
    # risk R_dec(s, L)
    R_closed = richardson_mode_risk(p_ps, co.a, co.w, L=L)
    R_matrix = richardson_matrix_risk(traj.P, traj.A, traj.Szz, L=L)
    assert np.abs(R_closed - R_matrix).max() <= RTOL * R_matrix.max()
    # the decoder converges to the moving oracle 1/a_i
    np.testing.assert_allclose(p_ps[-1] * co.a[-1], 1.0, atol=1e-3)
    # the fixed-basis closure in the common basis, or in the jointly-diagonalising basis, is exact
    assert closure_mismatch(fixed_basis_closure_risk(traj, cm.V, L), R_matrix) <= 1e-12
    Q = joint_diagonalizer(traj.C[::10])
    assert closure_mismatch(fixed_basis_closure_risk(traj, Q, L), R_matrix) <= 1e-10
    assert commutator_defect(traj.C[::10]) <= 1e-13


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    r=st.integers(1, 6),
    S=st.integers(0, 80),
    frac=st.floats(0.05, 0.99),
)
def test_property_product_sum_equals_recursion(seed, r, S, frac):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.0, 3.0, (S, r))
    b = rng.standard_normal((S, r))
    eta = frac * 2.0 / max(c.max(), 1e-3) if S else 0.5
    p0 = rng.standard_normal(r)
    rec = mode_recursion(p0, c, b, eta=eta)
    ps = mode_product_sum(p0, c, b, eta=eta)
    # the recursion's rounding error grows like s * eps * max|p|; 1e-12 covers s <= 80 by far
    assert np.abs(rec - ps).max() <= RTOL * max(np.abs(rec).max(), 1.0)


def test_mode_risk_reduces_to_weights_at_depth_zero():
    rng = np.random.default_rng(3)
    p, a, w = rng.uniform(size=(3, 4, 5))
    np.testing.assert_allclose(richardson_mode_risk(p, a, w, L=0), w.sum(axis=1))
    np.testing.assert_allclose(richardson_mode_risk(1.0 / a, a, w, L=3), 0.0, atol=1e-28)


# ----------------------------------------------------------------------------- non-commuting


def test_noncommuting_product_sum_and_no_fixed_basis_closure():
    rng = np.random.default_rng(4)
    r, S, L = 5, 100, 3
    model = make_noncommuting(rng, r)
    G0 = 0.5 * np.eye(r)
    eta_e = 0.9 / np.linalg.eigvalsh(model.Sigma_z)[-1]
    eta_d = stable_eta_d(model, G0, eta_e, S, 0.5)
    traj = encdec_iterate(model, G0, np.zeros((r, r)), eta_e=eta_e, eta_d=eta_d, n_steps=S)
    E = traj.tracking_error
    D = traj.drift
    # recursion E_{s+1} = E_s (I - η C_s) + D_s is an identity for E_s = P_s - P⋆(G_s)
    E_rec = tracking_error_iterate(E[0], traj.C[:-1], D, eta=eta_d)
    assert np.abs(E_rec - E).max() <= RTOL * np.abs(E).max()
    # ordered product/sum formula
    steps = np.array([0, 1, 2, 17, 60, S])
    E_ps = tracking_error_product_sum(E[0], traj.C[:-1], D, eta=eta_d, steps=steps)
    assert np.abs(E_ps - E[steps]).max() <= RTOL * np.abs(E).max()
    # the family does not commute ...
    assert commutator_defect(traj.C[::10]) > 1e-2
    # ... and reversing the order of the products (a commuting-style formula) is wrong
    M = np.eye(r)[None] - eta_d * traj.C[:-1]
    wrong = E[0] @ np.linalg.multi_dot(list(M[:S][::-1])) if S > 1 else E[0]
    right = E[0] @ np.linalg.multi_dot(list(M[:S]))
    assert np.abs(wrong - right).max() > 1e-6 * np.abs(right).max()
    # no fixed basis closes the scalar dynamics: the best joint diagonaliser still misses
    R = richardson_matrix_risk(traj.P, traj.A, traj.Szz, L=L)
    Q = joint_diagonalizer(traj.C[::5])
    assert closure_mismatch(fixed_basis_closure_risk(traj, Q, L), R) > 1e-2


def test_joint_diagonalizer_recovers_common_basis():
    rng = np.random.default_rng(5)
    V = haar_orthogonal(6, rng)
    mats = np.stack([covariance_from_spectrum(rng.uniform(0.1, 2.0, 6), V) for _ in range(4)])
    Q = joint_diagonalizer(mats)
    np.testing.assert_allclose(Q.T @ Q, np.eye(6), atol=1e-12)
    rot = np.einsum("ia,nij,jb->nab", Q, mats, Q)
    off = rot - np.einsum("naa->na", rot)[:, :, None] * np.eye(6)[None]
    assert np.abs(off).max() <= 1e-10


# ----------------------------------------------------------------------------- counterexample


def test_counterexample_reproduces_reported_values():
    lam_a, lam_b = counterexample_eigenvalues(0.6724, 0.1936, eta=0.1)
    np.testing.assert_allclose([lam_a, lam_b], [1.8, 5.6], rtol=1e-12)
    V = haar_orthogonal(2, np.random.default_rng(6))
    C = covariance_from_spectrum([lam_a, lam_b], V)
    cx = counterexample(C, 0.1, 0, j=1, R0=1.0, n_steps=4)
    np.testing.assert_allclose([cx.risk_a[0], cx.risk_b[0]], [1.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose([cx.risk_a[1], cx.risk_b[1]], [0.6724, 0.1936], rtol=1e-12)
    np.testing.assert_allclose(cx.risk_a, cx.predicted_a, rtol=1e-12)
    np.testing.assert_allclose(cx.risk_b, cx.predicted_b, rtol=1e-12)
    # equal λ gives equal futures: the counterexample needs λ_i ≠ λ_j
    cx_eq = counterexample(np.diag([2.0, 2.0, 5.0]), 0.1, 0, j=1, n_steps=3)
    np.testing.assert_allclose(cx_eq.risk_a, cx_eq.risk_b, rtol=1e-12)


# ----------------------------------------------------------------------------- bad inputs


def test_bad_inputs_name_parameter():
    rng = np.random.default_rng(7)
    cm = make_commuting(rng, 3)
    with pytest.raises(ValueError, match="eta"):
        mode_recursion(np.zeros(3), np.ones((4, 3)), np.ones((4, 3)), eta=2.0)
    with pytest.raises(ValueError, match="eta"):
        mode_product_sum(np.zeros(3), np.ones((4, 3)), np.ones((4, 3)), eta=0.0)
    with pytest.raises(ValueError, match="b"):
        mode_recursion(np.zeros(3), np.ones((4, 3)), np.ones((4, 2)), eta=0.5)
    with pytest.raises(ValueError, match="p0"):
        mode_product_sum(np.zeros(2), np.ones((4, 3)), np.ones((4, 3)), eta=0.5)
    with pytest.raises(ValueError, match="L"):
        richardson_mode_risk(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), L=-1)
    with pytest.raises(ValueError, match="a"):
        richardson_mode_risk(np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 3)), L=1)
    with pytest.raises(ValueError, match="h"):
        CommutingModel(h=np.array([1.0, -1.0, 1.0]), gstar=cm.gstar, sigma=cm.sigma, noise_var=0.1, V=cm.V)
    with pytest.raises(ValueError, match="V"):
        CommutingModel(h=cm.h, gstar=cm.gstar, sigma=cm.sigma, noise_var=0.1, V=np.ones((3, 3)))
    with pytest.raises(ValueError, match="g"):
        cm.coefficients(np.zeros((1, 3)))
    lm = cm.latent_model()
    with pytest.raises(ValueError, match="Sigma_z"):
        LatentModel(H=lm.H, Gstar=lm.Gstar, Sigma_z=np.diag([1.0, -1.0, 1.0]), noise_var=0.1)
    with pytest.raises(ValueError, match="H"):
        LatentModel(
            H=np.array([[1.0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]]), Gstar=lm.Gstar, Sigma_z=lm.Sigma_z, noise_var=0.1
        )
    with pytest.raises(ValueError, match="Gstar"):
        LatentModel(H=lm.H, Gstar=np.eye(2), Sigma_z=lm.Sigma_z, noise_var=0.1)
    G0 = np.eye(3)
    with pytest.raises(ValueError, match="eta_e"):
        encdec_iterate(lm, G0, np.zeros((3, 3)), eta_e=10.0, eta_d=0.1, n_steps=5)
    with pytest.raises(ValueError, match="eta_d"):
        encdec_iterate(lm, G0, np.zeros((3, 3)), eta_e=0.1, eta_d=1e6, n_steps=5)
    with pytest.raises(ValueError, match="P0"):
        encdec_iterate(lm, G0, np.zeros((2, 3)), eta_e=0.1, eta_d=0.1, n_steps=5)
    with pytest.raises(ValueError, match="G"):
        lm.A(np.zeros((3, 3, 2)))
    with pytest.raises(ValueError, match="G"):
        lm.oracle(np.zeros((3, 3)))  # singular encoder
    with pytest.raises(ValueError, match="D_seq"):
        tracking_error_iterate(np.zeros((3, 3)), np.ones((4, 3, 3)), np.ones((3, 3, 3)), eta=0.1)
    with pytest.raises(ValueError, match="C_seq"):
        tracking_error_product_sum(np.zeros((3, 3)), np.ones((4, 2, 2)), np.ones((4, 3, 3)), eta=0.1, steps=[1])
    with pytest.raises(ValueError, match="steps"):
        tracking_error_product_sum(np.zeros((3, 3)), np.ones((4, 3, 3)), np.ones((4, 3, 3)), eta=0.1, steps=[5])
    with pytest.raises(ValueError, match="C_seq"):
        commutator_defect(np.ones((3, 2)))
    with pytest.raises(ValueError, match="eta"):
        counterexample(np.diag([1.0, 8.0]), 0.3, 0, j=1)
    with pytest.raises(ValueError, match="C"):
        counterexample(np.array([[1.0, 1.0], [0.0, 1.0]]), 0.1, 0, j=1)
    with pytest.raises(ValueError, match="j"):
        counterexample(np.diag([1.0, 8.0]), 0.1, 0, j=2)
    with pytest.raises(ValueError, match="i"):
        counterexample(np.diag([0.0, 8.0]), 0.1, 0, j=1)
    with pytest.raises(ValueError, match="R1_b"):
        counterexample_eigenvalues(0.5, 1.5, 0.1)
    with pytest.raises(ValueError, match="exact"):
        closure_mismatch(np.zeros(3), np.zeros(3))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 4), r=st.integers(1, 5), S=st.integers(0, 40))
def test_property_ordered_product_sum_equals_recursion(seed, m, r, S):
    """Random non-commuting PSD sequences C_t and drifts D_t (seed 000 §6.6)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((S, r, r))
    C_seq = A @ np.swapaxes(A, 1, 2) / r
    lam = max((np.linalg.eigvalsh(c)[-1] for c in C_seq), default=1.0)
    eta = 0.9 * 2.0 / max(lam, 1e-3)
    D_seq = rng.standard_normal((S, m, r))
    E0 = rng.standard_normal((m, r))
    rec = tracking_error_iterate(E0, C_seq, D_seq, eta=eta)
    ps = tracking_error_product_sum(E0, C_seq, D_seq, eta=eta, steps=np.arange(S + 1))
    assert np.abs(rec - ps).max() <= RTOL * max(np.abs(rec).max(), 1.0)
