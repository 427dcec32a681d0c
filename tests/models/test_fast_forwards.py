"""The fast forwards of the trained models equal the term-by-term formulas (iclcore.models._reference)."""

from __future__ import annotations

import pytest
import torch

from iclcore.models import _reference as ref
from iclcore.models import toy_transformers as tt
from iclcore.models.attention import SoftmaxAttention, sample_iso_contexts


@pytest.mark.parametrize("mlp", [False, True])
@pytest.mark.parametrize("L", [1, 2, 5])
def test_softmax_attention_fused_scores_and_pruned_last_layer(mlp, L):
    """W_q^T W_k in one product and a query-only last layer: the same function to float64 rounding."""
    model = SoftmaxAttention(6, 12, L, torch.Generator().manual_seed(L), mlp=mlp, dtype=torch.float64)
    ctx = sample_iso_contexts(7, 10, 3, 6, torch.Generator().manual_seed(10 + L))
    fast = model(ctx.X, ctx.y, ctx.Xs)
    slow = ref.softmax_attention_forward(model, ctx.X, ctx.y, ctx.Xs)
    assert fast.shape == (7, 3)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)
    # and the gradients (what training sees)
    g_fast = torch.autograd.grad(fast.square().sum(), list(model.parameters()), allow_unused=False)
    g_slow = torch.autograd.grad(
        ref.softmax_attention_forward(model, ctx.X, ctx.y, ctx.Xs).square().sum(), list(model.parameters())
    )
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_multi_head_attention_fused_kernel_equals_masked_einsums():
    cfg = tt.AttnConfig(n_layers=1, d_model=16, n_heads=3, d_head=5, seq_len=14)
    attn = tt.AttnOnlyTransformer(cfg, torch.Generator().manual_seed(0)).double().attn[0]
    x = torch.randn(4, 11, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(attn(x), ref.toy_attention_forward(attn, x), rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(
        attn(x, last_only=True), ref.toy_attention_forward(attn, x)[:, -1], rtol=1e-12, atol=1e-13
    )


def test_grokking_model_reads_only_the_last_position():
    cfg = tt.GrokConfig(p=11)
    model = tt.GrokTransformer(cfg, torch.Generator().manual_seed(0)).double()
    x, _, _, _ = tt.modular_addition_split(cfg, 0)
    torch.testing.assert_close(model(x), ref.grok_forward(model, x), rtol=1e-12, atol=1e-12)


def test_richardson_unroll_broadcast_products_equal_einsum_matvecs():
    """The Flexformer's unrolled iterates and their gradient in P: the same to float64 rounding."""
    from iclcore.models.flexformer import richardson_unroll

    g = torch.Generator().manual_seed(3)
    B, K, L = 9, 6, 7
    A = torch.randn(B, K, K, generator=g, dtype=torch.float64)
    H = A @ A.transpose(1, 2) / K + 0.1 * torch.eye(K, dtype=torch.float64)
    d = torch.randn(B, K, generator=g, dtype=torch.float64)
    P = 0.2 * torch.eye(K, dtype=torch.float64) + 0.01 * torch.randn(B, K, K, generator=g, dtype=torch.float64)
    P.requires_grad_(True)
    fast, slow = richardson_unroll(P, H, d, L), ref.richardson_unroll(P, H, d, L)
    assert fast.shape == (B, L + 1, K)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-13)
    (gf,) = torch.autograd.grad(fast[:, -1].square().sum(), P)
    (gs,) = torch.autograd.grad(ref.richardson_unroll(P, H, d, L)[:, -1].square().sum(), P)
    torch.testing.assert_close(gf, gs, rtol=1e-11, atol=1e-12)
