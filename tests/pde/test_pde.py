"""Tests for iclcore.pde (affine P1 Galerkin operator, Matérn GP forcing, ridge prompt encoder)."""

import numpy as np
import pytest
from scipy.linalg import sqrtm

from iclcore.pde.galerkin import (
    affine_operator,
    assemble,
    assemble_direct,
    discrete_l2_error,
    load_vector,
    sample_coefficients,
    solve,
)
from iclcore.pde.gp import (
    covariance_operator_spectrum,
    full_mass_matrix,
    gp_effective_dimension,
    matern_covariance,
    sample_gp,
)
from iclcore.pde.prompts import PDEConfig, encoder_quality, ridge_encoder, sample_pde_prompts
from iclcore.richardson.baselines import LinearSystems, depth_error


def test_affine_assembly_to_rounding():
    op = affine_operator(32, 4, c0=0.7)
    rng = np.random.default_rng(0)
    for z in rng.normal(0, 0.3, size=(5, 4)):
        A = assemble(op, z)
        B = assemble_direct(op, z)
        assert np.max(np.abs(A - B)) <= 1e-13 * np.max(np.abs(B))
        assert np.array_equal(A, A.T) or np.max(np.abs(A - A.T)) <= 1e-14 * np.max(np.abs(A))
    Z = rng.normal(0, 0.3, size=(3, 4))
    assert np.allclose(assemble(op, Z), np.stack([assemble(op, z) for z in Z]), rtol=0, atol=1e-13)


def test_fem_second_order_against_manufactured_solution():
    """Constant a = 1 + z, u = sin(πx): the P1 error (interpolated load) is O(h²) in L²."""
    errs = []
    hs = [16, 32, 64, 128]
    for n_el in hs:
        op = affine_operator(n_el, 4, c0=1.0)
        z = np.full(4, 0.3)
        a = 1.3
        x = op.all_nodes
        f = (a * np.pi**2 + 1.0) * np.sin(np.pi * x)
        u = solve(assemble(op, z), load_vector(op, f))
        errs.append(discrete_l2_error(op, u, np.sin(np.pi * op.nodes)))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    # asymptotic order 2; the pre-asymptotic deviation at these h is O(h²) relative, far below 0.1
    assert np.all(np.abs(orders - 2.0) < 0.1), orders


def test_fem_nodally_exact_for_piecewise_coefficient():
    """c₀ = 0, f = 1: 1-D P1 Galerkin is exact at the nodes (theorem), with jumps of a at nodes."""
    op = affine_operator(16, 4, c0=0.0)
    z = np.array([0.5, -0.3, 0.2, 1.0])
    a = 1 + z
    # exact: a u' = C - x, u(0) = 0, u(1) = 0 -> u(x) = ∫_0^x (C - s)/a(s) ds
    edges = np.linspace(0, 1, 5)

    def integral(x, g):  # ∫_0^x g(s)/a(s) ds for g(s) = 1 or s, piecewise
        out = 0.0
        for k in range(4):
            lo, hi = edges[k], min(edges[k + 1], x)
            if hi > lo:
                out += g(hi, lo) / a[k]
        return out

    one = lambda hi, lo: hi - lo  # noqa: E731
    sid = lambda hi, lo: (hi**2 - lo**2) / 2  # noqa: E731
    C = integral(1.0, sid) / integral(1.0, one)
    u_exact = np.array([C * integral(x, one) - integral(x, sid) for x in op.nodes])
    u = solve(assemble(op, z), load_vector(op, np.ones(17)))
    assert np.max(np.abs(u - u_exact)) <= 1e-13


def test_noise_free_encoder_recovers_z():
    cfg = PDEConfig(n_el=32, sigma_u=0.0, lam_z=0.0, M=2, q=6)
    op = cfg.operator()
    p = sample_pde_prompts(cfg, op, 50, rng=np.random.default_rng(1))
    z_enc, G, b = ridge_encoder(cfg, op, p)
    assert G.shape == (50, 12, 4) and b.shape == (50, 12)
    assert np.max(np.abs(z_enc - p.z)) <= 1e-10
    q = encoder_quality(op, p, z_enc)
    assert q.z_mse <= 1e-20 and q.floor <= 1e-20


def test_encoder_quality_standard_errors():
    cfg = PDEConfig(n_el=32, sigma_u=0.05, lam_z=1e-3, M=2, q=6)
    op = cfg.operator()
    p = sample_pde_prompts(cfg, op, 60, rng=np.random.default_rng(3))
    z_enc, _, _ = ridge_encoder(cfg, op, p)
    q = encoder_quality(op, p, z_enc)
    A_true, A_enc = assemble(op, p.z), assemble(op, z_enc)
    rel = np.linalg.norm(A_enc - A_true, axis=(1, 2)) / np.linalg.norm(A_true, axis=(1, 2))
    assert q.A_rel_err == pytest.approx(rel.mean(), rel=1e-12)
    assert q.A_rel_err_se == pytest.approx(rel.std(ddof=1) / np.sqrt(60), rel=1e-12)
    assert q.z_mse_se > 0 and q.floor_se > 0


@pytest.mark.slow
def test_gp_sampler_covariance():
    """Empirical covariance of n draws: each entry has SE ≤ sqrt(2/n)·var; allow 5 SE for the max."""
    x = np.linspace(0, 1, 17)
    C = matern_covariance(x, 0.2, variance=2.0)
    n = 40_000
    f = sample_gp(C, n, np.random.default_rng(2))
    S = f.T @ f / n
    assert np.max(np.abs(S - C)) <= 5 * np.sqrt(2.0 / n) * 2.0


def test_covariance_operator_spectrum_and_d_eff():
    n_el = 20
    lam = covariance_operator_spectrum(n_el, 0.1)
    Mm = full_mass_matrix(n_el)
    Kf = matern_covariance(np.linspace(0, 1, n_el + 1), 0.1)
    R = np.real(sqrtm(Mm))
    ref = np.sort(np.linalg.eigvalsh(R @ Kf @ R))[::-1]
    assert np.max(np.abs(lam - ref)) <= 1e-12 * lam[0]
    # trace of T_k = ∫ k(x, x) dx = variance; the Galerkin trace is Tr(M K_f) -> 1 as h -> 0
    assert abs(lam.sum() - np.trace(Mm @ Kf)) <= 1e-12
    taus = np.array([1e-6, 1e-3, 1e-1])
    de = gp_effective_dimension(lam, taus)
    assert np.all(np.diff(de) < 0) and de[0] <= n_el + 1
    assert gp_effective_dimension(lam, 1e-3) == pytest.approx(np.sum(lam / (lam + 1e-3)))


def test_frozen_identity_on_encoded_systems():
    cfg = PDEConfig(n_el=16, M=2, q=4, sigma_u=1e-4)
    op = cfg.operator()
    p = sample_pde_prompts(cfg, op, 20, rng=np.random.default_rng(3))
    z_enc, _, _ = ridge_encoder(cfg, op, p)
    s = LinearSystems(H=assemble(op, z_enc), d=p.F_query, x_star=p.u_query)
    P = np.linalg.inv(op.A0)
    L = 12
    e = depth_error(P, s, L)[:, -1] + s.x_star - s.x_dagger
    T = np.eye(op.n_h) - P @ s.H
    ref = -(np.linalg.matrix_power(T, L) @ s.x_dagger[..., None])[..., 0]
    assert np.max(np.abs(e - ref)) <= 1e-12 * np.max(np.abs(s.x_dagger))


def test_bad_input():
    with pytest.raises(ValueError, match="n_el"):
        affine_operator(30, 4)
    with pytest.raises(ValueError, match="a_min"):
        sample_coefficients(3, 4, 0.1, a_min=1.5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="z"):
        assemble(affine_operator(8, 4), np.zeros(3))
    with pytest.raises(ValueError, match="tau"):
        gp_effective_dimension(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="q"):
        PDEConfig(n_el=8, q=8)
