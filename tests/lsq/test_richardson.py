"""Tests for iclcore.lsq.iterates (seed 000 §3.1, seed 001 §4)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore._reference import richardson_iterates_naive
from iclcore.lsq.iterates import (
    contraction_factor,
    in_context_gd_predict,
    iteration_matrix,
    richardson_certificate,
    richardson_error,
    richardson_iterates,
    richardson_sum_form,
)
from iclcore.lsq.tasks import TaskConfig, sample_prompts


def _batch(seed=0, n=20, K=5, lam=0.1):
    cfg = TaskConfig(K=K, M=12, lam=lam, cond=4.0)
    p = sample_prompts(cfg, n, np.random.default_rng(seed))
    P = 0.7 * np.linalg.inv(cfg.H_infinity)
    return cfg, p, P


def test_batched_matches_naive_and_sum_form():
    _, p, P = _batch()
    L = 9
    Z = richardson_iterates(P, p.H_M, p.d, L=L)
    Zn = richardson_iterates_naive(P, p.H_M, p.d, L=L)
    assert Z.shape == (20, L + 1, 5)
    assert np.allclose(Z, Zn, rtol=1e-12, atol=1e-14)
    assert np.allclose(Z[:, -1], richardson_sum_form(P, p.H_M, p.d, L=L), rtol=1e-11, atol=1e-13)
    # per-prompt P
    Pb = np.broadcast_to(P, (20, 5, 5)) * (1 + 0.01 * np.arange(20))[:, None, None]
    assert np.allclose(
        richardson_iterates(Pb, p.H_M, p.d, L=L), richardson_iterates_naive(Pb, p.H_M, p.d, L=L), rtol=1e-12, atol=1e-14
    )


def test_error_identity_and_fixed_point():
    """e_L = z_L − z† = (I − PH)^L (z_0 − z†) to rounding level (1e-12 relative)."""
    _, p, P = _batch(1)
    L = 15
    Z = richardson_iterates(P, p.H_M, p.d, L=L)
    E = richardson_error(P, p.H_M, -p.z_dagger, L=L)
    assert np.abs(Z - p.z_dagger[:, None] - E).max() <= 1e-12 * np.abs(p.z_dagger).max()
    T = iteration_matrix(P, p.H_M)
    EL = np.einsum("nij,nj->ni", np.linalg.matrix_power(T, L), -p.z_dagger)
    assert np.allclose(E[:, -1], EL, rtol=1e-11, atol=1e-14)
    # z† is a fixed point
    Zs = richardson_iterates(P, p.H_M, p.d, L=3, z0=p.z_dagger)
    assert np.allclose(Zs, p.z_dagger[:, None], atol=1e-12)


def test_exact_inverse_converges_in_one_step():
    _, p, _ = _batch(2)
    Pinv = np.linalg.inv(p.H_M)
    Z = richardson_iterates(Pinv, p.H_M, p.d, L=1)
    assert np.allclose(Z[:, 1], p.z_dagger, rtol=1e-10, atol=1e-12)
    c = contraction_factor(Pinv, p.H_M)
    assert np.all(c.operator_norm < 1e-10)


def test_contraction_factor_scalar_case():
    # P = a I, H = diag(h): I − PH diagonal, radius = norm = max |1 − a h|
    h = np.array([[0.5, 1.0, 3.0]])
    H = np.einsum("ni,ij->nij", h, np.eye(3))
    c = contraction_factor(0.5 * np.eye(3), H)
    assert np.isclose(c.spectral_radius[0], 0.75) and np.isclose(c.operator_norm[0], 0.75)


@pytest.mark.parametrize("per_task", [False, True])
def test_symmetric_spectral_radius_path_matches_general_eigenvalues(per_task):
    """For symmetric positive definite P, contraction_factor takes eigvalsh of CᵀHC (P = CCᵀ); it
    equals max|eig(I − PH)| from the general eigensolver to rounding; a non-symmetric or indefinite
    P takes the general path."""
    from iclcore.lsq.iterates import symmetric_pd_spectral_radius

    _, p, _ = _batch(3)
    rng = np.random.default_rng(7)
    K = p.H_M.shape[1]
    A = rng.standard_normal((p.H_M.shape[0] if per_task else 1, K, K))
    P = 0.3 * (A @ np.swapaxes(A, 1, 2)) / K + 0.05 * np.eye(K)
    P = P if per_task else P[0]
    general = np.abs(np.linalg.eigvals(iteration_matrix(P, p.H_M))).max(axis=-1)
    fast = symmetric_pd_spectral_radius(P, p.H_M)
    assert fast is not None
    assert np.max(np.abs(fast - general)) <= 1e-12 * np.max(general)
    assert np.max(np.abs(contraction_factor(P, p.H_M).spectral_radius - general)) <= 1e-12 * np.max(general)
    skew = P + 1e-3 * np.triu(np.ones((K, K)), 1)
    assert symmetric_pd_spectral_radius(skew, p.H_M) is None
    assert symmetric_pd_spectral_radius(-P, p.H_M) is None


def test_radius_le_norm():
    _, p, P = _batch(3)
    c = contraction_factor(P + 0.3 * np.triu(np.ones((5, 5)), 1), p.H_M)
    assert np.all(c.spectral_radius <= c.operator_norm * (1 + 1e-12))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.05, 1.5), L=st.integers(0, 12))
def test_certificate_never_violated(seed, scale, L):
    """‖e_ℓ‖ ≤ ‖I − PH‖^ℓ ‖e_0‖ for arbitrary (even non-contracting) P: violation rate 0."""
    rng = np.random.default_rng(seed)
    _, p, _ = _batch(seed % 7, n=10)
    P = scale * rng.standard_normal((5, 5)) / np.sqrt(5)
    cert = richardson_certificate(P, p.H_M, -p.z_dagger, L=L)
    assert cert.violation_rate == 0.0
    assert np.all(cert.ratio_final <= 1 + 1e-10)


def test_certificate_detects_violation_of_fake_bound():
    """The check can fail: shrinking the factor below the true rate produces violations."""
    _, p, P = _batch(4)
    cert = richardson_certificate(P, p.H_M, -p.z_dagger, L=10)
    fake = cert.bounds * (0.5 ** np.arange(11))
    assert np.mean(cert.error_norms > fake) > 0


@pytest.mark.parametrize(
    "args, name",
    [
        ((np.eye(4), np.ones((2, 5, 5)), np.ones((2, 5)), 3), "P"),
        ((np.eye(5), np.ones((2, 5, 4)), np.ones((2, 5)), 3), "H"),
        ((np.eye(5), np.ones((2, 5, 5)), np.ones((2, 4)), 3), "d"),
        ((np.eye(5), np.ones((2, 5, 5)), np.ones((2, 5)), -1), "L"),
        ((np.eye(5), np.ones((2, 5, 5)), np.ones((2, 5)), 2.5), "L"),
        ((np.full((5, 5), np.nan), np.ones((2, 5, 5)), np.ones((2, 5)), 2), "finite"),
    ],
)
def test_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        richardson_iterates(*args[:3], L=args[3])
    if name != "d":
        with pytest.raises(ValueError):
            richardson_error(*args[:3], L=args[3])


def test_bad_z0_and_rtol():
    _, p, P = _batch()
    with pytest.raises(ValueError, match="z0"):
        richardson_iterates(P, p.H_M, p.d, L=2, z0=np.ones((3, 5)))
    with pytest.raises(ValueError, match="rtol"):
        richardson_certificate(P, p.H_M, p.d, L=2, rtol=-1.0)


def test_in_context_gd_is_richardson_with_preconditioner_gamma_over_L():
    """L steps of preconditioned in-context GD (Bordelon et al. Eq. 4) are the Richardson iterates with
    P = Γ/L, H = XᵀX/P, d = Xᵀy/P started at 0; the prediction is Xq z_L (identity to rounding)."""
    rng = np.random.default_rng(12)
    P_ctx, D, L = 9, 4, 5
    X = rng.standard_normal((P_ctx, D))
    y = rng.standard_normal(P_ctx)
    Xq = rng.standard_normal((3, D))
    Gamma = rng.standard_normal((D, D))
    z = richardson_iterates(Gamma / L, X.T @ X / P_ctx, X.T @ y / P_ctx, L=L)[0, -1]
    np.testing.assert_allclose(in_context_gd_predict(Gamma, X, y, Xq=Xq, L=L), Xq @ z, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="L"):
        in_context_gd_predict(Gamma, X, y, Xq=Xq, L=0)
