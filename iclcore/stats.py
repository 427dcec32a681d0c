"""Standard errors of Monte Carlo and training quantities (the error model of the claims ledger).

The ledger (``book/reported/*.yml``) grades a random quantity ``X`` against a reported number with
``|X - reported| <= z SE (+ a stated discretisation term)``; the notebooks emit ``SE`` with these
functions. Conventions:

* :func:`standard_error` is the standard error of a mean over independent draws (replicas, seeds,
  held-out prompts): sample standard deviation (``ddof = 1``) over ``sqrt(n)``.
* :func:`replica_spread` is the standard deviation of *one* draw, estimated from independent replicas
  of it: the standard error of a single-run quantity (one training run) as an estimate of its mean.
* :func:`paired_standard_error` is the standard error of a mean difference on the same draws.
* :func:`combined_standard_error` adds the standard errors of independent sources in quadrature.
* :func:`ratio_standard_error` is the delta-method standard error of ``a / b``.
* :func:`increment_z_scores` grades a claimed monotone sequence of independent estimates: each
  consecutive difference over its standard error; :func:`paired_increment_z_scores` does the same
  for estimates measured on the same draws.
* :func:`pooled_ks_distance` is the Kolmogorov distance of a sample pooled over independent draws
  (e.g. the eigenvalues of several random matrices) with the standard error of the pooled cdf at the
  point where the distance is attained.
* A correlated time series uses batch means (:func:`iclcore.models.probes.batch_means`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "standard_error",
    "replica_spread",
    "paired_standard_error",
    "combined_standard_error",
    "ratio_standard_error",
    "pooled_ks_distance",
    "increment_z_scores",
    "paired_increment_z_scores",
]


def _draws(x: ArrayLike, name: str, axis: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        raise ValueError(f"{name}: expected an array of draws along axis {axis}, got a scalar")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: expected finite draws")
    if x.shape[axis] < 2:
        raise ValueError(f"{name}: a standard error needs at least 2 draws along axis {axis}, got {x.shape[axis]}")
    return x


def standard_error(x: ArrayLike, axis: int = 0) -> np.ndarray | float:
    """Standard error of the mean of independent draws: ``std(x, ddof=1) / sqrt(n)`` along ``axis``.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        ``n >= 2`` independent draws along ``axis``; finite.
    axis : int

    Returns
    -------
    float or ndarray (the shape of ``x`` without ``axis``)
    """
    x = _draws(x, "x", axis)
    se = x.std(axis=axis, ddof=1) / math.sqrt(x.shape[axis])
    return float(se) if np.ndim(se) == 0 else se


def replica_spread(x: ArrayLike, axis: int = 0) -> np.ndarray | float:
    """Standard deviation ``std(x, ddof=1)`` of one draw, estimated from ``n >= 2`` independent replicas.

    The standard error of a quantity measured on a single run (e.g. the final iterate of one SGD run)
    as an estimate of its expectation over runs.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Independent replicas along ``axis``, one of which may be the run reported.
    axis : int
    """
    x = _draws(x, "x", axis)
    sd = x.std(axis=axis, ddof=1)
    return float(sd) if np.ndim(sd) == 0 else sd


def paired_standard_error(a: ArrayLike, b: ArrayLike, axis: int = 0) -> np.ndarray | float:
    """Standard error of ``mean(a) - mean(b)`` when ``a`` and ``b`` are measured on the same draws.

    ``standard_error(a - b)``: the common part of the noise cancels (paired comparison).

    Parameters
    ----------
    a, b : array_like, same shape, draws along ``axis``
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"b: paired draws need the shape of a {a.shape}, got {b.shape}")
    return standard_error(a - b, axis)


def combined_standard_error(*se: float) -> float:
    """``sqrt(sum se_i^2)``: the standard error of a sum of independent estimates (quadrature).

    Parameters
    ----------
    *se : float
        Non-negative finite standard errors (at least one).
    """
    if not se:
        raise ValueError("se: expected at least one standard error")
    v = np.asarray(se, dtype=float)
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"se: expected non-negative finite standard errors, got {se!r}")
    return float(math.sqrt(float(np.sum(v**2))))


def increment_z_scores(values: ArrayLike, se: ArrayLike) -> np.ndarray:
    """Consecutive differences of independent estimates in units of their standard error.

    ``z_i = (v_{i+1} - v_i) / sqrt(se_i^2 + se_{i+1}^2)``, shape ``(n - 1,)``. A claimed decrease is
    resolved where ``z_i <= -2``; a difference with zero standard error (both estimates exact) gives
    ``-inf``, ``0`` or ``+inf`` by its sign.

    Parameters
    ----------
    values, se : array_like, shape ``(n,)``, ``n >= 2``
        Estimates measured on independent draws and their non-negative standard errors.
    """
    v = np.asarray(values, dtype=float)
    e = np.asarray(se, dtype=float)
    if v.ndim != 1 or v.size < 2:
        raise ValueError(f"values: expected a 1-d sequence of at least 2 estimates, got shape {v.shape}")
    if e.shape != v.shape:
        raise ValueError(f"se: expected shape {v.shape} like values, got {e.shape}")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(e))) or np.any(e < 0):
        raise ValueError("values, se: expected finite values and non-negative finite standard errors")
    d = np.diff(v)
    s = np.sqrt(e[1:] ** 2 + e[:-1] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, d / np.where(s > 0, s, 1.0), np.sign(d) * np.inf)


def paired_increment_z_scores(draws: ArrayLike) -> np.ndarray:
    """Consecutive differences of means measured on the same draws, in units of their paired SE.

    ``draws`` shape ``(n, k)``: ``n`` estimates (e.g. depths), each on the same ``k >= 2`` draws.
    ``z_i = mean(draws[i+1] - draws[i]) / paired_standard_error(draws[i+1], draws[i])``, shape
    ``(n - 1,)``: the common part of the noise cancels.
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"draws: expected shape (n >= 2, k) of estimates on shared draws, got {x.shape}")
    d = np.diff(x, axis=0)
    return d.mean(axis=1) / paired_standard_error(x[1:], x[:-1], axis=1)


def ratio_standard_error(a: float, se_a: float, b: float, se_b: float, cov: float = 0.0) -> float:
    """Delta-method standard error of ``a / b``.

    ``Var(a/b) ≈ (a/b)^2 (se_a^2/a^2 + se_b^2/b^2 - 2 cov/(a b))``, written without dividing by
    ``a`` so that ``a = 0`` is allowed: ``sqrt(se_a^2 - 2 (a/b) cov + (a/b)^2 se_b^2) / |b|``.

    Parameters
    ----------
    a, b : float
        Estimates (``b != 0``).
    se_a, se_b : float
        Their standard errors (``>= 0``).
    cov : float
        Covariance of the two estimates (0 for independent ones).
    """
    vals = (a, se_a, b, se_b, cov)
    if not all(math.isfinite(float(v)) for v in vals):
        raise ValueError(f"a, se_a, b, se_b, cov: expected finite numbers, got {vals!r}")
    if b == 0:
        raise ValueError("b: the denominator of a ratio must be non-zero")
    if se_a < 0 or se_b < 0:
        raise ValueError(f"se_a, se_b: standard errors must be >= 0, got {se_a!r}, {se_b!r}")
    r = a / b
    var = se_a**2 - 2.0 * r * cov + r**2 * se_b**2
    return float(math.sqrt(max(var, 0.0)) / abs(b))


def pooled_ks_distance(samples: ArrayLike, cdf: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """Kolmogorov distance ``sup_x |F_n(x) - F(x)|`` of a pooled sample, with a standard error.

    ``samples`` holds ``n >= 2`` independent draws of ``m`` values each (the values within a draw may
    be dependent, e.g. the eigenvalues of one random matrix). The pooled empirical cdf is the mean of
    the per-draw empirical cdfs, so at a fixed point its standard error is
    ``std_d(F_d(x)) / sqrt(n)``; it is evaluated at the point ``x*`` where the distance is attained
    (right limit ``F_d(x*)`` when ``F_n - F`` is largest there, left limit ``F_d(x*-)`` otherwise).

    Parameters
    ----------
    samples : array_like, shape (n, m)
        Finite values; draws along axis 0.
    cdf : callable
        Vectorised target cdf ``F``.

    Returns
    -------
    (distance, standard_error) : floats
        ``distance`` equals ``scipy.stats.kstest(samples.ravel(), cdf).statistic``.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"samples: expected an array (n draws, m values), got shape {x.shape}")
    x = _draws(x, "samples", 0)
    pooled = np.sort(x.ravel())
    N = pooled.size
    F = np.asarray(cdf(pooled), dtype=float)
    if F.shape != pooled.shape or not np.all(np.isfinite(F)):
        raise ValueError("cdf: expected a vectorised function returning finite values")
    d_plus = np.arange(1, N + 1) / N - F
    d_minus = F - np.arange(N) / N
    i_p, i_m = int(np.argmax(d_plus)), int(np.argmax(d_minus))
    if d_plus[i_p] >= d_minus[i_m]:
        dist, at = float(d_plus[i_p]), np.mean(x <= pooled[i_p], axis=1)
    else:
        dist, at = float(d_minus[i_m]), np.mean(x < pooled[i_m], axis=1)
    return dist, float(at.std(ddof=1) / math.sqrt(x.shape[0]))
