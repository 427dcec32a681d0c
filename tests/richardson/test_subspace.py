"""Tests for iclcore.richardson.subspace: principal angles, Top-r, Davis–Kahan, r_eff, floor risk (seed 000 §5.2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.linalg import principal_angles
from iclcore.richardson.subspace import (
    davis_kahan_bound,
    effective_rank,
    eigengap,
    empirical_task_covariance,
    floor_risk,
    floor_risk_bound,
    orthonormal_basis,
    sin_theta,
    top_r_subspace,
    wedin_sin_bound,
)


def _rotated_pair(theta: float, K: int = 6, seed: int = 0):
    """U = span(q1), V = span(cos θ q1 + sin θ q2) for a random orthonormal pair (q1, q2)."""
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((K, K)))[0]
    return Q[:, :1], np.cos(theta) * Q[:, :1] + np.sin(theta) * Q[:, 1:2]


@pytest.mark.parametrize("theta", [1e-12, 1e-8, 1e-4, 0.3, np.pi / 4, 1.2, np.pi / 2 - 1e-9])
def test_principal_angle_of_a_known_rotation(theta):
    # The angle is recovered to absolute accuracy 1e-15 (the rounding of the inputs), also for
    # tiny angles, where arccos of the cosine is off by ~1e-8 (cos θ rounds to 1 for θ < 1e-8).
    U, V = _rotated_pair(theta)
    got = principal_angles(U, V)[0]
    assert abs(got - theta) <= 1e-15 + 1e-14 * theta
    naive = np.arccos(min(1.0, np.linalg.svd(U.T @ V, compute_uv=False)[0]))
    if theta <= 1e-8:
        assert abs(naive - theta) > 0.5 * theta  # the unstable formula loses the angle entirely


def test_sin_theta_small_angle_squared_matches_paper_scale():
    U, V = _rotated_pair(np.arcsin(np.sqrt(1.9699e-9)))  # the size of seed 000 §11's final sin²
    assert sin_theta(U, V, squared=True) == pytest.approx(1.9699e-9, rel=1e-10)


def test_angles_are_basis_invariant_and_symmetric():
    rng = np.random.default_rng(1)
    U = rng.standard_normal((9, 3))
    V = rng.standard_normal((9, 3))
    R = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    a = principal_angles(U, V)
    np.testing.assert_allclose(principal_angles(U @ R, V), a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(principal_angles(V, U), a, rtol=1e-12, atol=1e-14)
    assert sin_theta(U, U @ R) < 1e-14
    # Frobenius vs spectral: ||sin||_2 <= ||sin||_F <= sqrt(r) ||sin||_2
    s2, sf = sin_theta(U, V, "2"), sin_theta(U, V, "fro")
    assert s2 <= sf + 1e-15 <= np.sqrt(3) * s2 + 1e-14


def test_sin_theta_equals_projector_difference_norm():
    # ||sin Θ||_2 = ||P_U - P_V||_2 for equal dimensions (a classical identity)
    rng = np.random.default_rng(2)
    U = orthonormal_basis(rng.standard_normal((7, 2)))
    V = orthonormal_basis(rng.standard_normal((7, 2)))
    assert sin_theta(U, V) == pytest.approx(np.linalg.norm(U @ U.T - V @ V.T, 2), rel=1e-12)


def test_top_r_and_eigengap_and_effective_rank():
    S = np.diag([0.5, 3.0, 1.0, 0.0])
    U = top_r_subspace(S, 2)
    assert sin_theta(U, np.eye(4)[:, [1, 2]]) < 1e-15
    assert eigengap(S, 2) == pytest.approx(0.5, abs=1e-15)
    assert eigengap(S, 4) == pytest.approx(0.0, abs=1e-15)
    assert effective_rank(S) == pytest.approx(4.5 / 3.0, rel=1e-15)


def test_empirical_task_covariance_is_mean_outer_product():
    B = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(empirical_task_covariance(B), sum(np.outer(b, b) for b in B) / 4, rtol=1e-15)


def test_paper_davis_kahan_is_violated_by_a_2x2_example():
    # Σ = diag(1, 0) (γ = 1); Ŝ = [[1/2, δ], [δ, 1/2]] has top eigenvector at 45°.
    # sin θ = 0.7071 > ||Ŝ - Σ||/γ ≈ 0.5: the printed inequality fails, the valid variants hold.
    Sigma = np.diag([1.0, 0.0])
    S_hat = np.array([[0.5, 1e-3], [1e-3, 0.5]])
    s = sin_theta(top_r_subspace(S_hat, 1), np.eye(2)[:, :1])
    assert s == pytest.approx(np.sqrt(0.5), rel=1e-12)
    assert s > davis_kahan_bound(S_hat, Sigma, 1, variant="paper") + 0.2
    assert s <= davis_kahan_bound(S_hat, Sigma, 1, variant="weyl")
    assert s <= davis_kahan_bound(S_hat, Sigma, 1, variant="mixed")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-3, 2.0), r=st.integers(1, 3))
def test_valid_davis_kahan_variants_always_hold(seed, scale, r):
    rng = np.random.default_rng(seed)
    K = 6
    U = np.linalg.qr(rng.standard_normal((K, K)))[0]
    lam = np.r_[np.sort(rng.uniform(0.5, 2.0, r))[::-1], np.zeros(K - r)]
    Sigma = (U * lam) @ U.T
    E = rng.standard_normal((K, K))
    S_hat = Sigma + scale * (E + E.T) / 2
    s = sin_theta(top_r_subspace(S_hat, r), U[:, :r])
    assert s <= davis_kahan_bound(S_hat, Sigma, r, variant="mixed") * (1 + 1e-10) + 1e-14
    assert s <= davis_kahan_bound(S_hat, Sigma, r, variant="weyl") * (1 + 1e-10) + 1e-14
    # the paper's form is off by at most the factor γ/(γ - ||E||)
    err = np.linalg.norm(S_hat - Sigma, 2)
    gamma = eigengap(Sigma, r)
    if err < gamma:
        assert s <= davis_kahan_bound(S_hat, Sigma, r, variant="paper") * gamma / (gamma - err) * (1 + 1e-10)


def test_covariance_error_scales_like_sqrt_reff_over_n():
    # seed 000 §5.2: ||Σ̂_N - Σ_β||_2 = O(||Σ_β|| sqrt(r_eff/N)); with exact task vectors the
    # normalised error stays O(1) and quadruples when N is divided by 16 (N^{-1/2}), within MC spread.
    rng = np.random.default_rng(3)
    K, r = 12, 3
    U = np.linalg.qr(rng.standard_normal((K, r)))[0]
    mu = np.array([1.0, 0.5, 0.25])
    Sigma = (U * mu) @ U.T
    reff = effective_rank(Sigma)
    assert reff == pytest.approx(1.75, rel=1e-12)

    def mean_err(N, reps=40):
        out = []
        for _ in range(reps):
            beta = (rng.standard_normal((N, r)) * np.sqrt(mu)) @ U.T
            out.append(np.linalg.norm(empirical_task_covariance(beta) - Sigma, 2))
        return np.mean(out)

    e_small, e_big = mean_err(250), mean_err(4000)
    norm = np.linalg.norm(Sigma, 2)
    for N, e in ((250, e_small), (4000, e_big)):
        assert 0.3 < e / (norm * np.sqrt(reff / N)) < 3.0
    assert 3.0 < e_small / e_big < 5.3  # sqrt(16) = 4, 40 repetitions


def test_floor_risk_matches_monte_carlo_and_bound():
    rng = np.random.default_rng(4)
    K, r, n = 10, 3, 200_000
    Us = np.linalg.qr(rng.standard_normal((K, r)))[0]
    U = orthonormal_basis(Us + 0.2 * rng.standard_normal((K, r)))
    Sz = np.diag([1.0, 0.4, 0.1])
    Sx = np.diag(np.linspace(2.0, 0.5, K))
    exact = floor_risk(U, Us, Sz, Sigma_x=Sx)
    beta = (rng.standard_normal((n, r)) * np.sqrt(np.diag(Sz))) @ Us.T
    res = beta - (beta @ U) @ U.T
    vals = np.einsum("nk,kl,nl->n", res, Sx, res)
    se = vals.std() / np.sqrt(n)
    assert abs(vals.mean() - exact) < 5 * se  # 5 standard errors
    assert exact <= floor_risk_bound(U, Us, Sz, Sigma_x=Sx)
    assert floor_risk(Us, Us, Sz, Sigma_x=Sx) < 1e-28


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), tilt=st.floats(0.0, 3.0))
def test_floor_risk_bound_holds(seed, tilt):
    rng = np.random.default_rng(seed)
    K, r = 7, 2
    Us = np.linalg.qr(rng.standard_normal((K, r)))[0]
    U = Us + tilt * rng.standard_normal((K, r))
    Sz = np.diag(rng.uniform(0.1, 1.0, r))
    A = rng.standard_normal((K, K))
    Sx = A @ A.T / K + 0.1 * np.eye(K)
    assert floor_risk(U, Us, Sz, Sigma_x=Sx) <= floor_risk_bound(U, Us, Sz, Sigma_x=Sx) * (1 + 1e-12) + 1e-15


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.floats(1e-8, 1.0))
def test_wedin_bound_holds(seed, size):
    rng = np.random.default_rng(seed)
    Gs = rng.standard_normal((8, 3))
    G = Gs + size * rng.standard_normal((8, 3))
    assert sin_theta(G, Gs) <= wedin_sin_bound(G, Gs) * (1 + 1e-10)


def test_bad_inputs():
    with pytest.raises(ValueError, match="U"):
        orthonormal_basis(np.ones((4, 2)))
    with pytest.raises(ValueError, match="U"):
        orthonormal_basis(np.ones((2, 3)))
    with pytest.raises(ValueError, match="V"):
        principal_angles(np.eye(4)[:, :2], np.eye(5)[:, :2])
    with pytest.raises(ValueError, match="norm"):
        sin_theta(np.eye(3)[:, :1], np.eye(3)[:, 1:2], norm="nuc")
    with pytest.raises(ValueError, match="r"):
        top_r_subspace(np.eye(3), 4)
    with pytest.raises(ValueError, match="S"):
        top_r_subspace(np.array([[1.0, 2.0], [0.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="variant"):
        davis_kahan_bound(np.eye(3), np.eye(3), 1, variant="yu")
    with pytest.raises(ValueError, match="Sigma"):
        davis_kahan_bound(np.eye(3), np.eye(3), 1)  # zero gap
    with pytest.raises(ValueError, match="Sigma"):
        effective_rank(np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="U"):
        principal_angles(np.full((3, 1), np.nan), np.eye(3)[:, :1])
    with pytest.raises(ValueError, match="G_star"):
        wedin_sin_bound(np.eye(3)[:, :2], np.eye(3))
    with pytest.raises(TypeError, match="beta_hat"):
        empirical_task_covariance({"a": 1})


@pytest.mark.parametrize(("N_max", "n_N"), [(20000, 9), (100000, 12)])  # encdec_encoder's quick and paper grids
def test_normalised_covariance_error_window_has_small_false_failure_rate(N_max, n_N):
    # Error model of ledger row encdec-13: with exact Gaussian task vectors (Σ_β = diag(0.2, 0.08, 0.03), the
    # notebook's model), e_N = ||Σ̂_N - Σ_β||_2 / (||Σ_β|| sqrt(r_eff/N)) on the nested grid N = 30..N_max. The
    # window [0.15, 4.5] for (min_N e_N, max_N e_N) fails in < 1 % of draws; the narrower window [0.3, 3]
    # would fail in about one draw in eight (both checked below). Nested sample covariances are sums of
    # independent Wishart increments (Bartlett, scipy), 4000 draws here.
    from scipy.stats import wishart

    rng = np.random.default_rng(27)
    mu = np.array([0.2, 0.08, 0.03])
    reps, reff = 4000, 1.55
    Ns = np.unique(np.round(np.geomspace(30, N_max, n_N)).astype(int))
    S, prev, es = np.zeros((reps, 3, 3)), 0, []
    for N in Ns:
        S = S + wishart(df=int(N - prev), scale=np.diag(mu)).rvs(size=reps, random_state=rng)
        prev = N
        es.append(np.linalg.norm(S / N - np.diag(mu), 2, axis=(1, 2)) / (mu[0] * np.sqrt(reff / N)))
    es = np.array(es)
    fail_new = np.mean((es.min(0) < 0.15) | (es.max(0) > 4.5))
    fail_old = np.mean((es.min(0) < 0.3) | (es.max(0) > 3.0))
    assert fail_new < 0.01  # expected ~0.0035, binomial sd ~0.001 at 4000 draws
    assert fail_old > 0.08  # the narrower window (expected 0.12-0.16)
    # power: the same draws with Σ̂ biased by 5 % (a bug of that size) fail the window in most draws at N_max = 1e5
    biased = np.linalg.norm(1.05 * S / Ns[-1] - np.diag(mu), 2, axis=(1, 2)) / (mu[0] * np.sqrt(reff / Ns[-1]))
    assert np.mean(biased > 4.5) > (0.5 if N_max == 20000 else 0.99)
