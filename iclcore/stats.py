"""Statistics of the book: standard errors, z-scores and confidence bounds (the ledger's error model).

This is the package's one statistics module: the statistical helpers of the notebooks, of the
chapters' experiment functions and of the decoder's statistical certificate are defined here.

The ledger (``book/reported/*.yml``) grades a random quantity ``X`` against a reported number with
``|X - reported| <= z SE (+ a stated discretisation term)``; the notebooks emit ``SE`` with these
functions. Conventions:

* :func:`agreement_within_se` is that rule itself, as the report applies it to a ledger row.
* :func:`standard_error` is the standard error of a mean over independent draws (replicas, seeds,
  held-out prompts): sample standard deviation (``ddof = 1``) over ``sqrt(n)``
  (:func:`scipy.stats.sem`).
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
* :func:`ks_two_sample` is the two-sample Kolmogorov distance and :func:`ks_critical_value` the
  Dvoretzky–Kiefer–Wolfowitz–Massart level it is compared with.
* :func:`clipped_empirical_bernstein` is a distribution-free upper confidence bound on the mean of
  clipped held-out losses (the statistical certificate of the decoder chapter, MMNN report §2);
  :func:`eb_coverage_from_pool` and :func:`eb_coverage` measure its coverage by simulation.
* :func:`batch_means` is the mean of a correlated time series (a training loss, an order parameter
  along one run) and its standard error from the means of consecutive blocks.
* :func:`bootstrap_standard_error` is the bootstrap standard error (over units such as prompts) of
  any statistic, e.g. a median that one exploding unit cannot swing (:func:`scipy.stats.bootstrap`).

``scipy.stats`` is used where it computes the quantity itself (:func:`scipy.stats.sem`); each other
function says in its docstring why it does not (scipy has no delta-method ratio, quadrature sum,
empirical-Bernstein bound or pooled-draw Kolmogorov standard error).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from iclcore.validation import positive_float, positive_int, probability

__all__ = [
    "SEAgreement",
    "agreement_within_se",
    "standard_error",
    "replica_spread",
    "paired_standard_error",
    "combined_standard_error",
    "ratio_standard_error",
    "pooled_ks_distance",
    "increment_z_scores",
    "paired_increment_z_scores",
    "batch_means",
    "ks_two_sample",
    "ks_critical_value",
    "EBBound",
    "clipped_empirical_bernstein",
    "eb_coverage_from_pool",
    "eb_coverage",
    "bootstrap_standard_error",
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

    Notes
    -----
    Computed by :func:`scipy.stats.sem` (``ddof = 1``) after the checks: finite draws, ``n >= 2``
    (scipy would return NaN for a non-finite draw and for ``n = 1``).
    """
    x = _draws(x, "x", axis)
    se = scipy.stats.sem(x, axis=axis, ddof=1)
    return float(se) if np.ndim(se) == 0 else np.asarray(se)


def replica_spread(x: ArrayLike, axis: int = 0) -> np.ndarray | float:
    """Standard deviation ``std(x, ddof=1)`` of one draw, estimated from ``n >= 2`` independent replicas.

    The standard error of a quantity measured on a single run (e.g. the final iterate of one SGD run)
    as an estimate of its expectation over runs.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Independent replicas along ``axis``, one of which may be the run reported.
    axis : int

    Notes
    -----
    numpy's ``std(ddof=1)``: :func:`scipy.stats.tstd` computes the same number but only through its
    trimming interface, which adds nothing here.
    """
    x = _draws(x, "x", axis)
    sd = x.std(axis=axis, ddof=1)
    return float(sd) if np.ndim(sd) == 0 else sd


def batch_means(y: ArrayLike, n_blocks: int = 10) -> tuple[float, float]:
    """Mean of a correlated series and its standard error by batch means.

    The series (1-D, length ``T >= n_blocks``) is cut into ``n_blocks`` consecutive blocks of equal
    length ``k = T // n_blocks`` (a remainder at the *start* is dropped, so the series' end, usually
    the stationary part, is kept); the standard error is :func:`standard_error` of the block means.
    Valid when a block is longer than the correlation time of the series.

    Parameters
    ----------
    y : array_like, shape (T,)
        Finite values.
    n_blocks : int
        Number of blocks, ``2 <= n_blocks <= T``.

    Returns
    -------
    (mean, se) : floats
        The mean of the block means and its standard error.

    Notes
    -----
    ``scipy.stats`` has no batch-means estimator; the standard error of the block means is
    :func:`scipy.stats.sem` through :func:`standard_error`.
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ValueError("y: expected a finite 1-D series")
    n_blocks = positive_int(n_blocks, "n_blocks", minimum=2, maximum=y.size)
    k = y.size // n_blocks
    m = y[y.size - k * n_blocks :].reshape(n_blocks, k).mean(axis=1)
    return float(m.mean()), float(standard_error(m))


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

    Notes
    -----
    A quadrature sum: ``scipy.stats`` has no function for it.
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

    Notes
    -----
    Differences of estimates with *given* standard errors: no ``scipy.stats`` test takes that input
    (:func:`scipy.stats.ttest_ind_from_stats` wants the sample sizes and gives p-values).
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
    ``(n - 1,)``: the common part of the noise cancels. This is the statistic of
    :func:`scipy.stats.ttest_rel` on each consecutive pair, computed here for all pairs at once with
    :func:`paired_standard_error` (no p-values needed).
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

    Notes
    -----
    The delta method has no ``scipy.stats`` function.
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

    Notes
    -----
    Computed here rather than by :func:`scipy.stats.kstest`: the standard error needs the per-draw
    empirical cdfs at the point of the distance and the side (``F_n - F`` largest or ``F - F_n``)
    it is attained on, with ties resolved towards ``F_n - F`` (kstest resolves them the other way
    and also computes a p-value the ledger does not use).
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


# ----------------------------------------------------------------------------- confidence bounds


def ks_two_sample(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sample Kolmogorov–Smirnov distance ``sup_x |F_a(x) − F_b(x)|`` of the flattened samples.

    Parameters
    ----------
    a, b : array_like
        Non-empty samples (any shapes; flattened).

    Notes
    -----
    The statistic of :func:`scipy.stats.ks_2samp`.
    """
    a = np.asarray(a, float).ravel()
    b = np.asarray(b, float).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("a, b: need non-empty samples")
    return float(scipy.stats.ks_2samp(a, b).statistic)


def ks_critical_value(n: int, m: int | None = None, alpha: float = 0.01) -> float:
    """Dvoretzky–Kiefer–Wolfowitz level: ``sqrt(log(2/α)/2) · sqrt(1/n + 1/m)`` (``1/m`` dropped if ``m`` is None).

    With probability at least ``1 − α`` an i.i.d. sample of size ``n`` has KS distance below
    ``sqrt(log(2/α)/(2n))`` from its law (Massart's constant); the two-sample version uses
    ``1/n + 1/m``. For pooled eigenvalues the sizes to pass are the numbers of independent
    matrices (eigenvalues of one matrix repel, so this is conservative).

    Parameters
    ----------
    n, m : int
        Sample sizes (``>= 1``); ``m = None`` for the one-sample level.
    alpha : float
        Failure probability in ``(0, 1)``.

    Notes
    -----
    A closed-form, finite-sample inequality; scipy's :data:`scipy.stats.kstwo` is the exact
    one-sample null law, a different (smaller) number, so it is not used.
    """
    n = positive_int(n, "n")
    if m is not None:
        m = positive_int(m, "m")
    alpha = probability(alpha, "alpha")
    w = 1.0 / n + (0.0 if m is None else 1.0 / m)
    return float(math.sqrt(math.log(2.0 / alpha) / 2.0 * w))


@dataclass(frozen=True)
class EBBound:
    """Result of :func:`clipped_empirical_bernstein` (arrays broadcast over leading axes).

    Attributes
    ----------
    mean : float or ndarray
        ``\\hat R_c``.
    variance : float or ndarray
        ``\\hat V_c`` (unbiased).
    upper : float or ndarray
        The upper confidence bound on ``R_c``.
    n, clip, delta : the inputs.
    """

    mean: np.ndarray | float
    variance: np.ndarray | float
    upper: np.ndarray | float
    n: int
    clip: float
    delta: float


def clipped_empirical_bernstein(losses: ArrayLike, clip: float, delta: float = 0.05) -> EBBound:
    """Clipped empirical-Bernstein upper confidence bound on a mean loss (MMNN report §2).

    For a held-out loss ``ℓ ≥ 0`` clipped at ``c``, ``ℓ_c = min(ℓ, c) ∈ [0, c]``, with probability
    at least ``1 − δ`` over ``n`` i.i.d. held-out draws

    .. math::

        R_c \\le \\hat R_c + \\sqrt{\\frac{2 \\hat V_c \\log(2/δ)}{n}} + \\frac{7 c \\log(2/δ)}{3 (n - 1)},

    where ``R_c = E ℓ_c``, ``\\hat R_c`` is the sample mean and ``\\hat V_c`` the unbiased sample
    variance of the clipped losses. This is Maurer & Pontil's (2009, Thm. 4) empirical-Bernstein
    inequality rescaled from ``[0, 1]`` to ``[0, c]``; it is distribution-free after clipping. It
    bounds the *clipped* risk ``R_c ≤ R``; it certifies ``R`` itself only when ``ℓ ≤ c`` almost
    surely. (The deterministic per-prompt optimisation certificate is
    :func:`iclcore.lsq.iterates.richardson_certificate`.)

    Parameters
    ----------
    losses : array_like, shape (..., n)
        Non-negative held-out losses; the bound is computed along the last axis
        (leading axes = independent repetitions).
    clip : float
        Clipping level ``c > 0``.
    delta : float
        Failure probability in (0, 1).

    Returns
    -------
    EBBound

    Notes
    -----
    ``scipy.stats`` has no empirical-Bernstein bound (its intervals, e.g.
    :func:`scipy.stats.bootstrap`, are asymptotic, not finite-sample and distribution-free).
    """
    clip, delta = _eb_levels(clip, delta)
    x = np.asarray(losses, dtype=float)
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"losses: need at least 2 losses along the last axis, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("losses: must be finite and non-negative")
    n = x.shape[-1]
    xc = np.minimum(x, clip)
    mean = xc.mean(axis=-1)
    var = xc.var(axis=-1, ddof=1)
    log_term = np.log(2.0 / delta)
    upper = mean + np.sqrt(2.0 * var * log_term / n) + 7.0 * clip * log_term / (3.0 * (n - 1))
    if np.ndim(mean) == 0:
        mean, var, upper = float(mean), float(var), float(upper)
    return EBBound(mean=mean, variance=var, upper=upper, n=int(n), clip=clip, delta=delta)


def _eb_levels(clip: object, delta: object) -> tuple[float, float]:
    """The clipping level ``c`` (finite, ``> 0``) and the failure probability ``δ ∈ (0, 1)``."""
    return positive_float(clip, "clip"), probability(delta, "delta")


def eb_coverage_from_pool(
    pool: ArrayLike, n: int, clip: float, delta: float, n_repeats: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Coverage of :func:`clipped_empirical_bernstein` when the law of the loss is the empirical law of ``pool``.

    Draws ``n_repeats`` samples of size ``n`` with replacement from ``pool``; the true clipped risk
    of that law is exactly ``mean(min(pool, c))``. The EB inequality holds for every law on
    ``[0, c]``, so the coverage must be ``≥ 1 − δ`` up to Monte Carlo error ``O(n_repeats^{-1/2})``.

    Parameters
    ----------
    pool : array_like, shape (m,)
        ``m >= 2`` losses.
    n, n_repeats : int
        Sample size (``>= 2``) and number of repetitions (``>= 1``).
    rng : numpy.random.Generator
        Draws the indices, ``rng.integers(0, m, size=(n_repeats, n))``.

    Returns
    -------
    coverage : float
        Fraction of repetitions with ``R_c ≤ upper``.
    true_clipped_risk : float

    Notes
    -----
    A resampling *coverage* check, not a confidence interval, so not :func:`scipy.stats.bootstrap`;
    the indices are drawn directly so that the result is a fixed function of ``rng``.
    """
    clip, delta = _eb_levels(clip, delta)
    pool = np.asarray(pool, float)
    if pool.ndim != 1 or pool.size < 2:
        raise ValueError(f"pool: expected a 1-D array of >= 2 losses, got shape {pool.shape}")
    n = positive_int(n, "n", minimum=2)
    n_repeats = positive_int(n_repeats, "n_repeats")
    true = float(np.minimum(pool, clip).mean())
    idx = rng.integers(0, pool.size, size=(n_repeats, n))
    b = clipped_empirical_bernstein(pool[idx], clip, delta)
    return float(np.mean(true <= np.asarray(b.upper))), true


def eb_coverage(
    draw_losses: Callable[[int, int, np.random.Generator], ArrayLike],
    true_clipped_risk: float,
    n: int,
    clip: float,
    delta: float,
    n_repeats: int,
    rng: np.random.Generator,
) -> float:
    """Coverage of :func:`clipped_empirical_bernstein` over repeated fresh draws.

    Parameters
    ----------
    draw_losses : callable
        ``draw_losses(n_repeats, n, rng)`` returns losses of shape ``(n_repeats, n)``.
    true_clipped_risk : float
        ``R_c`` of the law ``draw_losses`` samples.

    Returns
    -------
    float
        The fraction of repetitions whose upper bound is ``≥ true_clipped_risk``.

    Notes
    -----
    A simulation of coverage; ``scipy.stats`` has no counterpart.
    """
    clip, delta = _eb_levels(clip, delta)
    x = np.asarray(draw_losses(n_repeats, n, rng), float)
    if x.shape != (n_repeats, n):
        raise ValueError(f"draw_losses: must return shape {(n_repeats, n)}, got {x.shape}")
    b = clipped_empirical_bernstein(x, clip, delta)
    return float(np.mean(true_clipped_risk <= np.asarray(b.upper)))


@dataclass(frozen=True)
class SEAgreement:
    """The ledger's ``within_se`` rule applied to one value (see :func:`agreement_within_se`)."""

    difference: float  #: value - reported
    z: float  #: difference / SE, signed; ±inf (or 0 for no difference) when SE = 0
    allowed: float  #: z_max SE + discretisation
    holds: bool  #: ``|difference| <= allowed``

    @property
    def margin(self) -> float:
        """``allowed - |difference|``: how far inside (> 0) or outside (< 0) the band the value lies."""
        return self.allowed - abs(self.difference)


def agreement_within_se(
    value: float, reported: float, se: float, z: float = 3.0, discretisation: float = 0.0
) -> SEAgreement:
    """Whether ``value`` agrees with ``reported`` within ``z`` standard errors plus a discretisation term.

    The rule of the ledger's ``within_se`` rows (``book/reported/*.yml``, graded by the report):
    ``|value - reported| <= z SE + discretisation``, with ``SE`` the standard error the notebook
    computed for ``value`` and ``discretisation`` a stated, non-statistical error term (a grid, a
    rounding of the reported number). ``scipy.stats`` has no such rule: it is a two-line comparison.

    Parameters
    ----------
    value, reported : float
        The computed and the paper's number.
    se : float
        Standard error of ``value`` (>= 0).
    z : float
        Allowed number of standard errors (> 0).
    discretisation : float
        Additional allowed absolute difference (>= 0).

    Examples
    --------
    >>> a = agreement_within_se(1.05, 1.0, se=0.02)
    >>> round(a.z, 6), a.holds
    (2.5, True)
    >>> agreement_within_se(0.9, 1.0, se=0.0).z
    -inf
    """
    for name, x in (("value", value), ("reported", reported), ("se", se)):
        if not math.isfinite(x):
            raise ValueError(f"{name}: expected a finite number, got {x!r}")
    if se < 0:
        raise ValueError(f"se: expected a standard error >= 0, got {se!r}")
    positive_float(z, "z")
    if not (math.isfinite(discretisation) and discretisation >= 0):
        raise ValueError(f"discretisation: expected a finite number >= 0, got {discretisation!r}")
    diff = float(value) - float(reported)
    zscore = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    allowed = z * se + discretisation
    return SEAgreement(diff, zscore, allowed, abs(diff) <= allowed)


def bootstrap_standard_error(
    x: ArrayLike,
    statistic: Callable[[np.ndarray], float | np.ndarray],
    rng: np.random.Generator | int,
    n_resamples: int = 1000,
    vectorized: bool = False,
) -> float | np.ndarray:
    """Bootstrap standard error of ``statistic(x)`` over the units on axis 0 of ``x`` (prompts, draws).

    Parameters
    ----------
    x : array_like, shape (n, ...)
        ``n >= 2`` independent units along axis 0 (each row one unit, e.g. one prompt's per-layer
        errors); the rows are resampled with replacement, so a statistic of several per-unit
        quantities keeps them paired.
    statistic : callable
        Maps an array shaped like ``x`` (its rows resampled) to a float or a 1-D array.
    rng : numpy.random.Generator or int
        The resampling randomness (an int seeds :func:`numpy.random.default_rng`).
    n_resamples : int
        Number of bootstrap resamples (>= 2).
    vectorized : bool
        ``statistic`` also accepts a stack of resamples, shape ``(batch, n, ...)``, and returns one
        value (or 1-D array) per resample along its first axis: the resamples are then evaluated in
        batches of 100 instead of one call each.

    Returns
    -------
    float or ndarray (the shape of ``statistic(x)``)
        The standard deviation (``ddof = 1``) of the statistic over the resamples.

    Notes
    -----
    Computed by :func:`scipy.stats.bootstrap` on the row indices (``vectorized=False``, so any
    statistic works; ``method="percentile"``, whose interval is not used). ``x`` need not be finite:
    a robust statistic (a median) is meant to tolerate a few exploding units, and a resample whose
    statistic is not finite makes the standard error ``nan``.

    Examples
    --------
    >>> x = np.arange(100.0)
    >>> se = bootstrap_standard_error(x, np.median, rng=0, n_resamples=200)
    >>> 1.0 < se < 6.0
    True
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.shape[0] < 2:
        raise ValueError(f"x: expected at least 2 units along axis 0, got shape {x.shape}")
    if not callable(statistic):
        raise TypeError(f"statistic: expected a callable, got {type(statistic).__name__}")
    n_resamples = positive_int(n_resamples, "n_resamples", minimum=2)
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(positive_int(rng, "rng", minimum=0))
    if not isinstance(vectorized, bool):
        raise TypeError(f"vectorized: expected a bool, got {type(vectorized).__name__}")

    def on_indices(i: np.ndarray, axis: int = -1) -> np.ndarray:
        value = np.asarray(statistic(x[i]), dtype=float)
        return value if i.ndim == 1 else np.moveaxis(value, 0, -1)  # scipy wants the resamples last

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
        res = scipy.stats.bootstrap(
            (np.arange(x.shape[0]),),
            on_indices,
            vectorized=vectorized,
            n_resamples=n_resamples,
            batch=100 if vectorized else None,
            method="percentile",
            random_state=rng,
        )
    se = res.standard_error
    return float(se) if np.ndim(se) == 0 else np.asarray(se, dtype=float)
