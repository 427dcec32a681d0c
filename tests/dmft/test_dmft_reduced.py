"""Tests for the reduced-Γ modules of iclcore.dmft (data, iso, shallow_sgd, fs, rrs, scaling, reduced_sgd; seed 002: reduced-Γ theory, scaling laws, SGD).

Every closed form is checked against an independent computation: Gauss quadrature of the
Marchenko–Pastur law vs the Catalan formula, ODE integration vs closed-form flows, Monte Carlo
over Wishart/Haar draws vs deterministic equivalents, and SGD vs gradient flow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from iclcore.dmft import data as data_
from iclcore.dmft import fs as fs_
from iclcore.dmft import iso as iso_
from iclcore.dmft import reduced_sgd as reduced_sgd_
from iclcore.dmft import rrs as rrs_
from iclcore.dmft import scaling as scaling_
from iclcore.dmft import shallow_sgd as shallow_sgd_
from iclcore.dmft.reduced_sgd import _forward_backward, _sample_batch
from iclcore.lsq.iterates import in_context_gd_predict
from iclcore.stats import fit_power_law_exponent

# ------------------------------------------------------------------------------------------------
# ISO: landscape, optimum (Catalan), flows
# ------------------------------------------------------------------------------------------------


def _catalan(n: int) -> int:
    return math.comb(2 * n, n) // (n + 1)


@pytest.mark.parametrize("alpha", [0.3, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("L", [1, 2, 3, 8, 20])
def test_iso_optimum_catalan_matches_quadrature(alpha, L):
    """Catalan closed form (semicircle moments) vs exact Gauss quadrature of Eq. 8 (1e-12 abs)."""
    g_star, l_star = iso_.iso_optimum_closed_form(alpha, L)
    assert g_star == pytest.approx(L * alpha / (1 + alpha), rel=1e-14)
    # independent: explicit Catalan sum with integer Catalan numbers
    x = alpha / (1 + alpha) ** 2
    explicit = 1 - alpha / (1 + alpha) * sum(_catalan(n) * x**n for n in range(L))
    assert l_star == pytest.approx(explicit, abs=1e-13)
    assert float(iso_.iso_loss(g_star, alpha, L)) == pytest.approx(l_star, abs=1e-12)
    # stationarity: derivative of the landscape vanishes at gamma*
    assert abs(float(iso_.iso_loss_grad(g_star, alpha, L))) < 1e-11


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("L", [1, 4, 10])
def test_iso_numerical_optimum_equals_closed_form(alpha, L):
    g_num, l_num = iso_.iso_optimum(alpha, L)
    g_cf, l_cf = iso_.iso_optimum_closed_form(alpha, L)
    assert g_num == pytest.approx(g_cf, rel=1e-6)
    assert l_num == pytest.approx(l_cf, abs=1e-12)


def test_iso_alpha_one_central_binomial():
    """At α = 1: L* = C(2L, L) 4^{-L} (1/2, 3/8, 35/128, ... 0.1963806 at L = 8)."""
    for L in range(1, 13):
        assert iso_.iso_optimum_closed_form(1.0, L)[1] == pytest.approx(math.comb(2 * L, L) / 4**L, abs=1e-14)
    assert iso_.iso_optimum_closed_form(1.0, 8)[1] == pytest.approx(0.1963806, abs=1e-7)


def test_iso_depth1_optimum_is_one_over_one_plus_alpha_not_paper():
    """Result 1 prints (1+α)^{-2}; the minimum of Eq. 8 at L = 1 is 1/(1+α)."""
    for alpha in [0.5, 1.0, 2.0, 4.0]:
        _, l1 = iso_.iso_optimum(alpha, 1)
        assert l1 == pytest.approx(1 / (1 + alpha), abs=1e-12)
        assert abs(l1 - (1 + alpha) ** -2) > 0.1 * l1
        # (1+α)^{-2} is the parameter error (1/D)|Γ* - I|^2 at Γ* = α/(1+α) I
        g1 = alpha / (1 + alpha)
        assert (1 - g1) ** 2 == pytest.approx((1 + alpha) ** -2, rel=1e-14)


@pytest.mark.slow
def test_iso_depth1_optimum_monte_carlo_predictor():
    """Simulate the actual in-context predictor at L = 1, Γ = γ*I (D = 64, α = 2): the loss is the
    finite-D value 1 - 2γ + γ²(1 + (D+1)/P) ≈ 1/(1+α) = 0.337, far from the printed 1/9."""
    D, alpha = 64, 2.0
    P = int(alpha * D)
    g = alpha / (1 + alpha)
    cfg = reduced_sgd_.ReducedGammaSGDConfig("iso", D=D, L=1, B=1, eta=0.1, steps=1, P=P)
    mean, se = reduced_sgd_.reduced_gamma_loss_mc(g * np.eye(D), cfg, np.random.default_rng(0), n_contexts=3000)
    exact_finite_d = 1 - 2 * g + g**2 * (1 + (D + 1) / P)
    assert abs(mean - exact_finite_d) < 4 * se
    assert abs(mean - 1 / (1 + alpha)) < 0.02
    assert abs(mean - (1 + alpha) ** -2) > 0.2


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_iso_infinite_depth_limit(alpha):
    l200 = iso_.iso_optimum_closed_form(alpha, 200)[1]
    assert l200 == pytest.approx(max(0.0, 1 - alpha), abs=1e-3)
    assert iso_.iso_optimum_closed_form(alpha, math.inf)[1] == max(0.0, 1 - alpha)


def test_iso_depth_monotone():
    for alpha in [0.5, 1.0, 2.0]:
        vals = [iso_.iso_optimum_closed_form(alpha, L)[1] for L in range(1, 30)]
        assert np.all(np.diff(vals) < 0)


@pytest.mark.parametrize("L,sigma", [(1, 0.0), (3, 0.0), (2, 0.5)])
@pytest.mark.slow
def test_iso_landscape_vs_wishart_monte_carlo(L, sigma):
    """MP quadrature landscape vs the exact finite-D average over Wishart spectra (D = 300, 6 draws):
    finite-D and sampling corrections are O(1/D); tolerance 2% relative."""
    alpha = 1.5
    gam = np.linspace(0.2, 1.2 * L * alpha / (1 + alpha), 5)
    theory = iso_.iso_loss(gam, alpha, L, sigma=sigma)
    mc = iso_.iso_loss_finite_d_mc(gam, alpha, L, D=300, rng=np.random.default_rng(1), draws=6, sigma=sigma)
    np.testing.assert_allclose(mc, theory, rtol=0.02)


def test_iso_finite_d_optimum_approaches_closed_form():
    """Finite-D optimum (Wishart MC) converges to the Catalan value as D grows (O(1/D) gap)."""
    _, l_cf = iso_.iso_optimum_closed_form(1.0, 4)
    gaps = []
    for D in [16, 128]:
        _, l_d = iso_.iso_optimum_finite_d_mc(1.0, 4, D, rng=np.random.default_rng(12), draws=4096 // D)
        gaps.append(abs(l_d - l_cf))
    assert gaps[1] < gaps[0] and gaps[1] < 0.01


def test_iso_noise_term_vs_predictor_monte_carlo():
    """Eq. 83 noise term: simulate noisy labels through the in-context GD predictor (D = 24, L = 2) and
    compare with the exact finite-D spectral average (4 standard errors)."""
    D, alpha, L, sigma, g = 24, 2.0, 2, 0.7, 1.0
    cfg = reduced_sgd_.ReducedGammaSGDConfig("iso", D=D, L=L, B=1, eta=0.1, steps=1, P=int(alpha * D), sigma=sigma)
    mean, se = reduced_sgd_.reduced_gamma_loss_mc(g * np.eye(D), cfg, np.random.default_rng(2), n_contexts=6000)
    exact = float(iso_.iso_loss_finite_d_mc(g, alpha, L, D=D, rng=np.random.default_rng(3), draws=4000, sigma=sigma))
    assert abs(mean - exact) < 4 * se + 2e-3
    # and the asymptotic MP value is within the O(1/D) finite-size correction
    assert float(iso_.iso_loss(g, alpha, L, sigma=sigma)) == pytest.approx(exact, rel=0.06)


def test_iso_noisy_depth1_optimum_closed_form():
    """L = 1: γ* = 1/(1 + (1+σ²)/α), L* = σ² + (1+σ²)/(α+1+σ²) (α = 2, σ = 0.5: 0.61538, 0.63462)."""
    g, l = iso_.iso_optimum(2.0, 1, 0.5)
    assert g == pytest.approx(1 / (1 + 1.25 / 2), rel=1e-7)
    assert l == pytest.approx(0.25 + 1.25 / 3.25, abs=1e-12)
    assert (round(g, 5), round(l, 5)) == (0.61538, 0.63462)


@pytest.mark.parametrize("L", [1, 2, 4, 8])
def test_iso_optimal_gamma_decreases_with_noise(L):
    gs = [iso_.iso_optimum(2.0, L, s)[0] for s in [0.0, 0.25, 0.5, 1.0]]
    assert np.all(np.diff(gs) < 0)


@pytest.mark.parametrize("L,sigma", [(1, 0.0), (4, 0.0), (3, 0.6)])
def test_iso_gradient_matches_finite_differences(L, sigma):
    gam = np.array([0.3, 1.1, 2.0])
    h = 1e-6
    fd = (iso_.iso_loss(gam + h, 1.3, L, sigma=sigma) - iso_.iso_loss(gam - h, 1.3, L, sigma=sigma)) / (2 * h)
    np.testing.assert_allclose(iso_.iso_loss_grad(gam, 1.3, L, sigma=sigma), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("sigma", [0.0, 0.8])
def test_iso_depth1_flow_ode_vs_closed_form(sigma):
    t = np.linspace(0, 8, 41)
    g, _ = iso_.iso_gradient_flow(t, 1.5, 1, sigma=sigma)
    np.testing.assert_allclose(g, iso_.iso_depth1_flow(t, 1.5, sigma), atol=1e-8)


def test_iso_deep_flow_converges_to_optimum():
    g, loss = iso_.iso_gradient_flow(np.array([0.0, 1.0, 400.0]), 2.0, 4)
    g_star, l_star = iso_.iso_optimum_closed_form(2.0, 4)
    assert g[-1] == pytest.approx(g_star, rel=1e-4)
    assert loss[-1] == pytest.approx(l_star, rel=1e-6)
    assert loss[0] == pytest.approx(1.0, abs=1e-14)


# ------------------------------------------------------------------------------------------------
# Reduced model = Eq. 4 = in-context GD
# ------------------------------------------------------------------------------------------------


def test_predictor_equals_eq4_and_eq58():
    rng = np.random.default_rng(4)
    P, D, L = 11, 5, 4
    X = rng.standard_normal((P, D))
    bstar = rng.standard_normal(D) / math.sqrt(D)
    y = X @ bstar
    Xq = rng.standard_normal((3, D))
    G = rng.standard_normal((D, D)) * 0.3
    f = in_context_gd_predict(G, X, y, Xq=Xq, L=L)
    # Eq. 4 (column convention: X_paper = X^T): f = (1/LP) x^T Γ Σ_l (I - Σ̂Γ/L)^l X_paper y
    Sh = X.T @ X / P
    acc = sum(np.linalg.matrix_power(np.eye(D) - Sh @ G / L, ell) for ell in range(L))
    f4 = Xq @ G @ acc @ X.T @ y / (L * P)
    np.testing.assert_allclose(f, f4, rtol=1e-12, atol=1e-14)
    # Eq. 58 (noise-free): b_L = b* - (I - ΓΣ̂/L)^L b*
    bL = bstar - np.linalg.matrix_power(np.eye(D) - G @ Sh / L, L) @ bstar
    np.testing.assert_allclose(f, Xq @ bL, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("setting", ["iso", "fs", "rrs"])
def test_manual_backprop_matches_finite_differences(setting):
    rng = np.random.default_rng(5)
    D, L = 6, 3
    lam, om = data_.power_law_spectrum(D, 1.0, 1.0)
    cfg = reduced_sgd_.ReducedGammaSGDConfig(
        setting, D=D, L=L, B=4, eta=0.1, steps=1, P=9, K=7, sigma=0.3, test_label_noise=True, lam=lam, omega=om
    )
    batch = _sample_batch(cfg, lam, om, rng)
    G = rng.standard_normal((D, D)) * 0.3
    _, grad = _forward_backward(G, *batch, L)
    h = 1e-6
    for i, j in [(0, 0), (1, 4), (5, 2)]:
        E = np.zeros((D, D))
        E[i, j] = h
        lp, _ = _forward_backward(G + E, *batch, L)
        lm, _ = _forward_backward(G - E, *batch, L)
        assert (lp.mean() - lm.mean()) / (2 * h) == pytest.approx(grad[i, j], rel=1e-6, abs=1e-9)


def test_sgd_time_mapping_iso():
    """SGD with G = -(D/2)∇ at t = η·steps tracks the ISO flow γ(t) (D = 32, L = 2; 8% tolerance)."""
    cfg = reduced_sgd_.ReducedGammaSGDConfig("iso", D=32, L=2, B=64, eta=0.1, steps=200, P=64, K=32)
    res = reduced_sgd_.simulate_reduced_gamma_sgd(cfg, np.random.default_rng(6))
    g, _ = iso_.iso_gradient_flow(res.t, 2.0, 2)
    for i in [19, 59, 199]:
        assert res.gamma_mean[i] == pytest.approx(g[i], rel=0.08)


def test_sgd_time_mapping_rrs():
    """RRS population-context SGD vs the Eq. 13 flow (D = 24, L = 4, β = ν = 1; 8% tolerance)."""
    lam, om = data_.power_law_spectrum(24, 1.0, 1.0)
    cfg = reduced_sgd_.ReducedGammaSGDConfig("rrs", D=24, L=4, B=24, eta=0.3, steps=300, lam=lam, omega=om)
    res = reduced_sgd_.simulate_reduced_gamma_sgd(cfg, np.random.default_rng(7))
    g, _ = rrs_.rrs_gradient_flow(res.t, lam, om, L=4)
    for i in [29, 99, 299]:
        assert res.gamma_mean[i] == pytest.approx(g[i], rel=0.08)


# ------------------------------------------------------------------------------------------------
# Shallow SGD theory (Result 10)
# ------------------------------------------------------------------------------------------------


def test_shallow_theory_initial_values_and_fixed_point():
    steps = np.arange(0, 2001)
    th = shallow_sgd_.shallow_sgd_theory(steps, 0.1, 1.0, kappa=1.0, tau=1.0, sigma=0.3)
    assert th.param_error[0] == pytest.approx(1.0, abs=1e-14)
    assert th.icl_loss[0] == pytest.approx(1.0 + 0.09, abs=1e-14)
    assert th.C[-1] == pytest.approx(th.b / (1 - th.a), rel=1e-10)
    paper = shallow_sgd_.shallow_sgd_theory(
        steps, 0.1, 1.0, kappa=1.0, tau=1.0, sigma=0.3, paper_initial_condition=True
    )
    assert paper.param_error[0] > 1.5  # printed Eq. 79 (C(0) = 1) starts above the true value 1
    assert paper.param_error[-1] == pytest.approx(th.param_error[-1], rel=1e-10)


def test_shallow_theory_vs_sgd_simulation():
    """L = 1 online SGD (D = 48, α = κ = τ = 1, η = 0.1, 4 seeds) vs Result 10 with C(0) = a₀^{-2}."""
    D, steps = 48, 60
    th = shallow_sgd_.shallow_sgd_theory(np.arange(1, steps + 1), 0.1, 1.0, kappa=1.0, tau=1.0)
    errs = []
    for seed in range(4):
        cfg = reduced_sgd_.ReducedGammaSGDConfig("iso", D=D, L=1, B=D, eta=0.1, steps=steps, P=D, K=D, record_every=1)
        res = reduced_sgd_.simulate_reduced_gamma_sgd(cfg, np.random.default_rng(100 + seed))
        errs.append(np.sum((res.Gamma - np.eye(D)) ** 2) / D)
        pe = res.gamma_sq_mean - 2 * res.gamma_mean + 1
        assert pe[-1] == pytest.approx(errs[-1], rel=1e-12)
    assert np.mean(errs) == pytest.approx(th.param_error[-1], rel=0.1)


# ------------------------------------------------------------------------------------------------
# FS
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("L", [1, 2, 4, math.inf])
def test_fs_closed_form_vs_ode(L):
    lam, om = data_.power_law_spectrum(6, 1.0, 1.0)
    t = np.geomspace(1e-2, 1e3, 30)

    def rhs(_t, g):
        fac = np.exp(-2 * lam * g) if math.isinf(L) else (1 - lam * g / L) ** (2 * L - 1)
        return om * lam**2 * fac

    sol = solve_ivp(rhs, (0, t[-1]), np.zeros(6), t_eval=t, rtol=1e-11, atol=1e-13, method="LSODA")
    np.testing.assert_allclose(fs_.fs_mode_flow(t, lam, om, L=L), sol.y.T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fs_.fs_loss_curve(t, lam, om, L=L), fs_.fs_loss(sol.y.T, lam, om, L=L), rtol=1e-6)


def test_fs_paper_solution_is_factor_two_time():
    lam, om = data_.power_law_spectrum(5, 1.0, 1.0)
    t = np.geomspace(1e-3, 1e3, 9)
    np.testing.assert_allclose(
        fs_.fs_mode_flow_paper(t, lam, om), fs_.fs_mode_flow(2 * t, lam, om, L=math.inf), rtol=1e-13
    )
    assert not np.allclose(fs_.fs_mode_flow_paper(t, lam, om), fs_.fs_mode_flow(t, lam, om, L=math.inf))


def test_fs_depth_does_not_help_and_fixed_point():
    lam, om = data_.power_law_spectrum(50, 1.0, 1.0)
    t = np.geomspace(1e-2, 1e6, 40)
    curves = np.array([fs_.fs_loss_curve(t, lam, om, L=L) for L in [1, 2, 4, 8, 16, math.inf]])
    assert np.all(np.diff(curves, axis=0) > 0)  # L=1 < 2 < ... < inf at every t > 0
    g = fs_.fs_mode_flow(np.array([1e30]), lam[:3], om[:3], L=4)[0]  # u ~ x^{-1/6}: slow approach
    np.testing.assert_allclose(g, 4 / lam[:3], rtol=1e-3)
    assert fs_.fs_loss(4 / lam, lam, om, L=4) == pytest.approx(0.0, abs=1e-30)


@pytest.mark.parametrize("nu,beta", [(1.0, 1.0), (0.5, 1.0), (1.0, 0.5)])
def test_fs_time_exponent_corrected(nu, beta):
    """Fit on the L → ∞ closed form (D = 2e5 modes): νβ/(νβ+2ν+1), not the printed β/(ν+νβ+1)."""
    lam, om = data_.power_law_spectrum(200_000, nu, beta)
    ex = scaling_.scaling_exponents(nu, beta)
    kmax_t = lambda k: k ** (nu * beta + 2 * nu + 1)  # noqa: E731 - time at which mode k is learned
    t = np.geomspace(kmax_t(30.0), kmax_t(300.0), 20) * 200_000**0  # cut-off well inside the spectrum
    t = t / (om[0] * lam[0] ** 3)
    slope = fit_power_law_exponent(t, fs_.fs_loss_curve(t, lam, om, L=math.inf))
    assert slope == pytest.approx(ex["t_fs_corrected"], abs=0.01)
    assert abs(slope - ex["t_fs_paper"]) > 0.03


def test_ood_loss_properties_and_monte_carlo():
    rng = np.random.default_rng(8)
    D, L = 8, 3
    lam, om = data_.power_law_spectrum(D, 0.5, 1.0)
    Sig, Om = np.diag(lam), np.diag(om)
    G = L * np.diag(1 / lam)
    assert fs_.ood_loss(G, Sig, Om, L=L) == pytest.approx(0.0, abs=1e-25)
    S = fs_.random_skew(D, rng)
    assert np.allclose(S, -S.T)
    Sp = fs_.rotated_covariance(Sig, S, 0.4)
    Op = fs_.rotated_covariance(Om, S, 0.4)
    np.testing.assert_allclose(np.linalg.eigvalsh(Sp), np.sort(lam), rtol=1e-10)
    val = fs_.ood_loss(G, Sp, Op, L=L)
    assert val > 0
    # Monte Carlo over tasks b ~ N(0, Ω'/D): |Σ'^{1/2}(I - ΓΣ'/L)^L b|^2
    A = np.linalg.matrix_power(np.eye(D) - G @ Sp / L, L)
    b = rng.multivariate_normal(np.zeros(D), Op / D, size=200_000)
    v = b @ A.T
    mc = np.einsum("ni,ij,nj->n", v, Sp, v)
    assert abs(mc.mean() - val) < 4 * mc.std() / math.sqrt(mc.size)


# ------------------------------------------------------------------------------------------------
# RRS
# ------------------------------------------------------------------------------------------------


def test_rrs_loss_monte_carlo_haar():
    """Population RRS loss of Γ = γI over Haar rotations and tasks (D = 16, L = 3) vs Eq. 98."""
    lam, om = data_.power_law_spectrum(16, 1.0, 1.0)
    cfg = reduced_sgd_.ReducedGammaSGDConfig("rrs", D=16, L=3, B=1, eta=0.1, steps=1, lam=lam, omega=om)
    mean, se = reduced_sgd_.reduced_gamma_loss_mc(1.7 * np.eye(16), cfg, np.random.default_rng(9), n_contexts=4000)
    assert abs(mean - float(rrs_.rrs_loss(1.7, lam, om, L=3))) < 4 * se


def test_rrs_depth1_flow_closed_form_and_gradient():
    lam, om = data_.power_law_spectrum(40, 1.0, 1.5)
    t = np.linspace(0, 30, 16)
    g, _ = rrs_.rrs_gradient_flow(t, lam, om, L=1)
    m2, m3 = np.mean(om * lam**2), np.mean(om * lam**3)
    np.testing.assert_allclose(g, m2 / m3 * (1 - np.exp(-m3 * t)), rtol=1e-7, atol=1e-10)
    x = np.array([0.5, 2.0, 7.0])
    h = 1e-6
    fd = (rrs_.rrs_loss(x + h, lam, om, L=5) - rrs_.rrs_loss(x - h, lam, om, L=5)) / (2 * h)
    np.testing.assert_allclose(rrs_.rrs_loss_grad(x, lam, om, L=5), fd, rtol=1e-6)


@pytest.mark.parametrize("L", [1, 4, math.inf])
def test_rrs_parametric_time_vs_ode(L):
    """t(γ) by quadrature of 1/F vs integrating the Eq. 13 ODE to those times (1e-7 relative)."""
    lam, om = data_.power_law_spectrum(300, 1.0, 1.0)
    top = 30.0 if math.isinf(L) else 0.9 * rrs_.rrs_optimum(lam, om, L)[0]
    gs = np.geomspace(1e-2, top, 12)
    t = rrs_.rrs_time_of_gamma(gs, lam, om, L=L)
    g, _ = rrs_.rrs_gradient_flow(np.concatenate([[0.0], t]), lam, om, L=L)
    np.testing.assert_allclose(g[1:], gs, rtol=1e-7)
    with pytest.raises(ValueError, match="gamma"):
        rrs_.rrs_time_of_gamma(np.array([1.0, 2 * rrs_.rrs_optimum(lam, om, 2)[0]]), lam, om, L=2)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_rrs_time_exponent(beta):
    """L = ∞, D = 2e4: loss ~ t^{-β/(2+β)} (Eq. 97) over t ∈ [1e3, 1e6] (cut-off mode ≲ 1e2 ≪ D)."""
    lam, om = data_.power_law_spectrum(20_000, 1.0, beta)
    t = np.geomspace(1e3, 1e6, 16)
    _, loss = rrs_.rrs_gradient_flow(np.concatenate([[0.0], t]), lam, om, L=math.inf)
    assert fit_power_law_exponent(t, loss[1:]) == pytest.approx(beta / (2 + beta), abs=0.02)


def test_rrs_depth_exponent_and_optimum_location():
    lam, om = data_.power_law_spectrum(20_000, 1.0, 1.0)
    Ls = np.array([8, 16, 32, 64, 128])
    opts = [rrs_.rrs_optimum(lam, om, int(L)) for L in Ls]
    assert all(L < g < 2 * L for (g, _), L in zip(opts, Ls))  # not "γ* ≈ L"
    slope = fit_power_law_exponent(Ls.astype(float), np.array([v for _, v in opts]))
    assert slope == pytest.approx(1.0, abs=0.15)


# ------------------------------------------------------------------------------------------------
# Width and context bottlenecks
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("N", [60, pytest.param(250, marks=pytest.mark.slow)])
def test_width_bottleneck_vs_monte_carlo(N):
    lam, om = data_.power_law_spectrum(1000, 1.0, 1.0)
    mc = scaling_.width_bottleneck_mc(lam, om, N, rng=np.random.default_rng(10), draws=4)
    assert scaling_.width_bottleneck(lam, om, N) == pytest.approx(mc, rel=0.05)
    assert abs(scaling_.width_bottleneck_paper(lam, om, N) - mc) > 0.3 * mc  # Eq. 113 (squared) is far off


@pytest.mark.parametrize("P", [60, 250])
@pytest.mark.slow
def test_context_bottleneck_vs_monte_carlo(P):
    lam, om = data_.power_law_spectrum(1000, 1.0, 1.0)
    mc = scaling_.context_bottleneck_mc(lam, om, P, rng=np.random.default_rng(11), draws=12)
    assert scaling_.context_bottleneck(lam, om, P) == pytest.approx(mc, rel=0.04)
    assert abs(scaling_.context_bottleneck_paper(lam, om, P) - mc) > 0.05 * mc  # Eq. 116 drops 1/(1 - df2/P)


@pytest.mark.parametrize("beta", [1.5, 3.0])
def test_width_and_context_exponents_saturate(beta):
    """ν = 2 (ν = 1 has logarithmic corrections: Σ 1/(1+κk) diverges like log D): the width exponent is
    ν·min(β,1) and the context exponent ν·min(β,2), not the printed νβ (D = 2e5, n ∈ [100, 1600])."""
    nu = 2.0
    lam, om = data_.power_law_spectrum(200_000, nu, beta)
    ns = np.array([100, 200, 400, 800, 1600])
    w = np.array([scaling_.width_bottleneck(lam, om, int(n)) for n in ns])
    c = np.array([scaling_.context_bottleneck(lam, om, int(n)) for n in ns])
    ex = scaling_.scaling_exponents(nu, beta)
    assert fit_power_law_exponent(ns.astype(float), w) == pytest.approx(ex["N_corrected"], abs=0.03)
    assert fit_power_law_exponent(ns.astype(float), c) == pytest.approx(ex["P_corrected"], abs=0.03)
    assert ex["N_paper"] - ex["N_corrected"] >= 1.0


def test_width_equals_context_bottleneck_for_isotropic_tasks():
    """Identity check: with Ω ∝ I (ν = 2, β = 0.5 gives ω_k constant) the two deterministic
    equivalents coincide, κN/Z, because Σλ/(κ+λ)² = (P - df₂)/κ."""
    lam, om = data_.power_law_spectrum(5000, 2.0, 0.5)
    assert np.ptp(om) < 1e-9 * om.max()
    for n in [20, 300]:
        assert scaling_.width_bottleneck(lam, om, n) == pytest.approx(
            scaling_.context_bottleneck(lam, om, n), rel=1e-10
        )


@settings(max_examples=15, deadline=None)
@given(nu=st.floats(0.3, 3.0), beta=st.floats(0.1, 4.0))
def test_scaling_exponents_relations(nu, beta):
    ex = scaling_.scaling_exponents(nu, beta)
    assert 0 < ex["t_fs_corrected"] < 1 and 0 < ex["t_rrs_corrected"] < 1
    assert ex["N_corrected"] <= ex["P_corrected"] <= ex["P_paper"] + 1e-12 or beta > 2
    if beta <= 1:
        assert ex["N_corrected"] == pytest.approx(ex["N_paper"])


def test_power_law_spectrum_normalisation():
    lam, om = data_.power_law_spectrum(500, 1.3, 0.7)
    assert np.mean(om * lam) == pytest.approx(1.0, rel=1e-12)
    tail = np.cumsum((om * lam)[::-1])[::-1]
    k = np.array([10, 100])
    ratio = tail[k[1]] / tail[k[0]]
    assert ratio == pytest.approx((k[1] / k[0]) ** (-1.3 * 0.7), rel=0.2)


# ------------------------------------------------------------------------------------------------
# Bad inputs
# ------------------------------------------------------------------------------------------------


def test_bad_inputs():
    lam, om = data_.power_law_spectrum(8, 1.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        iso_.iso_loss(1.0, 0.0, 2)
    with pytest.raises(ValueError, match="L"):
        iso_.iso_loss(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="L"):
        iso_.iso_loss(1.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="L"):
        iso_.iso_loss(1.0, 1.0, math.inf)
    with pytest.raises(TypeError, match="L"):
        iso_.iso_loss(1.0, 1.0, True)
    with pytest.raises(ValueError, match="sigma"):
        iso_.iso_loss(1.0, 1.0, 2, sigma=-1.0)
    with pytest.raises(ValueError, match="gamma"):
        iso_.iso_loss(np.nan, 1.0, 2)
    with pytest.raises(ValueError, match="t"):
        iso_.iso_gradient_flow(np.array([1.0, 0.5]), 1.0, 2)
    with pytest.raises(ValueError, match="omega"):
        rrs_.rrs_loss(1.0, lam, om[:-1], L=2)
    with pytest.raises(ValueError, match="lam"):
        fs_.fs_loss(np.zeros(8), -lam, om, L=2)
    with pytest.raises(ValueError, match="gamma_k"):
        fs_.fs_loss(np.zeros(7), lam, om, L=2)
    with pytest.raises(ValueError, match="N"):
        scaling_.width_bottleneck(lam, om, 8)
    with pytest.raises(ValueError, match="P"):
        scaling_.context_bottleneck_mc(lam, om, 9, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        scaling_.width_bottleneck_mc(lam, om, 3, rng="seed")
    with pytest.raises(ValueError, match="eta"):
        shallow_sgd_.shallow_sgd_theory(np.arange(5), 1.5, 1.0, kappa=1.0, tau=1.0)
    with pytest.raises(ValueError, match="S"):
        fs_.rotated_covariance(np.eye(3), np.ones((3, 3)), 0.1)
    with pytest.raises(ValueError, match="Sigma"):
        fs_.rotated_covariance(-np.eye(3), np.zeros((3, 3)), 0.1)
    with pytest.raises(ValueError, match="Sigma_test"):
        fs_.ood_loss(np.eye(2), np.array([[1.0, 2.0], [0.0, 1.0]]), np.eye(2), L=1)
    with pytest.raises(ValueError, match="setting"):
        reduced_sgd_.simulate_reduced_gamma_sgd(
            reduced_sgd_.ReducedGammaSGDConfig("bad", D=4, L=1, B=2, eta=0.1, steps=2), np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="lam"):
        reduced_sgd_.simulate_reduced_gamma_sgd(
            reduced_sgd_.ReducedGammaSGDConfig("rrs", D=4, L=1, B=2, eta=0.1, steps=2), np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="eta"):
        reduced_sgd_.simulate_reduced_gamma_sgd(
            reduced_sgd_.ReducedGammaSGDConfig("iso", D=4, L=1, B=2, eta=np.ones(3) * 0.1, steps=2, P=4),
            np.random.default_rng(0),
        )
    with pytest.raises(ValueError, match="eta"):  # divergence is reported, never silent NaNs
        reduced_sgd_.simulate_reduced_gamma_sgd(
            reduced_sgd_.ReducedGammaSGDConfig("iso", D=8, L=2, B=4, eta=50.0, steps=50, P=8), np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="Gamma"):
        in_context_gd_predict(np.eye(3), np.ones((5, 4)), np.ones(5), Xq=np.ones((2, 4)), L=1)


@pytest.mark.parametrize(
    ("resource", "nu", "beta", "key"),
    [
        ("t_fs", 1.0, 1.0, "t_fs_corrected"),
        ("t_rrs", 1.0, 1.0, "t_rrs_corrected"),
        ("L", 1.0, 1.0, "L_corrected"),
        ("N", 2.0, 1.5, "N_corrected"),
        ("P", 2.0, 1.5, "P_corrected"),
    ],
)
def test_fitted_scaling_exponent_agrees_with_corrected_exponent_within_its_drift(resource, nu, beta, key):
    """The fit on the theory curve (D = 20000) lies within 3 drift of the corrected exponent (the book's
    error model for exponent fits); the fit is the least-squares slope of the returned samples."""
    f = scaling_.fitted_scaling_exponent(resource, nu, beta, D=20000)
    assert 0 < f.drift < 0.1
    assert abs(f.exponent - scaling_.scaling_exponents(nu, beta)[key]) <= 3 * f.drift
    assert f.exponent == pytest.approx(-np.polyfit(np.log(f.x), np.log(f.loss), 1)[0], rel=1e-12)


def test_fitted_scaling_exponent_bad_inputs():
    with pytest.raises(ValueError, match="resource"):
        scaling_.fitted_scaling_exponent("width", 1.0, 1.0, D=20000)
    with pytest.raises(ValueError, match="D"):
        scaling_.fitted_scaling_exponent("t_fs", 1.0, 1.0, D=1000)
    with pytest.raises(ValueError, match="D"):
        scaling_.fitted_scaling_exponent("N", 1.0, 1.0, D=1000)
    with pytest.raises(ValueError, match="nu"):
        scaling_.fitted_scaling_exponent("L", -1.0, 1.0, D=100)


def test_scalar_descent_path_is_the_discrete_recursion() -> None:
    from iclcore.dmft.rrs import rrs_loss_grad
    from iclcore.dmft.scaling import scalar_descent_path

    lam, om = np.array([1.0, 0.5, 0.25]), np.array([0.5, 0.3, 0.2])
    path = scalar_descent_path(lambda g: rrs_loss_grad(g, lam, om, L=2), 0.05, 40)
    ref = [0.0]
    for _ in range(40):
        ref.append(ref[-1] - 0.05 * float(rrs_loss_grad(ref[-1], lam, om, L=2)))
    assert path.shape == (41,) and np.array_equal(path, ref)
    with pytest.raises(ValueError, match="^step"):
        scalar_descent_path(lambda g: g, 0.0, 3)
    with pytest.raises(ValueError, match="^steps"):
        scalar_descent_path(lambda g: g, 0.1, -1)


def test_shallow_iso_sgd_runs_are_independent_seeded_runs_in_order():
    runs = reduced_sgd_.shallow_iso_sgd_runs(
        6, 1.0, 0.5, tau=2.0, eta=0.1, steps=15, seeds=3, rng=np.random.default_rng(4)
    )
    assert runs.param_error.shape == runs.batch_loss.shape == (3, 15)
    rng = np.random.default_rng(4)
    cfg = reduced_sgd_.ReducedGammaSGDConfig("iso", D=6, L=1, B=12, eta=0.1, steps=15, P=6, K=3)
    for j in range(3):
        res = reduced_sgd_.simulate_reduced_gamma_sgd(cfg, rng)
        np.testing.assert_array_equal(runs.param_error[j], res.gamma_sq_mean - 2 * res.gamma_mean + 1)
        np.testing.assert_array_equal(runs.batch_loss[j], res.batch_loss)
    assert np.all(runs.param_error >= -1e-12)  # (1/D)|Gamma - I|^2 is a squared norm
    assert not np.array_equal(runs.param_error[0], runs.param_error[1])


def test_flow_deviation_at_checkpoints_compares_smoothed_losses_and_gamma():
    steps = np.arange(1, 21, dtype=float)
    theory = 1.0 / steps
    gamma_th = 1.0 - 1.0 / (1.0 + steps)
    dl, dg = reduced_sgd_.flow_deviation_at_checkpoints(
        theory, theory, gamma_th, gamma_theory=gamma_th, checkpoints=[4, 10, 19]
    )
    assert dl == pytest.approx(0.0, abs=1e-13) and dg == 0.0  # a run equal to its flow deviates by rounding only
    noisy = theory * (1 + 0.1 * (-1.0) ** np.arange(20))
    g = gamma_th.copy()
    g[10] *= 1.2
    dl, dg = reduced_sgd_.flow_deviation_at_checkpoints(
        noisy, theory, g, gamma_theory=gamma_th, checkpoints=[4, 10, 19], window=5
    )
    sm = np.array([noisy[max(0, i - 4) : i + 1].mean() for i in range(20)])
    ref = [theory[max(0, i - 4) : i + 1].mean() for i in (4, 10, 19)]
    assert dl == pytest.approx(max(abs(sm[i] - r) / r for i, r in zip((4, 10, 19), ref)), rel=1e-12)
    assert dg == pytest.approx(0.2, rel=1e-12)


def test_plateau_comparison_discounts_the_finite_d_correction():
    rng = np.random.default_rng(5)
    theory = np.full(50, 0.10)
    finite_d = np.full(50, 0.12)  # the finite-D theory sits 0.02 above
    seeds = 0.12 + 0.01 * rng.standard_normal((8, 50))
    pc = reduced_sgd_.plateau_comparison(seeds, theory, finite_d, start=19)
    level = seeds.mean(axis=0)[19:].mean()
    assert pc.deviation == pytest.approx(abs(level - 0.10) / 0.10, rel=1e-12)
    assert pc.deviation_finite_d == pytest.approx(abs(level - 0.12) / 0.12, rel=1e-12)
    assert pc.se == pytest.approx(np.std(seeds[:, 19:].mean(axis=1), ddof=1) / np.sqrt(8), rel=1e-12)
    assert abs(pc.excess_z) < 4  # the seeds follow the finite-D theory: no excess beyond it
    off = reduced_sgd_.plateau_comparison(seeds + 0.05, theory, finite_d)
    assert off.excess_z > 4
