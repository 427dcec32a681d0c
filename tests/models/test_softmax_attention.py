"""Tests for iclcore.models.softmax (seed 000 §8, §12.10)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclcore.linalg import stable_rank, top_energy
from iclcore.lsq.iterates import richardson_iterates
from iclcore.lsq.tasks import TaskConfig
from iclcore.models.softmax import (
    AttentionConfig,
    ProbeQueryAttention,
    gauge_transform,
    head_kernels,
    kernel_stats,
    linearized_preconditioner,
    local_preconditioner,
    projected_preconditioner,
    projection_fit,
    richardson_states,
    sample_torch_prompts,
    skew_ratio,
    train_attention,
    update_jacobian,
)
from iclcore.models.training import TrainConfig

TASK = TaskConfig(K=6, M=24, r=1, sigma=0.1, lam=0.0, cond=10.0)


def _model(attention="softmax", seed=0, **kw):
    cfg = AttentionConfig(K=6, n_heads=3, d_k=5, attention=attention, **kw)
    return ProbeQueryAttention(cfg, torch.Generator().manual_seed(seed))


def _batch(n=32, seed=1):
    b = sample_torch_prompts(TASK, n, np.random.default_rng(seed))
    z = torch.as_tensor(np.random.default_rng(seed + 100).normal(size=(n, TASK.K)))
    return z, b


def test_kernel_statistics_by_hand():
    A = np.diag([3.0, 4.0])
    assert stable_rank(A) == pytest.approx(25 / 16)
    assert top_energy(A, 1) == pytest.approx(16 / 25)
    assert top_energy(A, 2) == pytest.approx(1.0)
    assert stable_rank(np.outer([1.0, 2.0], [3.0, -1.0])) == pytest.approx(1.0)
    S = np.array([[1.0, 2.0], [0.0, 1.0]])  # sym [[1,1],[1,1]], skew [[0,1],[-1,0]]
    assert skew_ratio(S) == pytest.approx(math.sqrt(2) / 2)
    assert skew_ratio(np.eye(3)) == 0.0
    assert np.isinf(skew_ratio(np.array([[0.0, 1.0], [-1.0, 0.0]])))
    np.testing.assert_allclose(stable_rank(np.stack([A, 2 * A])), [25 / 16, 25 / 16])


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_gauge_invariance_of_kernel_and_outputs(attention):
    m = _model(attention)
    z, b = _batch()
    rng = np.random.default_rng(4)
    A = rng.normal(size=(3, 5, 5)) + 2.0 * np.eye(5)
    g = gauge_transform(m, A)
    np.testing.assert_allclose(head_kernels(g), head_kernels(m), rtol=0, atol=1e-13)
    with torch.no_grad():
        out_m = m(z, b["X"], b["y"]).numpy()
        out_g = g(z, b["X"], b["y"]).numpy()
    np.testing.assert_allclose(out_g, out_m, rtol=0, atol=1e-12 * max(1.0, np.abs(out_m).max()))
    assert (g.W_Q - m.W_Q).abs().max().item() > 0.1  # raw matrices did move
    assert (g.W_K - m.W_K).abs().max().item() > 0.1
    # gauge-invariant statistics are unchanged, the balance ratio is not
    s_m, s_g = kernel_stats(m), kernel_stats(g)
    assert s_g.stable_rank_mean == pytest.approx(s_m.stable_rank_mean, rel=1e-12)
    assert s_g.skew_ratio_mean == pytest.approx(s_m.skew_ratio_mean, rel=1e-12)
    assert abs(s_g.balance - s_m.balance) > 1e-3


def test_linear_attention_is_global_preconditioner_everywhere():
    """Linear attention: Δ = P_lin r exactly and J = P_lin at every (z, prompt), to rounding."""
    m = _model("linear", seed=3)
    z, b = _batch(40, seed=5)
    P = linearized_preconditioner(m)
    r = (b["d"] - torch.einsum("bij,bj->bi", b["H"], z)).numpy()
    with torch.no_grad():
        D = m(z, b["X"], b["y"]).numpy()
    np.testing.assert_allclose(D, r @ P.T, atol=1e-12 * np.abs(D).max())
    J = local_preconditioner(m, z, b["X"], y=b["y"])
    np.testing.assert_allclose(J, np.broadcast_to(P, J.shape), atol=1e-11 * np.abs(P).max())
    assert projection_fit(D, r, projected_preconditioner(D, r)) == pytest.approx(1.0, abs=1e-12)


def test_richardson_states_follow_the_recursion_and_are_richardson_iterates_for_linear_attention():
    """z_{l+1} = z_l + Δ_l, r_l = d - H z_l; for linear attention z_l are the Richardson iterates with P_lin."""
    _, b = _batch(16, seed=7)
    L = 5
    for attention in ("softmax", "linear"):
        m = _model(attention, seed=4)
        st = richardson_states(m, b, L)
        assert st.z.shape == st.delta.shape == st.r.shape == (L, 16, TASK.K)
        np.testing.assert_array_equal(st.z[0], 0.0)
        np.testing.assert_allclose(st.z[1:], st.z[:-1] + st.delta[:-1], rtol=0, atol=1e-13)
        H, d = b["H"].numpy(), b["d"].numpy()
        np.testing.assert_allclose(st.r, d[None] - np.einsum("nij,lnj->lni", H, st.z), rtol=0, atol=1e-12)
    P = linearized_preconditioner(m)
    np.testing.assert_allclose(st.delta, st.r @ P.T, atol=1e-12 * np.abs(st.delta).max())
    Z = richardson_iterates(P, H, d, L=L - 1)  # (n, L, K)
    np.testing.assert_allclose(st.z, np.swapaxes(Z, 0, 1), atol=1e-12 * max(1.0, np.abs(Z).max()))
    with pytest.raises(ValueError, match="L"):
        richardson_states(m, b, 0)
    with pytest.raises(ValueError, match="prompts"):
        richardson_states(m, {"X": b["X"]}, 2)


def test_softmax_jacobian_varies_and_matches_finite_differences():
    m = _model("softmax", seed=2, init_std=0.6)
    z, b = _batch(20, seed=7)
    D = update_jacobian(m, z, b["X"], y=b["y"])
    # central finite differences on one prompt
    eps = 1e-6
    fd = np.zeros((6, 6))
    for k in range(6):
        e = torch.zeros(1, 6, dtype=torch.float64)
        e[0, k] = eps
        with torch.no_grad():
            fd[:, k] = ((m(z[:1] + e, b["X"][:1], b["y"][:1]) - m(z[:1] - e, b["X"][:1], b["y"][:1])) / (2 * eps))[
                0
            ].numpy()
    np.testing.assert_allclose(D[0], fd, atol=1e-8)
    J = local_preconditioner(m, z, b["X"], y=b["y"])
    spread = np.linalg.norm(J - J.mean(0), axis=(1, 2)).mean() / np.linalg.norm(J.mean(0))
    assert spread > 0.05  # softmax: prompt-dependent preconditioner
    # scores do not depend on z: Δ is affine in z for a fixed prompt, J independent of z
    J0 = local_preconditioner(m, torch.zeros_like(z), b["X"], y=b["y"])
    np.testing.assert_allclose(J0, J, atol=1e-12)


def test_small_scores_softmax_approaches_centred_linear_attention():
    """softmax_i(s) - 1/M = (s_i - s̄)/M + O(s²): with kernels scaled by eps the updates match P_lin r_c."""
    m = _model("softmax", seed=1)
    eps = 1e-4
    with torch.no_grad():
        m.W_Q.mul_(eps)
        m.c.fill_(1.0 / eps**2)  # keep the update O(1)
    z, b = _batch(10, seed=9)
    X, y = b["X"].numpy(), b["y"].numpy()
    rho = y - np.einsum("bmk,bk->bm", X, z.numpy())
    Xc = X - X.mean(axis=1, keepdims=True)
    r_c = np.einsum("bmk,bm->bk", Xc, rho) / X.shape[1]
    P = linearized_preconditioner(m)
    with torch.no_grad():
        D = m(z, b["X"], b["y"]).numpy()
    np.testing.assert_allclose(D, r_c @ P.T, rtol=1e-3, atol=1e-3 * np.abs(D).max())


def test_projection_is_least_squares_optimal():
    rng = np.random.default_rng(0)
    r = rng.normal(size=(500, 4))
    P_true = rng.normal(size=(4, 4))
    D = r @ P_true.T + 0.1 * rng.normal(size=(500, 4)) + 0.3 * r**2
    P = projected_preconditioner(D, r)
    best = projection_fit(D, r, P)
    for _ in range(5):
        assert projection_fit(D, r, P + 1e-3 * rng.normal(size=(4, 4))) < best
    # rank-deficient residuals: pseudo-inverse, finite
    r2 = np.c_[r[:, :2], np.zeros((500, 2))]
    assert np.all(np.isfinite(projected_preconditioner(D, r2)))


def test_training_reduces_loss_and_concentrates_kernel():
    m = _model("softmax", seed=0, init_std=0.05, qk_init_ratio=2.0)
    hist = train_attention(
        m, TASK, TrainConfig(steps=150, batch=32, lr=1.0, log_every=50), rng=np.random.default_rng(0)
    )
    assert hist.loss[-1] < 0.2 * hist.loss[0]
    sr = hist.series("stable_rank_mean")
    assert sr[-1] < 1.3 < sr[0]  # rank-one task: kernel becomes nearly rank one
    assert hist.series("top1_energy_mean")[-1] > 0.8
    assert hist.series("skew_ratio_mean")[-1] < hist.series("skew_ratio_mean")[0]
    bal = hist.series("balance")
    assert abs(bal[-1] - 1) < abs(bal[0] - 1)  # factor balancing from an unbalanced start


def test_sgd_nearly_conserves_factor_gap_for_small_lr():
    """Gradient flow conserves ‖W_Q^h‖² - ‖W_K^h‖²; SGD with a small step drifts by O(lr)."""
    m = _model("linear", seed=0, init_std=0.2, qk_init_ratio=1.5)
    before = kernel_stats(m).conserved_heads
    G0 = head_kernels(m)
    hist = train_attention(
        m, TASK, TrainConfig(steps=100, batch=32, lr=0.02, log_every=100), rng=np.random.default_rng(1)
    )
    after = hist.stats[-1].conserved_heads
    assert np.linalg.norm(head_kernels(m) - G0) > 0.1 * np.linalg.norm(G0)  # the kernels did move
    assert np.max(np.abs(after - before)) < 0.05 * np.max(np.abs(before))


def test_bad_inputs():
    with pytest.raises(ValueError, match="attention"):
        AttentionConfig(attention="relu")
    with pytest.raises(ValueError, match="n_heads"):
        AttentionConfig(n_heads=0)
    with pytest.raises(ValueError, match="init_std"):
        AttentionConfig(init_std=-1.0)
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(steps=1, lr=0.05, optimizer="lbfgs")
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(steps=1, lr=0.0)
    m = _model()
    z, b = _batch(4)
    with pytest.raises(ValueError, match="X"):
        m(z, b["X"][..., :3], b["y"])
    with pytest.raises(ValueError, match="z"):
        m(z[:2], b["X"], b["y"])
    with pytest.raises(ValueError, match="y"):
        m(z, b["X"], b["y"][:, :3])
    with pytest.raises(ValueError, match="A"):
        gauge_transform(m, np.zeros((5, 5)))
    with pytest.raises(ValueError, match="A"):
        gauge_transform(m, np.eye(4))
    with pytest.raises(ValueError, match="X"):
        local_preconditioner(m, z, b["X"][:, :3], y=b["y"][:, :3])  # M < K
    with pytest.raises(ValueError, match="lam"):
        train_attention(m, TASK.replace(lam=0.1), TrainConfig(steps=1, lr=0.05), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="K"):
        train_attention(m, TASK.replace(K=5), TrainConfig(steps=1, lr=0.05), rng=np.random.default_rng(0))
    with pytest.raises(FloatingPointError, match="lr"):
        train_attention(_model(init_std=1.0), TASK, TrainConfig(steps=50, lr=1e6), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="A"):
        stable_rank(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="k"):
        top_energy(np.eye(3), 4)
    with pytest.raises(ValueError, match="A"):
        skew_ratio(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Delta"):
        projected_preconditioner(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="name"):
        train_attention(_model(), TASK, TrainConfig(steps=1, lr=0.05), rng=np.random.default_rng(0)).series("nope")
