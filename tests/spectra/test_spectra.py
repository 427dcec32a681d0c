"""Tests for iclcore.spectra.mp (Marchenko–Pastur toolkit; seed 000 §4, §9)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from iclcore.spectra.mp import (
    mp_atom,
    mp_cdf,
    mp_density,
    mp_edges,
    mp_integral,
    mp_jacobi_matrix,
    mp_moment,
    mp_quadrature,
    mp_sample_eigenvalues,
    mp_stieltjes,
)

GAMMAS = [0.05, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0]


def test_edges_and_atom_closed_forms():
    assert mp_edges(0.25) == pytest.approx((0.25, 2.25), abs=1e-15)
    assert mp_edges(4.0) == pytest.approx((1.0, 9.0), abs=1e-15)
    assert mp_atom(0.5) == 0.0
    assert mp_atom(1.0) == 0.0
    assert mp_atom(4.0) == pytest.approx(0.75, abs=1e-15)


def test_low_moments_by_hand():
    g = 0.37
    assert mp_moment(0, g) == 1.0
    assert mp_moment(1, g) == pytest.approx(1.0, abs=1e-15)
    assert mp_moment(2, g) == pytest.approx(1 + g, rel=1e-15)
    assert mp_moment(3, g) == pytest.approx(1 + 3 * g + g**2, rel=1e-15)
    assert mp_moment(4, g) == pytest.approx(1 + 6 * g + 6 * g**2 + g**3, rel=1e-15)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_quadrature_exact_for_polynomials_up_to_2n_minus_1(gamma):
    n = 12
    nodes, weights = mp_quadrature(gamma, n)
    assert weights.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.all(weights > 0)
    lo, hi = mp_edges(gamma)
    cont = nodes[1:] if gamma > 1 else nodes
    assert np.all(cont >= lo - 1e-12) and np.all(cont <= hi + 1e-12)
    for k in range(2 * n):
        exact = mp_moment(k, gamma)
        assert nodes**k @ weights == pytest.approx(exact, rel=1e-12), k
    # degree 2n is NOT integrated exactly: the Gauss error for x^(2n) is ||p_n||^2 = prod omega_k,
    # i.e. gamma^n (gamma <= 1) and gamma^(n-1) for the continuous part of mass 1/gamma (gamma > 1)
    err = mp_moment(2 * n, gamma) - nodes ** (2 * n) @ weights
    expected = gamma**n if gamma <= 1 else gamma ** (n - 1)
    assert err == pytest.approx(expected, rel=1e-6, abs=1e-13 * mp_moment(2 * n, gamma))


@pytest.mark.parametrize("gamma", [1.5, 4.0])
def test_quadrature_has_atom_node_at_zero(gamma):
    nodes, weights = mp_quadrature(gamma, 8)
    assert nodes.shape == (9,)
    assert nodes[0] == 0.0 and weights[0] == pytest.approx(1 - 1 / gamma, abs=1e-15)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_density_integrates_to_one_minus_atom(gamma):
    lo, hi = mp_edges(gamma)
    val, _ = integrate.quad(lambda x: mp_density(x, gamma), lo, hi, limit=400)
    assert val == pytest.approx(1.0 - mp_atom(gamma), abs=1e-9)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_density_first_moment_matches_quadrature(gamma):
    lo, hi = mp_edges(gamma)
    val, _ = integrate.quad(lambda x: x * mp_density(x, gamma), lo, hi, limit=400)
    assert val == pytest.approx(1.0, abs=1e-9)  # the atom sits at 0, contributes nothing


def test_density_zero_outside_support_and_inf_at_origin_for_gamma_one():
    d = mp_density(np.array([-1.0, 0.05, 3.0, 10.0]), 0.5)
    assert np.all(d == 0)  # support [0.0858, 2.914]
    assert mp_density(1.0, 0.5) > 0
    assert np.isinf(mp_density(0.0, 1.0))


@pytest.mark.parametrize("gamma", GAMMAS)
def test_stieltjes_functional_equation_and_branch(gamma):
    rng = np.random.default_rng(1)
    z = rng.normal(size=50) * 3 + 1j * rng.normal(size=50) * 2
    m = mp_stieltjes(z, gamma)
    resid = gamma * z * m**2 + (z + gamma - 1) * m + 1
    assert np.max(np.abs(resid)) < 1e-12
    # Herglotz: Im m > 0 on the upper half-plane
    assert np.all(m[z.imag > 0].imag > 0)
    # m(z) ~ -1/z at infinity
    big = np.array([1e7 + 1e6j, -1e7j])
    np.testing.assert_allclose(mp_stieltjes(big, gamma) * big, -1.0, rtol=1e-5)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_stieltjes_matches_quadrature(gamma):
    z = np.array([-0.3 + 0.0j, 0.5 + 1.0j, 12.0 + 0.0j, 2.0 - 3.0j])
    nodes, weights = mp_quadrature(gamma, 200)
    via_quad = np.array([np.sum(weights / (nodes - zz)) for zz in z])
    np.testing.assert_allclose(mp_stieltjes(z, gamma), via_quad, rtol=1e-10, atol=1e-12)


def test_stieltjes_atom_pole_residue():
    gamma = 3.0
    eps = 1e-7
    assert (mp_stieltjes(eps * 1j, gamma) * eps * 1j).real == pytest.approx(-(1 - 1 / gamma), rel=1e-5)


def test_stieltjes_inversion_gives_density():
    gamma, eta = 0.4, 1e-9
    x = np.array([0.3, 0.8, 1.5, 2.2])
    dens = mp_stieltjes(x + 1j * eta, gamma).imag / math.pi
    np.testing.assert_allclose(dens, mp_density(x, gamma), rtol=1e-6)


def test_integral_resolvent_trace_against_stieltjes():
    gamma, lam = 0.5, 0.1
    val = mp_integral(lambda x: 1.0 / (x + lam), gamma, n=64)
    assert val == pytest.approx(mp_stieltjes(-lam + 0j, gamma).real, rel=1e-13)


def test_jacobi_matrix_shape():
    d, o = mp_jacobi_matrix(0.5, 5)
    assert d.tolist() == [1.0, 1.5, 1.5, 1.5, 1.5] and np.allclose(o, math.sqrt(0.5))


@pytest.mark.parametrize("gamma", GAMMAS)
def test_cdf_limits_and_monotone(gamma):
    lo, hi = mp_edges(gamma)
    x = np.linspace(lo - 1, hi + 1, 101)
    F = mp_cdf(x, gamma)
    assert np.all(np.diff(F) >= -1e-15)
    assert F[0] == pytest.approx(mp_atom(gamma) if lo - 1 >= 0 else 0.0, abs=1e-15)
    assert F[-1] == pytest.approx(1.0, abs=1e-12)
    mid = 0.5 * (lo + hi)
    val, _ = integrate.quad(lambda t: mp_density(t, gamma), lo, mid, limit=400)
    assert mp_cdf(mid, gamma) == pytest.approx(val + mp_atom(gamma), abs=1e-9)


@pytest.mark.parametrize("K,M", [(100, 400), (200, 100)])
def test_monte_carlo_eigenvalues_match_mp_law(K, M):
    """Pooled eigenvalues vs the MP cdf. Finite-size cdf error is O(1/K); we allow 0.02 in sup-norm."""
    rng = np.random.default_rng(2024)
    gamma = K / M
    ev = mp_sample_eigenvalues(K, M, 20, rng=rng).ravel()
    ev[np.abs(ev) < 1e-8] = 0.0  # rank deficiency: rounding-level eigenvalues are the atom at 0
    if gamma > 1:
        zero_frac = np.mean(ev < 1e-8)
        assert zero_frac == pytest.approx(mp_atom(gamma), abs=1e-12)
    atom = mp_atom(gamma)
    nonzero = ev[ev > 0]  # compare the continuous part with the normalised continuous cdf
    ks = stats.kstest(nonzero, lambda x: (mp_cdf(x, gamma) - atom) / (1 - atom))
    assert ks.statistic < 0.02
    # histogram against density: relative L1 distance of binned masses
    lo, hi = mp_edges(gamma)
    edges = np.linspace(lo, hi, 21)
    counts, _ = np.histogram(ev, bins=edges)
    expected = np.diff(mp_cdf(edges, gamma))
    assert np.abs(counts / ev.size - expected).sum() < 0.05
    # sample moments
    assert ev.mean() == pytest.approx(1.0, abs=0.01)
    assert np.mean(ev**2) == pytest.approx(mp_moment(2, gamma), rel=0.02)


@settings(max_examples=20, deadline=None)
@given(gamma=st.floats(0.02, 8.0), k=st.integers(0, 10))
def test_property_quadrature_moments(gamma, k):
    nodes, weights = mp_quadrature(gamma, 6)
    assert nodes**k @ weights == pytest.approx(mp_moment(k, gamma), rel=1e-11)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_gamma_raises(bad):
    with pytest.raises(ValueError, match="gamma"):
        mp_edges(bad)
    with pytest.raises(ValueError, match="gamma"):
        mp_quadrature(bad, 4)


def test_bad_inputs_raise():
    with pytest.raises(TypeError, match="gamma"):
        mp_density(1.0, "0.5")
    with pytest.raises(ValueError, match="k"):
        mp_moment(-1, 0.5)
    with pytest.raises(TypeError, match="k"):
        mp_moment(1.5, 0.5)
    with pytest.raises(ValueError, match="n"):
        mp_quadrature(0.5, 0)
    with pytest.raises(TypeError, match="n"):
        mp_quadrature(0.5, 3.0)
    with pytest.raises(ValueError, match="z"):
        mp_stieltjes(0.0, 2.0)
    with pytest.raises(TypeError, match="f"):
        mp_integral(3.0, 0.5)
    with pytest.raises(ValueError, match="f"), np.errstate(divide="ignore"):
        mp_integral(lambda x: 1.0 / x, 2.0)  # infinite at the atom
    with pytest.raises(ValueError, match="x"):
        mp_density(np.array([np.nan]), 0.5)
    with pytest.raises(ValueError, match="M"):
        mp_sample_eigenvalues(4, 0, 2, rng=np.random.default_rng(0))
