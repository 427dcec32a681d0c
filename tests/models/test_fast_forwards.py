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
    ctx = sample_iso_contexts(7, 10, 3, D=6, gen=torch.Generator().manual_seed(10 + L))
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
    fast, slow = richardson_unroll(P, H, d, L=L), ref.richardson_unroll(P, H, d, L=L)
    assert fast.shape == (B, L + 1, K)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-13)
    (gf,) = torch.autograd.grad(fast[:, -1].square().sum(), P)
    (gs,) = torch.autograd.grad(ref.richardson_unroll(P, H, d, L=L)[:, -1].square().sum(), P)
    torch.testing.assert_close(gf, gs, rtol=1e-11, atol=1e-12)


def test_gpt_explicit_attention_equals_the_fused_multihead_call():
    """Masked-matmul attention computes what ``nn.MultiheadAttention`` does: residual streams, the
    head-averaged attention maps and the gradients, to float64 rounding."""
    from iclcore.gd.depth_probe import sample_probe_tasks
    from iclcore.models.gpt_mini import GPTMini

    model = GPTMini(3, 7, 3, 12, 3, torch.Generator().manual_seed(0)).double()
    t = sample_probe_tasks(5, 7, 3, gen=torch.Generator().manual_seed(1))
    hs, att = model.hidden(t.X, t.y, t.xq[:, 0], need_attn=True)
    hs_ref, att_ref = ref.gpt_hidden(model, t.X, t.y, t.xq[:, 0], need_attn=True)
    assert len(hs) == len(hs_ref) == 4 and len(att) == len(att_ref) == 3
    for a, b in zip(hs + att, hs_ref + att_ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)
    assert torch.all(torch.triu(att[0][0], 1) == 0)  # causal: no weight on later tokens
    params = list(model.parameters())
    g = torch.autograd.grad(model.lens(hs[-1]).square().sum(), params)
    g_ref = torch.autograd.grad(model.lens(hs_ref[-1]).square().sum(), params)
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    # the training forward computes only the read rows of the last layer: the same predictions
    hs_ref = ref.gpt_hidden(model, t.X, t.y, t.xq[:, 0])[0]
    pred, pred_ref = model.forward_all(t.X, t.y, t.xq[:, 0]), model.lens(hs_ref[-1])[:, 1::2]
    assert pred.shape == (5, 8)
    torch.testing.assert_close(pred, pred_ref, rtol=1e-12, atol=1e-13)
    g = torch.autograd.grad(pred.square().sum(), params)
    g_ref = torch.autograd.grad(pred_ref.square().sum(), params)
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def _package_forward(model, t):
    return model.forward_all(t.X, t.y, t.xq[:, 0])


def _probe_gpt_training(pred, dims, *, seed, batch, steps, warmup, fused):
    """A float32 GPT training of gd_probe (``dims = (d, n, L, width, heads)``, all-position loss with
    the predictions ``pred(model, tasks)``): the model and its loss curve."""
    from iclcore.gd.depth_probe import probe_train_config, sample_probe_tasks
    from iclcore.models.gpt_mini import GPTMini
    from iclcore.models.training import train_loop

    g = torch.Generator().manual_seed(seed)
    model = GPTMini(*dims, g).float()

    def loss(_k: int) -> torch.Tensor:
        t = sample_probe_tasks(batch, dims[1], dims[0], gen=g, m=1, dtype=torch.float32)
        return 0.5 * ((pred(model, t) - torch.cat([t.y, t.yq[:, :1]], 1)) ** 2).mean()

    cfg = probe_train_config(steps=steps, lr=1e-2, batch=batch, warmup=warmup, fused=fused)
    return model, train_loop(model.parameters(), loss, cfg).loss


def test_gpt_training_losses_equal_those_of_the_fused_attention_step():
    """Eight float32 Adam steps of gd_probe's GPT training give the same losses with the fast step
    (explicit attention, last layer on the read rows, fused Adam) and the reference step (fused
    attention call, per-tensor Adam).

    Error model, fixed in advance: the two attentions sum the same products in a different order, a
    reordered reduction of length ``n`` moves a float32 result by at most about ``n`` ulp, and the
    longest reductions here have ``n <= 64`` (the MLP width, 4 x 16); eight warm-up steps of a
    well-conditioned model are allowed to amplify that by 2, hence a relative tolerance of
    ``128 eps_32`` (about ``1.5e-5``), the tolerance of the pinned losses of the training loop. A
    changed learning rate, a skipped step or a wrong mask moves a loss by far more.
    """
    import numpy as np

    def fused_call(model, t):
        return model.lens(ref.gpt_hidden(model, t.X, t.y, t.xq[:, 0])[0][-1])[:, 1::2]

    curves = [
        _probe_gpt_training(pred, (4, 10, 3, 16, 4), seed=3, batch=16, steps=8, warmup=2, fused=fused)[1]
        for pred, fused in ((_package_forward, True), (fused_call, False))
    ]
    np.testing.assert_allclose(curves[0], curves[1], rtol=128 * np.finfo(np.float32).eps, atol=0.0)


def test_gpt_training_is_bit_identical_to_the_plain_explicit_attention():
    """Twenty float32 Adam steps of gd_probe's GPT training (fused Adam, clipping, warm-up, the
    last layer on the read rows): the package's forward (row streams, heads split by one copy whose
    backward writes the gradients in place, residual sums into the branch outputs) gives exactly the
    losses and parameters of the same attention written plainly (:func:`ref.gpt_hidden_explicit`):
    it moves the same numbers and adds them in the same order, so no rounding may differ. The
    streams, read in evaluation, are equal too."""
    from iclcore.gd.depth_probe import sample_probe_tasks

    def plain(model, t):
        return model.lens(ref.gpt_hidden_explicit(model, t.X, t.y, t.xq[:, 0], rows=slice(1, None, 2))[-1])

    runs = [
        _probe_gpt_training(pred, (3, 7, 3, 16, 4), seed=5, batch=8, steps=20, warmup=4, fused=True)
        for pred in (plain, _package_forward)
    ]
    (m_plain, l_plain), (m_fast, l_fast) = runs
    l_plain, l_fast = torch.as_tensor(l_plain), torch.as_tensor(l_fast)
    assert torch.equal(l_plain, l_fast) and not torch.equal(l_fast[:1], l_fast[-1:])
    for a, b in zip(m_plain.parameters(), m_fast.parameters(), strict=True):
        assert torch.equal(a, b)
    t = sample_probe_tasks(4, 7, 3, gen=torch.Generator().manual_seed(6), m=1, dtype=torch.float32)
    with torch.no_grad():
        hs, att = m_fast.hidden(t.X, t.y, t.xq[:, 0], need_attn=True)
        hs_plain = ref.gpt_hidden_explicit(m_fast, t.X, t.y, t.xq[:, 0])
    assert len(att) == 3 and all(torch.equal(a, b) for a, b in zip(hs, hs_plain, strict=True))
