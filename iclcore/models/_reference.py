"""Reference forward passes (the straightforward formulas) of the fast model code.

Private: used only by the tests (equality with the fast forwards to float32 rounding) and by
``benchmarks/bench_paper_scale.py`` (speed-up ratios, old path against new in one process).
Each function takes the module and the inputs of the ``forward`` it mirrors:

- :func:`softmax_attention_forward` mirrors :meth:`iclcore.models.attention.SoftmaxAttention.forward`
  (separate query and key projections, every layer on every token);
- :func:`toy_attention_forward` mirrors the multi-head attention of
  :mod:`iclcore.models.toy_transformers` (per-head einsums, explicit causal mask);
- :func:`grok_forward` mirrors :meth:`iclcore.models.toy_transformers.GrokTransformer.forward`
  (attention on every position, then the last one read out);
- :func:`gpt_hidden` mirrors :meth:`iclcore.models.gpt_mini.GPTMini.hidden` (the fused
  ``nn.MultiheadAttention`` call with a boolean causal mask);
- :func:`gpt_hidden_explicit` is the same explicit attention as :meth:`~iclcore.models.gpt_mini.GPTMini.hidden`
  written plainly: ``(B, T, W)`` streams through the modules, the heads split and merged by
  ``view/permute/reshape`` (its losses and gradients are bit-identical to the fast forward's, which
  only moves the same numbers with fewer copies and views);
- :func:`richardson_unroll` mirrors :func:`iclcore.models.flexformer.richardson_unroll`
  (batched matrix-vector products by ``einsum``/``bmm``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.nn import functional as F

from iclcore.models.toy_transformers import embed_tokens


def softmax_attention_forward(model, X: torch.Tensor, y: torch.Tensor, Xs: torch.Tensor) -> torch.Tensor:
    """Predictions ``(B, K)`` of a :class:`~iclcore.models.attention.SoftmaxAttention`, term by term."""
    P = X.shape[1]
    lab = torch.cat([y, torch.zeros_like(Xs[..., 0])], dim=1)
    h = torch.cat([X, Xs], dim=1) @ model.Wx.T + lab[..., None] * model.wy
    for l in range(model.L):
        q = h @ model.Wq[l].T
        k = h[:, :P] @ model.Wk[l].T
        v = h[:, :P] @ model.Wv[l].T
        A = torch.softmax(q @ k.transpose(1, 2) / np.sqrt(model.n), dim=-1)
        h = h + A @ v / model.L
        if model.mlp:
            h = h + F.gelu(h @ model.W1[l].T) @ model.W2[l].T / model.L
    return h[:, P:] @ model.wo


def toy_attention_forward(attn, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
    """Causal multi-head attention ``(B, T, d_model)`` with per-head weights, explicit mask."""
    T = x.shape[1]
    q = torch.einsum("btd,hde->bhte", x, attn.W_Q)
    k = torch.einsum("btd,hde->bhte", x, attn.W_K)
    v = torch.einsum("btd,hde->bhte", x, attn.W_V)
    scores = q @ k.transpose(-1, -2) / math.sqrt(attn.d_head)
    mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    a = scores.masked_fill(mask, float("-inf")).softmax(-1)
    out = torch.einsum("bhte,hed->btd", a @ v, attn.W_O)
    return out[:, -1] if last_only else out


def grok_forward(model, tokens: torch.Tensor) -> torch.Tensor:
    """Logits ``(B, p)`` of a :class:`~iclcore.models.toy_transformers.GrokTransformer`, attention on every position."""
    x = embed_tokens(model.embed, tokens) + model.pos
    x = x + toy_attention_forward(model.attn, x)
    h = x[:, -1]
    h = h + F.relu(h @ model.W_in + model.b_in) @ model.W_out
    return h @ model.unembed


def richardson_unroll(P: torch.Tensor, H: torch.Tensor, d: torch.Tensor, *, L: int) -> torch.Tensor:
    """Iterates ``x_0 = 0, ..., x_L`` (B, L + 1, K) of ``x + P (d - H x)`` with ``einsum`` matrix-vector products."""
    x = torch.zeros_like(d)
    out = [x]
    for _ in range(L):
        r = d - torch.einsum("bij,bj->bi", H, x)
        x = x + torch.einsum("bij,bj->bi", P, r)
        out.append(x)
    return torch.stack(out, dim=1)


def gpt_hidden(model, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, *, need_attn: bool = False):
    """Residual streams and head-averaged attention maps of a :class:`~iclcore.models.gpt_mini.GPTMini`,
    attention by the fused ``nn.MultiheadAttention`` call."""
    h = model._tokens(X, y, xq)
    T = h.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool, device=h.device).triu(1)
    hs, att = [h], []
    for l in range(model.L):
        a_in = model.ln1[l](h)
        o, wts = model.attn[l](a_in, a_in, a_in, attn_mask=mask, need_weights=need_attn)
        h = h + o
        h = h + model.mlp[l](model.ln2[l](h))
        hs.append(h)
        if need_attn:
            att.append(wts)
    return hs, att


def gpt_hidden_explicit(model, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, *, rows: slice | None = None):
    """Residual streams ``h_0..h_L`` of a :class:`~iclcore.models.gpt_mini.GPTMini` with the explicit
    masked-matmul attention, term by term (``rows``: the last layer computes only those rows)."""
    h = model._tokens(X, y, xq)
    B, T, W = h.shape
    H = model.attn[0].num_heads
    hd = W // H
    mask = torch.full((T, T), float("-inf"), dtype=h.dtype, device=h.device).triu(1)
    hs = [h]
    for l in range(model.L):
        queries = rows if l == model.L - 1 else None
        x, m = model.ln1[l](h), mask
        w, b = model.attn[l].in_proj_weight, model.attn[l].in_proj_bias
        if queries is None:
            qkv = F.linear(x, w, b).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.reshape(3, B * H, T, hd).unbind(0)
        else:
            kv = F.linear(x, w[W:], b[W:]).view(B, T, 2, H, hd).permute(2, 0, 3, 1, 4)
            k, v = kv.reshape(2, B * H, T, hd).unbind(0)
            xq_, m = x[:, queries], mask[queries]
            q = F.linear(xq_, w[:W], b[:W]).view(B, xq_.shape[1], H, hd).transpose(1, 2).reshape(B * H, -1, hd)
        Tq = q.shape[1]
        a = torch.softmax(torch.baddbmm(m, q, k.transpose(1, 2), alpha=hd**-0.5), dim=-1)
        o = torch.bmm(a, v).view(B, H, Tq, hd).transpose(1, 2).reshape(B, Tq, W)
        o = F.linear(o, model.attn[l].out_proj.weight, model.attn[l].out_proj.bias)
        h = (h if queries is None else h[:, queries]) + o
        h = h + model.mlp[l](model.ln2[l](h))
        hs.append(h)
    return hs
