"""Trainable attention models of Bordelon et al. §5 (torch): full linear attention, untied reduced-Γ, softmax.

Everything random is drawn from a passed :class:`torch.Generator`; no global seeds are touched.

Models
------
* :class:`LinearAttention` -- the residual linear-attention network of Bordelon et al. Eq. (3) with the
  positional mask of Eq. (41)-(42), tied (recurrent) weights ``W_k, W_q, W_v`` and read-in
  ``W_x``. Read-in ``w_y`` and read-out ``w_o`` are fixed to the unit vector of the label channel
  (Result 9). ``structure="block"`` trains only the ``x``-blocks of ``W_x, W_k, W_q`` and the
  label-channel entry of ``W_v`` (the aligned subspace of App. B.2); ``structure="full"`` trains
  every entry of the four matrices from the same aligned initialisation.
* :class:`ReducedGammaStack` -- the reduced-Γ model (Eq. 4, 54-55) with tied or untied layers
  ``Γ^ℓ`` (Eq. 19, App. G.1), each a full ``D x D`` matrix or a scalar multiple of ``I``.
* :class:`SoftmaxAttention` -- untied softmax attention with a ``1/L`` branch multiplier
  (CompleteP), optionally followed in each layer by a GELU MLP block (§5.3, App. G.3, Fig. 9).

Theory for the full linear attention (Result 9, App. G.2): from the aligned, Frobenius-balanced
initialisation ``|W_x|^2/2 = |W_k|^2 = |W_q|^2 = w_v^2 = s_0^2`` gradient flow keeps the weights
isotropic and balanced, so ``γ = tr Γ = c s^5`` with ``c = 2/D^2`` and

.. math:: \\dot s = -c\\, s^4\\, \\mathcal L'(c s^5)

for plain gradient flow ``dW/dt = -∇_W L`` (:func:`power_five_flow`). Eq. (21) prints
``dw/dt = w^4 tr Λ²Ω(I - w^5 Λ)^{2L-1}``, which drops the constant ``c``, the factor 2 of
``L'`` and the ``1/L`` inside the power.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp
from torch import nn

from iclcore.models.training import TrainConfig, to_device, torch_device, train_loop
from iclcore.validation import positive_int, torch_generator

__all__ = [
    "Contexts",
    "sample_iso_contexts",
    "sample_rrs_contexts",
    "haar_orthogonal_torch",
    "LinearAttention",
    "power_five_constant",
    "power_five_flow",
    "ReducedGammaStack",
    "SoftmaxAttention",
    "SoftmaxRun",
    "TrainResult",
    "softmax_run",
    "train",
]


# --------------------------------------------------------------------------------------------
# checks and data
# --------------------------------------------------------------------------------------------


@dataclass
class Contexts:
    """A batch of in-context regression prompts.

    Attributes
    ----------
    X : tensor ``(B, P, D)``, labelled inputs (rows)
    y : tensor ``(B, P)``, their labels
    Xs : tensor ``(B, K, D)``, query inputs (labels masked)
    ys : tensor ``(B, K)``, query labels (targets of the loss)
    Sigma : tensor ``(B, D, D)`` or None, population covariance of each context
    bstar : tensor ``(B, D)``, the context's weights ``beta / sqrt(D)``
    """

    X: torch.Tensor
    y: torch.Tensor
    Xs: torch.Tensor
    ys: torch.Tensor
    Sigma: torch.Tensor | None
    bstar: torch.Tensor


def sample_iso_contexts(
    B: int, P: int, K: int, *, D: int, gen: torch.Generator, sigma: float = 0.0, dtype: torch.dtype = torch.float64
) -> Contexts:
    """ISO prompts (Bordelon et al. Eq. 5): ``x ~ N(0, I)``, ``beta ~ N(0, I)``, ``y = beta.x/sqrt(D) + sigma eps``."""
    B, P, K, D = (positive_int(v, n) for n, v in (("B", B), ("P", P), ("K", K), ("D", D)))
    gen = torch_generator(gen)
    if not (np.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma: label-noise level must be >= 0, got {sigma}")
    X = torch.randn(B, P, D, generator=gen, dtype=dtype)
    Xs = torch.randn(B, K, D, generator=gen, dtype=dtype)
    bstar = torch.randn(B, D, generator=gen, dtype=dtype) / np.sqrt(D)
    y = torch.einsum("bpd,bd->bp", X, bstar) + sigma * torch.randn(B, P, generator=gen, dtype=dtype)
    ys = torch.einsum("bkd,bd->bk", Xs, bstar) + sigma * torch.randn(B, K, generator=gen, dtype=dtype)
    return Contexts(X, y, Xs, ys, torch.eye(D, dtype=dtype).expand(B, D, D), bstar)


def haar_orthogonal_torch(B: int, D: int, gen: torch.Generator, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``B`` Haar orthogonal ``D x D`` matrices (QR of Gaussians with the sign fix), shape ``(B, D, D)``."""
    G = torch.randn(positive_int(B, "B"), positive_int(D, "D"), D, generator=torch_generator(gen), dtype=dtype)
    Q, R = torch.linalg.qr(G)
    return Q * torch.sign(torch.diagonal(R, dim1=1, dim2=2))[:, None, :]


def sample_rrs_contexts(
    B: int,
    P: int,
    K: int,
    *,
    lam: np.ndarray,
    omega: np.ndarray,
    gen: torch.Generator,
    dtype: torch.dtype = torch.float64,
) -> Contexts:
    """RRS prompts (Bordelon et al. Eq. 12): ``Sigma_c = O Lambda O^T``, ``Omega_c = O Omega O^T``, O Haar.

    ``x = O Lambda^{1/2} z`` and ``beta = O Omega^{1/2} g``; noise-free labels. ``P``/``K`` tokens
    are drawn (use :attr:`Contexts.Sigma` for the population-context variant ``P = K = inf``).
    """
    lam = np.asarray(lam, float)
    omega = np.asarray(omega, float)
    if lam.ndim != 1 or omega.shape != lam.shape or np.any(lam <= 0) or np.any(omega < 0):
        raise ValueError("lam, omega: expected 1-D arrays of the same length, lam > 0 and omega >= 0")
    D = lam.size
    B, P, K = (positive_int(v, n) for n, v in (("B", B), ("P", P), ("K", K)))
    O = haar_orthogonal_torch(B, D, gen, dtype=dtype)
    sl = torch.as_tensor(np.sqrt(lam), dtype=dtype)
    so = torch.as_tensor(np.sqrt(omega), dtype=dtype)
    X = torch.einsum("bij,bpj->bpi", O, torch.randn(B, P, D, generator=gen, dtype=dtype) * sl)
    Xs = torch.einsum("bij,bpj->bpi", O, torch.randn(B, K, D, generator=gen, dtype=dtype) * sl)
    bstar = torch.einsum("bij,bj->bi", O, torch.randn(B, D, generator=gen, dtype=dtype) * so) / np.sqrt(D)
    y = torch.einsum("bpd,bd->bp", X, bstar)
    ys = torch.einsum("bkd,bd->bk", Xs, bstar)
    Sigma = torch.einsum("bij,j,bkj->bik", O, torch.as_tensor(lam, dtype=dtype), O)
    return Contexts(X, y, Xs, ys, Sigma, bstar)


# --------------------------------------------------------------------------------------------
# full linear attention (Eq. 3, 41-42) with tied layers
# --------------------------------------------------------------------------------------------


def _attention_stack(
    h: torch.Tensor, P: int, L: int, layers: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
) -> torch.Tensor:
    """Residual masked linear attention: ``h_mu += (1/LP) sum_{nu<=P} M_{mu nu} (k_nu.q_mu) v_nu``.

    ``M = -1`` for labelled tokens ``mu <= P`` and ``+1`` for queries (Eq. 41); only the ``P``
    labelled tokens act as keys and values (Eq. 42).
    """
    n_tok = h.shape[1]
    sign = torch.ones(n_tok, 1, dtype=h.dtype, device=h.device)
    sign[:P] = -1.0
    for Wk, Wq, Wv in layers:
        q = h @ Wq.T
        k = h[:, :P] @ Wk.T
        v = h[:, :P] @ Wv.T
        scores = q @ k.transpose(1, 2)  # (B, P+K, P)
        h = h + (sign * scores) @ v / (L * P)
    return h


class LinearAttention(nn.Module):
    """Deep linear attention of Bordelon et al. Eq. (3) with tied layers and fixed ``w_y = w_o``.

    The residual stream has width ``D + 1``: channels ``0..D-1`` carry ``W_x x`` and channel ``D``
    the label (``w_y = w_o = e_D``). The aligned, balanced initialisation at scale ``s0`` is
    ``W_x = s0 sqrt(2/D) [I; 0]``, ``W_k = W_q = (s0/sqrt(D)) diag(I, 0)``, ``W_v = s0 e_D e_D^T``,
    i.e. ``|W_x|_F^2 / 2 = |W_k|_F^2 = |W_q|_F^2 = |W_v|_F^2 = s0^2`` and ``Γ = (2 s0^5/D^2) I``.

    Parameters
    ----------
    D : int, input dimension
    L : int, depth (number of applications of the tied layer)
    s0 : float, initial scale
    structure : ``"block"`` or ``"full"``
        ``block``: trainable ``W_x^{xx}, W_k^{xx}, W_q^{xx}`` (``D x D``) and scalar ``w_v``;
        ``full``: all entries of ``W_x`` (``(D+1) x D``), ``W_k, W_q, W_v`` (``(D+1) x (D+1)``).
    dtype : torch dtype
    """

    def __init__(self, D: int, L: int, s0: float, structure: str = "block", dtype: torch.dtype = torch.float64):
        super().__init__()
        self.D = positive_int(D, "D")
        self.L = positive_int(L, "L")
        if not (np.isfinite(s0) and s0 > 0):
            raise ValueError(f"s0: initial scale must be > 0, got {s0}")
        if structure not in ("block", "full"):
            raise ValueError(f"structure: expected 'block' or 'full', got {structure!r}")
        self.structure = structure
        I = torch.eye(D, dtype=dtype)
        ax, ak = s0 * np.sqrt(2.0 / D), s0 / np.sqrt(D)
        if structure == "block":
            self.Wx = nn.Parameter(ax * I.clone())
            self.Wk = nn.Parameter(ak * I.clone())
            self.Wq = nn.Parameter(ak * I.clone())
            self.wv = nn.Parameter(torch.tensor(float(s0), dtype=dtype))
        else:
            n = D + 1
            Wx = torch.zeros(n, D, dtype=dtype)
            Wx[:D] = ax * I
            Wk = torch.zeros(n, n, dtype=dtype)
            Wk[:D, :D] = ak * I
            Wv = torch.zeros(n, n, dtype=dtype)
            Wv[D, D] = s0
            self.Wx = nn.Parameter(Wx)
            self.Wk = nn.Parameter(Wk)
            self.Wq = nn.Parameter(Wk.clone())
            self.Wv = nn.Parameter(Wv)

    def matrices(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(W_x, W_k, W_q, W_v)`` embedded in the ``(D+1)``-dimensional residual stream."""
        D = self.D
        if self.structure == "full":
            return self.Wx, self.Wk, self.Wq, self.Wv
        z = self.Wx.new_zeros(1, D)
        Wx = torch.cat([self.Wx, z], dim=0)
        pad = lambda W: torch.nn.functional.pad(W, (0, 1, 0, 1))  # noqa: E731
        at = torch.tensor([D], device=self.Wx.device)
        Wv = self.Wx.new_zeros(D + 1, D + 1).index_put((at, at), self.wv.reshape(1))
        return Wx, pad(self.Wk), pad(self.Wq), Wv

    def forward(self, X: torch.Tensor, y: torch.Tensor, Xs: torch.Tensor) -> torch.Tensor:
        """Predictions ``f = w_o . h^{L+1}`` on the ``K`` query tokens, shape ``(B, K)``."""
        if X.ndim != 3 or Xs.ndim != 3 or y.shape != X.shape[:2] or Xs.shape[2] != X.shape[2]:
            raise ValueError("X, y, Xs: expected shapes (B, P, D), (B, P), (B, K, D)")
        if X.shape[2] != self.D:
            raise ValueError(f"X: expected input dimension D={self.D}, got {X.shape[2]}")
        Wx, Wk, Wq, Wv = self.matrices()
        P = X.shape[1]
        tok = torch.cat([X, Xs], dim=1) @ Wx.T  # (B, P+K, D+1)
        lab = torch.cat([y, torch.zeros_like(Xs[..., 0])], dim=1)
        h = tok + torch.nn.functional.pad(lab[..., None], (self.D, 0))
        h = _attention_stack(h, P, self.L, [(Wk, Wq, Wv)] * self.L)
        return h[:, P:, self.D]

    def gamma_matrix(self) -> torch.Tensor:
        """Effective preconditioner ``Γ = (w_o^T W_v w_y) (W_x^T W_q^T W_k W_x)`` restricted to the x-block.

        For the aligned ("block") parameterisation the network equals ``L`` steps of in-context GD
        with this ``Γ`` (:func:`iclcore.lsq.iterates.in_context_gd_predict`).
        """
        Wx, Wk, Wq, Wv = self.matrices()
        D = self.D
        return Wv[D, D] * (Wx.T @ Wq.T @ Wk @ Wx)

    def gamma(self) -> float:
        """``γ = tr Γ`` (normalised trace)."""
        with torch.no_grad():
            return float(torch.diagonal(self.gamma_matrix()).mean())

    def frobenius_sq(self) -> dict[str, float]:
        """Squared Frobenius norms of ``W_x, W_k, W_q, W_v`` (balance diagnostics)."""
        with torch.no_grad():
            Wx, Wk, Wq, Wv = self.matrices()
            return {n: float((W**2).sum()) for n, W in zip(("x", "k", "q", "v"), (Wx, Wk, Wq, Wv))}


def power_five_constant(D: int) -> float:
    """``c`` in ``γ = c s^5`` for the balanced initialisation of :class:`LinearAttention`: ``2/D^2``."""
    return 2.0 / positive_int(D, "D") ** 2


def power_five_flow(
    t: np.ndarray, dloss: Callable[[float], float], c: float, *, s0: float, rtol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray]:
    """Balanced gradient flow of full linear attention, ``ds/dt = -c s^4 L'(c s^5)`` (Result 9, corrected).

    Parameters
    ----------
    t : array ``(n_t,)`` of non-decreasing times ``>= 0`` (``t = eta x steps`` for plain SGD)
    dloss : callable, ``gamma -> dL/dgamma`` of the reduced landscape (ISO or RRS)
    c : float, ``γ = c s^5``
    s0 : float, initial scale

    Returns
    -------
    s, gamma : arrays ``(n_t,)``
    """
    t = np.asarray(t, float)
    if t.ndim != 1 or t.size < 1 or np.any(t < 0) or np.any(np.diff(t) < 0):
        raise ValueError("t: expected a non-decreasing 1-D array of times >= 0")
    if not (c > 0 and s0 > 0):
        raise ValueError("c, s0: expected positive constants")

    def rhs(_t: float, y: np.ndarray) -> list[float]:
        s = y[0]
        return [-c * s**4 * float(dloss(c * s**5))]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [float(s0)], t_eval=t, method="LSODA", rtol=rtol, atol=1e-12)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"power_five_flow: {sol.message}")
    s = sol.y[0]
    return s, c * s**5


# --------------------------------------------------------------------------------------------
# reduced-Γ model with tied or untied layers (Eq. 4, 19, App. G.1)
# --------------------------------------------------------------------------------------------


class ReducedGammaStack(nn.Module):
    """``L`` preconditioned in-context GD steps with per-layer ``Γ^ℓ`` (Bordelon et al. Eq. 19, 117).

    ``e_{ℓ+1} = (I - Γ^ℓ hat Sigma / L) e_ℓ`` for the weight error ``e = b_* - b``; with tied
    layers all ``Γ^ℓ`` are the same parameter.

    Parameters
    ----------
    D, L : int
    tied : bool
        One shared ``Γ`` (recurrent model) or ``L`` independent ones.
    scalar : bool
        ``Γ^ℓ = γ^ℓ I`` (one scalar per layer) instead of full matrices.
    frame : tensor ``(D, N)`` with orthonormal columns, or None
        Width-``N`` model (Bordelon et al. Eq. 14): the trainable matrices ``tilde Γ^ℓ`` are ``N x N``
        and act in ``D``-space as ``Γ^ℓ = (D/N) U tilde Γ^ℓ U^T`` (the book's normalisation, see
        :mod:`iclcore.dmft`). ``tilde Γ = γ I_N`` gives the scalar ``γ`` of the theory; the
        reduced flow holds at ``t = eta * steps`` with ``lr = eta * N / 2`` (tied).
    dtype : torch dtype
    """

    def __init__(
        self,
        D: int,
        L: int,
        tied: bool = False,
        scalar: bool = False,
        frame: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float64,
    ):
        super().__init__()
        self.D = positive_int(D, "D")
        self.L = positive_int(L, "L")
        self.tied = bool(tied)
        self.scalar = bool(scalar)
        if frame is not None:
            frame = torch.as_tensor(frame, dtype=dtype)
            if frame.ndim != 2 or frame.shape[0] != D or frame.shape[1] > D:
                raise ValueError(f"frame: expected a (D, N) matrix with D={D} and N <= D, got {tuple(frame.shape)}")
            if not torch.allclose(frame.T @ frame, torch.eye(frame.shape[1], dtype=dtype), atol=1e-8):
                raise ValueError("frame: columns must be orthonormal")
        self.register_buffer("frame", frame)  # moves with the model (``.to(device)``)
        m = D if frame is None else frame.shape[1]
        self.m = m
        n = 1 if tied else L
        shape = (n,) if scalar else (n, m, m)
        self.G = nn.Parameter(torch.zeros(shape, dtype=dtype))

    def layer(self, l: int) -> torch.Tensor:
        i = 0 if self.tied else l
        G = self.G[i] * torch.eye(self.m, dtype=self.G.dtype, device=self.G.device) if self.scalar else self.G[i]
        if self.frame is None:
            return G
        return (self.D / self.m) * self.frame @ G @ self.frame.T

    def gammas(self) -> np.ndarray:
        """``γ^ℓ = tr Γ^ℓ`` for every layer (normalised trace), shape ``(L,)``."""
        with torch.no_grad():
            g = self.G if self.scalar else torch.diagonal(self.G, dim1=1, dim2=2).mean(-1)
        g = g.detach().cpu().numpy().copy()
        return np.repeat(g, self.L) if self.tied else g

    def population_loss(self, ctx: Contexts) -> torch.Tensor:
        """Mean over contexts of ``e_L^T Sigma_c e_L`` (P = K = infinity, ``hat Sigma = Sigma_c``)."""
        if ctx.Sigma is None:
            raise ValueError("ctx: population loss needs Contexts.Sigma")
        e = ctx.bstar
        for l in range(self.L):
            e = e - torch.einsum("ij,bjk,bk->bi", self.layer(l), ctx.Sigma, e) / self.L
        return torch.einsum("bi,bij,bj->b", e, ctx.Sigma, e).mean()

    def forward(self, X: torch.Tensor, y: torch.Tensor, Xs: torch.Tensor) -> torch.Tensor:
        """Predictions on the queries from the finite context (Eq. 54-55), shape ``(B, K)``."""
        P = X.shape[1]
        b = X.new_zeros(X.shape[0], self.D)
        for l in range(self.L):
            r = y - torch.einsum("bpd,bd->bp", X, b)
            b = b + torch.einsum("ij,bpj,bp->bi", self.layer(l), X, r) / (P * self.L)
        return torch.einsum("bkd,bd->bk", Xs, b)


# --------------------------------------------------------------------------------------------
# softmax attention (+ MLP) (§5.3, App. G.3)
# --------------------------------------------------------------------------------------------


class SoftmaxAttention(nn.Module):
    """Untied softmax attention with optional GELU MLP blocks (Bordelon et al. §5.3, Fig. 6c and 9).

    ``h^1 = W_x x + w_y y``; per layer
    ``h_mu += (1/L) sum_{nu <= P} A_{mu nu} W_v h_nu`` with
    ``A_{mu nu} = softmax_nu(h_nu^T W_k^T W_q h_mu / sqrt(n))`` over the ``P`` labelled tokens,
    then (if ``mlp``) ``h += (1/L) W_2 GELU(W_1 h)``; prediction ``w_o . h^{L+1}`` on queries.
    The ``1/sqrt(n)`` temperature and the Gaussian ``1/sqrt(fan_in)`` initialisation are this
    book's choices (the paper states neither).

    Parameters
    ----------
    D : int, input dimension; n : int, residual width; L : int, depth
    gen : torch.Generator (initialisation)
    mlp : bool; mlp_ratio : int, hidden width ``mlp_ratio * n``
    """

    def __init__(
        self,
        D: int,
        n: int,
        L: int,
        gen: torch.Generator,
        mlp: bool = False,
        mlp_ratio: int = 4,
        dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        self.D, self.n, self.L = positive_int(D, "D"), positive_int(n, "n"), positive_int(L, "L")
        gen = torch_generator(gen)
        self.mlp = bool(mlp)

        def init(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=gen, dtype=dtype) / np.sqrt(shape[-1]))

        self.Wx = init(n, D)
        self.wy = nn.Parameter(torch.randn(n, generator=gen, dtype=dtype))
        self.wo = nn.Parameter(torch.randn(n, generator=gen, dtype=dtype) / np.sqrt(n))
        self.Wq = init(L, n, n)
        self.Wk = init(L, n, n)
        self.Wv = init(L, n, n)
        if self.mlp:
            h = positive_int(mlp_ratio, "mlp_ratio") * n
            self.W1 = init(L, h, n)
            self.W2 = init(L, n, h)

    def forward(self, X: torch.Tensor, y: torch.Tensor, Xs: torch.Tensor) -> torch.Tensor:
        """Predictions on the queries, shape ``(B, K)``, for ``X (B, P, D)``, ``y (B, P)``, ``Xs (B, K, D)``.

        Two exact rewrites of the formula in the class docstring save a third of the work:
        the scores use the product ``W_q^T W_k`` (``q_mu . k_nu = h_mu^T W_q^T W_k h_nu``, one
        ``n x n`` product instead of the key projection of every labelled token), and the last
        layer updates only the query tokens (labelled tokens are keys and values of no later
        layer and are not read out).
        """
        P = X.shape[1]
        lab = torch.cat([y, torch.zeros_like(Xs[..., 0])], dim=1)
        h = torch.cat([X, Xs], dim=1) @ self.Wx.T + lab[..., None] * self.wy
        scale = 1.0 / np.sqrt(self.n)
        for l in range(self.L):
            hp = h[:, :P]
            if l == self.L - 1:
                h = h[:, P:]  # last layer: only the queries matter
            qk = h @ (self.Wq[l].T @ self.Wk[l])  # rows h_mu^T W_q^T W_k
            v = hp @ self.Wv[l].T
            A = torch.softmax(qk @ hp.transpose(1, 2) * scale, dim=-1)
            h = h + A @ v / self.L
            if self.mlp:
                h = h + torch.nn.functional.gelu(h @ self.W1[l].T) @ self.W2[l].T / self.L
        return h @ self.wo


# --------------------------------------------------------------------------------------------
# training loop
# --------------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    """Per-step records of :func:`train`.

    Attributes
    ----------
    loss : array ``(steps,)``, the training-batch loss before each update
    gamma : array ``(steps + 1, n_layers)`` or None, ``tr Γ^ℓ`` (normalised) before each update
    t : array ``(steps + 1,)``, cumulative learning rate ``sum_k lr_k`` (the SGD clock)
    """

    loss: np.ndarray
    gamma: np.ndarray | None
    t: np.ndarray


def train(
    model: nn.Module,
    sampler: Callable[[torch.Generator], Contexts],
    steps: int,
    *,
    lr: float,
    gen: torch.Generator,
    optimizer: str = "sgd",
    population: bool = False,
    schedule: Callable[[int], float] | None = None,
    progress: dict[str, object] | None = None,
    device: str | torch.device = "cpu",
) -> TrainResult:
    """Online training on fresh prompts at every step, on ``device`` (the model is moved there; each
    batch is drawn by ``sampler`` on the CPU and then moved, so the data do not depend on the device).

    The loss is the mean squared error on the query tokens (Eq. 3's ``L(D)`` averaged over the
    batch) or, with ``population=True`` (only :class:`ReducedGammaStack`), the population-context
    loss ``e_L^T Sigma_c e_L``. ``optimizer="sgd"`` is plain SGD ``W <- W - lr grad``; ``"adam"``
    is Adam with default betas. ``schedule(k)`` (default 1) multiplies the learning rate of step
    ``k``; ``TrainResult.t`` records the clock ``t_k = sum_{j<k} lr_j``.

    Time maps: for :class:`LinearAttention`, plain SGD with ``lr = eta`` follows the flow of
    :func:`power_five_flow` at ``t = eta * steps``; for :class:`ReducedGammaStack` with ``D x D``
    matrices the reduced flow ``dγ/dt = -½ L'(γ)`` holds at ``t = eta * steps`` when
    ``lr = eta * D / 2`` (tied) or ``eta * D * L / 2`` (untied, the paper's ``η = η_0 L``).

    ``progress`` (e.g. ``{"depth": (2, 4)}``) is shown before ``step k/steps`` in the runner's
    status line (:func:`iclcore.progress.report_progress`; nothing happens outside the runner).
    """
    steps = positive_int(steps, "steps")
    device = torch_device(device)
    model.to(device)
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer: expected 'sgd' or 'adam', got {optimizer!r}")
    cfg = TrainConfig(steps=steps, lr=lr, optimizer=optimizer, nonfinite="raise")
    gen = torch_generator(gen)
    factors = np.ones(steps) if schedule is None else np.array([float(schedule(k)) for k in range(steps)])
    if not (np.all(np.isfinite(factors)) and np.all(factors > 0)):
        raise ValueError("schedule: learning-rate factors must be finite and > 0")
    clock = np.concatenate([[0.0], np.cumsum(lr * factors)])
    track = isinstance(model, (LinearAttention, ReducedGammaStack))
    if population and not isinstance(model, ReducedGammaStack):
        raise ValueError("population: only ReducedGammaStack has a population-context loss")
    gam = []

    def batch_loss(_step: int) -> torch.Tensor:
        ctx = to_device(sampler(gen), device)
        if population:
            return model.population_loss(ctx)
        return ((model(ctx.X, ctx.y, ctx.Xs) - ctx.ys) ** 2).mean()

    def record_gamma(_step: int) -> None:
        gam.append(np.atleast_1d(model.gammas() if isinstance(model, ReducedGammaStack) else model.gamma()))

    log = train_loop(
        model.parameters(),
        batch_loss,
        cfg,
        on_checkpoint=record_gamma if track else None,
        checkpoints=range(steps + 1),
        lr_factor=lambda k: factors[k],
        progress=progress,
        count_from=0,
    )
    return TrainResult(loss=log.loss, gamma=np.array(gam) if track else None, t=clock)


# --------------------------------------------------------------------------------------------
# one softmax model of the depth sweep, as an independent task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftmaxRun:
    """One model of the softmax depth sweep of Bordelon et al. §5.3, App. G.3 (Fig. 6c, 9).

    ``D, P, K``: input dimension, labelled tokens and queries per context; ``n``: residual width;
    ``L``: depth; ``mlp``: GELU MLP blocks; ``B, lr, steps``: Adam on ``B`` fresh isotropic contexts
    per step; ``eval_contexts``: held-out contexts; ``seed``: initialisation ``seed + L``, training
    contexts ``seed + 50 + L``, held-out contexts ``seed + 999`` (the same set for every depth);
    ``index = (i, n)``: the model's place in the sweep, for the progress line; ``device``: the torch
    device it trains on (:func:`iclcore.models.training.torch_device`).
    """

    D: int
    P: int
    K: int
    n: int
    L: int
    mlp: bool
    B: int
    lr: float
    steps: int
    eval_contexts: int
    seed: int
    index: tuple[int, int] = (1, 1)
    device: str = "cpu"


def softmax_run(run: SoftmaxRun) -> tuple[np.ndarray, np.ndarray]:
    """Train one :class:`SoftmaxAttention` of ``run`` (float32, Adam) and evaluate it on the held-out contexts.

    Returns the training loss ``(steps,)`` (:attr:`TrainResult.loss`) and the held-out squared error
    of every context averaged over its ``K`` queries, ``(eval_contexts,)`` (float64). A pure function
    of ``run`` (a task of :func:`iclcore.parallel.map_configs`): the same bits in any process with
    one torch thread.
    """
    if not isinstance(run, SoftmaxRun):
        raise TypeError(f"run: expected a SoftmaxRun, got {type(run).__name__}")
    model = SoftmaxAttention(run.D, run.n, run.L, torch.Generator().manual_seed(run.seed + run.L), mlp=run.mlp)

    def sampler(g: torch.Generator) -> Contexts:
        return sample_iso_contexts(run.B, run.P, run.K, D=run.D, gen=g, dtype=torch.float32)

    res = train(
        model,
        sampler,
        run.steps,
        lr=run.lr,
        gen=torch.Generator().manual_seed(run.seed + 50 + run.L),
        optimizer="adam",
        progress={"model": run.index},
        device=run.device,
    )
    test = sample_iso_contexts(
        run.eval_contexts, run.P, run.K, D=run.D, gen=torch.Generator().manual_seed(run.seed + 999), dtype=torch.float32
    )
    test = to_device(test, run.device)
    with torch.no_grad():
        err = ((model(test.X, test.y, test.Xs) - test.ys) ** 2).reshape(run.eval_contexts, -1).mean(1)
    return res.loss, err.double().cpu().numpy()
