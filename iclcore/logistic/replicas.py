"""Estimates from independent SGD replicas and their standard errors (Mainali & Teixeira §3, Figs. 1-3).

An SGD run of :mod:`iclcore.logistic.sgd` carries ``R`` independent data streams (replicas, same tasks and
initialisation). The quantities the paper predicts (the fixed point ``p2 q1 = [s_inf(S)]^{-1}``, the
half-saturation and cliff times of each mode) are measured on the replica mean; their standard errors come
from the spread of the same measurement on each replica (:func:`iclcore.stats.standard_error`).

Arrays: ``T`` log points, ``R`` replicas, ``d`` modes. The end of training is the last tenth of the log
points (:func:`tail_window`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from iclcore.logistic.exact import crossing_times
from iclcore.stats import standard_error

__all__ = [
    "tail_window",
    "FixedPointEstimate",
    "fixed_point_estimate",
    "HalfTimeEstimate",
    "half_time_estimate",
    "crossing_time_standard_error",
    "relative_rms",
]


def tail_window(n_times: int) -> slice:
    """The last tenth of ``n_times`` log points (at least one): the end of training.

    Examples
    --------
    >>> tail_window(25)
    slice(-2, None, None)
    """
    return slice(-max(1, int(n_times) // 10), None)


@dataclass(frozen=True)
class FixedPointEstimate:
    """The end-of-training product ``U^T p2 q1 U`` (:func:`fixed_point_estimate`).

    Attributes
    ----------
    matrix : ndarray, shape (d, d)
        Its mean over the tail window and the replicas.
    diagonal : ndarray, shape (d,)
        The measured ``a_alpha(inf)``.
    offdiag : float
        The largest off-diagonal entry in absolute value (0 for an exactly diagonal fixed point).
    se_rel : float
        The largest standard error over replicas of a diagonal entry, relative to ``reference``.
    """

    matrix: np.ndarray
    diagonal: np.ndarray
    offdiag: float
    se_rel: float


def fixed_point_estimate(M: ArrayLike, reference: ArrayLike) -> FixedPointEstimate:
    """The fixed point of the mode products measured at the end of training, with its standard error.

    Parameters
    ----------
    M : array_like, shape (T, R, d, d)
        ``U^T p2 q1 U`` at each log point and replica, ``R >= 2``.
    reference : array_like, shape (d,)
        The predicted diagonal (e.g. the paper's ``1/s_inf``): the scale of ``se_rel``.

    Returns
    -------
    FixedPointEstimate
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 4 or M.shape[2] != M.shape[3] or M.shape[1] < 2:
        raise ValueError(f"M: expected shape (T, R >= 2, d, d), got {M.shape}")
    tail = tail_window(M.shape[0])
    M_end = M[tail].mean(axis=(0, 1))
    sim = np.diag(M_end)
    per_replica = np.diagonal(M[tail].mean(axis=0), axis1=-2, axis2=-1)  # (R, d): tail mean of each replica
    se_rel = float(np.max(standard_error(per_replica, axis=0) / np.asarray(reference, dtype=float)))
    return FixedPointEstimate(M_end, sim, float(np.max(np.abs(M_end - np.diag(sim)))), se_rel)


@dataclass(frozen=True)
class HalfTimeEstimate:
    """Half-saturation times of the modes (:func:`half_time_estimate`).

    Attributes
    ----------
    times : ndarray, shape (d,)
        First time the replica mean of ``a_alpha`` reaches half its end value (``nan`` if never).
    min_increment_se : float
        Standard error over replicas of the smallest increment ``t_half,alpha+1 − t_half,alpha`` (the
        pair of modes where the replica mean's increment is smallest); ``inf`` if a replica never
        reaches a half level there.
    """

    times: np.ndarray
    min_increment_se: float


def half_time_estimate(t: ArrayLike, a: ArrayLike) -> HalfTimeEstimate:
    """Half-saturation times of each mode on the replica mean, and the SE of their smallest increment.

    The level of each mode is half its mean over the tail window (:func:`tail_window`); the per-replica
    half times use each replica's own tail level, and the increments are taken at the same pair of modes
    for every replica, so their spread is the standard error of the replica mean's increment.

    Parameters
    ----------
    t : array_like, shape (T,)
    a : array_like, shape (T, R, d)
        Mode products ``a_alpha`` per log point and replica, ``R >= 2``, ``d >= 2``.

    Returns
    -------
    HalfTimeEstimate
    """
    t = np.asarray(t, dtype=float)
    a = np.asarray(a, dtype=float)
    if a.ndim != 3 or a.shape[0] != t.size or a.shape[1] < 2 or a.shape[2] < 2:
        raise ValueError(f"a: expected shape ({t.size}, R >= 2, d >= 2), got {a.shape}")
    a_mean = a.mean(1)
    tail = tail_window(len(t))
    th_sim = crossing_times(t, a_mean, a_mean[tail].mean(0) / 2)
    th_rep = np.array([crossing_times(t, a[:, j], a[tail, j].mean(0) / 2) for j in range(a.shape[1])])  # (R, d)
    dth = np.diff(th_rep, axis=1)[:, int(np.argmin(np.diff(th_sim)))]
    se = standard_error(dth) if np.sum(np.isfinite(dth)) == dth.size >= 2 else float("inf")
    return HalfTimeEstimate(th_sim, se)


def crossing_time_standard_error(t: ArrayLike, a: ArrayLike, level: ArrayLike) -> np.ndarray:
    """Standard error over replicas of the time each mode first reaches ``level``.

    ``nanstd(ddof=1) / sqrt(R)`` of the per-replica crossing times
    (:func:`iclcore.logistic.exact.crossing_times`): a replica that never reaches the level is left out
    of the spread (it still counts in ``R``).

    Parameters
    ----------
    t : array_like, shape (T,)
    a : array_like, shape (T, R, d)
    level : array_like, shape (d,)

    Returns
    -------
    ndarray, shape (d,)
    """
    a = np.asarray(a, dtype=float)
    if a.ndim != 3 or a.shape[1] < 2:
        raise ValueError(f"a: expected shape (T, R >= 2, d), got {a.shape}")
    rep = np.array([crossing_times(t, a[:, j], level) for j in range(a.shape[1])])
    return np.nanstd(rep, axis=0, ddof=1) / np.sqrt(a.shape[1])


def relative_rms(x: ArrayLike, reference: ArrayLike, scale: ArrayLike) -> float:
    """Root mean square of ``(x − reference) / scale`` over all entries (broadcast).

    Examples
    --------
    >>> relative_rms([1.0, 2.0], [1.0, 1.0], 1.0)
    0.7071067811865476
    """
    return float(np.sqrt(np.mean(((np.asarray(x) - np.asarray(reference)) / scale) ** 2)))
