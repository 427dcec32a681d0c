"""The probes of Mainali & Teixeira §4 on trained non-linear stand-in models (Figs. 3B, 5-7).

The paper applies its theory-inspired probes (effective rank Eq. 15, marginalized effective rank,
subspace distance Eq. 16) to pretrained attention-only models of 1-4 layers and to a grokking model.
This module reads them off the small stand-ins of :mod:`iclcore.models.toy_transformers`:

* :func:`depth_probes`: the marginalized effective rank of the OV and QK products and their subspace
  distance to the final checkpoint along the training of one attention-only model, kept with the window in
  which its late-position loss drops (ICL emergence); :func:`icl_depth_metrics` summarises one depth;
* :func:`staggered_minima`: the steps ``t_k`` at which the ``k``-th marginalized curve is lowest, over
  independent training seeds (Fig. 6, "multiple minima occurring sequentially"), with the standard error
  over seeds of each increment ``t_{k+1} − t_k``;
* :func:`grokking_probes`: effective rank and subspace distance of the per-head OV matrices of the
  grokking model, its memorisation and generalisation steps and the rate of change of the effective rank
  in the delayed phase (Figs. 3B, 7).

Arrays: ``T`` checkpoints, ``n_drop + 1`` marginalized curves (``k = 0..n_drop`` largest singular values
removed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iclcore.models.probes import checkpoint_probes, effective_rank_of_values, first_step_where, subspace_distance
from iclcore.stats import standard_error

if TYPE_CHECKING:  # the runs' types only: this module needs no torch
    from iclcore.models.toy_transformers import GrokRun, ICLRun

__all__ = [
    "DepthProbes",
    "depth_probes",
    "icl_depth_metrics",
    "StaggeredMinima",
    "staggered_minima",
    "GrokkingProbes",
    "grokking_probes",
]

#: the two per-head weight products probed: ``W_O W_V`` and ``W_Q^T W_K``
PRODUCTS = ("qk", "ov")


@dataclass(frozen=True)
class DepthProbes:
    """Probes of one attention-only model along its training (:func:`depth_probes`).

    Attributes
    ----------
    steps : ndarray, shape (T,)
        Training steps of the checkpoints.
    mer_ov, mer_qk : ndarray, shape (T, n_drop + 1)
        Marginalized effective rank of the OV and QK products (mean over layers and heads).
    sd : ndarray, shape (T,)
        Subspace distance to the final checkpoint, mean of OV and QK (Eq. 16).
    window : tuple of float
        Steps at which the late-position loss covers 10% and 90% of its drop (``nan`` if it does not).
    """

    steps: np.ndarray
    mer_ov: np.ndarray
    mer_qk: np.ndarray
    sd: np.ndarray
    window: tuple[float, float]

    def minima_steps(self, product: str) -> np.ndarray:
        """``t_k``: the step of the minimum of each marginalized curve of ``product`` ("qk" or "ov"), shape (n_drop + 1,)."""
        if product not in PRODUCTS:
            raise ValueError(f"product: expected 'qk' or 'ov', got {product!r}")
        return self.steps[np.argmin(self.mer_qk if product == "qk" else self.mer_ov, axis=0)]


def depth_probes(run: ICLRun, rank: int, window: tuple[float, float]) -> DepthProbes:
    """:func:`iclcore.models.probes.checkpoint_probes` of the OV and QK products of ``run`` (``rank``: the head
    dimension), with the emergence ``window`` of its late-position loss
    (:func:`iclcore.models.toy_transformers.emergence_window`)."""
    if len(window) != 2:
        raise ValueError(f"window: expected two steps (start, end), got {window!r}")
    mer_ov, sd_ov = checkpoint_probes(run.ov, rank)
    mer_qk, sd_qk = checkpoint_probes(run.qk, rank)
    return DepthProbes(run.steps, mer_ov, mer_qk, (sd_ov + sd_qk) / 2, (window[0], window[1]))


def icl_depth_metrics(L: int, run: ICLRun, probes: DepthProbes) -> dict[str, float]:
    """The notebook's metrics of the ``L``-layer model.

    Final late-position loss and ICL score; the step and depth of the dip of the QK effective rank
    (``k = 0``); the step at which the subspace distance has halved (one step after the run if never);
    for ``L > 1`` the emergence window (``-1`` where undefined); and whether the minima ``t_k`` of its
    single run are staggered, ``t_0 < t_1 < ...`` (1.0) or not (0.0), for QK and OV. For ``L = 1`` also
    the OV effective rank at the start and the end and its largest drop between checkpoints.
    """
    qk0 = probes.mer_qk[:, 0]
    sd = probes.sd
    half = first_step_where(sd <= 0.5 * sd[0], run.steps)
    m = {
        f"icl_late_loss_final_L{L}": float(run.late_loss[-1]),
        f"icl_score_final_L{L}": float(run.icl_score[-1]),
        f"icl_seconds_L{L}": run.seconds,
        f"qk_effrank_min_step_L{L}": float(run.steps[np.argmin(qk0)]),
        f"qk_effrank_dip_L{L}": float(qk0[0] - qk0.min()),
        f"subdist_half_step_L{L}": half if np.isfinite(half) else float(run.steps[-1] + 1),
    }
    w = probes.window
    if L > 1:
        m[f"emergence_start_L{L}"] = w[0] if np.isfinite(w[0]) else -1.0
        m[f"emergence_end_L{L}"] = w[1] if np.isfinite(w[1]) else -1.0
    for key in PRODUCTS:
        m[f"{key}_stagger_ordered_L{L}"] = float(np.all(np.diff(probes.minima_steps(key)) > 0))
    if L == 1:
        ov1 = probes.mer_ov[:, 0]
        m |= {
            "ov_effrank_L1_start": float(ov1[0]),
            "ov_effrank_L1_end": float(ov1[-1]),
            "ov_effrank_L1_max_drop": float(np.max(-np.diff(ov1))),
        }
    return m


@dataclass(frozen=True)
class StaggeredMinima:
    """Steps of the minima of the marginalized curves over training seeds (:func:`staggered_minima`).

    Attributes
    ----------
    t_min : dict of str to ndarray, shape (seeds, n_drop + 1)
        ``t_k`` per seed for "qk" and "ov" (the first seed is the main run).
    """

    t_min: dict[str, np.ndarray]

    def increments(self, product: str) -> np.ndarray:
        """``t_{k+1} − t_k`` per seed, shape (seeds, n_drop)."""
        return np.diff(self.t_min[product], axis=1)

    def metrics(self) -> dict[str, float]:
        """Per product: the mean increment closest to failing the rule "every mean increment exceeds 3 of its
        standard errors over seeds" and its SE; the share of seeds with every increment positive; the span
        ``t_last − t_0`` (mean and SE over seeds)."""
        m: dict[str, float] = {}
        for key in PRODUCTS:
            inc = self.increments(key)
            inc_mean = inc.mean(0)
            inc_se = standard_error(inc)
            k_min = int(np.argmin(inc_mean - 3 * inc_se))
            span = self.t_min[key][:, -1] - self.t_min[key][:, 0]
            m[f"{key}_stagger_min_increment"] = float(inc_mean[k_min])
            m[f"{key}_stagger_min_increment_se"] = float(inc_se[k_min])
            m[f"{key}_stagger_seeds_ordered"] = float(np.mean(np.all(inc > 0, axis=1)))
            m[f"{key}_stagger_span"] = float(np.mean(span))
            m[f"{key}_stagger_span_se"] = float(standard_error(span))
        return m


def staggered_minima(runs: Sequence[ICLRun], rank: int, main: DepthProbes) -> StaggeredMinima:
    """``t_k`` of the QK and OV marginalized curves of each run of one model trained with different seeds.

    Parameters
    ----------
    runs : sequence of ICLRun
        At least two runs; ``runs[0]`` is the main run, whose probes ``main`` are reused.
    rank : int
        Head dimension (:func:`iclcore.models.probes.checkpoint_probes`).
    main : DepthProbes
        :func:`depth_probes` of ``runs[0]``.
    """
    if len(runs) < 2:
        raise ValueError(f"runs: a standard error over seeds needs at least two runs, got {len(runs)}")
    t_min: dict[str, list] = {key: [] for key in PRODUCTS}
    for j, run in enumerate(runs):
        for key, mats in (("qk", run.qk), ("ov", run.ov)):
            mer = checkpoint_probes(mats, rank)[0] if j > 0 else (main.mer_qk if key == "qk" else main.mer_ov)
            t_min[key].append(run.steps[np.argmin(mer, axis=0)])
    return StaggeredMinima({key: np.array(v, dtype=float) for key, v in t_min.items()})


@dataclass(frozen=True)
class GrokkingProbes:
    """Probes of the grokking model (:func:`grokking_probes`, Figs. 3B, 7).

    Attributes
    ----------
    eff_rank : ndarray, shape (T,)
        Effective rank (Eq. 15) of the per-head OV matrices, mean over heads.
    subspace_distance : ndarray, shape (T,)
        Subspace distance (Eq. 16) of each head's OV to its final checkpoint, mean over heads.
    t_mem, t_gen : float
        First steps with train accuracy >= 0.99 and test accuracy >= 0.9 (``nan`` if never).
    t_stab : float
        First step at which the subspace distance has halved.
    """

    eff_rank: np.ndarray
    subspace_distance: np.ndarray
    t_mem: float
    t_gen: float
    t_stab: float

    def metrics(self, run: GrokRun) -> dict[str, float]:
        """The notebook's ``grok_*`` metrics (``-1`` for a step that never comes).

        Fig. 7B: the rate of change of the OV effective rank (total variation per step) before
        memorisation, in the delayed phase [memorisation, generalisation) and after generalisation; with no
        delayed phase (a step missing, or generalisation at the last step) delayed and before are ``-1``,
        after is 0.
        """
        t_mem, t_gen, steps = self.t_mem, self.t_gen, run.steps
        m = {
            "grok_mem_step": t_mem if np.isfinite(t_mem) else -1.0,
            "grok_gen_step": t_gen if np.isfinite(t_gen) else -1.0,
            "grok_ov_subdist_half_step": self.t_stab if np.isfinite(self.t_stab) else -1.0,
            "grok_test_acc_final": float(run.test_acc[-1]),
            "grok_train_loss_final": float(run.train_loss[-1]),
            "grok_test_loss_final": float(run.test_loss[-1]),
            "grok_ov_effrank_start": float(self.eff_rank[0]),
            "grok_ov_effrank_end": float(self.eff_rank[-1]),
            "grok_seconds": run.seconds,
        }
        tv = np.abs(np.diff(self.eff_rank))
        mid = steps[:-1]
        if np.isfinite(t_mem) and np.isfinite(t_gen) and t_gen < steps[-1]:
            delayed = (mid >= t_mem) & (mid < t_gen)
            m["grok_ov_effrank_rate_delayed"] = float(tv[delayed].sum() / (t_gen - t_mem))
            m["grok_ov_effrank_rate_after"] = float(tv[mid >= t_gen].sum() / (steps[-1] - t_gen))
            m["grok_ov_effrank_rate_before"] = float(tv[mid < t_mem].sum() / t_mem) if t_mem > 0 else -1.0
        else:
            m |= {
                "grok_ov_effrank_rate_delayed": -1.0,
                "grok_ov_effrank_rate_after": 0.0,
                "grok_ov_effrank_rate_before": -1.0,
            }
        return m


def grokking_probes(run: GrokRun) -> GrokkingProbes:
    """Effective rank and subspace distance of the per-head OV matrices of ``run`` (rank: the head dimension
    of its config), and its memorisation, generalisation and half-distance steps
    (:func:`iclcore.models.probes.first_step_where`)."""
    d_head, n_heads = run.config.d_head, run.config.n_heads
    sv = np.linalg.svd(run.ov, compute_uv=False)[..., :d_head]
    er = effective_rank_of_values(sv).mean(1)
    sd = np.array(
        [
            [subspace_distance(run.ov[t, h], run.ov[-1, h], rank=d_head) for h in range(n_heads)]
            for t in range(len(run.steps))
        ]
    ).mean(1)
    return GrokkingProbes(
        er,
        sd,
        first_step_where(run.train_acc >= 0.99, run.steps),
        first_step_where(run.test_acc >= 0.9, run.steps),
        first_step_where(sd <= 0.5 * sd[0], run.steps),
    )
