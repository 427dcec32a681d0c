"""Tests of iclcore.richardson.order_parameters (seed 000 §9, §12.11): gauge invariance, MP windows."""

import numpy as np
import pytest

from iclcore.linalg import haar_orthogonal, stable_rank, top_energy
from iclcore.lsq.dynamics import gd_trajectory, modal_weights
from iclcore.richardson.order_parameters import (
    condition_number,
    decoder_order_parameters,
    iteration_spectral_radius,
    ks_distance_mp,
    latent_order_parameters,
    latent_population_contraction,
    latent_population_system,
    mp_condition_number,
    mp_optimal_contraction,
    mp_window,
    overlap_entropy,
    overlap_weights,
    preconditioned_spectrum,
    subspace_error,
    whitened_spectrum,
)
from iclcore.spectra.mp import mp_edges, mp_sample_eigenvalues
from iclcore.stats import ks_critical_value, ks_two_sample


def _spd(K, rng, cond=10.0):
    Q = haar_orthogonal(K, rng)
    return (Q * np.geomspace(1.0, cond, K)) @ Q.T


def _problem(K=6, seed=0):
    rng = np.random.default_rng(seed)
    H = _spd(K, rng)
    C = _spd(K, rng, 30.0)
    P_star = np.linalg.inv(H) * 0.9
    P = P_star + 0.05 * rng.standard_normal((4, K, K))
    return rng, H, C, P_star, P


def test_rho_invariant_under_invertible_ambient_gauge():
    # x -> T x: H -> T H T^T, P -> T^{-T} P T^{-1}, hence I - PH -> T^{-T}(I - PH)T^T (similar)
    rng, H, C, P_star, P = _problem()
    T = rng.standard_normal((6, 6)) + 3 * np.eye(6)
    Ti = np.linalg.inv(T)
    H2 = T @ H @ T.T
    P2 = Ti.T @ P @ Ti
    assert not np.allclose(P2, P)  # the gauge acts on the raw matrices
    np.testing.assert_allclose(iteration_spectral_radius(P2, H2), iteration_spectral_radius(P, H), rtol=1e-10)
    Ps = 0.5 * (P_star + P_star.T)
    np.testing.assert_allclose(preconditioned_spectrum(Ti.T @ Ps @ Ti, H2), preconditioned_spectrum(Ps, H), rtol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_decoder_order_parameters_invariant_under_random_orthogonal_gauge(seed):
    rng, H, C, P_star, P = _problem(seed=seed)
    Q = haar_orthogonal(6, rng)
    rot = lambda A: Q @ A @ Q.T  # noqa: E731
    a = decoder_order_parameters(P, P_star, C, H_inf=H, k=2)
    b = decoder_order_parameters(rot(P), rot(P_star), rot(C), H_inf=rot(H), k=2)
    assert not np.allclose(rot(P), P)
    for f in ("rho_pop", "srank", "top_energy", "entropy"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-9, err_msg=f)
    for f in ("rho_star", "srank_star", "top_energy_star"):
        assert getattr(b, f) == pytest.approx(getattr(a, f), rel=1e-9)
    # the overlap weights themselves are permutation-free: eigenvalues of C are unchanged
    np.testing.assert_allclose(overlap_weights(rot(P), rot(P_star), rot(C)), overlap_weights(P, P_star, C), atol=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_latent_order_parameters_invariant_under_random_latent_gauge(seed):
    # U -> U O, P_z -> O^T P_z O (O in O(r)) leaves the latent Richardson iteration unchanged
    rng = np.random.default_rng(100 + seed)
    K, r, S = 8, 3, 5
    H = _spd(K, rng)
    U = np.array([np.linalg.qr(rng.standard_normal((K, r)))[0] for _ in range(S)])
    U_star = np.linalg.qr(rng.standard_normal((K, r)))[0]
    A = latent_population_system(U, H)
    Pz_star = np.linalg.inv(A)
    Pz = Pz_star + 0.1 * rng.standard_normal((S, r, r))
    O = haar_orthogonal(r, rng)
    U2, Pz2, Pzs2 = U @ O, O.T @ Pz @ O, O.T @ Pz_star @ O
    a = latent_order_parameters(U, Pz, Pz_star, U_star=U_star, H_inf=H)
    b = latent_order_parameters(U2, Pz2, Pzs2, U_star=U_star @ haar_orthogonal(r, rng), H_inf=H)
    for f in a.__dataclass_fields__:
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-8, atol=1e-12, err_msg=f)
    np.testing.assert_allclose(a.rho_oracle, 0.0, atol=1e-12)  # P_z = A_inf^{-1} solves in one step
    # whitened spectra are gauge invariant too
    np.testing.assert_allclose(whitened_spectrum(O.T @ A @ O, O.T @ A[0] @ O), whitened_spectrum(A, A[0]), atol=1e-10)


def test_overlap_weights_equal_modal_weights_on_gd_trajectory():
    rng, H, C, P_star, _ = _problem()
    eta = 1.0 / np.linalg.eigvalsh(C)[-1]
    steps = np.array([0, 1, 5, 20])
    P0 = rng.standard_normal((6, 6))
    Ps = gd_trajectory(P0, P_star, C, eta=eta, steps=steps)
    np.testing.assert_allclose(
        overlap_weights(Ps, P_star, C), modal_weights(P0, P_star, C, eta=eta, steps=steps), atol=1e-12
    )
    h = overlap_entropy(Ps, P_star, C)
    assert np.all((h >= 0) & (h <= 1))


def test_gd_order_parameters_defined_after_convergence_to_rounding():
    # a well-conditioned C: GD reaches P_star to rounding, where the weights from P are undefined (0/0);
    # the closed-form weights (log space) stay defined, agree with P-based ones early on and concentrate
    # on the slowest mode, so the entropy tends to 0 (main paper §9)
    K = 6
    C = np.diag(np.geomspace(1.0, 3.0, K))
    H = C.copy()
    P_star = np.linalg.inv(C)
    eta = 0.5 / 3.0
    steps = np.array([0, 5, 20, 800])
    Ps = gd_trajectory(np.zeros((K, K)), P_star, C, eta=eta, steps=steps)
    with pytest.raises(ValueError, match="P: equals P_star"):
        decoder_order_parameters(Ps, P_star, C, H_inf=H)
    w = modal_weights(np.zeros((K, K)), P_star, C, eta=eta, steps=steps)
    op = decoder_order_parameters(Ps, P_star, C, H_inf=H, weights=w)
    early = decoder_order_parameters(Ps[:3], P_star, C, H_inf=H)
    np.testing.assert_allclose(op.entropy[:3], early.entropy, atol=1e-12)
    assert op.entropy[-1] < 1e-6 and w[-1, 0] > 1 - 1e-9
    with pytest.raises(ValueError, match="weights"):
        decoder_order_parameters(Ps, P_star, C, H_inf=H, weights=w[:, :-1])


def test_stable_rank_and_top_energy():
    rng = np.random.default_rng(3)
    P = rng.standard_normal((5, 7, 7))
    np.testing.assert_allclose(stable_rank(P), [stable_rank(p) for p in P], rtol=1e-12)
    assert stable_rank(np.eye(4)) == pytest.approx(4.0)
    assert stable_rank(np.outer([1.0, 2.0], [3.0, 1.0])) == pytest.approx(1.0)
    assert top_energy(np.diag([3.0, 4.0]), 1) == pytest.approx(16 / 25)
    assert np.all(top_energy(P, 7) == pytest.approx(1.0))
    with pytest.raises(ValueError, match="zero matrix"):
        stable_rank(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="k"):
        top_energy(P, 8)


def test_mp_window_edges_agree_with_spectra_module():
    for g in (0.01, 0.25, 0.5, 0.9):
        assert mp_window(np.eye(3), g) == pytest.approx(mp_edges(g), rel=1e-14)
        lo, hi = mp_edges(g)
        assert mp_condition_number(1.0, g) == pytest.approx(hi / lo, rel=1e-14)
        assert mp_condition_number(7.0, g) == pytest.approx(7.0 * hi / lo, rel=1e-14)
        assert mp_optimal_contraction(g) == pytest.approx(2 * np.sqrt(g) / (1 + g), rel=1e-14)
    S = np.diag([0.5, 2.0])
    assert mp_window(S, 0.25, shift=0.1) == pytest.approx((0.5 * 0.25 + 0.1, 2.0 * 2.25 + 0.1))
    with pytest.raises(ValueError, match="gamma"):
        mp_condition_number(1.0, 1.0)
    with pytest.raises(ValueError, match="kappa_sigma"):
        mp_condition_number(0.5, 0.1)


def test_mp_predictions_against_a_large_wishart_sample():
    # K = 400, gamma = 1/4: edge fluctuations are O(M^{-2/3}) ~ 1e-2 relative, tolerance 4e-2
    rng = np.random.default_rng(7)
    K, M = 400, 1600
    ev = mp_sample_eigenvalues(K, M, 1, rng=rng)[0]
    g = K / M
    assert ev[-1] / ev[0] == pytest.approx(mp_condition_number(1.0, g), rel=4e-2)
    best = (ev[-1] - ev[0]) / (ev[-1] + ev[0])  # min over alpha of rho(I - alpha W)
    assert best == pytest.approx(mp_optimal_contraction(g), rel=4e-2)
    assert ks_distance_mp(ev, g) < ks_critical_value(1, alpha=0.01)  # a single matrix, conservative
    assert ks_distance_mp(ev, g) < 0.02  # O(1/K) for one Wishart matrix
    assert ks_distance_mp(ev, 4 * g) > 0.1  # the test has power against a wrong aspect ratio


def test_whitened_spectrum_recovers_the_wishart_factor():
    rng = np.random.default_rng(5)
    r, M, n = 3, 64, 200
    S = _spd(r, rng, 5.0)
    W = np.array([g.T @ g / M for g in rng.standard_normal((n, M, r))])
    L = np.linalg.cholesky(S)
    A = L @ W @ L.T  # same spectrum as S^{1/2} W S^{1/2}
    np.testing.assert_allclose(whitened_spectrum(A, S), np.linalg.eigvalsh(W), rtol=1e-10)
    # against an independent reference sample: same law, two-sample KS within the DKW level
    ref = mp_sample_eigenvalues(r, M, n, rng=rng)
    assert ks_two_sample(whitened_spectrum(A, S), ref) < ks_critical_value(n, n, alpha=0.001)


def test_latent_population_contraction_and_condition_number():
    rng = np.random.default_rng(9)
    K, r = 7, 2
    H = _spd(K, rng)
    U = np.linalg.qr(rng.standard_normal((K, r)))[0]
    A = latent_population_system(U, H)
    assert latent_population_contraction(np.linalg.inv(A), U, H) == pytest.approx(0.0, abs=1e-12)
    assert latent_population_contraction(np.zeros((r, r)), U, H) == pytest.approx(1.0)
    assert condition_number(np.diag([1.0, 4.0])) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="H"):
        condition_number(np.diag([1.0, -1.0]))
    assert subspace_error(U, U) == pytest.approx(0.0, abs=1e-12)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="P"):
        iteration_spectral_radius(np.ones((2, 3)), np.eye(2))
    with pytest.raises(ValueError, match="H"):
        iteration_spectral_radius(np.eye(2), np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="P"):
        overlap_weights(np.eye(2), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="alpha"):
        ks_critical_value(10, alpha=1.5)
    with pytest.raises(ValueError, match="eigenvalues"):
        ks_distance_mp(np.array([]), 0.5)
