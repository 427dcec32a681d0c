"""Small non-linear transformers trained here, for the probes of Mainali & Teixeira §4 (Figs. 3B, 5-7).

Mainali & Teixeira applies its probes to pretrained checkpoints (attention-only models of 1-4 layers,
and a modular-addition grokking model); none can be downloaded here, so this module trains
CPU-sized stand-ins from scratch (all choices ours):

* :class:`AttnOnlyTransformer` — attention-only transformer (no MLP), pre-LayerNorm, causal
  softmax attention, learned positional embeddings, untied unembedding, 1-4 layers.
  Task (:func:`periodic_batch`): sequences that repeat a random block of ``period`` tokens,
  ``period`` drawn per sequence; predicting late tokens needs in-context copying (an
  induction mechanism, >= 2 layers), a 1-layer model can only use in-context unigram
  statistics. ``init_scale`` multiplies the attention weights' default init (small init
  puts the network in the regime of the linear theory: plateau, then abrupt learning).
* :class:`GrokTransformer` — one layer (attention + ReLU MLP, no LayerNorm) on
  ``(a, b, =) -> (a + b) mod p``, full-batch AdamW with strong weight decay, as in Nanda
  et al. (2023), scaled down.

Per-head matrices for the probes (row-vector convention ``x W``):
``OV_h = W_V^h W_O^h`` and ``QK_h = W_Q^h (W_K^h)^T``, each ``d_model x d_model`` of rank
``<= d_head``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclcore.models.training import TrainConfig, cadence_steps, to_device, torch_device, train_loop
from iclcore.validation import positive_int

__all__ = [
    "AttnConfig",
    "AttnOnlyTransformer",
    "embed_tokens",
    "periodic_batch",
    "ICLRun",
    "train_icl",
    "GrokConfig",
    "GrokTransformer",
    "modular_addition_split",
    "GrokRun",
    "train_grokking",
    "head_matrices",
    "emergence_window",
    "ToyModelJob",
    "train_toy_model",
    "toy_model_cost",
]


class _Attention(nn.Module):
    """Multi-head causal softmax attention with per-head weight tensors (H, d_model, d_head)."""

    def __init__(self, d_model: int, n_heads: int, d_head: int, init_scale: float, generator: torch.Generator):
        super().__init__()
        std = init_scale / math.sqrt(d_model)

        def w(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=generator) * std)

        self.W_Q, self.W_K, self.W_V = (
            w(n_heads, d_model, d_head),
            w(n_heads, d_model, d_head),
            w(n_heads, d_model, d_head),
        )
        self.W_O = w(n_heads, d_head, d_model)
        self.d_head = d_head

    def forward(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        """Attention output, shape ``(B, T, d_model)``, or ``(B, d_model)`` for the last position only.

        All heads' ``Q, K, V`` come from one product with the stacked ``(d_model, 3 H d_head)``
        weights, and the causal softmax attention is torch's fused
        :func:`~torch.nn.functional.scaled_dot_product_attention` (scale ``1/sqrt(d_head)``): the
        same function as the per-head einsums with an explicit mask, in a few large kernels
        instead of many small ones. ``last_only`` computes only the last query row (it attends
        to every position, so no mask is needed; with a few positions, as in the grokking
        model, elementwise products beat the batched kernels).
        """
        B, T, d = x.shape
        H, dh = self.W_Q.shape[0], self.d_head
        w_qkv = torch.cat([self.W_Q, self.W_K, self.W_V], dim=0).permute(1, 0, 2).reshape(d, 3 * H * dh)
        w_o = self.W_O.reshape(H * dh, d)
        if last_only:
            kv = (x @ w_qkv[:, H * dh :]).view(B, T, 2, H, dh).permute(2, 0, 3, 1, 4)  # (2, B, H, T, dh)
            q = (x[:, -1] @ w_qkv[:, : H * dh]).view(B, H, 1, dh)
            a = ((q * kv[0]).sum(-1, keepdim=True) / math.sqrt(dh)).softmax(-2)  # (B, H, T, 1): one query row
            return (a * kv[1]).sum(-2).reshape(B, H * dh) @ w_o
        q, k, v = (x @ w_qkv).view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)  # each (B, H, T, dh)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(B, T, H * dh) @ w_o


def embed_tokens(embed: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Embedding lookup ``embed[tokens]`` written as a one-hot matrix product.

    Indexing would give the same forward values, but its backward pass accumulates
    into the embedding rows in a thread-dependent order, so a multi-threaded run is not
    reproducible (the grokking run amplifies the rounding differences into different
    training curves). The product is deterministic for a fixed thread count.

    Parameters
    ----------
    embed : Tensor, shape (V, d)
    tokens : LongTensor, shape (B, T) with entries in ``[0, V)``

    Returns
    -------
    Tensor, shape (B, T, d)
    """
    return F.one_hot(tokens, embed.shape[0]).to(embed.dtype) @ embed


def _at_least_one(cfg: object, names: tuple[str, ...]) -> None:
    """Raise ``ValueError`` naming the first field of ``cfg`` in ``names`` that is not a positive integer."""
    for name in names:
        positive_int(getattr(cfg, name), name)


@dataclass(frozen=True)
class AttnConfig:
    """Attention-only model and periodic task (defaults: the quick preset)."""

    n_layers: int = 2
    d_model: int = 32
    n_heads: int = 2
    d_head: int = 16
    vocab: int = 16
    seq_len: int = 32
    min_period: int = 3
    max_period: int = 12
    init_scale: float = 0.1
    lr: float = 3e-3
    batch: int = 32
    steps: int = 400
    log_every: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.n_layers <= 8:
            raise ValueError(f"n_layers: expected 1..8, got {self.n_layers}")
        _at_least_one(self, ("d_model", "n_heads", "d_head", "vocab", "seq_len", "batch", "steps", "log_every"))
        if not 1 <= self.min_period <= self.max_period < self.seq_len:
            raise ValueError("min_period, max_period: need 1 <= min_period <= max_period < seq_len")
        if self.lr <= 0 or self.init_scale <= 0:
            raise ValueError("lr, init_scale: must be > 0")

    def training(self) -> TrainConfig:
        """The training settings of :func:`train_icl`: AdamW (weight decay 0), constant ``lr``."""
        return TrainConfig(steps=self.steps, lr=self.lr, optimizer="adamw", batch=self.batch, log_every=self.log_every)


class AttnOnlyTransformer(nn.Module):
    """Attention-only transformer: embed + positions, ``n_layers`` x (LN -> attention ->
    residual), final LN, unembed. Logits shape (batch, T, vocab)."""

    def __init__(self, cfg: AttnConfig, generator: torch.Generator):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Parameter(torch.randn(cfg.vocab, cfg.d_model, generator=generator) / math.sqrt(cfg.d_model))
        self.pos = nn.Parameter(torch.randn(cfg.seq_len, cfg.d_model, generator=generator) / math.sqrt(cfg.d_model))
        self.lns = nn.ModuleList([nn.LayerNorm(cfg.d_model) for _ in range(cfg.n_layers)])
        self.attn = nn.ModuleList(
            [_Attention(cfg.d_model, cfg.n_heads, cfg.d_head, cfg.init_scale, generator) for _ in range(cfg.n_layers)]
        )
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Parameter(torch.randn(cfg.d_model, cfg.vocab, generator=generator) / math.sqrt(cfg.d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = embed_tokens(self.embed, tokens) + self.pos[: tokens.shape[1]]
        for ln, at in zip(self.lns, self.attn):
            x = x + at(ln(x))
        return self.ln_f(x) @ self.unembed


def periodic_batch(cfg: AttnConfig, batch: int, generator: torch.Generator) -> torch.Tensor:
    """Sequences ``x_t = r_{t mod L}`` with a random block ``r`` (iid uniform tokens) and a
    random period ``L`` in ``[min_period, max_period]`` per sequence. Shape (batch, seq_len)."""
    L = torch.randint(cfg.min_period, cfg.max_period + 1, (batch, 1), generator=generator)
    r = torch.randint(0, cfg.vocab, (batch, cfg.max_period), generator=generator)
    idx = torch.arange(cfg.seq_len)[None, :] % L
    return torch.gather(r, 1, idx)


def head_matrices(attn: _Attention) -> tuple[np.ndarray, np.ndarray]:
    """Per-head ``OV_h = W_V^h W_O^h`` and ``QK_h = W_Q^h W_K^h^T``, each (H, d_model, d_model), float64."""
    with torch.no_grad():
        ov = (attn.W_V @ attn.W_O).double().cpu().numpy()
        qk = (attn.W_Q @ attn.W_K.transpose(-1, -2)).double().cpu().numpy()
    return ov, qk


@dataclass
class ICLRun:
    """Logs of :func:`train_icl`.

    steps : (T,) log steps; late_loss, early_loss : (T,) evaluation loss on the last and first
    quarter of positions (fixed evaluation batch); icl_score : late - early;
    ov, qk : (T, n_layers, H, d_model, d_model) per-head matrices at the log steps."""

    steps: np.ndarray
    late_loss: np.ndarray
    early_loss: np.ndarray
    icl_score: np.ndarray
    ov: np.ndarray
    qk: np.ndarray
    config: AttnConfig
    seconds: float


def train_icl(
    cfg: AttnConfig, seed: int = 0, progress: dict[str, object] | None = None, *, device: str | torch.device = "cpu"
) -> ICLRun:
    """Train an :class:`AttnOnlyTransformer` on :func:`periodic_batch` with AdamW
    (weight decay 0), logging evaluation losses and per-head OV/QK matrices. The model trains on
    ``device``; every batch is drawn on the CPU and then moved.

    ``progress`` (e.g. ``{"depth": (2, 4)}``) is shown before ``step k/steps`` in the runner's
    status line (:func:`iclcore.progress.report_progress`)."""
    import time

    t0 = time.time()
    gen = torch.Generator().manual_seed(seed)
    device = torch_device(device)
    model = AttnOnlyTransformer(cfg, gen).to(device)
    eval_tokens = periodic_batch(cfg, 256, torch.Generator().manual_seed(seed + 10_000)).to(device)
    q = max(1, cfg.seq_len // 4)
    logs: dict[str, list] = {k: [] for k in ("steps", "late", "early", "ov", "qk")}

    def log(step: int) -> None:
        with torch.no_grad():
            logits = model(eval_tokens[:, :-1])
            nll = F.cross_entropy(logits.transpose(1, 2), eval_tokens[:, 1:], reduction="none").mean(0)
        logs["steps"].append(step)
        logs["early"].append(float(nll[:q].mean()))
        logs["late"].append(float(nll[-q:].mean()))
        mats = [head_matrices(a) for a in model.attn]
        logs["ov"].append(np.stack([m[0] for m in mats]))
        logs["qk"].append(np.stack([m[1] for m in mats]))

    def batch_loss(_step: int) -> torch.Tensor:
        tokens = periodic_batch(cfg, cfg.batch, gen).to(device)
        logits = model(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, cfg.vocab), tokens[:, 1:].reshape(-1))

    train_loop(
        model.parameters(),
        batch_loss,
        cfg.training(),
        on_checkpoint=log,
        checkpoints=cadence_steps(cfg.steps, cfg.log_every),
        progress=progress,
    )
    late, early = np.array(logs["late"]), np.array(logs["early"])
    return ICLRun(
        steps=np.array(logs["steps"]),
        late_loss=late,
        early_loss=early,
        icl_score=late - early,
        ov=np.stack(logs["ov"]),
        qk=np.stack(logs["qk"]),
        config=cfg,
        seconds=time.time() - t0,
    )


def emergence_window(steps: np.ndarray, loss: np.ndarray, lo: float = 0.1, *, hi: float = 0.9) -> tuple[float, float]:
    """Steps at which ``loss`` has covered ``lo`` and ``hi`` of its total drop from its plateau
    (max after the first log point) to its final value (first crossings)."""
    steps = np.asarray(steps, dtype=float)
    loss = np.asarray(loss, dtype=float)
    if steps.shape != loss.shape or steps.size < 3:
        raise ValueError("steps, loss: need equal 1-d shapes with >= 3 points")
    start = loss[1:].max()
    j0 = 1 + int(np.argmax(loss[1:]))
    drop = start - loss[-1]
    if drop <= 0:
        return float("nan"), float("nan")
    out = []
    for f in (lo, hi):
        idx = np.nonzero(loss[j0:] <= start - f * drop)[0]
        out.append(float(steps[j0 + idx[0]]) if idx.size else float("nan"))
    return out[0], out[1]


# --------------------------------------------------------------------------------------
# grokking on modular addition
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrokConfig:
    """One-layer modular-addition transformer (Nanda et al. 2023 architecture, scaled down)."""

    p: int = 23
    frac_train: float = 0.5
    d_model: int = 32
    n_heads: int = 4
    d_head: int = 8
    d_mlp: int = 128
    lr: float = 1e-3
    weight_decay: float = 1.0
    steps: int = 3000
    log_every: int = 50
    warmup: int = 10

    def __post_init__(self) -> None:
        positive_int(self.p, "p", minimum=3)  # the modulus
        if not 0 < self.frac_train < 1:
            raise ValueError(f"frac_train: must lie in (0, 1), got {self.frac_train}")
        _at_least_one(self, ("d_model", "n_heads", "d_head", "d_mlp", "steps", "log_every"))
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError("lr, weight_decay: need lr > 0 and weight_decay >= 0")

    def training(self) -> TrainConfig:
        """The training settings of :func:`train_grokking`: full-batch AdamW, betas (0.9, 0.98),
        linear warm-up over ``warmup`` steps."""
        return TrainConfig(
            steps=self.steps,
            lr=self.lr,
            optimizer="adamw",
            betas=(0.9, 0.98),
            weight_decay=self.weight_decay,
            schedule="warmup",
            warmup=self.warmup,
            log_every=self.log_every,
        )


class GrokTransformer(nn.Module):
    """Tokens (a, b, =) -> logits over p classes at the last position: embedding + positions,
    one attention layer (residual), ReLU MLP (residual) on the last position, unembed."""

    def __init__(self, cfg: GrokConfig, generator: torch.Generator):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Parameter(torch.randn(cfg.p + 1, d, generator=generator) / math.sqrt(d))
        self.pos = nn.Parameter(torch.randn(3, d, generator=generator) / math.sqrt(d))
        self.attn = _Attention(d, cfg.n_heads, cfg.d_head, 1.0, generator)
        self.W_in = nn.Parameter(torch.randn(d, cfg.d_mlp, generator=generator) / math.sqrt(d))
        self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
        self.W_out = nn.Parameter(torch.randn(cfg.d_mlp, d, generator=generator) / math.sqrt(cfg.d_mlp))
        self.unembed = nn.Parameter(torch.randn(d, cfg.p, generator=generator) / math.sqrt(d))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = embed_tokens(self.embed, tokens) + self.pos
        h = x[:, -1] + self.attn(x, last_only=True)  # only the last position is read out
        h = h + F.relu(h @ self.W_in + self.b_in) @ self.W_out
        return h @ self.unembed


def modular_addition_split(cfg: GrokConfig, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """All ``p^2`` pairs ``(a, b, =)`` with labels ``(a + b) mod p``, randomly split into a
    training fraction ``frac_train`` and a test set. Returns (x_train, y_train, x_test, y_test)."""
    p = cfg.p
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    x = torch.stack([a.flatten(), b.flatten(), torch.full((p * p,), p)], dim=1)
    y = (a.flatten() + b.flatten()) % p
    perm = torch.randperm(p * p, generator=torch.Generator().manual_seed(seed))
    n = int(round(cfg.frac_train * p * p))
    return x[perm[:n]], y[perm[:n]], x[perm[n:]], y[perm[n:]]


@dataclass
class GrokRun:
    """Logs of :func:`train_grokking`: steps (T,), train/test loss and accuracy (T,), per-head
    ``ov``, ``qk`` (T, H, d_model, d_model)."""

    steps: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    train_acc: np.ndarray
    test_acc: np.ndarray
    ov: np.ndarray
    qk: np.ndarray
    config: GrokConfig
    seconds: float


def train_grokking(
    cfg: GrokConfig, seed: int = 0, progress: dict[str, object] | None = None, *, device: str | torch.device = "cpu"
) -> GrokRun:
    """Full-batch AdamW (betas 0.9, 0.98, linear warm-up) on modular addition, on ``device`` (the
    split is drawn on the CPU and then moved).

    ``progress``: extra counters for the runner's status line, as in :func:`train_icl`."""
    import time

    t0 = time.time()
    gen = torch.Generator().manual_seed(seed)
    device = torch_device(device)
    model = GrokTransformer(cfg, gen).to(device)
    xtr, ytr, xte, yte = to_device(modular_addition_split(cfg, seed), device)
    logs: dict[str, list] = {k: [] for k in ("steps", "trl", "tel", "tra", "tea", "ov", "qk")}

    def log(step: int) -> None:
        with torch.no_grad():
            lt, le = model(xtr), model(xte)
            logs["trl"].append(float(F.cross_entropy(lt, ytr)))
            logs["tel"].append(float(F.cross_entropy(le, yte)))
            logs["tra"].append(float((lt.argmax(-1) == ytr).float().mean()))
            logs["tea"].append(float((le.argmax(-1) == yte).float().mean()))
        logs["steps"].append(step)
        ov, qk = head_matrices(model.attn)
        logs["ov"].append(ov)
        logs["qk"].append(qk)

    train_loop(
        model.parameters(),
        lambda _step: F.cross_entropy(model(xtr), ytr),
        cfg.training(),
        on_checkpoint=log,
        checkpoints=cadence_steps(cfg.steps, cfg.log_every),
        progress=progress,
    )
    return GrokRun(
        steps=np.array(logs["steps"]),
        train_loss=np.array(logs["trl"]),
        test_loss=np.array(logs["tel"]),
        train_acc=np.array(logs["tra"]),
        test_acc=np.array(logs["tea"]),
        ov=np.stack(logs["ov"]),
        qk=np.stack(logs["qk"]),
        config=cfg,
        seconds=time.time() - t0,
    )


# --------------------------------------------------------------------------------------
# one model of the probes notebook, as an independent task
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToyModelJob:
    """One training of the probes notebook: an attention-only model (``config`` an :class:`AttnConfig`,
    trained by :func:`train_icl`) or the grokking model (a :class:`GrokConfig`, :func:`train_grokking`).

    ``seed``: the training's only source of randomness (initialisation, batches, evaluation batch or
    train/test split, as in those functions); ``progress``: one counter shown in the runner's status
    line while the training runs in the notebook's own process, e.g. ``("depth", (2, 4))``;
    ``device``: the torch device it trains on.
    """

    config: AttnConfig | GrokConfig
    seed: int = 0
    progress: tuple[str, object] = ("model", (1, 1))
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.config, AttnConfig | GrokConfig):
            raise TypeError(f"config: expected an AttnConfig or a GrokConfig, got {type(self.config).__name__}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {self.seed!r}")


def train_toy_model(job: ToyModelJob) -> ICLRun | GrokRun:
    """Train the model of ``job`` with ``job.seed``: :func:`train_icl` for an :class:`AttnConfig`,
    :func:`train_grokking` for a :class:`GrokConfig`.

    Returns the :class:`ICLRun` (``ov, qk``: ``(T, n_layers, H, d_model, d_model)``) or the
    :class:`GrokRun` (``ov, qk``: ``(T, H, d_model, d_model)``) at the ``T`` log steps. A pure
    function of ``job`` except the wall-clock field ``seconds`` (a task of
    :func:`iclcore.parallel.map_configs`): the same bits in any process with one torch thread.
    """
    if not isinstance(job, ToyModelJob):
        raise TypeError(f"job: expected a ToyModelJob, got {type(job).__name__}")
    progress = {job.progress[0]: job.progress[1]}
    if isinstance(job.config, AttnConfig):
        return train_icl(job.config, seed=job.seed, progress=progress, device=job.device)
    return train_grokking(job.config, seed=job.seed, progress=progress, device=job.device)


def toy_model_cost(job: ToyModelJob) -> float:
    """Rough multiply-adds of the training of ``job`` (forward and backward of every step; the logging
    left out), to submit the tasks of :func:`iclcore.parallel.map_configs` longest first."""
    c = job.config
    if isinstance(c, AttnConfig):
        T, hd = c.seq_len - 1, c.n_heads * c.d_head
        per_token = 2 * c.vocab * c.d_model + c.n_layers * (4 * c.d_model * hd + 2 * T * hd)
        return 3.0 * c.steps * c.batch * T * per_token
    hd, d = c.n_heads * c.d_head, c.d_model
    per_example = 3 * (c.p + 1) * d + 8 * d * hd + 2 * d * c.d_mlp + d * c.p
    return 3.0 * c.steps * round(c.frac_train * c.p * c.p) * per_example
