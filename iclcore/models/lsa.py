"""Linear self-attention (LSA) on von Oswald tokens, trained by backprop.

Tokens ``z_i = [x_i; y_i]`` (``i = 1..n``) and queries ``z_q = [x_q; 0]``, all in ``R^{d+1}``. One
residual LSA layer with merged matrices ``W_KQ = K^T Q`` and ``W_PV = P V`` (each ``(d+1) x (d+1)``)
updates every token ``j`` by

.. math:: z_j \\leftarrow z_j + \\frac1n \\sum_{i=1}^n W_{PV} z_i\\,(z_i^\\top W_{KQ} z_j),

with the context tokens as the only keys and values (the query is masked out as a key); the
prediction is ``yhat = -(y slot of the query)``. The explicit GD weights of this layer (von Oswald
et al. 2023, Nagy App. A) are :func:`iclcore.gd.construction.von_oswald_layers`.

* :class:`TrainedLSA` -- one layer with free ``K, Q, V, P``
  (trained by :func:`iclcore.gd.construction.train_one_layer_lsa`);
* :class:`UntiedLSA` -- ``L`` untied layers with free ``W_KQ^l, W_PV^l`` and a readout after every
  layer (the depth-contraction probe of Nagy §8.2–§8.5, :mod:`iclcore.gd.depth_probe`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclcore.validation import positive_int

__all__ = ["LSAWeights", "lsa_layer", "TrainedLSA", "UntiedLSA"]


@dataclass(frozen=True)
class LSAWeights:
    """Key, query, value and projection matrices of one LSA layer, each ``(d+1, d+1)``."""

    K: np.ndarray
    Q: np.ndarray
    V: np.ndarray
    P: np.ndarray


def lsa_layer(
    ctx: torch.Tensor, q: torch.Tensor, KQ: torch.Tensor, *, PV: torch.Tensor, update_context: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """One residual LSA layer in torch with merged matrices ``W_KQ = K^T Q`` and ``W_PV = P V``.

    ``z_j <- z_j + (1/n) sum_i W_PV z_i (z_i^T W_KQ z_j)`` for the context tokens ``ctx (B, n, d+1)``
    and the queries ``q (B, m, d+1)``; only the context tokens are keys and values (module docstring).
    Returns the updated ``(ctx, q)``; with ``update_context=False`` the context is returned unchanged
    (enough for the last layer). Used by :class:`TrainedLSA` and :class:`UntiedLSA`.
    """
    # sum_i W_PV z_i (z_i^T W_KQ z_j) / n = W_PV S W_KQ z_j with S = (1/n) sum_i z_i z_i^T: the
    # (d+1) x (d+1) second-moment form costs O(n d^2) per prompt instead of O(n^2 d) for the scores.
    S = ctx.transpose(1, 2) @ ctx / ctx.shape[1]  # (B, d+1, d+1)
    M = PV @ S @ KQ  # (B, d+1, d+1): the layer's update map z -> W_PV S W_KQ z
    q = q + q @ M.transpose(1, 2)
    if update_context:
        ctx = ctx + ctx @ M.transpose(1, 2)
    return ctx, q


class TrainedLSA(nn.Module):
    """One LSA layer with free ``K, Q, V, P`` (same forward and readout as
    :func:`iclcore.gd.construction.lsa_forward`)."""

    def __init__(self, d: int, gen: torch.Generator, init_scale: float = 0.1, dtype: torch.dtype = torch.float64):
        super().__init__()
        d = positive_int(d, "d")
        self.d = d
        mk = lambda: nn.Parameter(init_scale * torch.randn(d + 1, d + 1, generator=gen, dtype=dtype))  # noqa: E731
        self.K, self.Q, self.V, self.P = mk(), mk(), mk(), mk()

    def forward(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Prediction ``(B,)`` for ``X (B, n, d)``, ``y (B, n)``, ``xq (B, d)``."""
        ctx = torch.cat([X, y[..., None]], -1)
        zq = torch.cat([xq, torch.zeros_like(xq[..., :1])], -1)[:, None]
        # (K z_i)^T (Q z_q) = z_i^T (K^T Q) z_q and P V z_i: the merged matrices of lsa_layer
        _, zq = lsa_layer(ctx, zq, self.K.T @ self.Q, PV=self.P @ self.V, update_context=False)
        return -zq[:, 0, -1]

    def weights(self) -> LSAWeights:
        with torch.no_grad():
            return LSAWeights(*(m.detach().cpu().numpy().copy() for m in (self.K, self.Q, self.V, self.P)))


class UntiedLSA(nn.Module):
    """``L`` untied residual LSA layers: ``z_j += (1/n) sum_i W_PV z_i (z_i^T W_KQ z_j)`` for all tokens ``j``."""

    def __init__(
        self, d: int, L: int, gen: torch.Generator, init_scale: float = 0.02, dtype: torch.dtype = torch.float64
    ):
        super().__init__()
        d, L = positive_int(d, "d"), positive_int(L, "L")
        self.d, self.L = d, L
        mk = lambda: nn.Parameter(init_scale * torch.randn(d + 1, d + 1, generator=gen, dtype=dtype))  # noqa: E731
        self.KQ = nn.ParameterList([mk() for _ in range(L)])
        self.PV = nn.ParameterList([mk() for _ in range(L)])

    def readouts(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Predictions ``-z_q[d]`` after ``l = 0..L`` layers for ``xq (B, m, d)``: shape ``(L+1, B, m)``."""
        ctx = torch.cat([X, y[..., None]], -1)
        q = torch.cat([xq, torch.zeros_like(xq[..., :1])], -1)
        out = [-q[..., -1]]
        for l, (KQ, PV) in enumerate(zip(self.KQ, self.PV)):
            ctx, q = lsa_layer(ctx, q, KQ, PV=PV, update_context=l < self.L - 1)
            out.append(-q[..., -1])
        return torch.stack(out)

    def forward(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Final prediction ``(B, m)``."""
        return self.readouts(X, y, xq)[-1]
