"""One training configuration and one training loop for every model trained by backprop.

Every model of the book that is trained by gradient descent goes through :func:`train_loop`:
the toy transformers (:func:`~iclcore.models.toy_transformers.train_icl`,
:func:`~iclcore.models.toy_transformers.train_grokking`), the attention stacks of the DMFT
chapters (:func:`~iclcore.models.attention.train`), the Flexformer
(:func:`~iclcore.models.flexformer.train_preconditioner`), the probe-query softmax layer
(:func:`~iclcore.models.softmax.train_attention`), the one-layer LSA of the von Oswald
construction (:func:`iclcore.gd.construction.train_one_layer_lsa`) and the depth-probe models
(:func:`iclcore.gd.depth_probe.train_with_checkpoints`).

Step ``k = 0..steps-1`` of the loop, from the parameters ``θ_k`` (state ``k``, after ``k`` updates):

1. ``ℓ_k = batch_loss(k)`` (the caller draws the batch of step ``k`` from its own generator);
2. ``on_loss(k, ℓ_k)`` (before the update: the loss and the parameters of state ``k``);
3. non-finite policy ``"raise"``: stop with :class:`FloatingPointError` if ``ℓ_k`` is not finite;
4. zero the gradients, ``∇ℓ_k`` by backprop, clip its norm to ``clip`` (if set);
5. the optimizer step ``θ_{k+1} = θ_k - lr_k u_k`` (skipped under policy ``"skip"`` when ``ℓ_k`` or
   the gradient norm is not finite), then the learning-rate schedule's step;
6. ``on_checkpoint(k + 1)`` if ``k + 1`` is a checkpoint (``on_checkpoint(0)`` comes before step 0).

The learning rate of step ``k`` is ``lr · f(k)`` with ``f`` the schedule: ``"constant"``
(``f = 1``), ``"warmup"`` (``f(k) = min(1, (k+1)/warmup)``), ``"cosine"`` (torch's
``CosineAnnealingLR`` from ``lr`` to ``lr/100`` over ``steps``), or a caller's ``lr_factor(k)``.
Each step is exactly torch's optimizer step with these settings, in this order (the tests compare
every training with the same steps written out one by one), so the results do not depend on which
notebook trains the model.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclcore.progress import report_progress
from iclcore.validation import nonnegative_float, positive_float, positive_int

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "NONFINITE",
    "TrainConfig",
    "TrainLog",
    "cadence_steps",
    "to_device",
    "torch_device",
    "train_loop",
]

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "warmup", "cosine")
NONFINITE = ("ignore", "raise", "skip")


_DEVICE_RE = re.compile(r"(cpu|cuda|mps)(:[0-9]+)?")


def torch_device(device: str | torch.device) -> torch.device:
    """The device ``device`` names (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a ``torch.device``).

    A one-line ``ValueError`` naming ``device`` for any other string and for a device this machine does
    not have (``"cuda"`` without a CUDA GPU, ``"cuda:7"`` with fewer than eight).
    """
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str) and _DEVICE_RE.fullmatch(device):
        dev = torch.device(device)
    else:
        raise ValueError(f"device: not a torch device: {device!r}; expected 'cpu', 'cuda', 'cuda:N' or 'mps'")
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(
                f"device: {device!r} but this machine has no CUDA device (torch {torch.__version__}); use 'cpu'"
            )
        if (dev.index or 0) >= count:
            raise ValueError(
                f"device: {device!r} but this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}"
            )
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device: {device!r} but this machine has no MPS device; use 'cpu'")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device: unsupported device type {dev.type!r}; expected 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return dev


def to_device(batch: Any, device: str | torch.device) -> Any:
    """``batch`` with every tensor moved to ``device``: a tensor, or a dataclass, tuple or list of them
    (other fields unchanged; a tensor already there is returned as is).

    Batches are drawn on the CPU from the caller's ``torch.Generator`` and moved afterwards, so the
    data of a training do not depend on the device it runs on.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        moved = {
            f.name: to_device(getattr(batch, f.name), device)
            for f in dataclasses.fields(batch)
            if f.init and isinstance(getattr(batch, f.name), (torch.Tensor, tuple, list))
        }
        return dataclasses.replace(batch, **moved) if moved else batch
    if isinstance(batch, (tuple, list)) and any(isinstance(b, torch.Tensor) for b in batch):
        moved = [to_device(b, device) for b in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch


@dataclass(frozen=True)
class TrainConfig:
    """Settings of :func:`train_loop`.

    Attributes
    ----------
    steps : int
        Number of optimizer steps (``>= 0``; ``0`` only evaluates the initial model).
    lr : float
        Base learning rate (``> 0``).
    optimizer : {"sgd", "adam", "adamw"}
        Plain SGD, Adam, or AdamW (decoupled weight decay), torch's implementations.
    batch : int
        Prompts (or sequences) per step, read by the caller's batch sampler.
    betas : (float, float)
        Adam/AdamW moment decays (ignored by SGD).
    weight_decay : float
        ``>= 0``; L2 for SGD/Adam, decoupled for AdamW.
    clip : float or None
        Maximum gradient norm (``torch.nn.utils.clip_grad_norm_``), or no clipping.
    schedule : {"constant", "warmup", "cosine"}
        Learning-rate schedule (module docstring).
    warmup : int
        Warm-up length of ``schedule="warmup"`` (``0`` and ``1`` mean none).
    log_every : int
        Cadence of the caller's logs and checkpoints (:func:`cadence_steps`).
    nonfinite : {"ignore", "raise", "skip"}
        What a non-finite loss does: nothing, stop with :class:`FloatingPointError` naming ``lr``,
        or skip the optimizer step (also for a non-finite gradient norm; counted in :class:`TrainLog`).
    fused : bool
        Adam/AdamW through torch's fused kernel (every parameter updated in one kernel instead of a
        loop of small operations): the same update to rounding, faster for models of many small
        tensors. Only with ``optimizer="adam"`` or ``"adamw"``.
    """

    steps: int
    lr: float
    optimizer: str = "sgd"
    batch: int = 64
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    clip: float | None = None
    schedule: str = "constant"
    warmup: int = 0
    log_every: int = 1
    nonfinite: str = "ignore"
    fused: bool = False

    def __post_init__(self) -> None:
        positive_int(self.steps, "steps", minimum=0)
        positive_float(self.lr, "lr")
        positive_int(self.batch, "batch")
        positive_int(self.warmup, "warmup", minimum=0)
        positive_int(self.log_every, "log_every")
        nonnegative_float(self.weight_decay, "weight_decay")
        if self.clip is not None:
            positive_float(self.clip, "clip")
        if len(self.betas) != 2 or not all(0 <= nonnegative_float(b, "betas") < 1 for b in self.betas):
            raise ValueError(f"betas: expected two decays in [0, 1), got {self.betas!r}")
        for name, allowed in (("optimizer", OPTIMIZERS), ("schedule", SCHEDULES), ("nonfinite", NONFINITE)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: unknown {name} {getattr(self, name)!r}; choose one of {allowed}")
        if not isinstance(self.fused, bool) or (self.fused and self.optimizer == "sgd"):
            raise ValueError(f"fused: expected a bool, True only with adam or adamw, got {self.fused!r}")


@dataclass(frozen=True)
class TrainLog:
    """What :func:`train_loop` returns: ``loss (steps,)``, the loss ``ℓ_k`` of each step before its
    update, and the number of skipped (non-finite) steps."""

    loss: np.ndarray
    skipped: int


def cadence_steps(steps: int, every: int) -> list[int]:
    """``0, every, 2 every, ... <= steps``: the states logged at a fixed cadence."""
    return list(range(0, positive_int(steps, "steps", minimum=0) + 1, positive_int(every, "every")))


def _optimizer(params: list[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    kind = torch.optim.Adam if cfg.optimizer == "adam" else torch.optim.AdamW
    fused = {"fused": True} if cfg.fused else {}
    return kind(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay, **fused)


def _scheduler(opt: torch.optim.Optimizer, cfg: TrainConfig) -> torch.optim.lr_scheduler.LRScheduler | None:
    if cfg.schedule == "warmup":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, cfg.warmup)))
    if cfg.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.steps, eta_min=cfg.lr / 100)
    return None


def train_loop(
    params: Iterable[torch.nn.Parameter],
    batch_loss: Callable[[int], torch.Tensor],
    cfg: TrainConfig,
    *,
    on_loss: Callable[[int, torch.Tensor], None] | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
    checkpoints: Collection[int] = (),
    lr_factor: Callable[[int], float] | None = None,
    progress: Mapping[str, object] | None = None,
    count_from: int = 1,
) -> TrainLog:
    """Train ``params`` for ``cfg.steps`` steps (the step of the module docstring).

    Parameters
    ----------
    params : parameters to optimise (also the ones whose gradient norm is clipped)
    batch_loss : ``k -> ℓ_k``, a scalar tensor: draws step ``k``'s batch and evaluates the loss
    cfg : TrainConfig
    on_loss : ``(k, ℓ_k)`` after the forward pass of step ``k``, before its update
    on_checkpoint : ``k`` at every state ``k`` in ``checkpoints`` (``0 <= k <= steps``), under ``torch.no_grad``
    lr_factor : ``k -> f(k)``: step ``k`` runs at ``lr · f(k)`` (only with ``schedule="constant"``)
    progress : counters shown before ``step (k + count_from)/steps`` in the runner's status line
        (:func:`iclcore.progress.report_progress`; nothing happens outside the runner)

    Returns
    -------
    TrainLog with ``loss (steps,)`` and the number of skipped steps.
    """
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg: expected an iclcore.models.training.TrainConfig, got {type(cfg).__name__}")
    if lr_factor is not None and cfg.schedule != "constant":
        raise ValueError(f"lr_factor: only with schedule='constant', got schedule={cfg.schedule!r}")
    params = list(params)
    opt = _optimizer(params, cfg)
    sched = _scheduler(opt, cfg)
    marks = set(checkpoints)
    losses, skipped = np.empty(cfg.steps), 0

    def checkpoint(k: int) -> None:
        if on_checkpoint is not None and k in marks:
            with torch.no_grad():
                on_checkpoint(k)

    checkpoint(0)
    for k in range(cfg.steps):
        report_progress(**(progress or {}), step=(k + count_from, cfg.steps))
        loss = batch_loss(k)
        if on_loss is not None:
            on_loss(k, loss)
        if cfg.nonfinite == "raise" and not torch.isfinite(loss):
            raise FloatingPointError(f"lr: training diverged at step {k} (loss {loss.item()}); lower lr={cfg.lr}")
        if lr_factor is not None:
            for group in opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(k)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(params, cfg.clip) if cfg.clip is not None else None
        if cfg.nonfinite == "skip" and not (torch.isfinite(loss) and (gn is None or torch.isfinite(gn))):
            skipped += 1
        else:
            opt.step()
        if sched is not None:
            sched.step()
        losses[k] = loss.item()
        checkpoint(k + 1)
    return TrainLog(loss=losses, skipped=skipped)
