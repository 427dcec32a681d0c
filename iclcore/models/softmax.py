"""Softmax attention as a nonlinear Richardson step, and its gauge-invariant Q/K kernel.

Implements main paper §8 (softmax/nonlinear attention: update map ``Δ_θ(z, H, d)``, local Jacobian
preconditioner ``J_θ = ∂Δ/∂r``, diagnostic projection ``P^proj = E[Δ rᵀ] E[r rᵀ]^†``) and the Q/K
panels of §12.10 / Figure 10 (the kernel ``W_Qᵀ W_K`` per head and averaged over heads: stable
rank, top-k energy, skew/symmetry ratio, factor balance).

Architecture (probe-query residual attention)
---------------------------------------------
One prompt is ``(X, y)`` with ``X`` of shape ``(M, K)`` (rows ``x_iᵀ``); the current iterate is
``z ∈ R^K``. The layer reads *residual tokens* ``(x_i, ρ_i)`` with residual labels
``ρ_i = y_i - x_iᵀ z`` (so ``(1/M) Σ_i x_i ρ_i = d - H z = r`` for ``H = XᵀX/M``, ``d = Xᵀy/M``,
``λ = 0``). Each head ``h = 1..n_heads`` has ``W_Q^h, W_K^h ∈ R^{d_k × K}`` and an output weight
``c_h``. The queries are the ``K`` coordinate probes ``e_j`` (one query per output coordinate),
keys are ``W_K^h x_i``, values are the residual labels ``ρ_i``. Scores and update:

.. math::
    \\begin{gathered}
    s^h_{ji} = \\frac{(W_Q^h e_j)ᵀ (W_K^h x_i)}{\\sqrt{d_k}} = \\frac{(G_h x_i)_j}{\\sqrt{d_k}},\\\\
    G_h = W_Q^{hᵀ} W_K^h \\in R^{K×K},\\\\
    Δ_θ(z; X, y)_j = \\sum_h c_h \\sum_{i=1}^M \\Big(\\operatorname{softmax}_i(s^h_{j\\cdot}) - \\frac1M\\Big) ρ_i .
    \\end{gathered}

The ``-1/M`` is a uniform-attention baseline (equivalently a second head with zero Q/K kernel and
opposite output weight); it removes the nuisance ``c_h · mean(ρ)`` that plain softmax averaging
adds to every coordinate. For small scores ``softmax_i(s) - 1/M ≈ (s_i - s̄)/M``, so the layer
reduces to centred linear attention ``Δ ≈ P_lin r`` with ``P_lin = Σ_h c_h G_h / √d_k``.
``attention="linear"`` replaces ``softmax_i(s) - 1/M`` by ``s_i / M``; then
``Δ = P_lin (Xᵀρ/M) = P_lin r`` *exactly* for every ``(z, X, y)``: the global preconditioner of
main paper §3 (``Δ_θ = P_s r``).

The only place the parameters enter the scores is the kernel ``G_h``; hence the gauge
``W_Q^h → A W_Q^h, W_K^h → A^{-T} W_K^h`` (``A ∈ GL(d_k)``) leaves every ``G_h`` and every output
unchanged while moving the raw matrices (:func:`gauge_transform`).

Local Jacobian preconditioner
-----------------------------
``Δ`` depends on ``z`` only through the residual labels, but it is a function of the whole prompt,
not of ``r`` alone, so ``∂Δ/∂r`` needs a definition. We use
``J_θ(z; X, y) = -(∂Δ/∂z) H^{-1}`` (``H = XᵀX/M``, ``M >= K``): if locally ``Δ = F(r)`` then
``∂Δ/∂z = -(∂F/∂r) H`` and ``J = ∂F/∂r``; for linear attention ``J = P_lin`` at every point.
In this architecture the scores do not depend on ``z`` (keys read ``x_i`` only), so ``Δ`` is
affine in ``z`` for a fixed prompt and ``J`` depends on the prompt but not on the iterate;
its variation across prompts measures the nonlinearity of softmax attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from iclcore.linalg import stable_rank, top_energy
from iclcore.lsq.tasks import TaskConfig, sample_prompts
from iclcore.models.training import TrainConfig, torch_device, train_loop
from iclcore.parallel import map_configs, thread_budget
from iclcore.stats import standard_error
from iclcore.validation import as_generator, positive_float, positive_int, torch_generator

__all__ = [
    "ATTENTIONS",
    "AttentionConfig",
    "ProbeQueryAttention",
    "gauge_transform",
    "skew_ratio",
    "KernelStats",
    "kernel_stats",
    "head_kernels",
    "linearized_preconditioner",
    "update_jacobian",
    "local_preconditioner",
    "projected_preconditioner",
    "projection_fit",
    "RichardsonStates",
    "richardson_states",
    "GaugeCheck",
    "gauge_check",
    "JacobianAnalysis",
    "jacobian_analysis",
    "conserved_gap",
    "kernel_training_summary",
    "TrainHistory",
    "sample_torch_prompts",
    "train_attention",
    "AttentionRun",
    "train_attention_run",
    "train_attention_variants",
]

ATTENTIONS = ("softmax", "linear")
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class AttentionConfig:
    """Architecture of :class:`ProbeQueryAttention`.

    Attributes
    ----------
    K : int
        Dimension of ``x`` and of the iterate ``z``.
    n_heads : int
        Number of heads.
    d_k : int
        Query/key dimension per head.
    attention : {"softmax", "linear"}
        Nonlinearity of the attention weights (see module docstring).
    init_std : float
        Standard deviation of the entries of ``W_K`` at initialisation.
    qk_init_ratio : float
        ``std(W_Q) / std(W_K)`` at initialisation (1 = balanced factors in expectation).
    c_init : float
        Initial output weight of every head.
    """

    K: int = 8
    n_heads: int = 4
    d_k: int = 8
    attention: str = "softmax"
    init_std: float = 0.3
    qk_init_ratio: float = 1.0
    c_init: float = 1.0

    def __post_init__(self) -> None:
        positive_int(self.K, "K")
        positive_int(self.n_heads, "n_heads")
        positive_int(self.d_k, "d_k")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention: unknown attention {self.attention!r}; choose one of {ATTENTIONS}")
        positive_float(self.init_std, "init_std")
        positive_float(self.qk_init_ratio, "qk_init_ratio")
        if not math.isfinite(self.c_init):
            raise ValueError(f"c_init: must be finite, got {self.c_init!r}")


class ProbeQueryAttention(nn.Module):
    """Multi-head probe-query residual attention (module docstring), float64.

    Parameters
    ----------
    config : AttentionConfig
    generator : torch.Generator
        Source of the initial weights.

    Attributes
    ----------
    W_Q, W_K : torch.nn.Parameter, shape (n_heads, d_k, K)
    c : torch.nn.Parameter, shape (n_heads,)
    """

    def __init__(self, config: AttentionConfig, generator: torch.Generator) -> None:
        super().__init__()
        torch_generator(generator, "generator")
        self.config = config
        H, dk, K = config.n_heads, config.d_k, config.K
        sk = config.init_std
        sq = config.init_std * config.qk_init_ratio
        self.W_Q = nn.Parameter(sq * torch.randn(H, dk, K, generator=generator, dtype=torch.float64))
        self.W_K = nn.Parameter(sk * torch.randn(H, dk, K, generator=generator, dtype=torch.float64))
        self.c = nn.Parameter(torch.full((H,), float(config.c_init), dtype=torch.float64))

    def scores(self, X: torch.Tensor) -> torch.Tensor:
        """Scores ``s^h_{ji}``, shape ``(B, n_heads, K, M)`` for ``X`` of shape ``(B, M, K)``."""
        keys = torch.einsum("hak,bmk->bhma", self.W_K, X)
        return torch.einsum("haj,bhma->bhjm", self.W_Q, keys) / math.sqrt(self.config.d_k)

    def attention_weights(self, X: torch.Tensor) -> torch.Tensor:
        """``softmax_i(s) - 1/M`` (softmax) or ``s/M`` (linear), shape ``(B, n_heads, K, M)``."""
        S = self.scores(X)
        M = X.shape[-2]
        if self.config.attention == "softmax":
            return torch.softmax(S, dim=-1) - 1.0 / M
        return S / M

    def forward(self, z: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Update ``Δ_θ(z; X, y)``.

        Parameters
        ----------
        z : Tensor, shape (B, K)
            Current iterates.
        X : Tensor, shape (B, M, K)
        y : Tensor, shape (B, M)

        Returns
        -------
        Tensor, shape (B, K)
        """
        K = self.config.K
        if X.ndim != 3 or X.shape[-1] != K:
            raise ValueError(f"X: expected shape (B, M, {K}), got {tuple(X.shape)}")
        if y.shape != X.shape[:2]:
            raise ValueError(f"y: expected shape {tuple(X.shape[:2])}, got {tuple(y.shape)}")
        if z.shape != (X.shape[0], K):
            raise ValueError(f"z: expected shape {(X.shape[0], K)}, got {tuple(z.shape)}")
        rho = y - torch.einsum("bmk,bk->bm", X, z)
        A = self.attention_weights(X)
        return torch.einsum("h,bhjm,bm->bj", self.c, A, rho)


def head_kernels(model: ProbeQueryAttention) -> np.ndarray:
    """Gauge-invariant kernels ``G_h = W_Q^{hᵀ} W_K^h``, shape ``(n_heads, K, K)`` (numpy)."""
    with torch.no_grad():
        return torch.einsum("hak,hal->hkl", model.W_Q, model.W_K).cpu().numpy()


def linearized_preconditioner(model: ProbeQueryAttention) -> np.ndarray:
    """``P_lin = Σ_h c_h G_h / √d_k`` (exact global ``P`` of the linear variant), shape ``(K, K)``."""
    G = head_kernels(model)
    c = model.c.detach().cpu().numpy()
    return np.einsum("h,hkl->kl", c, G) / math.sqrt(model.config.d_k)


def gauge_transform(model: ProbeQueryAttention, A: np.ndarray | torch.Tensor) -> ProbeQueryAttention:
    """Copy of ``model`` with ``W_Q^h → A_h W_Q^h`` and ``W_K^h → A_h^{-T} W_K^h`` (Figure 10 gauge).

    Parameters
    ----------
    model : ProbeQueryAttention
    A : array, shape (d_k, d_k) or (n_heads, d_k, d_k)
        Invertible matrices (one per head, or one shared).

    Returns
    -------
    ProbeQueryAttention
        Same kernels ``G_h`` and outputs, different raw ``W_Q, W_K``.
    """
    cfg = model.config
    A = torch.as_tensor(np.asarray(A, dtype=float), dtype=torch.float64)
    if A.ndim == 2:
        A = A.expand(cfg.n_heads, -1, -1)
    if A.shape != (cfg.n_heads, cfg.d_k, cfg.d_k):
        raise ValueError(
            f"A: expected shape ({cfg.d_k}, {cfg.d_k}) or ({cfg.n_heads}, {cfg.d_k}, {cfg.d_k}), got {tuple(A.shape)}"
        )
    sv = torch.linalg.svdvals(A)
    if not torch.all(sv[:, -1] > 1e-10 * sv[:, 0]):
        raise ValueError("A: gauge matrices must be invertible (well conditioned)")
    new = ProbeQueryAttention(cfg, torch.Generator().manual_seed(0))
    with torch.no_grad():
        new.W_Q.copy_(A @ model.W_Q)
        new.W_K.copy_(torch.linalg.solve(A.transpose(-1, -2), model.W_K))
        new.c.copy_(model.c)
    return new


# --------------------------------------------------------------------------------------------
# kernel statistics (main paper §9 definitions applied to the Q/K kernel)
# --------------------------------------------------------------------------------------------


def _as_matrix(A: np.ndarray, name: str = "A") -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim < 2:
        raise ValueError(f"{name}: expected a matrix (or a stack of matrices), got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name}: contains non-finite entries")
    return A


def skew_ratio(A: np.ndarray) -> np.ndarray:
    """``‖(A - Aᵀ)/2‖_F / ‖(A + Aᵀ)/2‖_F`` (0 for symmetric, inf for skew-symmetric kernels)."""
    A = _as_matrix(A)
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A: skew ratio needs square matrices, got shape {A.shape}")
    At = np.swapaxes(A, -1, -2)
    sym = np.linalg.norm(0.5 * (A + At), axis=(-2, -1))
    skw = np.linalg.norm(0.5 * (A - At), axis=(-2, -1))
    return np.where(sym > 0, skw / np.where(sym > 0, sym, 1.0), np.inf)


@dataclass(frozen=True)
class KernelStats:
    """Figure 10 Q/K statistics at one checkpoint.

    Attributes
    ----------
    stable_rank_mean, top1_energy_mean, skew_ratio_mean : float
        Statistics of the head-averaged kernel ``Ḡ = (1/n_heads) Σ_h G_h``.
    stable_rank_heads, top1_energy_heads, skew_ratio_heads : ndarray (n_heads,)
        Per-head statistics of ``G_h``.
    balance_heads : ndarray (n_heads,)
        ``‖W_Q^h‖_F / ‖W_K^h‖_F``.
    balance : float
        ``‖W_Q‖_F / ‖W_K‖_F`` over all heads.
    conserved_heads : ndarray (n_heads,)
        ``‖W_Q^h‖_F² - ‖W_K^h‖_F²`` (trace of the gradient-flow invariant ``W_Q W_Qᵀ - W_K W_Kᵀ``).
    topk_energy_mean : float
        ``E_top,k`` of ``Ḡ`` for the ``k`` requested.
    """

    stable_rank_mean: float
    top1_energy_mean: float
    skew_ratio_mean: float
    topk_energy_mean: float
    stable_rank_heads: np.ndarray
    top1_energy_heads: np.ndarray
    skew_ratio_heads: np.ndarray
    balance_heads: np.ndarray
    balance: float
    conserved_heads: np.ndarray


def kernel_stats(model: ProbeQueryAttention, k: int = 2) -> KernelStats:
    """Gauge-invariant Q/K statistics of ``model`` (per head and head-averaged), main paper §12.10."""
    G = head_kernels(model)
    Gm = G.mean(axis=0)
    with torch.no_grad():
        nq = torch.linalg.norm(model.W_Q, dim=(-2, -1)).cpu().numpy()
        nk = torch.linalg.norm(model.W_K, dim=(-2, -1)).cpu().numpy()
    return KernelStats(
        stable_rank_mean=float(stable_rank(Gm)),
        top1_energy_mean=float(top_energy(Gm, 1)),
        skew_ratio_mean=float(skew_ratio(Gm)),
        topk_energy_mean=float(top_energy(Gm, k)),
        stable_rank_heads=stable_rank(G),
        top1_energy_heads=top_energy(G, 1),
        skew_ratio_heads=skew_ratio(G),
        balance_heads=nq / nk,
        balance=float(np.sqrt((nq**2).sum() / (nk**2).sum())),
        conserved_heads=nq**2 - nk**2,
    )


# --------------------------------------------------------------------------------------------
# §8: Jacobian preconditioner and diagnostic projection
# --------------------------------------------------------------------------------------------


def _as_t(a, name: str) -> torch.Tensor:
    t = torch.as_tensor(a, dtype=torch.float64)
    if not torch.all(torch.isfinite(t)):
        raise ValueError(f"{name}: contains non-finite entries")
    return t


def update_jacobian(model: ProbeQueryAttention, z, X, *, y) -> np.ndarray:
    """``∂Δ_θ/∂z`` at each prompt by autograd (``torch.func.jacrev`` + ``vmap``).

    Parameters
    ----------
    z : array (B, K); X : array (B, M, K); y : array (B, M)

    Returns
    -------
    ndarray, shape (B, K, K)
    """
    z, X, y = _as_t(z, "z"), _as_t(X, "X"), _as_t(y, "y")
    if X.ndim != 3 or z.ndim != 2 or y.ndim != 2:
        raise ValueError(
            f"z, X, y: expected shapes (B, K), (B, M, K), (B, M); got {tuple(z.shape)}, {tuple(X.shape)}, {tuple(y.shape)}"
        )

    def single(zz, XX, yy):
        return model(zz[None], XX[None], yy[None])[0]

    jac = torch.func.vmap(torch.func.jacrev(single, argnums=0))(z, X, y)
    return jac.detach().numpy()


def local_preconditioner(model: ProbeQueryAttention, z, X, *, y) -> np.ndarray:
    """Local Jacobian preconditioner ``J_θ = -(∂Δ/∂z) H^{-1}``, ``H = XᵀX/M`` (main paper §8).

    Returns
    -------
    ndarray, shape (B, K, K)

    Raises
    ------
    ValueError
        ``X``: when ``M < K`` or some ``H`` is singular (``J`` is then not defined by this formula).
    """
    Xn = np.asarray(X, dtype=float)
    if Xn.ndim != 3:
        raise ValueError(f"X: expected shape (B, M, K), got {Xn.shape}")
    B_, M, K = Xn.shape
    if M < K:
        raise ValueError(f"X: the local preconditioner needs M >= K (H invertible), got M={M}, K={K}")
    H = np.einsum("bmi,bmj->bij", Xn, Xn) / M
    if np.min(np.linalg.eigvalsh(H)) <= 1e-12 * np.max(np.abs(H)):
        raise ValueError("X: some prompt Hessian H = X^T X / M is singular")
    D = update_jacobian(model, z, X, y=y)
    # J = -D H^{-1}  <=>  J H = -D  <=>  H J^T = -D^T (H symmetric)
    JT = np.linalg.solve(H, -np.swapaxes(D, -1, -2))
    return np.swapaxes(JT, -1, -2)


def projected_preconditioner(Delta: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Diagnostic projection ``P^proj = E[Δ rᵀ] E[r rᵀ]^†`` (main paper §8), shape ``(K, K)``.

    Parameters
    ----------
    Delta, r : ndarray, shape (N, K)
        Updates and residuals over a sample of ``(z, prompt)`` pairs.
    """
    Delta = np.asarray(Delta, dtype=float)
    r = np.asarray(r, dtype=float)
    if Delta.ndim != 2 or Delta.shape != r.shape:
        raise ValueError(f"Delta, r: expected two arrays of shape (N, K), got {Delta.shape} and {r.shape}")
    N = r.shape[0]
    Cdr = Delta.T @ r / N
    Crr = r.T @ r / N
    return Cdr @ np.linalg.pinv(Crr, hermitian=True)


def projection_fit(Delta: np.ndarray, r: np.ndarray, P: np.ndarray) -> float:
    """Fraction of update energy explained by a global ``P``: ``1 - Σ‖Δ - P r‖² / Σ‖Δ‖²``."""
    Delta = np.asarray(Delta, dtype=float)
    r = np.asarray(r, dtype=float)
    P = np.asarray(P, dtype=float)
    if Delta.shape != r.shape or P.shape != (r.shape[1], r.shape[1]):
        raise ValueError(f"Delta, r, P: incompatible shapes {Delta.shape}, {r.shape}, {P.shape}")
    tot = float(np.sum(Delta**2))
    if tot == 0:
        raise ValueError("Delta: all updates are zero")
    return 1.0 - float(np.sum((Delta - r @ P.T) ** 2)) / tot


@dataclass(frozen=True)
class RichardsonStates:
    """States of the attention-driven Richardson iteration (:func:`richardson_states`).

    Attributes
    ----------
    z : ndarray (L, B, K)
        Iterates ``z_0 = 0, z_1, …, z_{L-1}``.
    delta : ndarray (L, B, K)
        Updates ``Δ_θ(z_ℓ; X, y)``.
    r : ndarray (L, B, K)
        Residuals ``r_ℓ = d − H z_ℓ``.
    """

    z: np.ndarray
    delta: np.ndarray
    r: np.ndarray


def richardson_states(model: ProbeQueryAttention, prompts: dict[str, torch.Tensor], L: int) -> RichardsonStates:
    """Run ``z_{ℓ+1} = z_ℓ + Δ_θ(z_ℓ; X, y)`` from ``z_0 = 0`` and record ``(z_ℓ, Δ_θ(z_ℓ), r_ℓ)``, ``ℓ < L``.

    The samples ``(Δ, r)`` are what main paper §8 projects onto a global preconditioner
    (:func:`projected_preconditioner`); for linear attention ``Δ_ℓ = P_lin r_ℓ`` and the ``z_ℓ`` are the
    Richardson iterates of :func:`iclcore.lsq.iterates.richardson_iterates` with ``P = P_lin``.

    Parameters
    ----------
    model : ProbeQueryAttention
    prompts : dict
        As returned by :func:`sample_torch_prompts` (uses ``X`` (B, M, K), ``y`` (B, M), ``H`` (B, K, K),
        ``d`` (B, K)).
    L : int
        Number of recorded states, ``L >= 1``.

    Returns
    -------
    RichardsonStates
        Arrays of shape ``(L, B, K)``.
    """
    L = positive_int(L, "L")
    missing = [k for k in ("X", "y", "H", "d") if k not in prompts]
    if missing:
        raise ValueError(f"prompts: missing keys {missing}")
    X, y, H, d = (_as_t(prompts[k], k) for k in ("X", "y", "H", "d"))
    if H.ndim != 3 or d.ndim != 2 or H.shape[:2] != d.shape or H.shape[-1] != d.shape[-1]:
        raise ValueError(f"H, d: expected shapes (B, K, K), (B, K); got {tuple(H.shape)}, {tuple(d.shape)}")
    z = torch.zeros_like(d)
    Z, D, R = [], [], []
    with torch.no_grad():
        for _ in range(L):
            delta = model(z, X, y)
            r = d - torch.einsum("bij,bj->bi", H, z)
            Z.append(z.numpy())
            D.append(delta.numpy())
            R.append(r.numpy())
            z = z + delta
    return RichardsonStates(z=np.stack(Z), delta=np.stack(D), r=np.stack(R))


@dataclass(frozen=True)
class GaugeCheck:
    """The gauge ``W_Q^h → A_h W_Q^h``, ``W_K^h → A_h^{-T} W_K^h`` applied to a model (:func:`gauge_check`).

    Attributes
    ----------
    output_rel_diff : float
        ``max|Δ' − Δ| / max|Δ|`` over the probe outputs (rounding level: the outputs are gauge invariant).
    kernel_rel_diff : float
        ``max|G'_h − G_h| / max|G_h|`` (rounding level).
    raw_rel_change : float
        ``‖W_Q' − W_Q‖_F / ‖W_Q‖_F`` (order one: the raw matrices are not identifiable).
    balance_before, balance_after : float
        ``‖W_Q‖_F / ‖W_K‖_F`` before and after (not gauge invariant).
    """

    output_rel_diff: float
    kernel_rel_diff: float
    raw_rel_change: float
    balance_before: float
    balance_after: float


def gauge_check(
    model: ProbeQueryAttention, A: np.ndarray, prompts: dict[str, torch.Tensor], *, z: np.ndarray, topk: int = 2
) -> GaugeCheck:
    """Figure 10's gauge: what :func:`gauge_transform` by ``A`` ((d_k, d_k) or (n_heads, d_k, d_k)) moves.

    Outputs compared at iterates ``z`` (B, K) on ``prompts`` (``X`` (B, M, K), ``y`` (B, M), as from
    :func:`sample_torch_prompts`); kernels by :func:`head_kernels`, balances by :func:`kernel_stats`
    (``topk``: its ``k``). Definitions in :class:`GaugeCheck`.
    """
    mg = gauge_transform(model, A)
    z = torch.as_tensor(z)
    with torch.no_grad():
        out, out_g = model(z, prompts["X"], prompts["y"]), mg(z, prompts["X"], prompts["y"])
    G, G_g = head_kernels(model), head_kernels(mg)
    return GaugeCheck(
        output_rel_diff=float((out_g - out).abs().max() / out.abs().max()),
        kernel_rel_diff=float(np.abs(G_g - G).max() / np.abs(G).max()),
        raw_rel_change=float(((mg.W_Q - model.W_Q).norm() / model.W_Q.norm()).item()),
        balance_before=kernel_stats(model, topk).balance,
        balance_after=kernel_stats(mg, topk).balance,
    )


@dataclass(frozen=True, eq=False)
class JacobianAnalysis:
    """A trained layer read as a nonlinear Richardson step (main paper §8; :func:`jacobian_analysis`).

    Attributes
    ----------
    J : ndarray (B, K, K)
        Local preconditioners ``J_n = −(∂Δ/∂z) H_n^{-1}`` at ``z = 0``, one per prompt.
    J_bar : ndarray (K, K)
        Their mean over prompts.
    spread : ndarray (B,)
        ``‖J_n − J̄‖_F / ‖J̄‖_F``.
    spread_se : float
        Standard error of the mean spread over the prompts (the trained model fixed).
    P_proj, P_lin : ndarray (K, K)
        Diagnostic projection ``E[Δrᵀ]E[rrᵀ]^†`` over all sampled states, and ``Σ_h c_h G_h/√d_k``.
    fit_proj, fit_lin, fit_Jbar : float
        Update energy explained by ``P_proj``, ``P_lin``, ``J̄`` (:func:`projection_fit`).
    affine_err : float
        ``max|J_n(r_ℓ − r_0) − (Δ_ℓ − Δ_0)| / max|Δ|``: ``Δ`` is affine in ``z`` for a fixed prompt.
    offset : float
        Mean over states of ``‖J_n r_ℓ − Δ_ℓ‖ / mean‖Δ‖``: the part of ``Δ`` not of the form ``J r``
        (``W(X)(I − Π_X) y``; zero for linear attention).
    proj_vs_Jbar, lin_vs_Jbar, lin_vs_Pstar : float
        ``‖P_proj − J̄‖_F/‖J̄‖_F``, ``‖P_lin − J̄‖_F/‖J̄‖_F``, ``‖P_lin − P⋆‖_F/‖P⋆‖_F``.
    delta, r : ndarray (L, B, K)
        Sampled updates and residuals (:func:`richardson_states`).
    risk : ndarray (L − 1,)
        ``(1/K) mean_n ‖z_ℓ − β_n‖²`` along the layer's own trajectory, ``ℓ = 1..L−1``.
    sigma1 : float
        Top singular value of ``J̄``, with singular vectors ``u1``, ``v1`` (K,).
    top_component : ndarray (B,)
        ``u1ᵀ J_n v1``.
    """

    J: np.ndarray
    J_bar: np.ndarray
    spread: np.ndarray
    spread_se: float
    P_proj: np.ndarray
    P_lin: np.ndarray
    fit_proj: float
    fit_lin: float
    fit_Jbar: float
    affine_err: float
    offset: float
    proj_vs_Jbar: float
    lin_vs_Jbar: float
    lin_vs_Pstar: float
    delta: np.ndarray
    r: np.ndarray
    risk: np.ndarray
    sigma1: float
    u1: np.ndarray
    v1: np.ndarray
    top_component: np.ndarray


def jacobian_analysis(
    model: ProbeQueryAttention, prompts: dict[str, torch.Tensor], L: int, *, P_star: np.ndarray
) -> JacobianAnalysis:
    """Local Jacobian preconditioners, their spread and the diagnostic projection of ``model`` (main paper §8).

    States ``(z_ℓ, prompt)``, ``ℓ < L``, along the layer's own Richardson trajectory on ``prompts``
    (:func:`sample_torch_prompts`: ``X`` (B, M, K), ``y``, ``H``, ``d``, ``beta``; ``M ≥ K``)
    (:func:`richardson_states`); ``J`` by autograd at ``z = 0`` (:func:`local_preconditioner`; the
    scores read only the keys, so ``J`` does not depend on ``z``); ``P_proj`` over all states
    (:func:`projected_preconditioner`); ``P_star`` (K, K): the oracle the linearisation is compared
    with. Definitions in :class:`JacobianAnalysis`; for linear attention ``J_n = P_lin`` to rounding.
    """
    states = richardson_states(model, prompts, L)
    Zs, Ds, Rs = states.z, states.delta, states.r
    n, K = Ds.shape[1], Ds.shape[2]
    J = local_preconditioner(model, torch.zeros(n, K, dtype=torch.float64), prompts["X"], y=prompts["y"])
    J_bar = J.mean(axis=0)
    dev = np.linalg.norm(J - J_bar, axis=(1, 2)) / np.linalg.norm(J_bar)
    Dall, Rall = Ds.reshape(-1, K), Rs.reshape(-1, K)
    P_proj = projected_preconditioner(Dall, Rall)
    P_l = linearized_preconditioner(model)
    affine = np.einsum("nij,lnj->lni", J, Rs - Rs[:1]) - (Ds - Ds[:1])
    offset = np.linalg.norm(np.einsum("nij,lnj->lni", J, Rs) - Ds, axis=-1) / np.linalg.norm(Ds, axis=-1).mean()
    beta = prompts["beta"].numpy()
    risk = np.mean(np.sum((Zs[1:] - beta[None]) ** 2, axis=-1), axis=1) / K if L > 1 else np.array([])
    U, s, Vt = np.linalg.svd(J_bar)
    u1, v1 = U[:, 0], Vt[0]
    return JacobianAnalysis(
        J=J,
        J_bar=J_bar,
        spread=dev,
        spread_se=standard_error(dev),
        P_proj=P_proj,
        P_lin=P_l,
        fit_proj=projection_fit(Dall, Rall, P_proj),
        fit_lin=projection_fit(Dall, Rall, P_l),
        fit_Jbar=projection_fit(Dall, Rall, J_bar),
        affine_err=float(np.abs(affine).max() / np.abs(Ds).max()),
        offset=float(offset.mean()),
        proj_vs_Jbar=float(np.linalg.norm(P_proj - J_bar) / np.linalg.norm(J_bar)),
        lin_vs_Jbar=float(np.linalg.norm(P_l - J_bar) / np.linalg.norm(J_bar)),
        lin_vs_Pstar=float(np.linalg.norm(P_l - P_star) / np.linalg.norm(P_star)),
        delta=Ds,
        r=Rs,
        risk=risk,
        sigma1=s[0],
        u1=u1,
        v1=v1,
        top_component=np.einsum("i,nij,j->n", u1, J, v1),
    )


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------


@dataclass
class TrainHistory:
    """Checkpointed training trace.

    Attributes
    ----------
    step : list of int
    loss : list of float
        Training loss at each checkpoint (mean over the batch).
    stats : list of KernelStats
    """

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    stats: list[KernelStats] = field(default_factory=list)

    def series(self, name: str) -> np.ndarray:
        """Stack one :class:`KernelStats` attribute over checkpoints."""
        if not self.stats or not hasattr(self.stats[0], name):
            raise ValueError(f"name: unknown kernel statistic {name!r}")
        return np.array([getattr(s, name) for s in self.stats])


def sample_torch_prompts(config: TaskConfig, n: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    """Prompts from :func:`iclcore.lsq.tasks.sample_prompts` as float64 tensors.

    Returns
    -------
    dict with ``X`` (n, M, K), ``y`` (n, M), ``beta`` (n, K), ``H`` (n, K, K), ``d`` (n, K),
    ``z_dagger`` (n, K).
    """
    p = sample_prompts(config, n, rng)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    return {"X": t(p.X), "y": t(p.y), "beta": t(p.beta), "H": t(p.H_M), "d": t(p.d), "z_dagger": t(p.z_dagger)}


def train_attention(
    model: ProbeQueryAttention,
    task: TaskConfig,
    train: TrainConfig,
    *,
    rng: np.random.Generator,
    topk: int = 2,
    device: str | torch.device = "cpu",
) -> TrainHistory:
    """Train ``model`` in place (online, fresh prompts each step) and checkpoint kernel statistics.

    The model trains on ``device`` (prompts are drawn by ``rng`` on the CPU and then moved) and is
    moved back to the CPU at the end.

    The loss is ``(1/2K) E‖z + Δ_θ(z; X, y) - z⋆‖²`` with ``z = 0`` (one step from the zero
    iterate, the decoder-only objective ``(1/2K) E‖P d - z⋆‖²`` of main paper §3.1 when attention
    is linear) and ``z⋆ = β``, on a fresh batch of prompts at every step. Checkpoints at every
    ``log_every``-th step and the last record the loss of the batch about to be trained on
    (the last one on one more batch, without update) and :func:`kernel_stats`.

    Parameters
    ----------
    model : ProbeQueryAttention
    task : TaskConfig
        Prompt distribution; must have ``lam == 0`` (the layer's residual is ``d - Hz`` with
        ``H = XᵀX/M``) and ``K == model.config.K``.
    train : TrainConfig
        ``steps``, ``batch``, ``lr``, ``optimizer`` (``"sgd"`` or ``"adam"``; plain SGD keeps
        ``W_Q W_Qᵀ - W_K W_Kᵀ`` approximately conserved, exactly under gradient flow; Adam does
        not) and ``log_every``, the checkpoint period of the kernel statistics.
    rng : numpy.random.Generator or int seed
        Source of all prompts.
    topk : int
        ``k`` of the top-k energy statistic.
    """
    if not isinstance(task, TaskConfig):
        raise TypeError("task: expected an iclcore.lsq.tasks.TaskConfig")
    if task.K != model.config.K:
        raise ValueError(f"task: K={task.K} does not match the model's K={model.config.K}")
    if task.lam != 0:
        raise ValueError(f"task: lam must be 0 for the residual-token layer, got {task.lam}")
    if not isinstance(train, TrainConfig):
        raise TypeError("train: expected an iclcore.models.training.TrainConfig")
    if train.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer: unknown optimizer {train.optimizer!r}; choose one of {OPTIMIZERS}")
    topk = positive_int(topk, "topk")
    train = replace(train, nonfinite="raise")
    rng = as_generator(rng)
    hist = TrainHistory()
    K = task.K
    device = torch_device(device)
    model.to(device)

    def batch_loss(_step: int) -> torch.Tensor:
        b = {k: v.to(device) for k, v in sample_torch_prompts(task, train.batch, rng).items()}
        out = model(b["X"].new_zeros(train.batch, K), b["X"], b["y"])
        return ((out - b["beta"]) ** 2).sum(dim=1).mean() / (2 * K)

    def checkpoint(step: int, loss: torch.Tensor) -> None:
        if step % train.log_every == 0 or step == train.steps:
            hist.step.append(step)
            hist.loss.append(float(loss.item()))
            hist.stats.append(kernel_stats(model, topk))

    train_loop(model.parameters(), batch_loss, train, on_loss=checkpoint)
    loss = batch_loss(train.steps)  # the last checkpoint: one more batch, no update
    if not torch.isfinite(loss):
        raise FloatingPointError(
            f"lr: training diverged at step {train.steps} (loss {loss.item()}); lower lr={train.lr}"
        )
    checkpoint(train.steps, loss)
    model.to("cpu")
    return hist


@dataclass(frozen=True)
class AttentionRun:
    """One online training of :func:`train_attention_run`: architecture, prompt law, optimizer, seeds.

    Attributes
    ----------
    attention : AttentionConfig
    task : TaskConfig
        Prompt distribution (``lam == 0``, ``task.K == attention.K``).
    train : TrainConfig
    init_seed : int
        Seed of the ``torch.Generator`` of the initial weights.
    data_seed : int
        Seed of the ``numpy`` generator of all training prompts.
    topk : int
        ``k`` of the top-k energy statistic.
    device : str
        The torch device it trains on.
    """

    attention: AttentionConfig
    task: TaskConfig
    train: TrainConfig
    init_seed: int
    data_seed: int
    topk: int = 2
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.attention, AttentionConfig):
            raise TypeError(f"attention: expected an AttentionConfig, got {type(self.attention).__name__}")
        for name in ("init_seed", "data_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}: expected a non-negative integer seed, got {value!r}")


def train_attention_run(run: AttentionRun) -> tuple[ProbeQueryAttention, TrainHistory]:
    """Initialise a :class:`ProbeQueryAttention` from ``run.init_seed`` and train it with :func:`train_attention`.

    The model (float64 parameters ``W_Q, W_K`` of shape ``(n_heads, d_k, K)``, ``c`` of shape
    ``(n_heads,)``) is built from ``torch.Generator().manual_seed(run.init_seed)``, then trained online on
    prompts drawn from ``numpy.random.default_rng(run.data_seed)``; the :class:`TrainHistory` holds the
    checkpointed loss and :class:`KernelStats`. A pure function of ``run`` (a task of
    :func:`iclcore.parallel.map_configs`): the same bits in any process with one torch thread.

    Returns
    -------
    model : ProbeQueryAttention
        The trained layer.
    history : TrainHistory
    """
    if not isinstance(run, AttentionRun):
        raise TypeError(f"run: expected an AttentionRun, got {type(run).__name__}")
    model = ProbeQueryAttention(run.attention, torch.Generator().manual_seed(run.init_seed))
    history = train_attention(
        model, run.task, run.train, rng=np.random.default_rng(run.data_seed), topk=run.topk, device=run.device
    )
    return model, history


def train_attention_variants(
    config: AttentionConfig,
    task: TaskConfig,
    train: TrainConfig,
    *,
    seed: int,
    topk: int = 2,
    device: str = "cpu",
    attentions: tuple[str, ...] = ATTENTIONS,
) -> tuple[dict[str, ProbeQueryAttention], dict[str, TrainHistory]]:
    """Train ``config`` once per attention in ``attentions`` with identical initial weights and prompt streams.

    One :class:`AttentionRun` per attention (``config`` with that ``attention``; initial weights from
    ``seed``, prompts from ``seed + 1``), run by :func:`train_attention_run` as independent tasks of
    :func:`iclcore.parallel.map_configs` (a softmax run costs twice a linear one). Returns the trained
    models and their histories, keyed by attention.
    """
    if not isinstance(config, AttentionConfig):
        raise TypeError(f"config: expected an AttentionConfig, got {type(config).__name__}")
    runs = [
        AttentionRun(replace(config, attention=a), task, train, seed, seed + 1, topk, device=device) for a in attentions
    ]
    trained = map_configs(
        train_attention_run,
        runs,
        thread_budget(),
        cost=lambda r: 2 if r.attention.attention == "softmax" else 1,
        label="attention models",
    )
    models = {a: model for a, (model, _) in zip(attentions, trained)}
    return models, {a: hist for a, (_, hist) in zip(attentions, trained)}


def conserved_gap(history: TrainHistory) -> np.ndarray:
    """``Σ_h (‖W_Q^h‖_F² − ‖W_K^h‖_F²)`` at each checkpoint, shape (n_checkpoints,): conserved by gradient flow."""
    return history.series("conserved_heads").sum(axis=1)


def kernel_training_summary(history: TrainHistory) -> dict[str, float]:
    """Figure 10's Q/K statistics at the first and last checkpoints of ``history`` (main paper §12.10).

    Keys: ``loss_``, ``stable_rank_``, ``top1_energy_``, ``skew_ratio_``, ``balance_`` + ``initial``/``final``
    (head-averaged kernel; ``balance`` over all heads), ``topk_energy_final``, ``stable_rank_heads_final_max``
    and ``conserved_gap_rel_drift`` ``= |g_final − g_initial| / |g_initial|`` of :func:`conserved_gap`.
    """
    if not history.stats:
        raise ValueError("history: no checkpoints")
    st0, st1 = history.stats[0], history.stats[-1]
    gap = conserved_gap(history)
    return {
        "loss_initial": history.loss[0],
        "loss_final": history.loss[-1],
        "stable_rank_initial": st0.stable_rank_mean,
        "stable_rank_final": st1.stable_rank_mean,
        "stable_rank_heads_final_max": float(st1.stable_rank_heads.max()),
        "top1_energy_initial": st0.top1_energy_mean,
        "top1_energy_final": st1.top1_energy_mean,
        "topk_energy_final": st1.topk_energy_mean,
        "skew_ratio_initial": st0.skew_ratio_mean,
        "skew_ratio_final": st1.skew_ratio_mean,
        "balance_initial": st0.balance,
        "balance_final": st1.balance,
        "conserved_gap_rel_drift": float(abs(gap[-1] - gap[0]) / abs(gap[0])),
    }
