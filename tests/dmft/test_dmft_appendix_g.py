"""Tests for Bordelon et al. App. G at finite context length: untied layers with label noise (Eq. 119-122,
iclcore.dmft.untied) and trainable read-in/read-out (Eq. 124, iclcore.dmft.readout), on the shared
context draws of iclcore.dmft.finite_context."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import context_draws, tied_loss_from_moments, tied_loss_moments
from iclcore.dmft.readout import (
    ReadoutAttention,
    power_five_theory,
    readout_descent_path,
    readout_flow,
    readout_loss,
    readout_peak_standard_error,
)
from iclcore.dmft.rrs import rrs_loss
from iclcore.dmft.untied import untied_loss, untied_noisy_flow, untied_noisy_loss
from iclcore.lsq.iterates import in_context_gd_predict
from iclcore.models.attention import power_five_constant, power_five_flow, sample_iso_contexts


def _direct_noisy_loss(gammas, lam, omega, sigma, P, rng, n):
    """Excess loss of untied layers by explicit recursion on drawn contexts with noisy labels (Eq. 119)."""
    D, L = lam.size, len(gammas)
    out = []
    for _ in range(n):
        X = rng.standard_normal((P, D)) * np.sqrt(lam)
        b = rng.standard_normal(D) * np.sqrt(omega) / np.sqrt(D)
        y = X @ b + sigma * rng.standard_normal(P)
        S, c = X.T @ X / P, X.T @ y / P
        w = np.zeros(D)
        for g in gammas:
            w = w + g * (c - S @ w) / L
        out.append(np.sum(lam * (w - b) ** 2))
    out = np.array(out)
    return out.mean(), out.std(ddof=1) / np.sqrt(n)


def test_untied_noisy_loss_exact_form_matches_explicit_recursion() -> None:
    lam, omega = power_law_spectrum(6, 1.0, 1.0)
    g, sigma, P = np.array([0.7, 2.1, 1.3]), 0.8, 9
    dr = context_draws(lam, omega, P, rng=np.random.default_rng(1), n_draws=20000)
    exact, se = untied_noisy_loss(g, dr, sigma, decoupled=False)
    direct, dse = _direct_noisy_loss(g, lam, omega, sigma, P, np.random.default_rng(2), 20000)
    assert abs(exact - direct) < 4 * np.hypot(se, dse)


def test_untied_noisy_loss_noise_free_part_and_large_context_limit() -> None:
    lam, omega = power_law_spectrum(8, 1.0, 1.0)
    g = np.array([1.5, 0.5])
    # sigma = 0: both forms are the noise-free loss, which tends to Eq. (117) as P grows
    dr = context_draws(lam, omega, 4000, rng=np.random.default_rng(3), n_draws=50)
    a = untied_noisy_loss(g, dr, 0.0)[0]
    assert a == pytest.approx(untied_noisy_loss(g, dr, 0.0, decoupled=False)[0])
    assert a == pytest.approx(untied_loss(g, lam, omega), rel=0.02)
    # the decoupled (Eq. 122) and exact noise terms agree to O(1/alpha^2): their gap shrinks faster than 1/alpha
    gaps = []
    for P in (16, 64):
        d = context_draws(lam, omega, P, rng=np.random.default_rng(4), n_draws=4000)
        noise = lambda dec: untied_noisy_loss(g, d, 1.0, decoupled=dec)[0] - untied_noisy_loss(g, d, 0.0)[0]  # noqa: E731
        gaps.append(abs(noise(True) - noise(False)) / noise(False))
    assert gaps[1] < gaps[0] / 2.5


def test_untied_noisy_flow_is_descent_and_noise_lowers_the_learned_scale() -> None:
    lam, omega = power_law_spectrum(8, 1.0, 1.0)
    dr = context_draws(lam, omega, 16, rng=np.random.default_rng(5), n_draws=300)
    t = np.linspace(0, 60, 61)
    g1, l1 = untied_noisy_flow(t, dr, 2, sigma=1.0)
    g0, _ = untied_noisy_flow(t, dr, 2, sigma=0.0)
    assert np.all(np.diff(l1) <= 1e-10) and g1[-1] < g0[-1]


def test_readout_loss_reduces_to_the_rrs_loss_and_its_gradients_are_exact() -> None:
    lam, omega = power_law_spectrum(12, 1.0, 1.0)
    exact = context_draws(lam, omega, None, rng=np.random.default_rng(0))
    for gam in (0.3, 2.0, 7.0):
        assert readout_loss(1.0, gam, exact, L=4)[0] == pytest.approx(float(rrs_loss(gam, lam, omega, L=4)), rel=1e-12)
    dr = context_draws(lam, omega, 20, rng=np.random.default_rng(6), n_draws=50)
    m, gam, h = 1.3, 1.7, 1e-6
    _, dm, dg = readout_loss(m, gam, dr, L=3)
    assert dm == pytest.approx(
        (readout_loss(m + h, gam, dr, L=3)[0] - readout_loss(m - h, gam, dr, L=3)[0]) / (2 * h), rel=1e-6
    )
    assert dg == pytest.approx(
        (readout_loss(m, gam + h, dr, L=3)[0] - readout_loss(m, gam - h, dr, L=3)[0]) / (2 * h), rel=1e-6
    )
    # at m = 1 the finite-context landscape is the noise-free part of the untied loss on the same draws
    assert readout_loss(1.0, gam, dr, L=3)[0] == pytest.approx(float(untied_noisy_loss(np.full(3, gam), dr, 0.0)[0]))


def test_readout_attention_is_scaled_in_context_gd() -> None:
    D, L, P, K = 5, 3, 11, 4
    model = ReadoutAttention(D, L, 1.1, 0.6)
    with torch.no_grad():
        model.a_o.fill_(1.7)
        model.a_y.fill_(0.4)
    ctx = sample_iso_contexts(3, P, K, D=D, gen=torch.Generator().manual_seed(0))
    f = model(ctx.X, ctx.y, ctx.Xs).detach().numpy()
    G = model.gamma_matrix().detach().numpy()
    for b in range(3):
        ref = in_context_gd_predict(G, ctx.X[b].numpy(), ctx.y[b].numpy(), Xq=ctx.Xs[b].numpy(), L=L)
        np.testing.assert_allclose(f[b], 1.7 * 0.4 * ref, rtol=1e-10, atol=1e-12)


def test_readout_flow_overshoots_and_recovers_on_a_spread_spectrum() -> None:
    lam, omega = power_law_spectrum(16, 1.0, 1.0)
    fl = readout_flow(
        np.linspace(0, 200, 401), context_draws(lam, omega, None, rng=0), 4, c=2 / 16**2, a_o0=0.3, a_y0=0.3, s0=1.2
    )
    assert fl.m.max() > 1.3 * fl.m[-1] and fl.m[0] < 0.1 and np.all(np.diff(fl.loss) <= 1e-12)
    # gradient flow on a product keeps a_o^2 - a_y^2 (balanced start stays balanced)
    np.testing.assert_allclose(fl.a_o, fl.a_y, rtol=1e-8)


def test_bad_inputs() -> None:
    lam, omega = power_law_spectrum(4, 1.0, 1.0)
    exact = context_draws(lam, omega, None, rng=0)
    with pytest.raises(ValueError, match="draws"):
        untied_noisy_loss(np.ones(2), exact, 1.0)
    dr = context_draws(lam, omega, 5, rng=0, n_draws=3)
    with pytest.raises(ValueError, match="sigma"):
        untied_noisy_loss(np.ones(2), dr, -1.0)
    with pytest.raises(ValueError, match="P"):
        context_draws(lam, omega, 0, rng=0, n_draws=3)
    with pytest.raises(ValueError, match="n_draws"):
        context_draws(lam, omega, 5, rng=0, n_draws=0)
    with pytest.raises(ValueError, match="a0"):
        ReadoutAttention(4, 2, 1.0, -0.1)
    with pytest.raises(ValueError, match="t"):
        readout_flow(np.array([1.0, 0.5]), dr, 2, c=0.1, a_o0=0.3, a_y0=0.3, s0=1.0)


def test_readout_descent_path_tends_to_the_flow_linearly_in_the_step() -> None:
    from iclcore.dmft.readout import readout_descent_path

    D, L = 8, 4
    dr = context_draws(np.ones(D), np.ones(D), 16, rng=np.random.default_rng(0), n_draws=200)
    fl = readout_flow(np.linspace(0, 20, 201), dr, L, c=2 / D**2, a_o0=0.3, a_y0=0.3, s0=1.2)
    gaps = [
        abs(readout_descent_path(dr, L, D, eta=eta, steps=int(round(20 / eta)), a0=0.3, s0=1.2).m.max() - fl.m.max())
        for eta in (0.1, 0.05)
    ]
    assert gaps[1] == pytest.approx(gaps[0] / 2, rel=0.15)
    path = readout_descent_path(dr, L, D, eta=0.1, steps=1, a0=0.3, s0=1.2)
    assert path.gamma[0] == pytest.approx(2 / D**2 * 1.2**5, rel=1e-12)


def test_tied_loss_moments_equal_the_direct_landscape() -> None:
    from iclcore.dmft.finite_context import tied_loss_from_moments, tied_loss_moments

    lam, omega = power_law_spectrum(7, 1.0, 1.0)
    dr = context_draws(lam, omega, 12, rng=np.random.default_rng(9), n_draws=300)
    for L in (1, 3, 8):
        M = tied_loss_moments(dr, L)
        for g in (0.2, 1.9, 5.0):
            loss, dloss = tied_loss_from_moments(g, M)
            ref = readout_loss(1.0, g, dr, L=L)
            assert loss == pytest.approx(ref[0], rel=1e-9, abs=1e-12) and dloss == pytest.approx(
                ref[2], rel=1e-8, abs=1e-11
            )
    with pytest.raises(ValueError, match="M"):
        tied_loss_from_moments(1.0, np.ones(3))


def test_power_five_theory_is_the_flow_on_the_full_table_with_the_spread_of_its_blocks():
    D, P, L = 4, 8, 2
    draws = context_draws(np.ones(D), np.ones(D), P, rng=np.random.default_rng(5), n_draws=400)
    t = np.linspace(0.0, 30.0, 61)
    c = power_five_constant(D)
    th = power_five_theory(draws, L, t, c=c, s0=0.5, n_tables=4, late_start=30)
    M = tied_loss_moments(draws, L)
    _, gam = power_five_flow(t, lambda x: float(tied_loss_from_moments(x, M)[1]), c, s0=0.5)
    np.testing.assert_allclose(th.gamma, gam, rtol=1e-12)
    np.testing.assert_allclose(th.loss, tied_loss_from_moments(gam, M)[0], rtol=1e-12)
    late = []
    for blk in draws.split(4):
        Mb = tied_loss_moments(blk, L)
        late.append(
            power_five_flow(t, lambda x, Mb=Mb: float(tied_loss_from_moments(x, Mb)[1]), c, s0=0.5)[1][30:].mean()
        )
    assert th.mc_sd == pytest.approx(np.std(late, ddof=1) / np.mean(late) / 2.0, rel=1e-10)
    assert th.mc_sd > 0
    with pytest.raises(ValueError, match="n_tables"):
        power_five_theory(draws, L, t, c=c, s0=0.5, n_tables=1, late_start=30)


def test_readout_peak_standard_error_is_the_spread_of_the_block_peaks():
    draws = context_draws(np.ones(4), np.ones(4), 8, rng=np.random.default_rng(6), n_draws=200)
    args, kw = (2, 4), {"eta": 0.05, "steps": 60, "a0": 0.3, "s0": 0.5}
    peaks = [readout_descent_path(blk, *args, **kw).m.max() for blk in draws.split(4)]
    se = readout_peak_standard_error(draws, *args, **kw, n_blocks=4)
    assert se == pytest.approx(np.std(peaks, ddof=1) / 2.0, rel=1e-12)
    assert se > 0
    with pytest.raises(ValueError, match="n_blocks"):
        readout_peak_standard_error(draws, *args, **kw, n_blocks=1)
