r"""The Flexformer: a task-dependent preconditioner for the depth-``L`` Richardson decoder (torch).

The experiment report (MMNN report §4, §5.3, §5.4) trains a "Flexformer" decoder but never
defines it. This module fixes one definition (see the errata page, entry *The Flexformer is
never defined*): a depth-``L`` preconditioned Richardson solver whose preconditioner is
computed *once* from the frozen task system by attention and is then applied linearly to the
residual,

.. math::

    \begin{gathered}
    x_{ℓ+1} = x_ℓ + P_Θ(H, d)\,(d − H x_ℓ), \qquad x_0 = 0,\\
    P_Θ(H, d) = U Vᵀ + \sum_{h=1}^{n_h} c_h\,
        \operatorname{softmax}_j\!\Bigl(\tfrac{⟨W_Q^h t_i,\, W_K^h t_j⟩}{\sqrt{d_k}}\Bigr),\\
    t_j = (H_{j\cdot},\, d_j,\, φ_j) .
    \end{gathered}

* The tokens ``t_j`` are the ``K`` rows of the task system ``[H | d]`` with fixed index
  features ``φ_j`` (position ``x_j`` and ``n_freq`` Fourier pairs of it).
* ``U Vᵀ`` is a static part of rank ``r_P``; the ``n_h`` kernel-attention heads make ``P``
  depend on the task. With ``n_h = 0`` the model is the low-rank linear preconditioner ``UVᵀ``.
* For a frozen task ``P_Θ`` is a fixed matrix, so MMNN report's identity
  ``e_L = (I − P_Θ H)^L e_0`` and the per-task ``ρ(H, P_Θ) = ‖I − P_Θ H‖_2`` hold exactly.

The ablation :class:`KernelDictionaryPreconditioner` ("Flexformer-static") replaces the heads
by a fixed kernel dictionary, ``P = Σ_m θ_m Φ_m`` with ``Φ_0 = I``, Matérn/RBF Gram matrices
on the index positions and, for the 1-D Galerkin problem, the Green kernel
``min(x, y) − xy`` (the exact inverse of the P1 stiffness matrix of ``−u''``).

Both models are trained end-to-end through the ``L`` steps on fresh tasks
(:func:`train_preconditioner`, Adam, float64); :func:`flexformer_variants` builds the ablation family
of the decoder chapters and :func:`train_preconditioners` trains it side by side. All randomness comes from a passed
:class:`torch.Generator` (initialisation) and :class:`numpy.random.Generator` (tasks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from torch import nn

from iclcore.lsq.lowrank import LowRankModel, latent_systems, sample_lowrank_prompts
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.models.training import TrainConfig, torch_device, train_loop
from iclcore.parallel import map_configs
from iclcore.validation import as_generator, positive_float, positive_int, torch_generator

__all__ = [
    "FlexformerConfig",
    "index_features",
    "Flexformer",
    "kernel_dictionary",
    "KernelDictionaryPreconditioner",
    "richardson_unroll",
    "depth_loss",
    "TrainingResult",
    "train_preconditioner",
    "preconditioners_numpy",
    "prompt_sampler",
    "latent_prompt_sampler",
    "PreconditionerJob",
    "train_preconditioner_job",
    "VARIANTS",
    "STATIC_KERNELS",
    "flexformer_variants",
    "train_preconditioners",
    "frozen_identity_gap",
]

DTYPE = torch.float64


@dataclass(frozen=True)
class FlexformerConfig:
    """Sizes of a :class:`Flexformer`.

    Attributes
    ----------
    K : int
        System size (number of tokens).
    rank : int
        Rank ``r_P`` of the static part ``UVᵀ`` (``0 ≤ r_P ≤ K``).
    n_heads : int
        Number of kernel-attention heads ``n_h ≥ 0``.
    d_k : int
        Query/key dimension.
    n_freq : int
        Fourier pairs in the index features ``φ_j``.
    include_d : bool
        Whether the right-hand side ``d_j`` is part of the token.
    h_scale, d_scale : float
        Fixed scalings of ``H`` and ``d`` inside the tokens (``t_j = (h_scale H_{j·}, d_scale d_j, φ_j)``),
        so that stiff systems (entries ``~1/h``) do not saturate the softmax.
    """

    K: int
    rank: int
    n_heads: int = 2
    d_k: int = 4
    n_freq: int = 2
    include_d: bool = True
    h_scale: float = 1.0
    d_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("h_scale", "d_scale"):
            v = getattr(self, name)
            if not np.isfinite(v) or v <= 0:
                raise ValueError(f"{name}: must be finite and > 0, got {v!r}")
        positive_int(self.K, "K")
        positive_int(self.rank, "rank", 0)
        if self.rank > self.K:
            raise ValueError(f"rank: must be <= K = {self.K}, got {self.rank}")
        positive_int(self.n_heads, "n_heads", 0)
        positive_int(self.d_k, "d_k")
        positive_int(self.n_freq, "n_freq", 0)

    @property
    def token_dim(self) -> int:
        """``K + [include_d] + 1 + 2 n_freq``."""
        return self.K + int(self.include_d) + 1 + 2 * self.n_freq


def index_features(K: int, n_freq: int, positions: np.ndarray | None = None) -> np.ndarray:
    """Fixed index features ``φ_j = (x_j, cos 2πm x_j, sin 2πm x_j)_{m=1..n_freq}``.

    Parameters
    ----------
    K : int
    n_freq : int
    positions : ndarray of shape (K,), optional
        ``x_j`` (default ``(j + 1/2)/K``; for a Galerkin system, the node positions).

    Returns
    -------
    ndarray, shape (K, 1 + 2 n_freq)
    """
    K = positive_int(K, "K")
    n_freq = positive_int(n_freq, "n_freq", 0)
    x = (np.arange(K) + 0.5) / K if positions is None else np.asarray(positions, dtype=float)
    if x.shape != (K,) or not np.all(np.isfinite(x)):
        raise ValueError(f"positions: expected {K} finite positions, got shape {x.shape}")
    cols = [x]
    for m in range(1, n_freq + 1):
        cols += [np.cos(2 * np.pi * m * x), np.sin(2 * np.pi * m * x)]
    return np.stack(cols, axis=1)


def _as_tensor(a, name: str) -> torch.Tensor:
    t = torch.as_tensor(a, dtype=DTYPE)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: must be finite")
    return t


class Flexformer(nn.Module):
    """``P_Θ(H, d) = UVᵀ + Σ_h c_h softmax(Q_h K_hᵀ/√d_k)`` (module docstring), float64.

    Parameters
    ----------
    config : FlexformerConfig
    generator : torch.Generator
        Draws ``W_Q, W_K`` (entries ``N(0, 1/token_dim)``) and, without ``P_init``, ``U, V``
        (entries ``N(0, 0.01/K)``).
    P_init : ndarray (K, K), optional
        Warm start of the static part: ``UVᵀ`` is set to its best rank-``r_P`` approximation
        (truncated SVD). The heads start switched off (``c_h = 0``), so the untrained model
        *is* that low-rank matrix.
    positions : ndarray (K,), optional
        Index positions for :func:`index_features`.
    """

    def __init__(
        self,
        config: FlexformerConfig,
        generator: torch.Generator,
        P_init: np.ndarray | None = None,
        positions: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        torch_generator(generator, "generator")
        self.config = config
        K, r, h, dk, dt = config.K, config.rank, config.n_heads, config.d_k, config.token_dim
        if P_init is not None:
            P0 = np.asarray(P_init, dtype=float)
            if P0.shape != (K, K) or not np.all(np.isfinite(P0)):
                raise ValueError(f"P_init: expected a finite ({K}, {K}) matrix, got shape {P0.shape}")
            W, S, Vt = np.linalg.svd(P0)
            U0 = W[:, :r] * np.sqrt(S[:r])
            V0 = Vt[:r].T * np.sqrt(S[:r])
            self.U = nn.Parameter(torch.as_tensor(U0, dtype=DTYPE))
            self.V = nn.Parameter(torch.as_tensor(V0, dtype=DTYPE))
        else:
            s = np.sqrt(0.01 / K)
            self.U = nn.Parameter(s * torch.randn(K, r, generator=generator, dtype=DTYPE))
            self.V = nn.Parameter(s * torch.randn(K, r, generator=generator, dtype=DTYPE))
        self.W_Q = nn.Parameter(torch.randn(h, dt, dk, generator=generator, dtype=DTYPE) / np.sqrt(dt))
        self.W_K = nn.Parameter(torch.randn(h, dt, dk, generator=generator, dtype=DTYPE) / np.sqrt(dt))
        self.c = nn.Parameter(torch.zeros(h, dtype=DTYPE))
        self.register_buffer("phi", torch.as_tensor(index_features(K, config.n_freq, positions), dtype=DTYPE))

    def tokens(self, H: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """``t_j = (H_{j·}, d_j, φ_j)``, shape (B, K, token_dim), from ``H`` (B, K, K), ``d`` (B, K)."""
        B = H.shape[0]
        parts = [self.config.h_scale * H]
        if self.config.include_d:
            parts.append(self.config.d_scale * d[..., None])
        parts.append(self.phi.expand(B, -1, -1))
        return torch.cat(parts, dim=-1)

    def attention(self, H: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """Row-stochastic head matrices ``softmax_j(⟨W_Q t_i, W_K t_j⟩/√d_k)``, shape (B, n_h, K, K)."""
        t = self.tokens(H, d)
        q = torch.einsum("bkt,htd->bhkd", t, self.W_Q)
        k = torch.einsum("bkt,htd->bhkd", t, self.W_K)
        return torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(self.config.d_k), dim=-1)

    def preconditioner(self, H: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """``P_Θ(H, d)``, shape (B, K, K), for ``H`` (B, K, K) and ``d`` (B, K)."""
        static = (self.U @ self.V.T).expand(H.shape[0], -1, -1)
        if self.config.n_heads == 0:
            return static
        return static + torch.einsum("h,bhij->bij", self.c, self.attention(H, d))

    def forward(self, H: torch.Tensor, d: torch.Tensor, L: int) -> torch.Tensor:
        """Iterates ``x_0 = 0, …, x_L``, shape (B, L + 1, K), with ``P_Θ`` frozen per task."""
        return richardson_unroll(self.preconditioner(H, d), H, d, L=L)


def kernel_dictionary(
    positions: np.ndarray, kinds: tuple[str, ...] = ("identity", "green", "matern52:0.1")
) -> np.ndarray:
    """Fixed Gram matrices ``Φ_m`` on the index positions, shape (m, K, K).

    ``kinds`` entries: ``"identity"``; ``"green"`` — ``min(x, y) − xy`` (Green's function of
    ``−u''`` on (0, 1) with Dirichlet ends; at the nodes of a uniform P1 mesh it is the exact
    inverse of the stiffness matrix); ``"matern52:ℓ"`` and ``"rbf:ℓ"`` — stationary kernels of
    length scale ``ℓ``.
    """
    x = np.asarray(positions, dtype=float)
    if x.ndim != 1 or x.size < 1 or not np.all(np.isfinite(x)):
        raise ValueError("positions: expected a finite 1-D array")
    D = np.abs(x[:, None] - x[None, :])
    out = []
    for kind in kinds:
        name, _, arg = kind.partition(":")
        if name == "identity":
            out.append(np.eye(x.size))
        elif name == "green":
            out.append(np.minimum(x[:, None], x[None, :]) - np.outer(x, x))
        elif name in ("matern52", "rbf"):
            try:
                ell = float(arg)
            except ValueError:
                raise ValueError(f"kinds: {kind!r} needs a length scale, e.g. '{name}:0.1'") from None
            if not ell > 0:
                raise ValueError(f"kinds: length scale must be > 0 in {kind!r}")
            s = D / ell
            out.append(
                (1 + np.sqrt(5) * s + 5 * s**2 / 3) * np.exp(-np.sqrt(5) * s)
                if name == "matern52"
                else np.exp(-0.5 * s**2)
            )
        else:
            raise ValueError(f"kinds: unknown kernel {kind!r}")
    return np.stack(out)


class KernelDictionaryPreconditioner(nn.Module):
    """Ablation "Flexformer-static": ``P = Σ_m θ_m Φ_m`` with a fixed dictionary (task-independent).

    Parameters
    ----------
    dictionary : ndarray (m, K, K)
        From :func:`kernel_dictionary`.
    P_init : ndarray (K, K), optional
        ``θ`` starts at the least-squares fit ``argmin_θ ‖Σ θ_m Φ_m − P_init‖_F`` (else 0).
    """

    def __init__(self, dictionary: np.ndarray, P_init: np.ndarray | None = None) -> None:
        super().__init__()
        Phi = np.asarray(dictionary, dtype=float)
        if Phi.ndim != 3 or Phi.shape[1] != Phi.shape[2] or not np.all(np.isfinite(Phi)):
            raise ValueError(f"dictionary: expected a finite array of shape (m, K, K), got {Phi.shape}")
        m = Phi.shape[0]
        theta = np.zeros(m)
        if P_init is not None:
            P0 = np.asarray(P_init, dtype=float)
            if P0.shape != Phi.shape[1:]:
                raise ValueError(f"P_init: expected shape {Phi.shape[1:]}, got {P0.shape}")
            theta = np.linalg.lstsq(Phi.reshape(m, -1).T, P0.ravel(), rcond=None)[0]
        self.register_buffer("Phi", torch.as_tensor(Phi, dtype=DTYPE))
        self.theta = nn.Parameter(torch.as_tensor(theta, dtype=DTYPE))

    def preconditioner(self, H: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """``Σ_m θ_m Φ_m`` broadcast to (B, K, K)."""
        return torch.einsum("m,mij->ij", self.theta, self.Phi).expand(H.shape[0], -1, -1)

    def forward(self, H: torch.Tensor, d: torch.Tensor, L: int) -> torch.Tensor:
        """Iterates ``x_0 = 0, …, x_L``, shape (B, L + 1, K)."""
        return richardson_unroll(self.preconditioner(H, d), H, d, L=L)


def richardson_unroll(P: torch.Tensor, H: torch.Tensor, d: torch.Tensor, *, L: int) -> torch.Tensor:
    """``x_{ℓ+1} = x_ℓ + P(d − H x_ℓ)`` from ``x_0 = 0``; returns (B, L + 1, K) (differentiable).

    The matrix-vector products are written as a broadcast product and a sum over the last axis: for
    the small ``K`` of these systems torch's batched matrix-vector product (``bmm``) calls one small
    GEMM per task and is slower per Adam step of the Flexformer (``benchmarks/bench_paper_scale.py``
    measures by how much); the result agrees to rounding.
    """
    L = positive_int(L, "L", 0)
    x = torch.zeros_like(d)
    out = [x]
    for _ in range(L):
        r = d - (H * x[:, None, :]).sum(-1)
        x = x + (P * r[:, None, :]).sum(-1)
        out.append(x)
    return torch.stack(out, dim=1)


def depth_loss(model: nn.Module, H: torch.Tensor, d: torch.Tensor, *, x_star: torch.Tensor, L: int) -> torch.Tensor:
    """``(1/K) mean_b ‖x_L − x⋆‖²`` (main paper §3.1, MMNN report §4.2), a scalar tensor."""
    xL = model(H, d, L)[:, -1]
    return ((xL - x_star) ** 2).sum(-1).mean() / H.shape[-1]


@dataclass(frozen=True)
class TrainingResult:
    """Training curve of :func:`train_preconditioner`.

    Attributes
    ----------
    loss : ndarray (steps,)
        Mini-batch depth-``L`` loss at each step (before the update).
    seconds : float
        Wall-clock training time.
    """

    loss: np.ndarray
    seconds: float


TaskSampler = Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]


def train_preconditioner(
    model: nn.Module,
    sample_tasks: TaskSampler,
    L: int,
    *,
    steps: int,
    batch: int,
    lr: float,
    rng: np.random.Generator,
    max_grad_norm: float = 10.0,
    progress: dict[str, object] | None = None,
    device: str | torch.device = "cpu",
) -> TrainingResult:
    """Adam on the unrolled depth-``L`` loss, a fresh batch of tasks at every step.

    The model trains on ``device`` (the tasks are drawn by ``rng`` on the CPU and then moved) and is
    moved back to the CPU at the end, where :func:`preconditioners_numpy` and the diagnostics use it.

    Parameters
    ----------
    model : Flexformer or KernelDictionaryPreconditioner
    sample_tasks : callable ``(n, rng) -> (H (n, K, K), d (n, K), x_star (n, K))``
    L, steps, batch : int
    lr : float
        Adam step size, decayed by a cosine schedule to ``lr/100``.
    rng : numpy.random.Generator or int
        Source of the tasks (an integer is a seed for :func:`numpy.random.default_rng`).
    max_grad_norm : float
        Gradient-norm clipping (guards the first steps, where ``ρ > 1`` tasks explode).
    progress : dict, optional
        Counters shown before ``step k/steps`` in the runner's status line (e.g. ``{"model": (2, 4)}``;
        :func:`iclcore.progress.report_progress`).
    """
    L = positive_int(L, "L")
    steps = positive_int(steps, "steps")
    cfg = TrainConfig(
        steps=steps,
        lr=positive_float(lr, "lr"),
        optimizer="adam",
        batch=batch,
        clip=max_grad_norm,
        schedule="cosine",
        nonfinite="raise",
    )
    rng = as_generator(rng)
    device = torch_device(device)
    model.to(device)

    def batch_loss(_step: int) -> torch.Tensor:
        H, d, xs = (_as_tensor(a, n).to(device) for a, n in zip(sample_tasks(cfg.batch, rng), ("H", "d", "x_star")))
        return depth_loss(model, H, d, x_star=xs, L=L)

    t0 = time.perf_counter()
    log = train_loop([p for p in model.parameters() if p.requires_grad], batch_loss, cfg, progress=progress)
    model.to("cpu")
    return TrainingResult(loss=log.loss, seconds=time.perf_counter() - t0)


def preconditioners_numpy(model: nn.Module, H: np.ndarray, d: np.ndarray, *, chunk: int = 1024) -> np.ndarray:
    """The frozen per-task matrices ``P_Θ(H, d)`` as a numpy array (n, K, K)."""
    H = np.asarray(H, dtype=float)
    d = np.asarray(d, dtype=float)
    if H.ndim != 3 or d.shape != H.shape[:2]:
        raise ValueError(f"H, d: expected shapes (n, K, K) and (n, K), got {H.shape} and {d.shape}")
    out = []
    dev = next(model.parameters()).device
    with torch.no_grad():
        for a in range(0, H.shape[0], chunk):
            Ha, da = _as_tensor(H[a : a + chunk], "H").to(dev), _as_tensor(d[a : a + chunk], "d").to(dev)
            out.append(model.preconditioner(Ha, da).cpu().numpy())
    return np.concatenate(out)


# --------------------------------------------------------------------------------------------
# one training run as an independent task (iclcore.parallel.map_configs)
# --------------------------------------------------------------------------------------------


def _prompt_triples(config: TaskConfig, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = sample_prompt_statistics(config, n, rng)
    return p.H_M, p.d, p.z_star


def prompt_sampler(config: TaskConfig) -> TaskSampler:
    """The :data:`TaskSampler` ``(n, rng) -> (H_M (n, K, K), d (n, K), z_star (n, K))`` of the decoder's
    Gaussian prompts (:func:`iclcore.lsq.tasks.sample_prompt_statistics`), picklable (a task can carry it)."""
    if not isinstance(config, TaskConfig):
        raise TypeError(f"config: expected a TaskConfig, got {type(config).__name__}")
    return partial(_prompt_triples, config)


def _latent_triples(
    model: LowRankModel, U: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    A, d, z_dag = latent_systems(U, sample_lowrank_prompts(model, n, rng))
    return A[0], d[0], z_dag[0]


def latent_prompt_sampler(model: LowRankModel, U: np.ndarray) -> TaskSampler:
    """The :data:`TaskSampler` of the encoder-decoder's latent decoder, picklable (a task can carry it).

    ``(n, rng) -> (A (n, r, r), d (n, r), z_dag (n, r))``: ``n`` fresh prompts of the low-rank model
    (:func:`iclcore.lsq.lowrank.sample_lowrank_prompts`) projected on the encoder subspace ``U``
    (K, r): ``A = U^T H_M U``, ``d = U^T c_M``, ``z_dag = A^{-1} d`` (main paper §6.1;
    :func:`iclcore.lsq.lowrank.latent_systems`).

    Parameters
    ----------
    model : LowRankModel
        The prompt distribution (ambient dimension ``K``).
    U : ndarray (K, r)
        The encoder subspace.

    Returns
    -------
    TaskSampler
        ``partial`` of a module-level function: pickled by name with ``model`` and ``U``.
    """
    if not isinstance(model, LowRankModel):
        raise TypeError(f"model: expected a LowRankModel, got {type(model).__name__}")
    U = np.asarray(U, float)
    if U.ndim != 2 or U.shape[0] != model.K:
        raise ValueError(f"U: expected shape (K, r) with K={model.K}, got {U.shape}")
    return partial(_latent_triples, model, U)


@dataclass(frozen=True, eq=False)
class PreconditionerJob:
    """Arguments of one :func:`train_preconditioner` run: the model (trained in place where the job
    runs), a picklable task sampler, ``L, steps, batch, lr``, the task seed ``seed``
    (``np.random.default_rng(seed)``), the progress counters and the torch device it trains on."""

    model: nn.Module
    sample_tasks: TaskSampler
    L: int
    steps: int
    batch: int
    lr: float
    seed: int
    progress: dict[str, object] | None = None
    device: str = "cpu"


def train_preconditioner_job(job: PreconditionerJob) -> tuple[nn.Module, TrainingResult]:
    """Run ``job`` (:func:`train_preconditioner`); the trained model and its :class:`TrainingResult`.

    A pure function of the job (a task of :func:`iclcore.parallel.map_configs`): in another process
    the model comes back as a trained copy with the same bits (one torch thread), here it is the
    job's own model, trained in place.
    """
    res = train_preconditioner(
        job.model,
        job.sample_tasks,
        job.L,
        steps=job.steps,
        batch=job.batch,
        lr=job.lr,
        rng=np.random.default_rng(job.seed),
        progress=job.progress,
        device=job.device,
    )
    return job.model, res


# --------------------------------------------------------------------------------------------
# the ablation family of the decoder chapters, trained side by side, and its frozen identity
# --------------------------------------------------------------------------------------------

#: The variants :func:`flexformer_variants` builds.
VARIANTS = ("flex", "flex_heads_off", "free", "flex_static")
#: The fixed kernel dictionary of the ``flex_static`` variant (:func:`kernel_dictionary` kinds).
STATIC_KERNELS = ("identity", "matern52:0.1", "matern52:0.3", "rbf:0.5")


def flexformer_variants(
    K: int,
    P_init: np.ndarray,
    *,
    rank: int,
    n_heads: int,
    d_k: int,
    seed: int,
    variants: tuple[str, ...] = VARIANTS,
    kernels: tuple[str, ...] = STATIC_KERNELS,
) -> dict[str, nn.Module]:
    """The Flexformer and its ablations, each warm-started at the same ``P_init`` (MMNN report §4.3 Table 2).

    * ``flex``: :class:`Flexformer` with a rank-``rank`` static part and ``n_heads`` heads;
    * ``flex_heads_off``: the same without heads (a rank-``rank`` linear ``P = UVᵀ``);
    * ``free``: a full-rank linear ``P`` (rank ``K``, no heads);
    * ``flex_static``: :class:`KernelDictionaryPreconditioner` on the dictionary ``kernels`` at the
      index positions ``(j + 1/2)/K``, started at the least-squares fit of ``P_init``.

    Every Flexformer draws its attention weights from ``torch.Generator().manual_seed(seed)``.

    Parameters
    ----------
    K : int
        System size.
    P_init : ndarray (K, K)
        The common warm start (e.g. the L-BFGS free linear ``P`` of the baselines).
    variants : tuple of str
        A subset of :data:`VARIANTS`, in the order of the returned dict.

    Returns
    -------
    dict[str, torch.nn.Module]
    """
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"variants: unknown {unknown}; choose from {VARIANTS}")

    def build(name: str) -> nn.Module:
        if name == "flex_static":
            return KernelDictionaryPreconditioner(kernel_dictionary((np.arange(K) + 0.5) / K, kernels), P_init=P_init)
        config = {
            "flex": FlexformerConfig(K=K, rank=rank, n_heads=n_heads, d_k=d_k),
            "flex_heads_off": FlexformerConfig(K=K, rank=rank, n_heads=0, d_k=d_k),
            "free": FlexformerConfig(K=K, rank=K, n_heads=0),
        }[name]
        return Flexformer(config, torch.Generator().manual_seed(seed), P_init=P_init)

    return {name: build(name) for name in variants}


def train_preconditioners(
    models: dict[str, nn.Module],
    sample_tasks: TaskSampler,
    L: int,
    *,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    device: str = "cpu",
    workers: int = 1,
    cost: Callable[[PreconditionerJob], float] | None = None,
    label: str = "",
) -> tuple[dict[str, nn.Module], dict[str, TrainingResult]]:
    """Train every model of ``models`` through the ``L`` steps on the same fresh tasks, as independent tasks.

    Model ``i`` (in dict order) is :func:`train_preconditioner_job` with task seed ``seed + 1 + i``
    and the same ``steps``, ``batch``, ``lr`` and ``device`` (Adam through the ``L`` Richardson steps,
    MMNN report §4.3: every variant sees the same fresh tasks); the jobs run through
    :func:`iclcore.parallel.map_configs` (``workers``, ``cost`` and ``label`` as there).

    Returns
    -------
    (models, curves) : dicts keyed as ``models``
        The trained models and their :class:`TrainingResult`.
    """
    if not models:
        raise ValueError("models: expected at least one model to train")
    n = len(models)
    jobs = [
        PreconditionerJob(model, sample_tasks, L, steps, batch, lr, seed + 1 + i, {"model": (i + 1, n)}, device=device)
        for i, model in enumerate(models.values())
    ]
    trained = map_configs(train_preconditioner_job, jobs, workers, cost=cost, label=label)
    return (
        {name: model for name, (model, _) in zip(models, trained)},
        {name: res for name, (_, res) in zip(models, trained)},
    )


def frozen_identity_gap(
    model: nn.Module, H: np.ndarray, d: np.ndarray, *, L: int, P: np.ndarray | None = None
) -> float:
    """Relative gap between the unrolled model and ``x_L = x† − (I − P_Θ H)^L x†`` (MMNN report §4.2).

    For a frozen task the model's ``P_Θ(H, d)`` is a fixed matrix, so its ``L`` Richardson steps from
    ``x_0 = 0`` obey the identity exactly: the gap is rounding.

    Parameters
    ----------
    model : torch.nn.Module
        A preconditioner model (``model(H, d, L)`` gives the iterates (n, L + 1, K)), on the CPU.
    H : ndarray (n, K, K)
    d : ndarray (n, K)
    L : int
    P : ndarray (n, K, K), optional
        The extracted ``P_Θ(H, d)`` (default :func:`preconditioners_numpy`).

    Returns
    -------
    float
        ``max |x_L(model) − x_L(identity)| / max |x†|`` with ``x† = H^{-1} d``.
    """
    H = np.asarray(H, dtype=float)
    d = np.asarray(d, dtype=float)
    P = preconditioners_numpy(model, H, d) if P is None else np.asarray(P, dtype=float)
    if P.shape != H.shape:
        raise ValueError(f"P: expected shape {H.shape}, one matrix per task, got {P.shape}")
    with torch.no_grad():
        xL_model = model(torch.as_tensor(H), torch.as_tensor(d), L)[:, -1].numpy()
    x_dagger = np.linalg.solve(H, d[..., None])[..., 0]
    T = np.eye(H.shape[1]) - P @ H
    xL_identity = x_dagger - (np.linalg.matrix_power(T, L) @ x_dagger[..., None])[..., 0]
    return float(np.max(np.abs(xL_model - xL_identity)) / np.max(np.abs(x_dagger)))
