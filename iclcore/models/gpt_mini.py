"""A small causal softmax transformer for in-context regression (the "GPT miniature").

Pre-LayerNorm blocks (multi-head causal attention + GELU MLP), learned positions, a learned BOS
token; tokens ``[BOS, x_1, y_1, ..., x_n, y_n, x_q]`` with ``x`` tokens ``[x; 0]`` and ``y`` tokens
``[0; y]`` embedded by one linear map (``d + 1 -> width``). The per-layer readout (:meth:`GPTMini.lens`)
is the shared final LayerNorm and head applied to each layer's residual stream (the logit-lens
analogue), as in the depth-contraction probe of Nagy §8.2–§8.5 (:mod:`iclcore.gd.depth_probe`).

Attention is written out (:func:`causal_self_attention`): one projection to queries, keys and values,
the scaled scores plus an additive causal mask in one batched product, a softmax and the weighted
values. The parameters are those of ``nn.MultiheadAttention`` (which only holds them), so the
initialisation is unchanged; the forward computes the same function as its fused call to float32
rounding (the fused path is kept in :mod:`iclcore.models._reference` for the tests and the benchmark)
and is faster on a CPU at these sizes (many heads of a few dozen tokens).
"""

from __future__ import annotations

import threading

import torch
from torch import nn
from torch.nn import functional as F

from iclcore.validation import positive_int

__all__ = ["GPTMini", "causal_mask", "causal_self_attention"]


_GLOBAL_RNG = threading.Lock()


def causal_mask(T: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """Additive causal mask ``(T, T)``: ``0`` on and below the diagonal, ``-inf`` above (token ``t``
    attends to ``s <= t``)."""
    return torch.full((T, T), float("-inf"), dtype=dtype, device=device).triu(1)


def causal_self_attention(
    x: torch.Tensor,
    attn: nn.MultiheadAttention,
    mask: torch.Tensor,
    *,
    need_weights: bool = False,
    queries: slice | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Multi-head causal self-attention of ``x (B, T, W)`` with the parameters of ``attn`` (``H`` heads
    of width ``h = W / H``).

    ``[Q K V] = x W_in^T + b_in``; per head ``A = softmax(Q K^T / sqrt(h) + mask)`` (``(B, H, T, T)``,
    ``mask`` from :func:`causal_mask`) and ``O = A V``; the heads concatenated, ``O W_out^T + b_out``.
    ``queries`` (a slice of the ``T`` positions, ``T_q`` of them) computes only those rows of the
    output: the same rows as without it (every key and value is still used). Returns the output
    ``(B, T_q, W)`` and, if ``need_weights``, the head-averaged ``A`` ``(B, T_q, T)`` (what
    ``nn.MultiheadAttention`` returns), else ``None``.
    """
    B, T, W = x.shape
    o, a = _attention_rows(x.reshape(B * T, W), B, T, attn, mask, need_weights, queries)
    return o.view(B, -1, W), a


class _SplitHeads(torch.autograd.Function):
    """``n`` blocks of projections ``(B*T, n*W)`` -> ``n`` tensors ``(B*H, T, h)`` (heads split off).

    The forward is the one copy that ``view/permute/reshape/unbind`` makes; the backward writes the
    ``n`` gradients straight into one ``(B*T, n*W)`` buffer, where ``unbind`` and ``reshape`` would
    stack them and then permute the stack (two copies of the same numbers, no arithmetic).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, B: int, T: int, n: int, H: int) -> tuple[torch.Tensor, ...]:
        h = x.shape[1] // (n * H)
        ctx.dims = (B, T, n, H, h)
        return x.view(B, T, n, H, h).permute(2, 0, 3, 1, 4).reshape(n, B * H, T, h).unbind(0)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        B, T, n, H, h = ctx.dims
        g = torch.empty(B, T, n, H, h, dtype=grads[0].dtype, device=grads[0].device)
        for i, gi in enumerate(grads):
            g[:, :, i].copy_(gi.unflatten(0, (B, H)).transpose(1, 2))
        return g.view(B * T, n * H * h), None, None, None, None


def _attention_rows(
    x: torch.Tensor,
    B: int,
    T: int,
    attn: nn.MultiheadAttention,
    mask: torch.Tensor,
    need_weights: bool = False,
    queries: slice | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`causal_self_attention` of the rows ``x (B*T, W)`` (row ``b T + t``): output ``(B*T_q, W)``."""
    W = x.shape[1]
    H = attn.num_heads
    h = W // H
    w, b = attn.in_proj_weight, attn.in_proj_bias
    if queries is None:
        q, k, v = _SplitHeads.apply(F.linear(x, w, b), B, T, 3, H)
    else:
        k, v = _SplitHeads.apply(F.linear(x, w[W:], b[W:]), B, T, 2, H)
        xq, mask = x.view(B, T, W)[:, queries], mask[queries]
        q = F.linear(xq, w[:W], b[:W]).view(B, xq.shape[1], H, h).transpose(1, 2).reshape(B * H, xq.shape[1], h)
    Tq = q.shape[1]
    a = torch.softmax(torch.baddbmm(mask, q, k.transpose(1, 2), alpha=h**-0.5), dim=-1)
    o = torch.bmm(a, v).view(B, H, Tq, h).transpose(1, 2).reshape(B * Tq, W)
    o = F.linear(o, attn.out_proj.weight, attn.out_proj.bias)
    return o, a.view(B, H, Tq, T).mean(1) if need_weights else None


def _layer_norm(x: torch.Tensor, ln: nn.LayerNorm) -> torch.Tensor:
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


class GPTMini(nn.Module):
    """Small causal pre-LN softmax transformer with a learned BOS token (module docstring)."""

    def __init__(self, d: int, n: int, L: int, width: int, heads: int, gen: torch.Generator, mlp_ratio: int = 4):
        super().__init__()
        d, n, L = positive_int(d, "d"), positive_int(n, "n"), positive_int(L, "L")
        width, heads, mlp_ratio = (
            positive_int(width, "width"),
            positive_int(heads, "heads"),
            positive_int(mlp_ratio, "mlp_ratio"),
        )
        if width % heads:
            raise ValueError(f"heads: width {width} must be divisible by heads {heads}")
        self.d, self.n, self.L = d, n, L
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
        # nn default initialisers draw from the process-global generator: scope it, and hold a lock so
        # that models built at the same time in two threads (a Dask worker with several threads, or a
        # LocalCluster in one process) do not draw from it in turns (the same bits as one at a time)
        with _GLOBAL_RNG, torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = nn.Linear(d + 1, width)
            self.pos = nn.Parameter(0.02 * torch.randn(2 * n + 2, width))
            self.bos = nn.Parameter(0.02 * torch.randn(width))
            self.ln1 = nn.ModuleList([nn.LayerNorm(width) for _ in range(L)])
            self.ln2 = nn.ModuleList([nn.LayerNorm(width) for _ in range(L)])
            self.attn = nn.ModuleList([nn.MultiheadAttention(width, heads, batch_first=True) for _ in range(L)])
            self.mlp = nn.ModuleList(
                [
                    nn.Sequential(nn.Linear(width, mlp_ratio * width), nn.GELU(), nn.Linear(mlp_ratio * width, width))
                    for _ in range(L)
                ]
            )
            self.ln_f = nn.LayerNorm(width)
            self.head = nn.Linear(width, 1)

    def _tokens(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        B, n, d = X.shape
        xt = torch.cat([X, torch.zeros_like(X[..., :1])], -1)
        yt = torch.cat([torch.zeros_like(X), y[..., None]], -1)
        inter = torch.stack([xt, yt], 2).reshape(B, 2 * n, d + 1)
        qt = torch.cat([xq, torch.zeros_like(xq[..., :1])], -1)[:, None]
        h = self.embed(torch.cat([inter, qt], 1))
        h = torch.cat([self.bos.expand(B, 1, -1), h], 1)
        return h + self.pos[: h.shape[1]]

    def hidden(
        self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, *, need_attn: bool = False, rows: slice | None = None
    ):
        """Residual streams ``h_0..h_L`` (list of ``(B, T, width)``) and, optionally, the head-averaged attention maps.

        ``rows`` (a slice of the ``T`` positions): the last layer computes only those rows of ``h_L``
        (``(B, T_rows, width)``), the same values as the full stream's rows (the other rows of the last
        layer feed nothing but the readout).
        """
        h = self._tokens(X, y, xq)
        B, T, W = h.shape
        mask = causal_mask(T, h.dtype, h.device)
        hs, att = [h], []
        # the stream as rows (b, t): each linear map is one matrix product, with no views around it;
        # a residual sum goes into the new branch's output (not saved for the backward): o + h = h + o
        h = h.view(B * T, W)
        for l, (ln1, attn, ln2, mlp) in enumerate(zip(self.ln1, self.attn, self.ln2, self.mlp)):
            queries = rows if l == self.L - 1 else None
            o, wts = _attention_rows(_layer_norm(h, ln1), B, T, attn, mask, need_attn, queries)
            h = o.add_(h if queries is None else h.view(B, T, W)[:, queries].reshape(-1, W))
            fc1, gelu, fc2 = mlp
            u = F.gelu(F.linear(_layer_norm(h, ln2), fc1.weight, fc1.bias), approximate=gelu.approximate)
            h = F.linear(u, fc2.weight, fc2.bias).add_(h)
            hs.append(h.view(B, -1, W))
            if need_attn:
                att.append(wts)
        return hs, att

    def lens(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_f(h))[..., 0]

    def forward_all(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Final predictions at every ``x`` position (``x_1..x_n, x_q``, positions ``1, 3, ..., 2n+1``):
        ``(B, n+1)``; the last layer computes only those rows."""
        hs, _ = self.hidden(X, y, xq, rows=slice(1, None, 2))
        return self.lens(hs[-1])

    def readouts(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Lens readouts at the query position for ``xq (B, m, d)`` (one sequence per query): ``(L+1, B, m)``."""
        B, m, d = xq.shape
        Xr = X.repeat_interleave(m, 0)
        yr = y.repeat_interleave(m, 0)
        hs, _ = self.hidden(Xr, yr, xq.reshape(B * m, d))
        return torch.stack([self.lens(h[:, -1]) for h in hs]).reshape(self.L + 1, B, m)
