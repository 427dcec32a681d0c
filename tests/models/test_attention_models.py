"""Tests for iclcore.models.attention (seed 002 §5, App. B, G): attention models in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_gradient_flow
from iclcore.dmft.width_mc import width_landscape_mc
from iclcore.lsq.iterates import in_context_gd_predict
from iclcore.models.attention import (
    LinearAttention,
    ReducedGammaStack,
    SoftmaxAttention,
    power_five_constant,
    power_five_flow,
    sample_iso_contexts,
    sample_rrs_contexts,
    train,
)

torch.set_num_threads(1)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_block_attention_is_in_context_gd():
    """Eq. 3 + mask (Eq. 41-42) with aligned blocks = L steps of preconditioned GD (Eq. 4), 1e-12,
    for arbitrary (non-isotropic, non-symmetric) block weights."""
    g = _gen(0)
    D, L = 5, 3
    m = LinearAttention(D, L, 0.7, "block")
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    ctx = sample_iso_contexts(3, 7, 4, D=D, gen=g)
    f = m(ctx.X, ctx.y, ctx.Xs).detach().numpy()
    G = m.gamma_matrix().detach().numpy()
    ref = np.array(
        [in_context_gd_predict(G, ctx.X[b].numpy(), ctx.y[b].numpy(), Xq=ctx.Xs[b].numpy(), L=L) for b in range(3)]
    )
    np.testing.assert_allclose(f, ref, rtol=1e-12, atol=1e-14)


def test_full_structure_aligned_init_balanced():
    """Full (D+1)-dim matrices from the aligned init give the block model's output (1e-13),
    gamma(0) = c s0^5 with c = 2/D^2, and |W_x|^2/2 = |W_k|^2 = |W_q|^2 = |W_v|^2 = s0^2."""
    D, L, s0 = 6, 2, 0.9
    ctx = sample_iso_contexts(2, 8, 3, D=D, gen=_gen(1))
    mf, mb = LinearAttention(D, L, s0, "full"), LinearAttention(D, L, s0, "block")
    np.testing.assert_allclose(mf(ctx.X, ctx.y, ctx.Xs).detach(), mb(ctx.X, ctx.y, ctx.Xs).detach(), atol=1e-13)
    assert mb.gamma() == pytest.approx(power_five_constant(D) * s0**5, rel=1e-13)
    n = mf.frobenius_sq()
    for k in ("k", "q", "v"):
        assert n[k] == pytest.approx(s0**2, rel=1e-13)
    assert n["x"] == pytest.approx(2 * s0**2, rel=1e-13)


@pytest.mark.parametrize("model", ["linear", "softmax", "softmax_mlp"])
def test_queries_do_not_see_each_other(model):
    """Masking: the prediction at query 0 is unchanged when another query's input changes."""
    g = _gen(2)
    D = 4
    if model == "linear":
        m = LinearAttention(D, 3, 1.0, "full")
        dt = torch.float64
    else:
        m = SoftmaxAttention(D, 8, 3, g, mlp=(model == "softmax_mlp"), dtype=torch.float64)
        dt = torch.float64
    ctx = sample_iso_contexts(2, 6, 3, D=D, gen=g, dtype=dt)
    f0 = m(ctx.X, ctx.y, ctx.Xs).detach()
    Xs2 = ctx.Xs.clone()
    Xs2[:, 1:] += 5.0
    f1 = m(ctx.X, ctx.y, Xs2).detach()
    np.testing.assert_allclose(f0[:, 0], f1[:, 0], atol=1e-12)
    assert (f0[:, 1] - f1[:, 1]).abs().max() > 1e-6


def test_power_five_reduction_matches_parameter_gradient_flow():
    """Result 9 (corrected): gradient descent with small step on all block parameters under a
    rotation-invariant loss L(Gamma) stays isotropic and balanced, and gamma(t) follows
    ds/dt = -c s^4 L'(c s^5) with c = 2/D^2. Here L(Gamma) = tr[(I - Gamma/L)^{2L}] (ISO at
    alpha = infinity). Euler error O(eta): 5e-3 relative at eta = 2e-3."""
    D, L, s0, eta, steps = 4, 2, 1.0, 2e-3, 2500
    m = LinearAttention(D, L, s0, "block")
    opt = torch.optim.SGD(m.parameters(), lr=eta)
    I = torch.eye(D, dtype=torch.float64)
    gam = [m.gamma()]
    for _ in range(steps):
        opt.zero_grad()
        A = torch.linalg.matrix_power(I - m.gamma_matrix() / L, L)
        loss = torch.trace(A.T @ A) / D
        loss.backward()
        opt.step()
        gam.append(m.gamma())
    t = eta * np.arange(steps + 1)
    dl = lambda x: -2.0 * (1 - x / L) ** (2 * L - 1)  # noqa: E731
    _, g_th = power_five_flow(t, dl, power_five_constant(D), s0=s0)
    idx = [500, 1000, 2500]
    np.testing.assert_allclose(np.array(gam)[idx], g_th[idx], rtol=5e-3)
    assert g_th[-1] > 10 * g_th[0]  # the test covers the escape from the plateau
    n = m.frobenius_sq()
    assert n["x"] / 2 == pytest.approx(n["k"], rel=1e-6)
    assert n["k"] == pytest.approx(n["v"], rel=1e-6)
    G = m.gamma_matrix().detach().numpy()
    assert np.abs(G - np.mean(np.diag(G)) * np.eye(D)).max() < 1e-10


def test_power_five_sgd_matches_theory_small():
    """Block attention trained with SGD on ISO prompts (D = 8, P = 16, K = 8, B = 64, L = 2):
    gamma(t) within 10% of the ODE built on the finite-D landscape (400 Wishart draws)."""
    D, P, K, B, L, lr, steps = 8, 16, 8, 64, 2, 0.2, 300
    m = LinearAttention(D, L, 1.0, "block")
    res = train(m, lambda gg: sample_iso_contexts(B, P, K, D=D, gen=gg), steps, lr=lr, gen=_gen(3))
    grid = np.linspace(0, 2.5 * L, 300)
    _, dmc = width_landscape_mc(grid, np.ones(D), np.ones(D), N=D, L=L, rng=np.random.default_rng(0), P=P, n_draws=400)
    t = lr * np.arange(steps + 1)
    _, g_th = power_five_flow(t, lambda x: np.interp(x, grid, dmc), power_five_constant(D), s0=1.0)
    idx = [150, 300]
    np.testing.assert_allclose(res.gamma[idx, 0], g_th[idx], rtol=0.10)


def test_untied_scalar_layers_stay_balanced_and_equal_tied():
    """App. G.1: with Gamma^l = gamma^l I, SGD from gamma^l = 0 keeps all layers equal (1e-12) on
    every batch, and with lr x L it reproduces the tied model exactly (1e-10)."""
    D, L, B, steps, eta = 10, 4, 16, 60, 0.3
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    sampler = lambda gg: sample_rrs_contexts(B, 1, 1, lam=lam, omega=omega, gen=gg)  # noqa: E731
    un = ReducedGammaStack(D, L, tied=False, scalar=True)
    r_un = train(un, sampler, steps, lr=eta * L / 2, gen=_gen(4), population=True)
    ti = ReducedGammaStack(D, L, tied=True, scalar=True)
    r_ti = train(ti, sampler, steps, lr=eta / 2, gen=_gen(4), population=True)
    spread = r_un.gamma.max(axis=1) - r_un.gamma.min(axis=1)
    assert spread.max() < 1e-12 * max(1.0, np.abs(r_un.gamma).max())
    np.testing.assert_allclose(r_un.gamma[:, 0], r_ti.gamma[:, 0], rtol=1e-10)
    assert r_un.gamma[-1, 0] > 0.5


def test_untied_matrix_layers_follow_recurrent_theory():
    """Untied D x D matrices, SGD with lr = eta D L / 2 on population-context RRS batches: traces
    stay balanced (spread < 3% of gamma) and follow the recurrent flow (Eq. 13) within 6%."""
    D, L, B, steps, eta = 12, 3, 32, 150, 0.5
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    sampler = lambda gg: sample_rrs_contexts(B, 1, 1, lam=lam, omega=omega, gen=gg)  # noqa: E731
    un = ReducedGammaStack(D, L, tied=False)
    r = train(un, sampler, steps, lr=eta * D * L / 2, gen=_gen(5), population=True)
    t = eta * np.arange(steps + 1)
    g_th, _ = rrs_gradient_flow(t, lam, omega, L=L)
    spread = (r.gamma.max(axis=1) - r.gamma.min(axis=1))[1:] / r.gamma.mean(axis=1)[1:]
    assert spread.max() < 0.03
    np.testing.assert_allclose(r.gamma[[50, 150]].mean(axis=1), g_th[[50, 150]], rtol=0.06)


def test_softmax_training_reduces_loss_and_is_seeded():
    """Adam on softmax attention (+MLP) lowers the loss; same generator seed -> identical run."""
    D = 4
    sampler = lambda gg: sample_iso_contexts(32, 8, 4, D=D, gen=gg, dtype=torch.float32)  # noqa: E731
    runs = []
    for _ in range(2):
        m = SoftmaxAttention(D, 16, 2, _gen(6), mlp=True)
        runs.append(train(m, sampler, 150, lr=3e-3, gen=_gen(7), optimizer="adam"))
    np.testing.assert_array_equal(runs[0].loss, runs[1].loss)
    assert runs[0].loss[-30:].mean() < 0.8 * runs[0].loss[:10].mean()


def test_bad_inputs():
    g = _gen(0)
    with pytest.raises(ValueError, match="structure"):
        LinearAttention(4, 2, 1.0, "diag")
    with pytest.raises(ValueError, match="s0"):
        LinearAttention(4, 2, -1.0)
    with pytest.raises(TypeError, match="D"):
        LinearAttention(4.0, 2, 1.0)
    with pytest.raises(ValueError, match="L"):
        ReducedGammaStack(4, 0)
    with pytest.raises(TypeError, match="gen"):
        sample_iso_contexts(2, 3, 3, D=4, gen=0)
    with pytest.raises(ValueError, match="sigma"):
        sample_iso_contexts(2, 3, 3, D=4, gen=g, sigma=-1.0)
    with pytest.raises(ValueError, match="lam"):
        sample_rrs_contexts(2, 3, 3, lam=np.array([1.0, -1.0]), omega=np.ones(2), gen=g)
    m = LinearAttention(4, 2, 1.0)
    ctx = sample_iso_contexts(2, 3, 3, D=4, gen=g)
    with pytest.raises(ValueError, match="X"):
        m(ctx.X[..., :3], ctx.y, ctx.Xs[..., :3])
    sampler = lambda gg: sample_iso_contexts(2, 3, 3, D=4, gen=gg)  # noqa: E731
    with pytest.raises(ValueError, match="lr"):
        train(m, sampler, 5, lr=-0.1, gen=g)
    with pytest.raises(ValueError, match="optimizer"):
        train(m, sampler, 5, lr=0.1, gen=g, optimizer="lbfgs")
    with pytest.raises(ValueError, match="population"):
        train(m, sampler, 5, lr=0.1, gen=g, population=True)
    with pytest.raises(FloatingPointError, match="lr"):
        train(LinearAttention(4, 2, 3.0), sampler, 200, lr=50.0, gen=g)
    with pytest.raises(ValueError, match="t"):
        power_five_flow(np.array([1.0, 0.0]), lambda x: -1.0, 0.1, s0=1.0)
    with pytest.raises(ValueError, match="schedule"):
        train(m, sampler, 5, lr=0.1, gen=g, schedule=lambda k: -1.0)


def test_schedule_clock():
    """The SGD clock is the cumulative step size: t_k = sum_{j<k} lr * schedule(j) (exact)."""
    m = ReducedGammaStack(4, 2, tied=True, scalar=True)
    lam, omega = power_law_spectrum(4, 1.0, 1.0)
    r = train(
        m,
        lambda gg: sample_rrs_contexts(2, 1, 1, lam=lam, omega=omega, gen=gg),
        7,
        lr=0.2,
        gen=_gen(0),
        population=True,
        schedule=lambda k: 1.0 / (1.0 + k),
    )
    np.testing.assert_allclose(r.t, np.concatenate([[0.0], np.cumsum(0.2 / (1.0 + np.arange(7)))]), rtol=1e-15)


def test_width_frame_model_follows_width_theory():
    """Width-N reduced model (frame U, D = 16, N = 4): SGD with lr = eta N / 2 on population RRS
    contexts follows the width-N flow of dmft_width (40 pooled projections) within 10% once
    gamma = O(1); a non-orthonormal frame is rejected."""
    from iclcore.dmft.width_mc import haar_columns, width_gradient_flow, width_spectrum_mc

    D, N, L, Bc, eta, steps = 16, 4, 2, 64, 0.5, 120
    lam, omega = power_law_spectrum(D, 1.0, 1.0)
    U = haar_columns(D, N, np.random.default_rng(0))
    m = ReducedGammaStack(D, L, tied=True, frame=torch.as_tensor(U))
    r = train(
        m,
        lambda gg: sample_rrs_contexts(Bc, 1, 1, lam=lam, omega=omega, gen=gg),
        steps,
        lr=eta * N / 2,
        gen=_gen(8),
        population=True,
    )
    spec = width_spectrum_mc(lam, omega, N, rng=np.random.default_rng(1), n_draws=40)
    th = width_gradient_flow(spec, L, eta * np.arange(steps + 1))
    np.testing.assert_allclose(r.gamma[[40, 80, 120], 0], th.gamma[[40, 80, 120]], rtol=0.10)
    with pytest.raises(ValueError, match="frame"):
        ReducedGammaStack(D, L, frame=torch.ones(D, N, dtype=torch.float64))
