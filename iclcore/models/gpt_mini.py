"""A small causal softmax transformer for in-context regression (the "GPT miniature").

Pre-LayerNorm blocks (multi-head causal attention + GELU MLP), learned positions, a learned BOS
token; tokens ``[BOS, x_1, y_1, ..., x_n, y_n, x_q]`` with ``x`` tokens ``[x; 0]`` and ``y`` tokens
``[0; y]`` embedded by one linear map (``d + 1 -> width``). The per-layer readout (:meth:`GPTMini.lens`)
is the shared final LayerNorm and head applied to each layer's residual stream (the logit-lens
analogue), as in the depth-contraction probe of Nagy §8.2–§8.5 (:mod:`iclcore.gd.depth_probe`).
"""

from __future__ import annotations

import threading

import torch
from torch import nn

from iclcore.validation import positive_int

__all__ = ["GPTMini"]


_GLOBAL_RNG = threading.Lock()


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

    def hidden(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, need_attn: bool = False):
        """Residual streams ``h_0..h_L`` (list of ``(B, T, width)``) and, optionally, the head-averaged attention maps."""
        h = self._tokens(X, y, xq)
        T = h.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        hs, att = [h], []
        for l in range(self.L):
            a_in = self.ln1[l](h)
            o, wts = self.attn[l](a_in, a_in, a_in, attn_mask=mask, need_weights=need_attn)
            h = h + o
            h = h + self.mlp[l](self.ln2[l](h))
            hs.append(h)
            if need_attn:
                att.append(wts)
        return hs, att

    def lens(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_f(h))[..., 0]

    def forward_all(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Final predictions at every ``x`` position (``x_1..x_n, x_q``): ``(B, n+1)``."""
        hs, _ = self.hidden(X, y, xq)
        return self.lens(hs[-1])[:, 1::2]

    def readouts(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Lens readouts at the query position for ``xq (B, m, d)`` (one sequence per query): ``(L+1, B, m)``."""
        B, m, d = xq.shape
        Xr = X.repeat_interleave(m, 0)
        yr = y.repeat_interleave(m, 0)
        hs, _ = self.hidden(Xr, yr, xq.reshape(B * m, d))
        return torch.stack([self.lens(h[:, -1]) for h in hs]).reshape(self.L + 1, B, m)
