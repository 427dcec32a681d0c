"""Tests of iclcore.lsq.dynamics: closed-form population gradient descent (seed 000 §3.1, §5.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.lsq.dynamics import (
    check_step_size,
    excess_risk,
    gd_iterate,
    gd_trajectory,
    modal_energies,
    modal_entropy,
    modal_excess_risk,
    modal_weights,
    psd_spectrum,
    quadratic_minimizer,
    quadratic_risk,
)

# Identities are checked to 1e-12 relative: the loop accumulates about one rounding
# error (eps ~ 2.2e-16) per step and per entry, so after <= 300 steps the gap is
# ~1e-14 relative; 1e-12 leaves two orders of magnitude of margin.
RTOL = 1e-12


def random_problem(rng: np.random.Generator, K: int, m: int, rank: int | None = None, frac: float = 0.9):
    """Random PSD C (rank ``rank``), consistent B = P_true C, stable eta = frac * 2/λ_max."""
    rank = K if rank is None else rank
    A = rng.standard_normal((K, rank))
    C = A @ A.T / K
    C = 0.5 * (C + C.T)
    B = rng.standard_normal((m, K)) @ C
    lam_max = np.linalg.eigvalsh(C)[-1]
    eta = frac * 2.0 / lam_max
    X0 = rng.standard_normal((m, K))
    return C, B, eta, X0


def test_closed_form_matches_loop_and_fixed_point():
    rng = np.random.default_rng(1)
    C, B, eta, X0 = random_problem(rng, K=7, m=5)
    Xs = quadratic_minimizer(B, C)
    np.testing.assert_allclose(Xs @ C, B, rtol=0, atol=1e-12 * np.abs(B).max())
    loop = gd_iterate(X0, B, C, eta=eta, n_steps=250)
    closed = gd_trajectory(X0, Xs, C, eta=eta, steps=np.arange(251))
    assert loop.shape == closed.shape == (251, 5, 7)
    scale = np.abs(loop).max()
    assert np.max(np.abs(loop - closed)) <= RTOL * scale
    # X_⋆ is a fixed point of the iteration and of the closed form
    np.testing.assert_allclose(gd_iterate(Xs, B, C, eta=eta, n_steps=3)[-1], Xs, rtol=0, atol=1e-13 * np.abs(Xs).max())
    np.testing.assert_allclose(gd_trajectory(Xs, Xs, C, eta=eta, steps=[0, 5, 1000])[2], Xs, atol=0)
    # convergence: after many steps the closed form is at the fixed point
    np.testing.assert_allclose(gd_trajectory(X0, Xs, C, eta=eta, steps=[20000])[0], Xs, atol=1e-10)


def test_singular_covariance_keeps_null_space_component():
    rng = np.random.default_rng(2)
    C, B, eta, X0 = random_problem(rng, K=6, m=3, rank=3)
    Xs = quadratic_minimizer(B, C)
    loop = gd_iterate(X0, B, C, eta=eta, n_steps=200)
    closed = gd_trajectory(X0, Xs, C, eta=eta, steps=np.arange(201))
    assert np.max(np.abs(loop - closed)) <= RTOL * np.abs(loop).max()
    # the component of X0 - X⋆ in the null space of C never moves
    spec = psd_spectrum(C)
    null = spec.Q[:, spec.lam < 1e-10]
    np.testing.assert_allclose((loop[-1] - Xs) @ null, (X0 - Xs) @ null, atol=1e-12)


def test_modal_risk_equals_direct_and_population_risk():
    rng = np.random.default_rng(3)
    K, m = 6, 6
    H = rng.standard_normal((K, K)) / np.sqrt(K) + 2 * np.eye(K)
    Sigma = np.diag(rng.uniform(0.5, 2.0, K))
    noise = 0.3
    C = H @ Sigma @ H.T + noise * np.eye(K)  # d = H z + xi
    B = Sigma @ H.T  # E[z d^T]
    S = Sigma
    Ps = quadratic_minimizer(B, C)
    eta = 1.9 / np.linalg.eigvalsh(C)[-1]
    P0 = np.zeros((m, K))
    steps = np.arange(0, 301)
    modal = modal_excess_risk(P0, Ps, C, eta=eta, steps=steps)
    loop = gd_iterate(P0, B, C, eta=eta, n_steps=300)
    direct = excess_risk(loop, Ps, C)
    pop = quadratic_risk(loop, B, C, S=S) - quadratic_risk(Ps, B, C, S=S)
    ref = modal[0]
    assert np.max(np.abs(modal - direct)) <= RTOL * ref
    assert np.max(np.abs(modal - pop)) <= RTOL * ref
    # default normalisation is 1/K with K = rows; explicit scale overrides it
    np.testing.assert_allclose(excess_risk(P0, Ps, C, scale=1.0), K * excess_risk(P0, Ps, C), rtol=1e-14)
    # risk is non-increasing for a stable step (each modal factor (1-ηλ)^2 < 1)
    assert np.all(np.diff(modal) <= 1e-15 * ref)


def test_vector_parameters_use_unnormalised_risk():
    C = np.diag([1.0, 8.0])
    e0 = np.array([1.0, 0.0])
    assert excess_risk(e0, np.zeros(2), C) == pytest.approx(1.0)
    r = modal_excess_risk(e0, np.zeros(2), C, eta=0.18, steps=[0, 1])
    np.testing.assert_allclose(r, [1.0, 0.82**2], rtol=1e-14)
    traj = gd_trajectory(e0, np.zeros(2), C, eta=0.18, steps=[0, 1, 2])
    assert traj.shape == (3, 2)
    np.testing.assert_allclose(traj[2], [0.82**2, 0.0], rtol=1e-14)


def test_modal_weights_and_entropy():
    C = np.diag([1.0, 2.0, 4.0])
    X0 = np.ones((1, 3))
    w = modal_weights(X0, np.zeros((1, 3)), C, eta=0.1, steps=[0, 1, 50, 100000])
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(w[0], np.array([1.0, 2.0, 4.0]) / 7.0, rtol=1e-14)
    expected1 = np.array([1.0 * 0.9**2, 2.0 * 0.8**2, 4.0 * 0.6**2])
    np.testing.assert_allclose(w[1], expected1 / expected1.sum(), rtol=1e-13)
    # far out, all the error sits in the slowest mode, although every energy underflows
    np.testing.assert_allclose(w[-1], [1.0, 0.0, 0.0], atol=1e-300)
    H = modal_entropy(w)
    assert H[-1] == pytest.approx(0.0, abs=1e-12)
    assert modal_entropy(np.full(4, 0.25)) == pytest.approx(1.0)
    # modal energies are the unnormalised weights at s = 0
    np.testing.assert_allclose(modal_energies(X0, np.zeros((1, 3)), C), [1.0, 2.0, 4.0])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    K=st.integers(1, 8),
    m=st.integers(1, 5),
    frac=st.floats(0.05, 0.99),
    n=st.integers(0, 120),
)
def test_property_closed_form_equals_loop(seed, K, m, frac, n):
    rng = np.random.default_rng(seed)
    C, B, eta, X0 = random_problem(rng, K=K, m=m, frac=frac)
    Xs = quadratic_minimizer(B, C)
    loop = gd_iterate(X0, B, C, eta=eta, n_steps=n)
    closed = gd_trajectory(X0, Xs, C, eta=eta, steps=np.arange(n + 1))
    scale = max(np.abs(loop).max(), np.abs(Xs).max())
    assert np.max(np.abs(loop - closed)) <= RTOL * scale
    modal = modal_excess_risk(X0, Xs, C, eta=eta, steps=np.arange(n + 1))
    direct = excess_risk(loop, Xs, C)
    assert np.max(np.abs(modal - direct)) <= RTOL * max(modal[0], 1e-300) + 1e-300


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), K=st.integers(2, 7), s=st.integers(0, 60))
def test_property_modal_weights_sum_to_one_and_match_energies(seed, K, s):
    rng = np.random.default_rng(seed)
    C, B, eta, X0 = random_problem(rng, K=K, m=3)
    Xs = quadratic_minimizer(B, C)
    w = modal_weights(X0, Xs, C, eta=eta, steps=[s])[0]
    Xsfinal = gd_trajectory(X0, Xs, C, eta=eta, steps=[s])[0]
    energy = modal_energies(Xsfinal, Xs, C)
    # error model of the reference: Xs_final - Xs is formed in float64 with an absolute error of at most
    # dd per entry, so each modal energy e_k is off by at most 2 sqrt(e_k lam_max) dd + lam_max dd^2
    # (the closed form w has no such cancellation); fixed before comparing, independent of the data
    dd = 16 * np.finfo(float).eps * max(np.abs(Xsfinal).max(), np.abs(Xs).max()) * np.sqrt(Xs.size)
    lam_max = np.linalg.eigvalsh(C)[-1]
    bound = (2 * np.sqrt(energy * lam_max) * dd + lam_max * dd**2) / energy.sum()
    assert np.all(np.abs(w - energy / energy.sum()) <= 1e-9 * energy / energy.sum() + bound)
    assert 0.0 <= modal_entropy(w) <= 1.0 + 1e-12


# ---------------------------------------------------------------- bad inputs


def test_step_size_outside_window_names_parameter():
    C = np.diag([1.0, 4.0])
    check_step_size(0.49, C)
    for bad in (0.0, -0.1, 0.5, 0.6, np.inf, np.nan):
        with pytest.raises(ValueError, match="eta_d"):
            check_step_size(bad, C, name="eta_d")
    with pytest.raises(ValueError, match="eta"):
        gd_trajectory(np.zeros(2), np.zeros(2), C, eta=0.5, steps=[1])
    with pytest.raises(ValueError, match="eta"):
        gd_iterate(np.zeros(2), np.zeros(2), C, eta=1.0, n_steps=3)
    with pytest.raises(ValueError, match="eta"):
        modal_excess_risk(np.zeros(2), np.zeros(2), C, eta=-1.0, steps=[1])


def test_bad_covariance_names_parameter():
    nonsym = np.array([[1.0, 0.5], [0.0, 1.0]])
    nonpsd = np.diag([1.0, -0.5])
    for bad, word in ((nonsym, "symmetric"), (nonpsd, "positive semi-definite")):
        with pytest.raises(ValueError, match=f"C: .*{word}"):
            check_step_size(0.1, bad)
        with pytest.raises(ValueError, match="C: "):
            gd_trajectory(np.zeros(2), np.zeros(2), bad, eta=0.1, steps=[1])
        with pytest.raises(ValueError, match="C: "):
            excess_risk(np.zeros(2), np.zeros(2), bad)
    with pytest.raises(ValueError, match="C: .*square"):
        check_step_size(0.1, np.ones((2, 3)))
    with pytest.raises(ValueError, match="C: .*NaN"):
        check_step_size(0.1, np.array([[np.nan, 0.0], [0.0, 1.0]]))


def test_mismatched_shapes_name_parameter():
    C = np.eye(3)
    with pytest.raises(ValueError, match="X0"):
        gd_trajectory(np.zeros((2, 4)), np.zeros((2, 3)), C, eta=0.5, steps=[1])
    with pytest.raises(ValueError, match="Xstar"):
        gd_trajectory(np.zeros((2, 3)), np.zeros((3, 3)), C, eta=0.5, steps=[1])
    with pytest.raises(ValueError, match="B"):
        gd_iterate(np.zeros((2, 3)), np.zeros((2, 2)), C, eta=0.5, n_steps=2)
    with pytest.raises(ValueError, match="B"):
        gd_iterate(np.zeros((2, 3)), np.zeros((1, 3)), C, eta=0.5, n_steps=2)
    with pytest.raises(ValueError, match="X"):
        excess_risk(np.zeros((4, 2, 2)), np.zeros((2, 3)), C)
    with pytest.raises(ValueError, match="S"):
        quadratic_risk(np.zeros((2, 3)), np.zeros((2, 3)), C, S=np.eye(3))
    with pytest.raises(ValueError, match="steps"):
        gd_trajectory(np.zeros(3), np.zeros(3), C, eta=0.5, steps=[-1])
    with pytest.raises(ValueError, match="steps"):
        modal_excess_risk(np.zeros(3), np.zeros(3), C, eta=0.5, steps=[1.5])
    with pytest.raises(ValueError, match="n_steps"):
        gd_iterate(np.zeros(3), np.zeros(3), C, eta=0.5, n_steps=-2)
    with pytest.raises(ValueError, match="scale"):
        excess_risk(np.zeros(3), np.zeros(3), C, scale=-1.0)


def test_inconsistent_rhs_and_degenerate_weights():
    C = np.diag([1.0, 0.0])
    with pytest.raises(ValueError, match="B: .*range"):
        quadratic_minimizer(np.array([[1.0, 1.0]]), C)
    with pytest.raises(ValueError, match="X0"):
        modal_weights(np.zeros((1, 2)), np.zeros((1, 2)), C, eta=0.5, steps=[0])
    with pytest.raises(ValueError, match="weights"):
        modal_entropy(np.array([0.5, 0.6]))


def test_moment_helpers_give_bayes_oracle_and_regression_target():
    rng = np.random.default_rng(5)
    from iclcore.linalg import haar_orthogonal
    from iclcore.lsq.dynamics import (
        covariance_from_spectrum,
        decoder_moments,
        encoder_moments,
    )

    K = 5
    Q = haar_orthogonal(K, rng)
    np.testing.assert_allclose(Q.T @ Q, np.eye(K), atol=1e-14)
    Sigma = covariance_from_spectrum(np.linspace(0.5, 2.0, K), Q)
    np.testing.assert_allclose(np.linalg.eigvalsh(Sigma), np.linspace(0.5, 2.0, K), rtol=1e-13)
    H = rng.standard_normal((K, K))
    C, B, S = decoder_moments(H, Sigma, 0.2)
    Ps = quadratic_minimizer(B, C)
    ridge = Sigma @ H.T @ np.linalg.inv(H @ Sigma @ H.T + 0.2 * np.eye(K))
    np.testing.assert_allclose(Ps, ridge, rtol=1e-10, atol=1e-12)
    # Monte Carlo check of the moments: 2e5 draws, entries O(1) -> standard error ~ 5e-3
    n = 200_000
    z = rng.standard_normal((n, K)) @ np.linalg.cholesky(Sigma).T
    d = z @ H.T + np.sqrt(0.2) * rng.standard_normal((n, K))
    np.testing.assert_allclose(d.T @ d / n, C, atol=0.05)
    np.testing.assert_allclose(z.T @ d / n, B, atol=0.05)
    Gstar = rng.standard_normal((3, K))
    Ce, Be, Se = encoder_moments(Gstar, Sigma, 0.1)
    np.testing.assert_allclose(quadratic_minimizer(Be, Ce), Gstar, rtol=1e-10, atol=1e-12)
    assert Se.shape == (3, 3)
    # the excess risk of the encoder is tr((G-G⋆)Σ(G-G⋆)^T) and the floor is the noise
    assert quadratic_risk(Gstar, Be, Ce, S=Se, scale=1.0) == pytest.approx(3 * 0.1, rel=1e-10)
    with pytest.raises(ValueError, match="noise_var"):
        decoder_moments(H, Sigma, -1.0)
    with pytest.raises(ValueError, match="H"):
        decoder_moments(np.ones((K, K + 1)), Sigma, 0.1)
    with pytest.raises(ValueError, match="Gstar"):
        encoder_moments(np.ones((3, K + 1)), Sigma, 0.1)
    with pytest.raises(ValueError, match="n"):
        haar_orthogonal(0, rng)
    with pytest.raises(ValueError, match="Q"):
        covariance_from_spectrum([1.0, 2.0], np.ones((2, 2)))
