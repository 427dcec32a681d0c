"""Isotropy of the flow, the in-context GD identity and the Result-10 SGD noise (Bordelon et al. §2.2,
§3.1 Result 1, §3.3 Result 6, App. B, App. C.1): ``iclcore.dmft.isotropy`` and ``iclcore.dmft.sgd_noise``."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.dmft import data as data_
from iclcore.dmft import isotropy as iso_sym
from iclcore.dmft import sgd_noise, shallow_sgd
from iclcore.lsq.iterates import in_context_gd_predict


@pytest.mark.parametrize("D", [1, 2, 4, 8])
def test_pauli_group_is_orthogonal_and_irreducible(D):
    G = iso_sym.pauli_group(D)
    assert G.shape == (D * D, D, D)
    np.testing.assert_allclose(G @ G.transpose(0, 2, 1), np.broadcast_to(np.eye(D), G.shape), atol=1e-15)
    M = np.random.default_rng(0).standard_normal((D, D))
    avg = np.mean(G @ M @ G.transpose(0, 2, 1), axis=0)
    np.testing.assert_allclose(avg, np.trace(M) / D * np.eye(D), atol=1e-14)


def test_off_isotropic_fraction():
    assert iso_sym.off_isotropic_fraction(3.0 * np.eye(4)) == pytest.approx(0.0, abs=1e-16)
    assert iso_sym.off_isotropic_fraction(np.zeros((3, 3))) == 0.0
    # diag(1, -1): trace 0, so the whole matrix is off-isotropic
    assert iso_sym.off_isotropic_fraction(np.diag([1.0, -1.0])) == pytest.approx(1.0)
    assert iso_sym.off_isotropic_fraction(np.zeros((5, 2, 2))).shape == (5,)


@pytest.mark.parametrize("setting", ["iso", "rrs"])
def test_symmetrised_descent_stays_isotropic_and_follows_the_scalar_descent(setting):
    lam, om = data_.power_law_spectrum(4, 1.0, 1.0)
    r = iso_sym.symmetrised_descent(
        setting, 4, 3, n_contexts=3, eta=0.3, steps=25, rng=np.random.default_rng(1), P=6, lam=lam, omega=om
    )
    assert r.off_iso.max() < 1e-13
    np.testing.assert_allclose(r.gamma, r.gamma_scalar, rtol=1e-12, atol=1e-14)
    assert r.gamma[-1] > 0.3
    assert r.off_iso_plain[-1] > 1e-3  # three contexts break the symmetry


def test_masked_attention_computes_in_context_gd():
    rng = np.random.default_rng(2)
    for D, P, L in [(1, 3, 1), (4, 7, 3), (6, 2, 5)]:
        G = rng.standard_normal((D, D))
        X, Xq, y = rng.standard_normal((P, D)), rng.standard_normal((4, D)), rng.standard_normal(P)
        f = iso_sym.masked_linear_attention(iso_sym.reduced_attention_weights(G), X, y, Xq=Xq, L=L)
        np.testing.assert_allclose(f, in_context_gd_predict(G, X, y, Xq=Xq, L=L), rtol=1e-12, atol=1e-13)
    # the paper's Gamma = W_x^T W_k^T W_q W_x is the transpose of the preconditioner
    w = iso_sym.reduced_attention_weights(G)
    np.testing.assert_allclose(w["Wx"].T @ w["Wk"].T @ w["Wq"] @ w["Wx"], G.T)


def test_mean_path_closed_form_and_limits():
    m = sgd_noise.shallow_mean_path(2000, 0.05, 10, P=20)
    a0 = 1 + 11 / 20
    assert m[0] == pytest.approx(0.05)
    assert m[-1] == pytest.approx(1 / a0, rel=1e-12)


def test_ensemble_mean_is_exact_and_independent_of_kappa():
    """The seed-mean of tr Γ_t is γ̄_t at finite D for every κ (D = 4, 1500 seeds: a 4-SE band)."""
    rng = np.random.default_rng(3)
    for kappa in (0.5, 4.0):
        e = sgd_noise.shallow_sgd_ensemble(4, 1.0, kappa, tau=1.0, eta=0.1, steps=20, seeds=1500, rng=rng)
        d = (e.gamma - e.mean_path).mean(axis=1)
        assert abs(d.mean()) < 4 * d.std(ddof=1) / np.sqrt(d.size)


def test_noise_plateau_theory_leading_order_is_eta_over_tau():
    # C(inf) = (eta/tau)(1 + 1/kappa)(a0 - 1)/(2 a0) + O(eta^2), a0 = 1 + 1/alpha
    for tau, kappa in [(1.0, 1.0), (4.0, 0.5)]:
        eta = 1e-6
        c = sgd_noise.noise_plateau_theory(eta, 1.0, kappa, tau=tau)
        assert c == pytest.approx(eta / tau * (1 + 1 / kappa) * 0.25, rel=1e-5)
    th = shallow_sgd.shallow_sgd_theory(np.array([0]), 0.1, 1.0, kappa=1.0, tau=2.0)
    assert sgd_noise.noise_plateau_theory(0.1, 1.0, 1.0, tau=2.0) == pytest.approx(th.b / (1 - th.a))


def test_bad_inputs():
    with pytest.raises(ValueError, match="D"):
        iso_sym.pauli_group(6)
    with pytest.raises(ValueError, match="Gamma"):
        iso_sym.off_isotropic_fraction(np.zeros(3))
    with pytest.raises(ValueError, match="setting"):
        iso_sym.symmetrised_descent("fs", 4, 1, n_contexts=1, eta=0.1, steps=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="P"):
        iso_sym.symmetrised_descent("iso", 4, 1, n_contexts=1, eta=0.1, steps=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="X"):
        iso_sym.masked_linear_attention(
            iso_sym.reduced_attention_weights(np.eye(2)), np.zeros((3, 2)), np.zeros(2), Xq=np.zeros((1, 2)), L=1
        )
    with pytest.raises(ValueError, match="eta"):
        sgd_noise.shallow_sgd_ensemble(4, 1.0, 1.0, tau=1.0, eta=-0.1, steps=5, seeds=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="eta"):
        sgd_noise.shallow_sgd_ensemble(4, 1.0, 1.0, tau=0.25, eta=1.5, steps=50, seeds=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="seeds"):
        sgd_noise.shallow_sgd_ensemble(4, 1.0, 1.0, tau=1.0, eta=0.1, steps=5, seeds=0, rng=np.random.default_rng(0))


def test_depth_gain_peaks_at_alpha_one():
    """Errata 'Reading of “especially for α ≈ 1”' (row dmft_reduced-04): L*(α,1) − [1−α]_+ peaks at α = 1."""
    from scipy.optimize import minimize_scalar

    from iclcore.dmft import iso

    res = minimize_scalar(
        lambda a: -(iso.iso_optimum(a, 1)[1] - max(0.0, 1.0 - a)),
        bounds=(0.2, 5.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert res.x == pytest.approx(1.0, abs=1e-6)
    a = np.array([0.3, 0.7, 1.5, 3.0])
    gain = np.array([iso.iso_optimum_closed_form(x, 1)[1] - iso.iso_optimum_closed_form(x, np.inf)[1] for x in a])
    np.testing.assert_allclose(gain, np.where(a < 1, a**2 / (1 + a), 1 / (1 + a)), rtol=1e-12)


def test_noise_plateau_is_the_seed_mean_of_the_window_average():
    e = sgd_noise.shallow_sgd_ensemble(4, 1.0, 1.0, tau=1.0, eta=0.1, steps=40, seeds=6, rng=np.random.default_rng(3))
    p = sgd_noise.noise_plateau(e, 0.1)  # window: steps >= ceil(2 / 0.1) = 20
    per_seed = e.noise[:, 20:].mean(axis=1)
    np.testing.assert_array_equal(p.per_seed, per_seed)
    assert p.mean == pytest.approx(per_seed.mean(), rel=1e-15)
    assert p.se == pytest.approx(per_seed.std(ddof=1) / np.sqrt(6), rel=1e-12)
    with pytest.raises(ValueError, match="t_start"):
        sgd_noise.noise_plateau(e, 0.1, t_start=4.0)


def test_noise_plateau_ratio_has_the_delta_method_standard_error():
    a = sgd_noise.NoisePlateau(2.0, 0.2, np.array([1.8, 2.2]))
    b = sgd_noise.NoisePlateau(1.0, 0.05, np.array([0.95, 1.05]))
    r, se = sgd_noise.noise_plateau_ratio(a, b)
    assert r == 2.0
    assert se == pytest.approx(2.0 * np.sqrt(0.1**2 + 0.05**2), rel=1e-14)
    with pytest.raises(ValueError, match="positive"):
        sgd_noise.noise_plateau_ratio(a, sgd_noise.NoisePlateau(0.0, 0.1, np.zeros(2)))


def test_noise_plateau_slope_recovers_a_per_seed_power_law():
    """Plateaus c_r x^q per seed r: every seed's slope is q; noise around it gives the seeds' spread as SE."""
    x = np.array([0.025, 0.05, 0.1, 0.2])
    c = np.array([1.0, 1.5, 0.7])
    exact = [sgd_noise.NoisePlateau(0.0, 0.0, c * xi**0.9) for xi in x]
    slope, se = sgd_noise.noise_plateau_slope(exact, x)
    assert slope == pytest.approx(0.9, rel=1e-12) and se == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(0)
    noisy = [sgd_noise.NoisePlateau(0.0, 0.0, c * xi * np.exp(0.05 * rng.standard_normal(3))) for xi in x]
    slope, se = sgd_noise.noise_plateau_slope(noisy, x)
    assert se > 0 and abs(slope - 1.0) < 5 * se
