"""Offline miniature of the depth-contraction probe of Nagy §8.2–§8.5.

Task (:func:`sample_probe_tasks`): ``d``-dimensional noise-free linear regression with ``n`` context
pairs, ``w ~ N(0, I)``, ``x ~ N(0, s^2 I)`` with a per-prompt scale ``s ~ LogUniform(s_lo, s_hi)``
(``s_hi/s_lo = 2`` gives ``tr H`` over a ``16x`` range), target ``y* = w^T x_q`` (the least-squares
optimum, since the task is realizable and ``n >= d``).

Models (torch, in :mod:`iclcore.models`):

* :class:`~iclcore.models.lsa.UntiedLSA` -- ``L`` untied residual linear self-attention layers on von Oswald tokens
  ``[x; y]`` with merged matrices ``W_KQ^l, W_PV^l`` (``(d+1) x (d+1)``); every token is updated,
  the query is masked out as a key. The per-layer readout ``yhat_l = -z_q[d]`` is exact and linear
  in ``x_q``.
* :class:`~iclcore.models.gpt_mini.GPTMini` -- a small causal softmax transformer: pre-LayerNorm blocks (attention + GELU
  MLP), learned positions, a learned BOS token, tokens ``[BOS, x_1, y_1, ..., x_n, y_n, x_q]``, trained
  with the all-position loss (predict ``y_i`` at every ``x_i``). The per-layer readout is the shared
  final LayerNorm and head applied to each layer's residual stream (the logit-lens analogue).

Statistics (:func:`readout_statistics`; ``r_l = y* - yhat_l``, ``Delta_l = yhat_{l+1} - yhat_l``,
``l = 0..L`` with ``l = 0`` the embedding-layer readout):

* ``mae_l = mean_p |r_l|``; ``er_abs = mae_0 - mae_L``; ``er_rel = 1 - mae_L/mae_0``.
* ``alpha, intercept, r2``: pooled OLS of ``Delta_l`` on ``r_l`` over prompts and ``l < L``.
* ``sign_agreement``: mean of ``[sign Delta_l = sign r_l]`` over the same pairs.
* ``rho_pred = 1 - alpha``; ``rho_obs = exp(slope)`` of the pooled OLS of ``log|r_l|`` on ``l``.
* ``rel_err_rho = |rho_pred - rho_obs|/rho_obs`` (the paper's 2–11 % statistic) and
  ``rel_err_rate = |(1-rho_pred) - (1-rho_obs)|/(1-rho_obs)`` (the same on the rate scale).
* ``geo_r2``: R^2 of the OLS of ``log mae_l`` on ``l``; ``monotone_fraction = #{l: mae_{l+1} < mae_l}/L``;
  ``mae_rate = (mae_L/mae_0)^{1/L}``.
* ``frac_contracting``: share of prompts whose own slope of ``log|r_l|`` on ``l`` is negative;
  ``curvature_corr``: Pearson correlation across prompts of that slope with ``log tr H`` (GD predicts
  a negative value: higher curvature, faster contraction).

Robust versions (prefix ``med_``; :data:`ROBUST_KEYS`): the statistics above are means over prompts
(``mae_l``) or pooled least-squares fits, in which a prompt weighs by its squared residual, so one
prompt whose readout explodes (the LSA's training loss is heavy-tailed) decides them. The robust
versions give every prompt one vote and take the median over prompts:

* ``med_l{l} = median_p |r_l|``; ``med_er_abs``, ``med_er_rel``, ``med_rate``, ``med_geo_r2`` and
  ``med_monotone_fraction`` are ``er_abs``, ... with ``mae_l`` replaced by ``med_l``;
  ``med_ratio = median_p |r_L|/|r_0|`` (the per-prompt error ratio).
* ``med_alpha = median_p alpha_p`` with the per-prompt least-squares slope
  ``alpha_p = sum_l Delta_l r_l / sum_l r_l^2`` (``l < L``; the pooled slope through the origin is the
  ``sum_l r_l^2``-weighted mean of these); ``med_rho_pred = 1 - med_alpha``;
  ``med_rho_obs = exp(median_p slope_p)`` with ``slope_p`` the prompt's own slope of ``log|r_l|`` on
  ``l``; ``med_rel_err_rho``, ``med_rel_err_rate`` as above.

With a bootstrap generator (``rng`` of :func:`readout_statistics`), each robust statistic ``k`` also
gets ``k_se``: its bootstrap standard error over prompts (:func:`iclcore.stats.bootstrap_standard_error`,
the prompts resampled with all their layers).

Nulls: the step-0 model (checkpoint 0), :func:`layer_shuffled` (each prompt's readouts in a random
layer order) and :func:`iid_noise_reference` (closed form for ``yhat_l = y* + mu + eps_l``).

GD-specific test (:func:`richardson_fit`): implicit weights ``w_l`` per layer (exact for the LSA,
least squares over probe queries for the GPT), errors ``E_l = w_l - w``, and per layer the pooled
fits ``E_{l+1} - E_l = -M_l H E_l + c_l`` (H-aware) and ``= -B_l E_l + c_l`` (H-blind) with
``H = X^T X / n`` per prompt.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import partial

import numpy as np
import torch
from scipy import integrate, stats
from torch import nn

from iclcore.models.gpt_mini import GPTMini
from iclcore.models.lsa import UntiedLSA
from iclcore.models.training import TrainConfig, to_device, torch_device, train_loop
from iclcore.parallel import map_configs
from iclcore.stats import bootstrap_standard_error, fisher_z
from iclcore.validation import as_generator, positive_float, positive_int

__all__ = [
    "ProbeTasks",
    "sample_probe_tasks",
    "ProbeTraining",
    "probe_train_config",
    "checkpoint_steps",
    "gpt_batch_loss",
    "compiled_gpt_loss",
    "train_with_checkpoints",
    "readout_statistics",
    "robust_readout_statistics",
    "ROBUST_KEYS",
    "layer_shuffled",
    "iid_noise_reference",
    "implicit_weights",
    "richardson_fit",
    "bos_profile",
    "late_early_ratio",
    "probe_checkpoint",
    "ProbeSweep",
    "ProbeRun",
    "probe_training_run",
    "probe_training_sweep",
    "SUMMARY_KEYS",
    "resolved_improving_fraction",
    "half_max_step",
    "probe_run_metrics",
    "probe_sweep_metrics",
]


# --------------------------------------------------------------------------------------------
# task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeTasks:
    """``X (B, n, d)``, ``y (B, n)``, ``xq (B, m, d)``, ``yq (B, m)``, ``w (B, d)``, ``scale (B,)``."""

    X: torch.Tensor
    y: torch.Tensor
    xq: torch.Tensor
    yq: torch.Tensor
    w: torch.Tensor
    scale: torch.Tensor

    @property
    def trH(self) -> np.ndarray:
        """``tr(X^T X / n)`` per prompt."""
        return (self.X.double() ** 2).sum((1, 2)).cpu().numpy() / self.X.shape[1]


def sample_probe_tasks(
    B: int,
    n: int,
    d: int,
    *,
    gen: torch.Generator,
    m: int = 1,
    s_lo: float = 0.5,
    s_hi: float = 2.0,
    dtype: torch.dtype = torch.float64,
) -> ProbeTasks:
    """Draw ``B`` prompts (module docstring) with ``m`` queries each; all randomness from ``gen``."""
    B, n, d, m = positive_int(B, "B"), positive_int(n, "n"), positive_int(d, "d"), positive_int(m, "m")
    s_lo, s_hi = positive_float(s_lo, "s_lo"), positive_float(s_hi, "s_hi")
    if s_lo > s_hi:
        raise ValueError(f"s_hi: expected s_hi >= s_lo = {s_lo}, got {s_hi}")
    u = torch.rand(B, generator=gen, dtype=torch.float64)
    s = torch.exp(math.log(s_lo) + u * (math.log(s_hi) - math.log(s_lo)))
    w = torch.randn(B, d, generator=gen, dtype=torch.float64)
    X = torch.randn(B, n, d, generator=gen, dtype=torch.float64) * s[:, None, None]
    xq = torch.randn(B, m, d, generator=gen, dtype=torch.float64) * s[:, None, None]
    y = torch.einsum("bnd,bd->bn", X, w)
    yq = torch.einsum("bmd,bd->bm", xq, w)
    c = lambda t: t.to(dtype)  # noqa: E731
    return ProbeTasks(c(X), c(y), c(xq), c(yq), c(w), c(s))


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeTraining:
    """A probe model's training: the optimizer settings and the task of its batches.

    ``train`` is Adam with a linear warm-up, gradient clipping and skipping of non-finite steps
    (``optimizer="adam"``, ``schedule="warmup"``, ``clip``, ``nonfinite="skip"``); each step draws
    ``train.batch`` prompts of :func:`sample_probe_tasks` with ``n``, ``d``, ``s_lo``, ``s_hi``.
    ``all_positions`` (GPT only): the Garg-style loss at every ``x`` position. Checkpoints at 0 and
    the powers of ``checkpoint_base`` (and the last step, :func:`checkpoint_steps`). ``compile`` (GPT
    only): the batch loss runs under ``torch.compile`` (:func:`compiled_gpt_loss`).
    """

    train: TrainConfig
    n: int = 20
    d: int = 5
    s_lo: float = 0.5
    s_hi: float = 2.0
    all_positions: bool = True
    checkpoint_base: int = 2
    compile: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.train, TrainConfig):
            raise TypeError(f"train: expected an iclcore.models.training.TrainConfig, got {type(self.train).__name__}")
        if not isinstance(self.compile, bool):
            raise TypeError(f"compile: expected True or False, got {self.compile!r}")
        for name in ("n", "d"):
            positive_int(getattr(self, name), name)
        positive_int(self.checkpoint_base, "checkpoint_base", minimum=2)
        if positive_float(self.s_lo, "s_lo") > positive_float(self.s_hi, "s_hi"):
            raise ValueError(f"s_hi: expected s_hi >= s_lo = {self.s_lo}, got {self.s_hi}")


def probe_train_config(
    steps: int, lr: float, batch: int = 64, *, warmup: int = 200, clip: float = 1.0, fused: bool = False
) -> TrainConfig:
    """The probe's optimizer: Adam, linear warm-up over ``warmup`` steps, gradient-norm clipping at
    ``clip``, non-finite steps skipped; ``fused``: torch's fused Adam kernel (:class:`TrainConfig`)."""
    return TrainConfig(
        steps=steps,
        lr=lr,
        optimizer="adam",
        batch=batch,
        clip=clip,
        schedule="warmup",
        warmup=warmup,
        nonfinite="skip",
        fused=fused,
    )


def checkpoint_steps(steps: int, base: int = 2) -> list[int]:
    """``0, 1, base, base^2, ..., base^k <= steps`` and ``steps`` (log-spaced)."""
    base = positive_int(base, "base", minimum=2)
    steps = positive_int(steps, "steps", minimum=0)
    out = [0] + [base**k for k in range(int(math.log(steps, base) + 1e-9) + 1)] if steps >= 1 else [0]
    if out[-1] != steps:
        out.append(steps)
    return out


def gpt_batch_loss(
    model: GPTMini, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, yq: torch.Tensor, all_positions: bool
) -> torch.Tensor:
    """The GPT's training loss on a batch: ``(1/2) mean (yhat - y)^2`` over every ``x`` position
    (``all_positions``: the targets ``y_1..y_n, y_q``) or over the query only; ``X (B, n, d)``,
    ``y (B, n)``, ``xq (B, m, d)``, ``yq (B, m)`` (the first query is used)."""
    pred = model.forward_all(X, y, xq[:, 0])
    tgt = torch.cat([y, yq[:, :1]], 1)
    if not all_positions:
        pred, tgt = pred[:, -1:], tgt[:, -1:]
    return 0.5 * ((pred - tgt) ** 2).mean()


def compiled_gpt_loss(model: GPTMini, all_positions: bool) -> Callable[[ProbeTasks], torch.Tensor]:
    """:func:`gpt_batch_loss` of ``model`` under ``torch.compile`` (inductor, static shapes), as a
    function of a :class:`ProbeTasks` batch.

    The same mathematics; inductor fuses the element-wise operations around the matrix products
    (layer norms, GELU, softmax, residual sums) and reorders their float32 arithmetic, so the losses
    agree with the eager ones to float32 rounding, not bit for bit (tested), and a long training
    drifts apart from the eager one as any change of rounding makes it. Compiling happens at the
    first call and costs seconds (about 20 s wall for the paper GPT on this project's 2-core machine,
    ``benchmarks/bench_gpt_step.py --compile``), so it pays only over long trainings; importing this
    module does not load ``torch._dynamo``, calling this function does.
    """
    if not isinstance(model, GPTMini):
        raise TypeError(f"model: compile applies to the GPT (GPTMini) only, got {type(model).__name__}")
    loss = torch.compile(partial(gpt_batch_loss, model, all_positions=all_positions), dynamic=False)
    return lambda t: loss(t.X, t.y, t.xq, t.yq)


def _loss(model: nn.Module, t: ProbeTasks, all_positions: bool) -> torch.Tensor:
    if isinstance(model, GPTMini):
        return gpt_batch_loss(model, t.X, t.y, t.xq, t.yq, all_positions)
    return 0.5 * ((model(t.X, t.y, t.xq) - t.yq) ** 2).mean()


def train_with_checkpoints(
    model: nn.Module,
    cfg: ProbeTraining,
    gen: torch.Generator,
    *,
    at_checkpoint: Callable[[int, nn.Module], dict],
    label: str = "",
    device: str | torch.device = "cpu",
) -> tuple[list[dict], np.ndarray, int]:
    """Train ``model``; call ``at_checkpoint(step, model)`` at :func:`checkpoint_steps`.

    The model is moved to ``device``; each batch is drawn from ``gen`` on the CPU and then moved
    there (the same data on every device). Returns the list of checkpoint records, the training-loss curve and the number of skipped
    (non-finite) steps. Progress (``label`` and the step) goes to :func:`iclcore.progress.report_progress`.
    """
    if not isinstance(cfg, ProbeTraining):
        raise TypeError(f"cfg: expected a ProbeTraining, got {type(cfg).__name__}")
    device = torch_device(device)
    model.to(device)
    dtype = next(model.parameters()).dtype
    records: list[dict] = []
    loss_of = (
        compiled_gpt_loss(model, cfg.all_positions)
        if cfg.compile
        else partial(_loss, model, all_positions=cfg.all_positions)
    )

    def batch_loss(_step: int) -> torch.Tensor:
        t = sample_probe_tasks(cfg.train.batch, cfg.n, cfg.d, gen=gen, m=1, s_lo=cfg.s_lo, s_hi=cfg.s_hi, dtype=dtype)
        return loss_of(to_device(t, device))

    def checkpoint(step: int) -> None:
        model.eval()
        records.append(at_checkpoint(step, model))
        model.train()

    log = train_loop(
        model.parameters(),
        batch_loss,
        cfg.train,
        on_checkpoint=checkpoint,
        checkpoints=checkpoint_steps(cfg.train.steps, cfg.checkpoint_base),
        progress={"run": label} if label else None,
    )
    return records, log.loss, log.skipped


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Slope, intercept and r^2 of the OLS of ``y`` on ``x`` (r^2 = 0 if either is constant)."""
    x, y = np.ravel(x), np.ravel(y)
    vx, vy = x.var(), y.var()
    if vx == 0:
        return 0.0, float(y.mean()), 0.0
    cxy = ((x - x.mean()) * (y - y.mean())).mean()
    slope = cxy / vx
    return float(slope), float(y.mean() - slope * x.mean()), float(cxy**2 / (vx * vy)) if vy > 0 else 0.0


def _log_abs(r: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(np.abs(r), 1e-300))


#: The robust statistics (module docstring) other than the per-layer ``med_l{l}``, in the order of
#: :func:`robust_readout_statistics`.
ROBUST_KEYS = (
    "med_er_abs",
    "med_er_rel",
    "med_rate",
    "med_geo_r2",
    "med_monotone_fraction",
    "med_ratio",
    "med_alpha",
    "med_rho_pred",
    "med_rho_obs",
    "med_rel_err_rho",
    "med_rel_err_rate",
)


def _prompt_features(r: np.ndarray) -> np.ndarray:
    """Per-prompt quantities ``(P, L+3)``: ``|r_0|, ..., |r_L|``, ``alpha_p``, ``slope_p`` (module docstring)."""
    L = r.shape[0] - 1
    dr = -np.diff(r, axis=0)  # Delta_l = yhat_{l+1} - yhat_l = r_l - r_{l+1}
    with np.errstate(all="ignore"):
        num, den = (dr * r[:-1]).sum(0), (r[:-1] ** 2).sum(0)
        alpha_p = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        lr = _log_abs(r)
        ellc = np.arange(L + 1) - L / 2
        slope_p = (ellc @ (lr - lr.mean(0))) / (ellc @ ellc)
    return np.concatenate([np.abs(r).T, alpha_p[:, None], slope_p[:, None]], 1)


def _robust_vector(F: np.ndarray) -> np.ndarray:
    """``med_l{l}`` for ``l = 0..L`` followed by :data:`ROBUST_KEYS` from prompt features ``F (..., P, L+3)``
    (:func:`_prompt_features`; leading axes are bootstrap resamples): ``(..., L+1+len(ROBUST_KEYS))``."""
    L = F.shape[-1] - 3
    with np.errstate(all="ignore"):
        med = np.median(F, axis=-2)
        m, a, s = med[..., : L + 1], med[..., L + 1], med[..., L + 2]
        lm = _log_abs(m)
        ellc = np.arange(L + 1) - L / 2
        lmc = lm - lm.mean(-1, keepdims=True)
        cov, vl = lmc @ ellc, (lmc**2).sum(-1)
        gr2 = np.where(vl > 0, cov**2 / ((ellc @ ellc) * np.where(vl > 0, vl, 1.0)), 0.0)
        rho_pred, rho_obs = 1 - a, np.exp(s)
        robust = [
            m[..., 0] - m[..., -1],
            1 - m[..., -1] / m[..., 0],
            (m[..., -1] / m[..., 0]) ** (1 / L),
            gr2,
            (np.diff(m, axis=-1) < 0).mean(-1),
            np.median(F[..., L] / F[..., 0], axis=-1),
            a,
            rho_pred,
            rho_obs,
            np.abs(rho_pred - rho_obs) / rho_obs,
            np.abs(rho_pred - rho_obs) / np.abs(1 - rho_obs),
        ]
    return np.concatenate([m, np.stack(robust, -1)], -1).astype(float)


def robust_readout_statistics(
    yhat: np.ndarray, ystar: np.ndarray, rng: np.random.Generator | int | None = None, *, n_resamples: int = 1000
) -> dict[str, float]:
    """The robust (median over prompts) statistics of the module docstring, with bootstrap SEs if ``rng``.

    ``yhat (L+1, P)``, ``ystar (P,)`` as in :func:`readout_statistics`. Returns ``med_l{l}`` and
    :data:`ROBUST_KEYS`; with ``rng`` (a generator or a seed) also ``<key>_se`` for each of them, the
    bootstrap standard error over prompts from ``n_resamples`` resamples.
    """
    yhat, ystar = np.asarray(yhat, float), np.asarray(ystar, float)
    if yhat.ndim != 2 or yhat.shape[1] != ystar.shape[0] or yhat.shape[0] < 2:
        raise ValueError("yhat, ystar: expected shapes (L+1, P) with L >= 1 and (P,)")
    L = yhat.shape[0] - 1
    F = _prompt_features(ystar[None] - yhat)
    names = [f"med_l{l}" for l in range(L + 1)] + list(ROBUST_KEYS)
    out = {k: float(v) for k, v in zip(names, _robust_vector(F))}
    if rng is not None:
        se = bootstrap_standard_error(F, _robust_vector, as_generator(rng), n_resamples=n_resamples, vectorized=True)
        out.update({f"{k}_se": float(v) for k, v in zip(names, se)})
    return out


def readout_statistics(
    yhat: np.ndarray,
    ystar: np.ndarray,
    trH: np.ndarray | None = None,
    *,
    rng: np.random.Generator | int | None = None,
    n_resamples: int = 1000,
) -> dict[str, float]:
    """Every statistic of the module docstring from readouts ``yhat (L+1, P)`` and targets ``ystar (P,)``.

    The robust ones come from :func:`robust_readout_statistics` (``rng``, ``n_resamples``: their bootstrap).
    """
    yhat, ystar = np.asarray(yhat, float), np.asarray(ystar, float)
    if yhat.ndim != 2 or yhat.shape[1] != ystar.shape[0] or yhat.shape[0] < 2:
        raise ValueError("yhat, ystar: expected shapes (L+1, P) with L >= 1 and (P,)")
    L = yhat.shape[0] - 1
    r = ystar[None] - yhat
    dy = np.diff(yhat, axis=0)
    mae = np.abs(r).mean(1)
    alpha, icpt, r2 = _ols(r[:-1], dy)
    sa = float((np.sign(dy) == np.sign(r[:-1])).mean())
    ell = np.broadcast_to(np.arange(L + 1)[:, None], r.shape)
    lr = _log_abs(r)
    slope_pool = _ols(ell, lr)[0]
    rho_pred, rho_obs = 1 - alpha, float(np.exp(slope_pool))
    ellc = np.arange(L + 1) - L / 2
    per_prompt = (ellc @ (lr - lr.mean(0))) / (ellc @ ellc)
    gs, _, gr2 = _ols(np.arange(L + 1), np.log(mae))
    out = {
        "mae_0": float(mae[0]),
        "mae_L": float(mae[-1]),
        "er_abs": float(mae[0] - mae[-1]),
        "er_rel": float(1 - mae[-1] / mae[0]),
        "alpha": alpha,
        "intercept": icpt,
        "r2": r2,
        "sign_agreement": sa,
        "rho_pred": rho_pred,
        "rho_obs": rho_obs,
        "rel_err_rho": abs(rho_pred - rho_obs) / rho_obs,
        "rel_err_rate": abs(rho_pred - rho_obs) / abs(1 - rho_obs) if rho_obs != 1 else float("inf"),
        "geo_r2": gr2,
        "geo_rate": float(np.exp(gs)),
        "monotone_fraction": float((np.diff(mae) < 0).mean()),
        "mae_rate": float((mae[-1] / mae[0]) ** (1 / L)),
        "frac_contracting": float((per_prompt < 0).mean()),
    }
    for l, v in enumerate(mae):
        out[f"mae_l{l}"] = float(v)
    if trH is not None:
        out["curvature_corr"] = float(stats.pearsonr(per_prompt, np.log(trH))[0])
    out.update(robust_readout_statistics(yhat, ystar, rng, n_resamples=n_resamples))
    return out


def layer_shuffled(yhat: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
    """Null: each prompt's readouts ``yhat[:, p]`` in an independent random layer order (all ``L+1`` layers)."""
    rng = as_generator(rng)
    yhat = np.asarray(yhat, float)
    idx = np.argsort(rng.random(yhat.shape), axis=0)
    return np.take_along_axis(yhat, idx, axis=0)


def iid_noise_reference(offset: float = 0.0) -> dict[str, float]:
    """Closed form for ``yhat_l = y* + mu + sigma eps_l`` with iid continuous symmetric ``eps`` (Gaussian for mu != 0).

    ``alpha = 1`` and ``r^2 = 1/2`` for any ``mu`` (``Cov(Delta, r) = sigma^2 = Var r``,
    ``Var Delta = 2 sigma^2``). Sign agreement with ``m = mu/sigma``:
    ``E[Phi(eps) 1{eps > -m}] + E[(1 - Phi(eps)) 1{eps < -m}]``, which is ``3/4`` at ``m = 0``.
    """
    m = float(offset)
    f1 = integrate.quad(lambda e: stats.norm.cdf(e) * stats.norm.pdf(e), -m, np.inf)[0]
    f2 = integrate.quad(lambda e: stats.norm.sf(e) * stats.norm.pdf(e), -np.inf, -m)[0]
    return {"alpha": 1.0, "r2": 0.5, "sign_agreement": f1 + f2}


def implicit_weights(model: nn.Module, t: ProbeTasks, exact: bool) -> np.ndarray:
    """Per-layer implicit weights ``w_l`` with ``yhat_l(x_q) ~ w_l^T x_q + b_l``: ``(L+1, B, d)``.

    ``exact``: query with the ``d`` unit vectors (valid when the readout is linear in ``x_q``, as
    for :class:`UntiedLSA`); otherwise least squares with intercept over the ``m`` queries of ``t``.
    """
    B, n, d = t.X.shape
    if exact:
        E = torch.eye(d, dtype=t.X.dtype, device=t.X.device).expand(B, d, d)
        return model.readouts(t.X, t.y, E).double().cpu().numpy()  # (L+1, B, d): entry k is w_l[k]
    yh = model.readouts(t.X, t.y, t.xq).double().cpu().numpy()  # (L+1, B, m)
    A = np.concatenate([t.xq.double().cpu().numpy(), np.ones(t.xq.shape[:2] + (1,))], -1)  # (B, m, d+1)
    coef = np.stack([np.linalg.lstsq(A[b], yh[:, b].T, rcond=None)[0] for b in range(B)], 1)  # (d+1, B, L+1)
    return coef[:d].transpose(2, 1, 0)


def _pooled_r2(F: np.ndarray, Y: np.ndarray) -> float:
    """R^2 of the multi-output OLS of ``Y (P, d)`` on features ``F (P, k)`` plus intercept."""
    A = np.concatenate([F, np.ones((F.shape[0], 1))], 1)
    coef = np.linalg.lstsq(A, Y, rcond=None)[0]
    res = Y - A @ coef
    sst = ((Y - Y.mean(0)) ** 2).sum()
    return float(1 - (res**2).sum() / sst) if sst > 0 else 0.0


def richardson_fit(W: np.ndarray, w: np.ndarray, X: np.ndarray) -> dict[str, float]:
    """H-aware vs H-blind fits of the per-layer weight-error updates (module docstring).

    ``W (L+1, B, d)`` implicit weights, ``w (B, d)`` the task vectors, ``X (B, n, d)`` the contexts.
    Returns the layer-mean R^2 of both fits, the median spectral radius of ``I - M_l H`` over
    prompts and layers, and the pooled per-layer contraction of ``||E_l||``.
    """
    W, w, X = np.asarray(W, float), np.asarray(w, float), np.asarray(X, float)
    H = np.einsum("bni,bnj->bij", X, X) / X.shape[1]
    E = W - w[None]
    L, B, d = E.shape[0] - 1, E.shape[1], E.shape[2]
    ra, rb, radii = [], [], []
    for l in range(L):
        dE = E[l + 1] - E[l]
        HE = np.einsum("bij,bj->bi", H, E[l])
        # H-aware: dE = -M (H E) + c, i.e. features H E (d of them); H-blind: features E
        ra.append(_pooled_r2(HE, dE))
        rb.append(_pooled_r2(E[l], dE))
        A = np.concatenate([HE, np.ones((B, 1))], 1)
        M = -np.linalg.lstsq(A, dE, rcond=None)[0][:d].T
        radii.append(np.abs(np.linalg.eigvals(np.eye(d)[None] - M[None] @ H)).max(1))
    nE = np.linalg.norm(E, axis=2).mean(1)
    return {
        "rich_r2_aware": float(np.mean(ra)),
        "rich_r2_blind": float(np.mean(rb)),
        "rich_radius_median": float(np.median(np.concatenate(radii))),
        "weight_err_rate": float((nE[-1] / nE[0]) ** (1 / L)),
    }


def bos_profile(model: GPTMini, t: ProbeTasks) -> np.ndarray:
    """Attention mass on BOS per layer, averaged over heads and over every position after BOS: ``(L,)``."""
    return _bos_mass(model.hidden(t.X, t.y, t.xq[:, 0], need_attn=True)[1])


def _bos_mass(att: list[torch.Tensor]) -> np.ndarray:
    """Head-averaged attention maps ``(B, T, T)`` per layer -> mean mass on BOS after position 0: ``(L,)``."""
    return np.array([float(a[:, 1:, 0].mean()) for a in att])


def late_early_ratio(profile: np.ndarray) -> float:
    """Mean of the last ``ceil(L/3)`` layers divided by the mean of the first ``ceil(L/3)``."""
    k = max(1, math.ceil(len(profile) / 3))
    return float(np.mean(profile[-k:]) / np.mean(profile[:k]))


def probe_checkpoint(
    model: nn.Module,
    probe: ProbeTasks,
    rich: ProbeTasks,
    *,
    rng: np.random.Generator,
    boot: np.random.Generator | None = None,
    n_resamples: int = 1000,
) -> dict[str, float]:
    """All statistics for one checkpoint: the readout statistics, their layer-shuffled null, the
    Richardson fit and (GPT only) the BOS profile. ``probe`` has one query per prompt; ``rich`` has
    the probe queries for the implicit weights; ``rng`` shuffles the layers; ``boot`` (optional) draws
    the bootstrap resamples of the robust statistics' standard errors."""
    gpt = isinstance(model, GPTMini)
    if gpt:  # one forward pass gives the lens readouts (as GPTMini.readouts with m = 1) and the BOS profile
        hs, att = model.hidden(probe.X, probe.y, probe.xq[:, 0], need_attn=True)
        yh = torch.stack([model.lens(h[:, -1]) for h in hs]).double().cpu().numpy()
    else:
        yh = model.readouts(probe.X, probe.y, probe.xq).double().cpu().numpy()[:, :, 0]
    ys = probe.yq.double().cpu().numpy()[:, 0]
    rec = readout_statistics(yh, ys, probe.trH, rng=boot, n_resamples=n_resamples)
    sh = readout_statistics(layer_shuffled(yh, rng), ys, None, rng=boot, n_resamples=n_resamples)
    kept = ("alpha", "r2", "sign_agreement", "rel_err_rho", "med_alpha") + (("med_alpha_se",) if boot else ())
    rec.update({f"shuffled_{k}": sh[k] for k in kept})
    exact = isinstance(model, UntiedLSA)
    w, X = rich.w.double().cpu().numpy(), rich.X.double().cpu().numpy()
    rec.update(richardson_fit(implicit_weights(model, rich, exact), w, X))
    if gpt:
        prof = _bos_mass(att)
        rec.update({f"bos_l{l + 1}": float(v) for l, v in enumerate(prof)})
        rec["bos_late_early"] = late_early_ratio(prof)
    return rec


# --------------------------------------------------------------------------------------------
# the sweep of training runs (notebook gd_probe)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeSweep:
    """Settings of the notebook's sweep: one LSA and one GPT run per warm-up length and seed;
    ``gpt_compile``: the GPT runs' batch loss under ``torch.compile`` (:func:`compiled_gpt_loss`)."""

    d: int = 5
    n: int = 20
    s_lo: float = 0.5
    s_hi: float = 2.0
    lsa_layers: int = 4
    lsa_steps: int = 2000
    lsa_lr: float = 2e-4
    gpt_layers: int = 4
    gpt_width: int = 32
    gpt_heads: int = 2
    gpt_steps: int = 1000
    gpt_lr: float = 1e-3
    batch: int = 64
    gpt_batch: int = 64
    warmups: tuple[int, ...] = (200,)
    seeds: tuple[int, ...] = (0,)
    checkpoint_base: int = 4
    n_probe: int = 256
    n_rich: int = 64
    m_rich: int = 12
    probe_seed: int = 0
    n_boot: int = 1000
    gpt_compile: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.gpt_compile, bool):
            raise TypeError(f"gpt_compile: expected True or False, got {self.gpt_compile!r}")
        if not self.warmups or not self.seeds:
            raise ValueError("warmups, seeds: expected at least one value each")
        for w in self.warmups:
            positive_int(w, "warmups", minimum=0)
        for s in self.seeds:
            positive_int(s, "seeds", minimum=0)
        for name in ("n_probe", "n_rich", "m_rich", "lsa_layers", "gpt_layers"):
            positive_int(getattr(self, name), name)
        positive_int(self.probe_seed, "probe_seed", minimum=0)
        positive_int(self.n_boot, "n_boot", minimum=2)

    @classmethod
    def from_parameters(cls, params: Mapping[str, object]) -> ProbeSweep:
        """The sweep set by a notebook's parameters (``warmups``, ``seeds`` as lists or tuples of
        integers, e.g. ``[50, 200]``); names that are not fields (``workers``, ...) are ignored."""
        kw = {f.name: params[f.name] for f in fields(cls) if f.name in params}
        for name in ("warmups", "seeds"):
            if name in kw:
                if not isinstance(kw[name], (list, tuple)):
                    raise ValueError(f"{name}: expected a list of integers, got {kw[name]!r}")
                kw[name] = tuple(kw[name])
        return cls(**kw)

    def keys(self) -> list[tuple[str, int, int]]:
        """``(kind, warmup, seed)`` of every run, LSA runs first (the notebook's order)."""
        return [(k, w, s) for k in ("lsa", "gpt") for w in self.warmups for s in self.seeds]

    def config(self, kind: str, warmup: int) -> ProbeTraining:
        """The training of a ``kind`` run with ``warmup``; the GPT's Adam is the fused kernel (its
        update to rounding, faster for the GPT's many small tensors), the LSA's the per-tensor loop."""
        lsa = kind == "lsa"
        return ProbeTraining(
            probe_train_config(
                steps=self.lsa_steps if lsa else self.gpt_steps,
                lr=self.lsa_lr if lsa else self.gpt_lr,
                batch=self.batch if lsa else self.gpt_batch,
                warmup=warmup,
                fused=not lsa,
            ),
            n=self.n,
            d=self.d,
            s_lo=self.s_lo,
            s_hi=self.s_hi,
            checkpoint_base=self.checkpoint_base,
            compile=self.gpt_compile and not lsa,
        )


@dataclass(frozen=True)
class ProbeRun:
    """One training run: checkpoint records, loss curve ``(steps,)``, skipped steps, CPU seconds."""

    records: list[dict]
    curve: np.ndarray
    skipped: int
    cpu: float


def probe_training_run(
    sweep: ProbeSweep, kind: str, warmup: int, *, seed: int, device: str | torch.device = "cpu"
) -> ProbeRun:
    """Train one model of the sweep and probe it at every checkpoint (:func:`probe_checkpoint`).

    Seeds: ``1000 seed + 1`` (initialisation and training batches); the evaluation draws from
    ``SeedSequence([seed, sweep.probe_seed, k])`` with ``k = 2`` (probe prompts), ``3`` (Richardson
    prompts), ``4`` (layer shuffles), ``5`` (bootstrap resamples), so ``probe_seed`` resamples every
    probe set without touching training. The LSA runs in float64, the GPT in float32. The model
    trains and is probed on ``device`` (every prompt is drawn on the CPU, then moved). The result
    depends only on the arguments (and the BLAS build or the device's kernels), not on the process
    that runs it.
    """
    if kind not in ("lsa", "gpt"):
        raise ValueError(f"kind: expected 'lsa' or 'gpt', got {kind!r}")
    t0 = time.process_time()
    g = torch.Generator().manual_seed(1000 * seed + 1)
    dtype = torch.float64 if kind == "lsa" else torch.float32  # tasks are drawn in float64, then cast

    def eval_seed(offset: int) -> int:
        return int(np.random.SeedSequence([seed, sweep.probe_seed, offset]).generate_state(1, np.uint64)[0])

    def tasks(B: int, m: int, offset: int) -> ProbeTasks:
        gen = torch.Generator().manual_seed(eval_seed(offset))
        return sample_probe_tasks(B, sweep.n, sweep.d, gen=gen, m=m, s_lo=sweep.s_lo, s_hi=sweep.s_hi, dtype=dtype)

    probe, rich = (to_device(t, device) for t in (tasks(sweep.n_probe, 1, 2), tasks(sweep.n_rich, sweep.m_rich, 3)))
    if kind == "lsa":
        model: nn.Module = UntiedLSA(sweep.d, sweep.lsa_layers, g)
    else:
        model = GPTMini(sweep.d, sweep.n, sweep.gpt_layers, sweep.gpt_width, sweep.gpt_heads, g).float()
    rng, boot = np.random.default_rng(eval_seed(4)), np.random.default_rng(eval_seed(5))
    recs, curve, skipped = train_with_checkpoints(
        model,
        sweep.config(kind, warmup),
        g,
        at_checkpoint=lambda step, m: {
            "step": step,
            **probe_checkpoint(m, probe, rich, rng=rng, boot=boot, n_resamples=sweep.n_boot),
        },
        label=f"{kind} warm-up {warmup} seed {seed}",
        device=device,
    )
    return ProbeRun(recs, curve, skipped, time.process_time() - t0)


def _probe_run(args: tuple[ProbeSweep, str, int, int] | tuple[ProbeSweep, str, int, int, str]) -> ProbeRun:
    """:func:`probe_training_run` of one ``(sweep, kind, warmup, seed[, device])`` (a picklable module
    function; the device defaults to ``"cpu"``)."""
    sweep, kind, warmup, seed, *device = args
    return probe_training_run(sweep, kind, warmup, seed=seed, device=device[0] if device else "cpu")


def probe_training_sweep(
    sweep: ProbeSweep, workers: int = 1, *, device: str | torch.device = "cpu", gpt_threads: int = 1
) -> dict[tuple[str, int, int], ProbeRun]:
    """Every run of ``sweep``, keyed by ``(kind, warmup, seed)`` in :meth:`ProbeSweep.keys` order.

    ``workers = 1`` runs them one after another in this process (single-threaded, as the notebook
    sets torch). ``workers > 1`` runs them in that many fresh (spawned) single-threaded processes
    (:func:`iclcore.parallel.map_configs`), longest first (GPT runs before LSA runs): the runs are
    independent and each is seeded by its own arguments, so the results are identical to the
    sequential ones (tested) and the wall time falls by up to ``workers``. Under ``icl-book run
    --scheduler`` each run is a task of the Dask cluster instead (``workers`` is then ignored). A process pool rather
    than threads or ``torch.func.vmap``: a run of the small GPT already keeps one core's GEMMs near
    their peak, so only more cores help. ``workers`` defaults, in the notebook, to
    :func:`iclcore.parallel.thread_budget`. Every run trains on ``device`` (its name travels to the
    worker processes as a string). ``gpt_threads`` is the threads each GPT run may use (``map_configs``'
    ``threads``: a process of that many threads, or that much of a Dask worker's ``threads`` resource);
    the LSA runs use one. More than one thread changes the results by float rounding only.
    """
    workers = positive_int(workers, "workers")
    device = str(torch_device(device))
    keys = sweep.keys()
    runs = map_configs(
        _probe_run,
        [(sweep, *k, device) for k in keys],
        workers,
        cost=lambda c: float(c[1] == "gpt"),
        label="probe runs",
        threads=lambda c: positive_int(gpt_threads, "gpt_threads") if c[1] == "gpt" else 1,
    )
    return dict(zip(keys, runs))


# --------------------------------------------------------------------------------------------
# metrics of the sweep (notebook gd_probe)
# --------------------------------------------------------------------------------------------

#: statistics of :func:`probe_checkpoint` reported at the last and at the first checkpoint of each model
SUMMARY_KEYS = (
    "er_abs",
    "er_rel",
    "mae_0",
    "mae_L",
    "mae_rate",
    "alpha",
    "r2",
    "sign_agreement",
    "rho_pred",
    "rho_obs",
    "rel_err_rho",
    "rel_err_rate",
    "geo_r2",
    "monotone_fraction",
    "frac_contracting",
    "curvature_corr",
    "shuffled_alpha",
    "shuffled_sign_agreement",
    "shuffled_r2",
    "rich_r2_aware",
    "rich_r2_blind",
    "rich_radius_median",
    "weight_err_rate",
    *ROBUST_KEYS,
    *[f"{k}_se" for k in ROBUST_KEYS],
    "shuffled_med_alpha",
    "shuffled_med_alpha_se",
)


def resolved_improving_fraction(med: np.ndarray, med_se: np.ndarray, z: float = 3) -> float:
    """Share of the ``L`` layer steps whose fall of the median error is resolved at ``z`` standard errors.

    A step ``l → l + 1`` improves if ``med_{l+1} + z (se_l + se_{l+1}) < med_l``: the sum of the two
    bootstrap SEs bounds the SE of the difference whatever their correlation: the fraction of
    depth-monotone improvement steps of Nagy's prediction P_C (geometric depth contraction), with a
    per-step error model.

    Parameters
    ----------
    med, med_se : ndarray, shape (L + 1,)
        Median ``|r_l|`` over prompts per layer and its standard error.

    Examples
    --------
    >>> resolved_improving_fraction(np.array([4.0, 2.0, 1.9, 1.0]), np.full(4, 0.1))
    0.6666666666666666
    """
    med, med_se = np.asarray(med, dtype=float), np.asarray(med_se, dtype=float)
    if med.ndim != 1 or med.size < 2 or med_se.shape != med.shape:
        raise ValueError(
            f"med, med_se: expected two arrays of one shape (L + 1 >= 2,), got {med.shape}, {med_se.shape}"
        )
    return float(np.mean(np.diff(med) + z * (med_se[:-1] + med_se[1:]) < 0))


def half_max_step(steps: np.ndarray, values: np.ndarray) -> int:
    """First step at which ``values`` reaches half of its final value (``-1`` if the final value is ``<= 0``).

    Examples
    --------
    >>> half_max_step(np.array([0, 1, 4, 16]), np.array([0.0, 0.2, 0.5, 0.8]))
    4
    """
    er, st = np.asarray(values, dtype=float), np.asarray(steps)
    if er.ndim != 1 or er.size == 0 or st.shape != er.shape:
        raise ValueError(f"steps, values: expected two arrays of one shape (n >= 1,), got {st.shape}, {er.shape}")
    return int(st[np.argmax(er >= 0.5 * er[-1])]) if er[-1] > 0 else -1


def probe_run_metrics(records: list[dict], kind: str, n_layers: int, *, n_probe: int) -> dict[str, float]:
    """Metrics of the main run of one model (``kind``) from its checkpoint records (:func:`probe_checkpoint`).

    :data:`SUMMARY_KEYS` at the last checkpoint (``<kind>_<key>``) and at step 0 (``<kind>_step0_<key>``);
    ``min_er_abs``; the valley (the lowest ``er_abs`` after step 0 minus its step-0 value, over
    ``mae_0``; the same with medians, ``med_valley_depth``, whose SE adds the bootstrap SEs of
    ``med_er_abs`` at the valley and at step 0 over the step-0 median, and ``med_valley_step``);
    ``max_rel_err_rho``; :func:`resolved_improving_fraction` of the final median errors; Fisher's z of
    ``curvature_corr`` over ``n_probe`` prompts (:func:`iclcore.stats.fisher_z`); for the GPT the
    attention on BOS per layer and its late/early ratio.

    Parameters
    ----------
    records : list of dict
        One record per checkpoint, the first at step 0.
    kind : {"lsa", "gpt"}
    n_layers : int
        Depth ``L`` of the model (records hold ``med_l0 .. med_lL``).
    n_probe : int
        Probe prompts behind ``curvature_corr``.
    """
    if kind not in ("lsa", "gpt"):
        raise ValueError(f"kind: expected 'lsa' or 'gpt', got {kind!r}")
    if len(records) < 2:
        raise ValueError(f"records: expected at least two checkpoints, got {len(records)}")
    n_layers = positive_int(n_layers, "n_layers")
    first, last = records[0], records[-1]
    m: dict[str, float] = {}
    for k in SUMMARY_KEYS:
        m[f"{kind}_{k}"] = last[k]
        m[f"{kind}_step0_{k}"] = first[k]
    m[f"{kind}_min_er_abs"] = min(r["er_abs"] for r in records)
    m[f"{kind}_valley_depth"] = (min(r["er_abs"] for r in records[1:]) - first["er_abs"]) / first["mae_0"]
    low = min(records[1:], key=lambda r: r["med_er_abs"])
    m[f"{kind}_med_valley_depth"] = (low["med_er_abs"] - first["med_er_abs"]) / first["med_l0"]
    m[f"{kind}_med_valley_depth_se"] = (low["med_er_abs_se"] + first["med_er_abs_se"]) / first["med_l0"]
    m[f"{kind}_med_valley_step"] = low["step"]
    m[f"{kind}_max_rel_err_rho"] = max(r["rel_err_rho"] for r in records)
    med_l = np.array([last[f"med_l{l}"] for l in range(n_layers + 1)])
    med_l_se = np.array([last[f"med_l{l}_se"] for l in range(n_layers + 1)])
    m[f"{kind}_med_resolved_improving_fraction"] = resolved_improving_fraction(med_l, med_l_se)
    z, se = fisher_z(last["curvature_corr"], n_probe)
    m[f"{kind}_curvature_corr_fisher_z"] = z
    m[f"{kind}_curvature_corr_fisher_se"] = se
    if kind == "gpt":
        for l in range(1, n_layers + 1):
            m[f"gpt_bos_l{l}"] = last[f"bos_l{l}"]
            m[f"gpt_step0_bos_l{l}"] = first[f"bos_l{l}"]
        m["gpt_bos_late_early"] = last["bos_late_early"]
        m["gpt_step0_bos_late_early"] = first["bos_late_early"]
    return m


def probe_sweep_metrics(runs: Mapping[tuple[str, int, int], ProbeRun], sweep: ProbeSweep) -> dict[str, float]:
    """The metrics of the notebook ``gd_probe`` (all but its total CPU time) from :func:`probe_training_sweep`.

    The iid-noise references (:func:`iid_noise_reference`, offsets 0 and 1), the curvature range
    ``(s_hi/s_lo)²`` and the sweep's sizes; :func:`probe_run_metrics` of the main run of each model (first
    warm-up and seed); skipped steps and CPU seconds summed over the model's runs; and per run the
    :func:`half_max_step` of ``er_rel`` and its final value (``<kind>_w<warm-up>_s<seed>_...``).
    """
    iid = iid_noise_reference(0.0)
    m: dict[str, float] = {
        "iid_alpha": iid["alpha"],
        "iid_r2": iid["r2"],
        "iid_sign_agreement": iid["sign_agreement"],
        "iid_sign_agreement_offset1": iid_noise_reference(1.0)["sign_agreement"],
        "curvature_range": (sweep.s_hi / sweep.s_lo) ** 2,
        "lsa_layers": sweep.lsa_layers,
        "gpt_layers": sweep.gpt_layers,
        "lsa_steps": sweep.lsa_steps,
        "gpt_steps": sweep.gpt_steps,
        "lsa_batch": sweep.batch,
        "gpt_batch": sweep.gpt_batch,
        "probe_seed": sweep.probe_seed,
        "n_probe": sweep.n_probe,
    }
    for kind, n_layers in (("lsa", sweep.lsa_layers), ("gpt", sweep.gpt_layers)):
        main = runs[(kind, sweep.warmups[0], sweep.seeds[0])].records
        m.update(probe_run_metrics(main, kind, n_layers, n_probe=sweep.n_probe))
        m[f"{kind}_skipped"] = sum(r.skipped for key, r in runs.items() if key[0] == kind)
        m[f"{kind}_cpu_seconds"] = sum(r.cpu for key, r in runs.items() if key[0] == kind)
    for (kind, wu, sd), run in runs.items():
        er = np.array([r["er_rel"] for r in run.records])
        m[f"{kind}_w{wu}_s{sd}_halfmax_step"] = half_max_step(np.array([r["step"] for r in run.records]), er)
        m[f"{kind}_w{wu}_s{sd}_er_rel"] = float(er[-1])
    return m
