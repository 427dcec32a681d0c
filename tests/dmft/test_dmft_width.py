"""Tests for iclcore.dmft.width_mc, width_de, untied (seed 002 §4, App. A, F): width-N model, deterministic equivalents."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.optimize import brentq

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_loss
from iclcore.dmft.scaling import (
    context_bottleneck,
    context_bottleneck_paper,
    width_bottleneck,
    width_bottleneck_paper,
)
from iclcore.dmft.width_de import free_product_psi, two_point_F, two_point_loss_de, width_loss_de, width_psi
from iclcore.dmft.width_mc import (
    haar_columns,
    width_gradient_flow,
    width_landscape_mc,
    width_loss,
    width_loss_draws,
    width_loss_grad,
    width_loss_se,
    width_min_loss,
    width_spectrum_mc,
)
from iclcore.spectra.mp import mp_quadrature


def _brute_loss(lam, omega, U, gamma, L, Sig=None):
    """tr[Lambda p(M) Omega p(M)^T] with M = (D/N) U U^T Sig by explicit matrix powers."""
    D, N = U.shape
    Sig = np.diag(lam) if Sig is None else Sig
    M = (D / N) * U @ U.T @ Sig
    p = np.linalg.matrix_power(np.eye(D) - gamma * M / L, L)
    return np.trace(np.diag(lam) @ p @ np.diag(omega) @ p.T) / D


# ------------------------------------------------------------------ exact identities (finite D)


@pytest.mark.parametrize("N", [7, 30, 60])
def test_one_point_reduction_equals_matrix_powers(N):
    """p(M)^T Lambda p(M) = Lambda^{1/2} p(K)^2 Lambda^{1/2}: MC reduction = brute force, 1e-11 rel."""
    lam, omega = power_law_spectrum(60, 1.0, 1.0)
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(3))
    U = haar_columns(60, N, np.random.default_rng(3))
    for g in (0.3, 1.7, 3.0):
        assert width_loss(g, spec, 3) == pytest.approx(_brute_loss(lam, omega, U, g, 3), rel=1e-11)


def test_general_mc_matches_brute_force_finite_P_and_one_point():
    """width_landscape_mc: finite P vs explicit powers (1e-10); P=inf equals the one-point reduction."""
    D, N, L, P = 40, 12, 3, 25
    lam, omega = power_law_spectrum(D, 0.8, 1.2)
    gs = np.array([0.2, 1.0, 2.5])
    rng = np.random.default_rng(5)
    loss, _ = width_landscape_mc(gs, lam, omega, N=N, L=L, rng=rng, P=P, n_draws=1)
    rng = np.random.default_rng(5)
    U = haar_columns(D, N, rng)
    Z = rng.standard_normal((P, D)) * np.sqrt(lam)
    Sig = Z.T @ Z / P
    brute = [_brute_loss(lam, omega, U, g, L, Sig) for g in gs]
    np.testing.assert_allclose(loss, brute, rtol=1e-10)
    l_inf, _ = width_landscape_mc(gs, lam, omega, N=N, L=L, rng=np.random.default_rng(9), n_draws=1)
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(9))
    np.testing.assert_allclose(l_inf, width_loss(gs, spec, L), rtol=1e-10)


def test_full_width_equals_rrs_loss():
    """N = D: K = Lambda, so the width loss is the RRS loss of dmft_reduced (1e-12)."""
    lam, omega = power_law_spectrum(50, 1.0, 1.0)
    spec = width_spectrum_mc(lam, omega, 50, rng=np.random.default_rng(0))
    gs = np.linspace(0, 7, 9)
    for L in (1, 4, np.inf):
        np.testing.assert_allclose(width_loss(gs, spec, L), rrs_loss(gs, lam, omega, L=L), rtol=1e-12, atol=1e-14)


@settings(max_examples=15, deadline=None)
@given(g=st.floats(0.05, 3.0), L=st.integers(1, 6), N=st.integers(2, 30))
def test_gradients_match_finite_differences(g, L, N):
    """Analytic dL/dgamma (one-point and general MC) vs central differences, 1e-6 rel."""
    lam, omega = power_law_spectrum(30, 1.0, 0.7)
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(1))
    h = 1e-6
    fd = (width_loss(g + h, spec, L) - width_loss(g - h, spec, L)) / (2 * h)
    assert width_loss_grad(g, spec, L) == pytest.approx(fd, rel=1e-5, abs=1e-9)
    _, d = width_landscape_mc([g], lam, omega, N=N, L=L, rng=np.random.default_rng(2), P=40, n_draws=1)
    lp, _ = width_landscape_mc([g + h], lam, omega, N=N, L=L, rng=np.random.default_rng(2), P=40, n_draws=1)
    lm, _ = width_landscape_mc([g - h], lam, omega, N=N, L=L, rng=np.random.default_rng(2), P=40, n_draws=1)
    assert d[0] == pytest.approx((lp[0] - lm[0]) / (2 * h), rel=1e-5, abs=1e-9)


def test_gradient_flow_matches_quadrature_of_inverse_rate():
    """ODE solution vs t(gamma) = int_0^gamma dg / (-L'(g)/2) by adaptive quadrature (1e-6 rel)."""
    lam, omega = power_law_spectrum(80, 1.0, 1.0)
    spec = width_spectrum_mc(lam, omega, 20, rng=np.random.default_rng(4))
    t = np.array([0.0, 0.5, 3.0, 20.0])
    flow = width_gradient_flow(spec, 4, t)
    for ti, gi in zip(t[1:], flow.gamma[1:]):
        tq, _ = quad(lambda x: 1.0 / (-0.5 * float(width_loss_grad(x, spec, 4))), 0.0, gi, epsabs=0, epsrel=1e-11)
        assert tq == pytest.approx(ti, rel=1e-6)
    assert np.all(np.diff(flow.loss) < 0)
    g_star, l_star = width_min_loss(spec, 4)
    late = width_gradient_flow(spec, 4, np.array([0.0, 1e7]))
    assert late.gamma[-1] == pytest.approx(g_star, rel=1e-4)
    assert late.loss[-1] == pytest.approx(l_star, rel=1e-6)


# ------------------------------------------------------------------ deterministic equivalents


@pytest.mark.slow
def test_de_one_point_vs_monte_carlo():
    """One-point DE (contour) vs MC at D = 1200, N = 300, 8 draws: within 3% for gamma < s_max-edge.

    The spectrum is a mild power law (nu = 0.5, beta = 0.5) so that the MC average self-averages;
    8 draws at D = 1200 leave sampling error well below 1%; the DE itself has O(1/D) bias.
    """
    D, N, L = 1200, 300, 4
    lam, omega = power_law_spectrum(D, 0.5, 0.5)
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(0), n_draws=8)
    gs = np.array([0.5, 1.5, 3.0])
    mc = width_loss(gs, spec, L)
    de = width_loss_de(gs, lam, omega, N=N, L=L, k_max=1.2 * spec.s.max(), n_nodes=400)
    np.testing.assert_allclose(de, mc, rtol=0.03)


def test_de_contour_independent_of_radius_and_two_point_reduces_to_one_point():
    """The contour value does not depend on k_max (1e-9), and the App-A two-point DE with
    B = (D/N) projection equals the one-point DE (1e-8): Eq. 15 collapses at P = infinity."""
    D, N, L = 400, 100, 3
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    gs = np.array([0.7, 2.0])
    a = width_loss_de(gs, lam, omega, N=N, L=L, k_max=2.0, n_nodes=500)
    b = width_loss_de(gs, lam, omega, N=N, L=L, k_max=3.0, n_nodes=700)
    np.testing.assert_allclose(a, b, rtol=1e-9)
    two = two_point_loss_de(
        gs,
        lam,
        np.array([0.0, D / N]),
        b_weights=np.array([1 - N / D, N / D]),
        C=omega,
        T=lam,
        L=L,
        k_max=2.0,
        n_nodes=300,
    )
    np.testing.assert_allclose(two, a, rtol=1e-8)


def test_app_a_identities():
    """Sigma_vchi = tr(s + B)^{-1} (Eq. 33) to 1e-10, and at P = inf the two-point F equals the
    resolvent identity [g(z) - g(z')]/(z' - z), g = tr[Omega Lambda H] (1e-10)."""
    D, N = 300, 90
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    bn, bw = np.array([0.0, D / N]), np.array([1 - N / D, N / D])
    z1 = np.array([0.3 + 0.2j, 1.1 - 0.4j, -0.2 + 0.9j])
    z2 = np.array([0.5 + 0.1j, -0.6 - 0.8j])
    p1 = np.array([free_product_psi(np.array([z]), lam, bn, b_weights=bw)[0] for z in z1])
    p2 = np.array([free_product_psi(np.array([z]), lam, bn, b_weights=bw)[0] for z in z2])
    H1 = 1 / (z1[:, None] + p1[:, None] * lam)
    S1 = (H1 @ lam) / D
    s1 = (1 - p1 * S1) / S1
    rhs = (bw / (s1[:, None] + bn)).sum(axis=1)
    np.testing.assert_allclose(S1, rhs, rtol=1e-10)
    F = two_point_F(z1, p1, z2, psi2=p2, a=lam, b_nodes=bn, b_weights=bw, C=omega, T=lam)
    gfun = lambda H: (H @ (omega * lam)) / D  # noqa: E731
    H2 = 1 / (z2[:, None] + p2[:, None] * lam)
    ident = (gfun(H1)[:, None] - gfun(H2)[None, :]) / (z2[None, :] - z1[:, None])
    np.testing.assert_allclose(F, ident, rtol=1e-10)
    # the subordination solver agrees with the width-specific one
    np.testing.assert_allclose(p1, [width_psi(np.array([z]), lam, N / D)[0] for z in z1], rtol=1e-10)


@pytest.mark.slow
def test_two_point_wishart_vs_monte_carlo_and_paper_typo():
    """Finite alpha, N = D (structured Wishart): two-point DE vs MC (D = 300, 12 draws) within 3%;
    the relation printed after Eq. 39 (hat Sigma_chichi = -B Sigma_vv) is off by > 2x."""
    D, L, alpha = 300, 4, 0.7
    P = int(alpha * D)
    lam, omega = power_law_spectrum(D, 0.7, 1.0)
    gs = np.array([0.5, 1.5, 3.0])
    mc, _ = width_landscape_mc(gs, lam, omega, N=D, L=L, rng=np.random.default_rng(1), P=P, n_draws=12)
    bn, bw = mp_quadrature(1 / alpha, 60)
    Z = np.random.default_rng(2).standard_normal((P, D)) * np.sqrt(lam)
    kmax = 1.3 * np.linalg.eigvalsh(Z.T @ Z / P).max()
    de = two_point_loss_de(gs, lam, bn, b_weights=bw, C=np.ones(D), T=omega * lam, L=L, k_max=kmax, n_nodes=160)
    np.testing.assert_allclose(de, mc, rtol=0.03)
    typo = two_point_loss_de(
        gs, lam, bn, b_weights=bw, C=np.ones(D), T=omega * lam, L=L, k_max=kmax, n_nodes=160, paper_typo=True
    )
    assert np.all(typo / mc > 2.0)


def test_psi_small_z_gives_width_kappa():
    """z / psi(z) -> kappa with sum_k lam_k/(kappa + lam_k) = N as z -> 0+ (Eq. 111), 1e-4 rel."""
    D, N = 500, 50
    lam, _ = power_law_spectrum(D, 1.0, 1.0)
    kappa = brentq(lambda k: np.sum(lam / (k + lam)) - N, 1e-12, 10.0, xtol=1e-16)
    z = np.geomspace(10.0, 1e-7, 200)
    psi = width_psi(z, lam, N / D)
    assert (z[-1] / psi[-1]).real == pytest.approx(kappa, rel=1e-4)


# ------------------------------------------------------------------ bottlenecks (vs dmft_reduced)


@pytest.mark.parametrize("N", [100, pytest.param(400, marks=pytest.mark.slow)])
def test_width_bottleneck_linear_form_vs_mc_null_space(N):
    """t, L -> inf at finite N: MC null-space loss (this module) vs the corrected linear
    DE of dmft_reduced within 5% (D = 1500, 3 draws); the printed squared Eq. 113 is off by > 2x."""
    D = 1500
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(7), n_draws=3)
    assert width_bottleneck(lam, omega, N) == pytest.approx(spec.null_loss, rel=0.05)
    assert spec.null_loss / width_bottleneck_paper(lam, omega, N) > 2.0
    # and the infinite-depth landscape decreases to the null-space loss
    assert width_loss(1e8, spec, np.inf) == pytest.approx(spec.null_loss, rel=1e-9)


def test_context_bottleneck_vs_mc():
    """t, L -> inf at N = D, finite P: general MC at large gamma L vs corrected Eq. 116 within 5%;
    the printed Eq. 116 (no denominator) is lower than MC by more than 10%."""
    D, P = 400, 200
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    rng = np.random.default_rng(11)
    vals = []
    for _ in range(4):
        Z = rng.standard_normal((P, D)) * np.sqrt(lam)
        Q = np.linalg.qr(Z.T)[0]
        Pn = np.eye(D) - Q @ Q.T
        vals.append(np.trace(np.diag(lam) @ Pn @ np.diag(omega) @ Pn) / D)
    mc = float(np.mean(vals))
    assert context_bottleneck(lam, omega, P) == pytest.approx(mc, rel=0.05)
    assert context_bottleneck_paper(lam, omega, P) < 0.9 * mc


# ------------------------------------------------------------------ bad inputs


def test_bad_inputs():
    lam, omega = power_law_spectrum(20, 1.0, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="N"):
        width_spectrum_mc(lam, omega, 21, rng=rng)
    with pytest.raises(ValueError, match="lam"):
        width_spectrum_mc(-lam, omega, 5, rng=rng)
    with pytest.raises(ValueError, match="omega"):
        width_spectrum_mc(lam, omega[:-1], 5, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        width_spectrum_mc(lam, omega, 5, rng="seed")
    with pytest.raises(TypeError, match="N"):
        width_spectrum_mc(lam, omega, 5.0, rng=rng)
    spec = width_spectrum_mc(lam, omega, 5, rng=rng)
    with pytest.raises(ValueError, match="L"):
        width_loss(1.0, spec, 0)
    with pytest.raises(ValueError, match="gammas"):
        width_loss(-1.0, spec, 2)
    with pytest.raises(ValueError, match="L"):
        width_min_loss(spec, np.inf)
    with pytest.raises(ValueError, match="t"):
        width_gradient_flow(spec, 2, np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match="k_max"):
        width_loss_de([1.0], lam, omega, N=5, L=2, k_max=-1.0)
    with pytest.raises(ValueError, match="gammas"):
        width_loss_de([0.0], lam, omega, N=5, L=2, k_max=2.0)
    with pytest.raises(ValueError, match="alpha_N"):
        width_psi(np.array([1.0]), lam, 1.5)
    with pytest.raises(ValueError, match="b_weights"):
        free_product_psi(np.array([1.0]), lam, np.array([0.0, 1.0]), b_weights=np.array([0.5, 0.6]))
    with pytest.raises(ValueError, match="P"):
        width_landscape_mc([1.0], lam, omega, N=5, L=2, rng=rng, P=0)


def test_psi_is_one_at_full_width():
    """N = D (B = I): the subordination function is exactly 1 since (z + M)^{-1} = (z + Lambda)^{-1}.
    The label of Eq. 16/105, Psi = z / u_{(A^T A)^2}(tau) = z tau / (1 - tau), is not 1 here."""
    lam, _ = power_law_spectrum(200, 1.0, 1.0)
    z = np.array([2.0, 1.0 + 1.0j, 0.3 - 0.5j])
    psi = width_psi(z, lam, 1.0)
    np.testing.assert_allclose(psi, 1.0, atol=1e-12)
    tau = np.array([np.mean(lam / (zz + lam)) for zz in z])
    assert np.all(np.abs(z * tau / (1 - tau) - 1.0) > 0.1)


@pytest.mark.parametrize("L", [2, 3, 5])
def test_untied_balanced_point_is_transversally_unstable(L):
    """Hessian of the untied loss at a balanced point: closed form vs finite differences (1e-5 rel),
    transverse eigenvalue -2m < 0; and unequal layer scales reach a lower loss than the best
    balanced one (the balanced optimum is a saddle)."""
    from iclcore.dmft.rrs import rrs_optimum
    from iclcore.dmft.untied import untied_balanced_hessian, untied_loss

    lam, omega = power_law_spectrum(40, 1.0, 1.0)
    g_star, l_star = rrs_optimum(lam, omega, L)
    x0 = np.full(L, 0.7 * g_star)
    h = 1e-4
    H = np.zeros((L, L))
    for i in range(L):
        for j in range(L):
            ei, ej = np.eye(L)[i] * h, np.eye(L)[j] * h
            H[i, j] = (
                untied_loss(x0 + ei + ej, lam, omega)
                - untied_loss(x0 + ei - ej, lam, omega)
                - untied_loss(x0 - ei + ej, lam, omega)
                + untied_loss(x0 - ei - ej, lam, omega)
            ) / (4 * h * h)
    ev = np.linalg.eigvalsh(H)
    lon, tra = untied_balanced_hessian(0.7 * g_star, lam, omega, L=L)
    np.testing.assert_allclose(ev, sorted([tra] * (L - 1) + [lon]), rtol=1e-5)
    assert tra < 0 < lon
    assert untied_loss(np.full(L, g_star), lam, omega) == pytest.approx(l_star, rel=1e-12)
    # move along a transverse direction at fixed sum: the loss decreases
    v = np.zeros(L)
    v[0], v[1] = 1.0, -1.0
    assert untied_loss(np.full(L, g_star) + 0.05 * g_star * v, lam, omega) < l_star


@pytest.mark.parametrize(
    "D, L",
    [(24, 2), (24, 4), pytest.param(24, 8, marks=pytest.mark.slow), pytest.param(300, 3, marks=pytest.mark.slow)],
)
def test_untied_optimum_is_global(D, L):
    """The orthogonal-polynomial optimum: its layer scales attain the returned loss, it is below the
    balanced optimum, and no multi-start Nelder-Mead run (12 random starts) goes below it."""
    from scipy.optimize import minimize

    from iclcore.dmft.rrs import rrs_optimum
    from iclcore.dmft.untied import untied_loss, untied_optimum

    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    g, loss = untied_optimum(lam, omega, L)
    assert g.shape == (L,) and np.all(g > 0)
    assert untied_loss(g, lam, omega) == pytest.approx(loss, rel=1e-8)
    g_bal, l_bal = rrs_optimum(lam, omega, L)
    assert loss < l_bal
    rng = np.random.default_rng(0)
    opts = dict(maxiter=20000, maxfev=20000, xatol=1e-10, fatol=1e-18)
    best = min(
        minimize(
            lambda x: untied_loss(np.exp(x), lam, omega),
            np.log(g_bal * (1 + 0.5 * rng.uniform(-1, 1, L))),
            method="Nelder-Mead",
            options=opts,
        ).fun
        for _ in range(12)
    )
    assert best >= loss * (1 - 1e-6)


def test_untied_optimum_vanishes_when_layers_outnumber_modes():
    """With D <= L distinct eigenvalues every mode can be annihilated: the minimum is 0."""
    from iclcore.dmft.untied import untied_loss, untied_optimum

    lam, omega = power_law_spectrum(4, 1.0, 1.0)
    g, loss = untied_optimum(lam, omega, 6)
    assert loss == pytest.approx(0.0, abs=1e-15) and untied_loss(g, lam, omega) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="L"):
        untied_optimum(lam, omega, 0)


def test_width_loss_draws_average_to_the_pooled_loss_and_match_single_draws() -> None:
    """The pooled loss is linear in the spectral weights: its per-draw parts average to it exactly, and
    each part is the loss of that projection alone (same generator stream, one draw at a time)."""
    lam, omega = power_law_spectrum(120, 1.0, 1.0)
    gs = np.linspace(0.0, 3.0, 9)
    pooled = width_spectrum_mc(lam, omega, 30, rng=np.random.default_rng(4), n_draws=3)
    parts = width_loss_draws(gs, pooled, 5)
    assert parts.shape == (3, gs.size) and pooled.n_draws == 3
    np.testing.assert_allclose(parts.mean(0), width_loss(gs, pooled, 5), rtol=1e-13, atol=1e-15)
    rng = np.random.default_rng(4)
    singles = [width_loss(gs, width_spectrum_mc(lam, omega, 30, rng=rng, n_draws=1), 5) for _ in range(3)]
    np.testing.assert_allclose(parts, np.array(singles), rtol=1e-12, atol=1e-15)
    assert np.ndim(width_loss_draws(1.0, pooled, 5)) == 1


def test_width_loss_se_is_the_spread_of_the_projections() -> None:
    """SE = std(per-projection losses)/sqrt(n_draws); 0 at N = D (K = Lambda exactly); a single
    projection with N < D has none."""
    lam, omega = power_law_spectrum(60, 1.0, 1.0)
    spec = width_spectrum_mc(lam, omega, 15, rng=np.random.default_rng(2), n_draws=5)
    parts = width_loss_draws(0.7, spec, 3)
    assert width_loss_se(0.7, spec, 3) == pytest.approx(parts.std(ddof=1) / np.sqrt(5), rel=1e-12)
    assert width_loss_se(0.7, width_spectrum_mc(lam, omega, 60, rng=np.random.default_rng(2)), 3) == 0.0
    with pytest.raises(ValueError, match="spec"):
        width_loss_se(0.7, width_spectrum_mc(lam, omega, 15, rng=np.random.default_rng(2)), 3)


@pytest.mark.parametrize("L", [2, 4])
def test_balanced_optimum_stability_is_a_saddle_with_exchangeable_layers(L):
    from iclcore.dmft.rrs import rrs_optimum
    from iclcore.dmft.untied import balanced_optimum_stability, untied_balanced_hessian, untied_optimum

    lam, omega = power_law_spectrum(40, 1.0, 1.0)
    st = balanced_optimum_stability(lam, omega, L)
    g_star, l_bal = rrs_optimum(lam, omega, L)
    assert (st.longitudinal, st.transverse) == untied_balanced_hessian(g_star, lam, omega, L=L)
    assert st.balanced_loss == l_bal and st.untied_loss == untied_optimum(lam, omega, L)[1]
    assert st.transverse < 0 < st.longitudinal
    assert st.untied_loss < st.balanced_loss
    assert st.gradient_spread < 1e-6  # exchangeable layers: equal gradients at a balanced point
    with pytest.raises(ValueError, match="^L"):
        balanced_optimum_stability(lam, omega, 1)
