"""Statistics of the book: standard errors, z-scores, confidence bounds and regressions (the ledger's error model).

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
* :func:`single_run_standard_error` is the error model of a quantity measured on one training run and a finite
  sample: the replica spread and the sampling standard error in quadrature.
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
* :func:`relative_bias` is the relative deviation of a simulated series from a theory curve: its largest
  value and its mean with a batch-means standard error (the theory's own error in quadrature).
* :func:`monte_carlo_agreement` compares a deterministic prediction with the mean of independent
  Monte Carlo draws: relative difference, its standard error, the excess over a stated discretisation
  term in standard errors, and the two-halves z-score that shows the Monte Carlo converged.
* :func:`batch_means` is the mean of a correlated time series (a training loss, an order parameter
  along one run) and its standard error from the means of consecutive blocks.
* :func:`bootstrap_standard_error` is the bootstrap standard error (over units such as prompts) of
  any statistic, e.g. a median that one exploding unit cannot swing (:func:`scipy.stats.bootstrap`).

Regressions (the fits whose slopes and standard errors the ledger grades):

* :func:`fit_line` is the ordinary least-squares line with residual standard errors, or with given
  errors of ``y`` propagated through the fit; :func:`fit_weighted_line` weights by ``1/se²`` and
  takes the errors as given; both return a :class:`LineFit` (slope, intercept, their standard
  errors and the fit window).
* :func:`fit_power_law` is the log-log line of a power law ``y ∝ x^slope``;
  :func:`fit_power_law_exponent` its decay exponent and :func:`fit_power_law_drift` the exponent's
  pre-asymptotic error on a finite window; :func:`fit_power_law_weighted` fits ``A x^p`` to noisy
  samples of either sign, and :func:`fit_offset_power_law` extrapolates ``a + b x^{-q}``.
* :func:`least_squares` and :func:`weighted_least_squares` fit a general design (a
  :class:`LinearModelFit`), e.g. :func:`power_law_design`, a power law with finite-size corrections.
* :func:`inverse_size_extrapolation` extrapolates estimates at sizes ``…, D, 2D`` to infinite size by a
  weighted line in ``1/D``, with a curvature term.
* :func:`binomial_excess_z` grades observed frequencies against claimed probability bounds.
* :func:`win_rate` is the share of paired units on which one loss beats another, with the
  :func:`binomial_standard_error` of a proportion.

``scipy.stats`` is used where it computes the quantity itself (:func:`scipy.stats.sem`); each other
function says in its docstring why it does not (scipy has no delta-method ratio, quadrature sum,
empirical-Bernstein bound or pooled-draw Kolmogorov standard error). ``scipy.stats`` and
``scipy.optimize`` are imported inside the functions that call them: importing this module (which
most of the package does) then costs only numpy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from iclcore.validation import nonnegative_float, positive_float, positive_int, probability

__all__ = [
    "SEAgreement",
    "agreement_within_se",
    "standard_error",
    "replica_spread",
    "paired_standard_error",
    "combined_standard_error",
    "single_run_standard_error",
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
    "LineFit",
    "fit_line",
    "fit_weighted_line",
    "fit_power_law",
    "fit_power_law_exponent",
    "fit_power_law_drift",
    "fit_power_law_weighted",
    "fit_offset_power_law",
    "LinearModelFit",
    "least_squares",
    "weighted_least_squares",
    "power_law_design",
    "binomial_standard_error",
    "binomial_excess_z",
    "win_rate",
    "SizeExtrapolation",
    "inverse_size_extrapolation",
    "RelativeBias",
    "relative_bias",
    "MonteCarloAgreement",
    "monte_carlo_agreement",
    "fisher_z",
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

    Examples
    --------
    >>> round(standard_error([1.0, 2.0, 3.0, 4.0]), 6)  # sqrt(5/3) / 2
    0.645497
    >>> standard_error(np.array([[1.0, 2.0], [3.0, 6.0]]), axis=0)
    array([1., 2.])
    """
    import scipy.stats

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

    Examples
    --------
    >>> round(replica_spread([1.0, 2.0, 3.0, 4.0]), 6)  # sqrt(5/3)
    1.290994
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

    Examples
    --------
    >>> m, se = batch_means(np.arange(10.0), n_blocks=5)  # block means 0.5, 2.5, ..., 8.5
    >>> m, round(se, 6)
    (4.5, 1.414214)
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

    Examples
    --------
    >>> round(paired_standard_error([1.0, 2.0, 3.0], [0.0, 1.0, 2.5]), 6)  # SE of [1, 1, 0.5]
    0.166667
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

    Examples
    --------
    >>> round(combined_standard_error(0.3, 0.4), 12)
    0.5
    """
    if not se:
        raise ValueError("se: expected at least one standard error")
    v = np.asarray(se, dtype=float)
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"se: expected non-negative finite standard errors, got {se!r}")
    return float(math.sqrt(float(np.sum(v**2))))


def single_run_standard_error(replicas: ArrayLike, sampling_se: float = 0.0) -> float:
    """Standard error of a quantity measured on one training run and a finite held-out sample.

    ``combined_standard_error(replica_spread(replicas), sampling_se)``: the run-to-run spread of the quantity
    over independent training replicas (:func:`replica_spread`, the reported run among them) and the
    standard error of the sample it is evaluated on (e.g. :func:`standard_error` over held-out prompts;
    0 for a quantity that does not depend on the sample), independent sources added in quadrature.

    Parameters
    ----------
    replicas : array_like, shape (r,)
        The quantity on ``r >= 2`` independent training runs.
    sampling_se : float
        Its standard error over the evaluation sample (``>= 0``).

    Examples
    --------
    >>> round(single_run_standard_error([1.0, 1.2, 0.8], 0.1), 6)  # sqrt(0.2^2 + 0.1^2)
    0.223607
    """
    return combined_standard_error(replica_spread(replicas), sampling_se)


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

    Examples
    --------
    >>> increment_z_scores([1.0, 0.5, 0.5], [0.1, 0.1, 0.0]).round(6)
    array([-3.535534,  0.      ])
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

    Examples
    --------
    >>> paired_increment_z_scores([[1.0, 2.0, 3.0], [0.0, 1.5, 2.0]]).round(6)
    array([-5.])
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"draws: expected shape (n >= 2, k) of estimates on shared draws, got {x.shape}")
    d = np.diff(x, axis=0)
    return d.mean(axis=1) / paired_standard_error(x[1:], x[:-1], axis=1)


def ratio_standard_error(a: float, se_a: float, b: float, *, se_b: float, cov: float = 0.0) -> float:
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

    Examples
    --------
    >>> round(ratio_standard_error(1.0, 0.1, 2.0, se_b=0.0), 12)  # se_a / |b| when b is exact
    0.05
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

    Examples
    --------
    >>> pooled_ks_distance([[0.25, 0.75], [0.25, 0.75]], lambda x: np.clip(x, 0.0, 1.0))
    (0.25, 0.0)
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

    Examples
    --------
    >>> round(ks_two_sample([0.0, 1.0, 2.0], [0.5, 1.5, 2.5]), 12)
    0.333333333333
    """
    a = np.asarray(a, float).ravel()
    b = np.asarray(b, float).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("a, b: need non-empty samples")
    import scipy.stats

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

    Examples
    --------
    >>> round(ks_critical_value(100, alpha=0.05), 6)  # sqrt(log(40) / 200)
    0.13581
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

    Examples
    --------
    >>> b = clipped_empirical_bernstein([0.1, 0.2, 5.0, 0.3], clip=1.0)  # 5.0 is clipped to 1.0
    >>> round(b.mean, 12), b.upper > b.mean
    (0.4, True)
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
    pool: ArrayLike, n: int, clip: float, *, delta: float, n_repeats: int, rng: np.random.Generator
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

    Examples
    --------
    >>> pool = np.random.default_rng(0).exponential(size=500)
    >>> coverage, risk = eb_coverage_from_pool(pool, 50, 2.0, delta=0.05, n_repeats=200, rng=np.random.default_rng(1))
    >>> coverage >= 0.95, 0.0 < risk < 2.0
    (True, True)
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
    *,
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

    Examples
    --------
    >>> draw = lambda reps, n, rng: rng.uniform(size=(reps, n))
    >>> eb_coverage(draw, 0.5, 50, clip=1.0, delta=0.05, n_repeats=200, rng=np.random.default_rng(0)) >= 0.95
    True
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
        """``allowed - |difference|``: how far inside (> 0) or outside (< 0) the band the value lies.

        Examples
        --------
        >>> round(agreement_within_se(1.02, 1.0, 0.01).margin, 12)  # allowed 3 x 0.01, |difference| 0.02
        0.01
        """
        return self.allowed - abs(self.difference)


def agreement_within_se(
    value: float, reported: float, se: float, *, z: float = 3.0, discretisation: float = 0.0
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
    *,
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

    import scipy.stats

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


# ----------------------------------------------------------------------------- regressions


@dataclass(frozen=True)
class LineFit:
    """Result of :func:`fit_line`, :func:`fit_weighted_line` and :func:`fit_power_law`.

    Arrays of shape ``(k,)`` in place of floats when ``k`` series were fitted at once (``y`` of shape
    ``(n, k)``).

    Attributes
    ----------
    slope, intercept : float or ndarray (k,)
        The fitted line ``y = intercept + slope x`` (for a power law: ``log y = intercept + slope log x``).
    slope_se, intercept_se : float or ndarray (k,)
        Their standard errors (see the fitting function for the error model); ``nan`` where the
        error model has too few points (two points and no given errors).
    n : int
        Number of points fitted.
    x_min, x_max : float
        The fit window: the smallest and largest ``x`` fitted (for a power law, in the units of ``x``,
        not of ``log x``).
    """

    slope: float | np.ndarray
    intercept: float | np.ndarray
    slope_se: float | np.ndarray
    intercept_se: float | np.ndarray
    n: int
    x_min: float
    x_max: float

    @property
    def exponent(self) -> float | np.ndarray:
        """``-slope``: the decay exponent ``p`` of ``y ∝ x^{-p}`` (meaningful for :func:`fit_power_law`).

        Examples
        --------
        >>> x = np.array([1.0, 2.0, 4.0, 8.0])
        >>> round(float(fit_power_law(x, 3.0 * x**-1.5).exponent), 12)
        1.5
        """
        return -self.slope

    @property
    def amplitude(self) -> float | np.ndarray:
        """``exp(intercept)``: the prefactor ``A`` of ``y = A x^{slope}`` (meaningful for :func:`fit_power_law`).

        Examples
        --------
        >>> x = np.array([1.0, 2.0, 4.0, 8.0])
        >>> round(float(fit_power_law(x, 3.0 * x**-1.5).amplitude), 12)
        3.0
        """
        return np.exp(self.intercept)


def _fit_points(x: ArrayLike, y: ArrayLike, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (1-D, finite) and ``y`` (``(n,)`` or ``(n, k)``, finite) with ``n >= minimum`` points."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or x.size < minimum:
        raise ValueError(f"x: expected a 1-D array of at least {minimum} points, got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.size:
        raise ValueError(f"y: expected shape ({x.size},) or ({x.size}, k) like x, got {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x, y: expected finite values")
    if np.ptp(x) == 0:
        raise ValueError("x: a line needs at least two distinct x values")
    return x, y


def _scalar_or_array(v: np.ndarray) -> float | np.ndarray:
    return float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float)


def fit_line(x: ArrayLike, y: ArrayLike, y_se: ArrayLike | None = None) -> LineFit:
    """Ordinary least-squares line ``y ≈ intercept + slope x`` with standard errors.

    The coefficients are those of :func:`numpy.polyfit` (degree 1). The standard errors follow one of
    two error models:

    * ``y_se=None``: the noise is estimated from the residuals, ``σ² = Σ r_i² / (n − 2)``, and
      ``se(slope)² = σ² [(XᵀX)^{-1}]_{00}`` (the classical OLS standard error; ``nan`` for ``n = 2``);
    * ``y_se`` given (independent errors of the ``y_i``, e.g. Monte Carlo standard errors): the
      errors are propagated through the OLS weights, ``se(slope)² = Σ_i (x̃_i / Σ_j x̃_j²)² se_i²``
      with ``x̃ = x − x̄``, and ``se(intercept)² = Σ_i (1/n − x̄ x̃_i / Σ_j x̃_j²)² se_i²``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Finite, at least two distinct values, ``n >= 2``.
    y : array_like, shape (n,) or (n, k)
        Finite; ``k`` columns are fitted independently (residual error model only).
    y_se : array_like, shape (n,), optional
        Non-negative standard errors of ``y`` (1-D ``y`` only).

    Returns
    -------
    LineFit

    Notes
    -----
    :func:`scipy.stats.linregress` gives the residual standard errors of one series; numpy's
    ``polyfit`` is used instead because it fits ``k`` series at once and its coefficients are the
    book's reference arithmetic. Neither propagates given errors through an unweighted fit.

    Examples
    --------
    >>> f = fit_line([0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 5.0, 7.0])
    >>> round(f.slope, 12), round(f.intercept, 12), round(f.slope_se, 12)
    (2.0, 1.0, 0.0)
    >>> f = fit_line([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], y_se=[0.1, 0.1, 0.1])
    >>> round(f.slope_se, 6)  # 0.1 / sqrt(sum((x - 1)^2))
    0.070711
    """
    x, y = _fit_points(x, y, 2)
    n = x.size
    coef, cov = np.polyfit(x, y, 1, cov="unscaled")
    slope, intercept = coef[0], coef[1]
    if y_se is None:
        fitted = slope * x[:, None] + intercept if y.ndim == 2 else np.polyval(coef, x)
        rss = np.sum((y - fitted) ** 2, axis=0)
        c = cov[..., 0] if y.ndim == 2 else cov  # the unscaled covariance does not depend on y
        if n > 2:
            slope_se = np.sqrt(c[0, 0] * rss / (n - 2))
            intercept_se = np.sqrt(c[1, 1] * rss / (n - 2))
        else:
            slope_se = intercept_se = np.full(np.shape(rss), np.nan)
    else:
        se = np.asarray(y_se, dtype=float)
        if y.ndim != 1 or se.shape != y.shape:
            raise ValueError(f"y_se: expected shape {y.shape} like a 1-D y, got {se.shape}")
        if not np.all(np.isfinite(se)) or np.any(se < 0):
            raise ValueError("y_se: expected non-negative finite standard errors")
        xc = x - x.mean()
        slope_se = np.sqrt(np.sum((xc / np.sum(xc**2)) ** 2 * se**2))
        intercept_se = np.sqrt(np.sum((1.0 / n - x.mean() * xc / np.sum(xc**2)) ** 2 * se**2))
    return LineFit(
        _scalar_or_array(slope),
        _scalar_or_array(intercept),
        _scalar_or_array(slope_se),
        _scalar_or_array(intercept_se),
        n,
        float(x.min()),
        float(x.max()),
    )


def fit_weighted_line(x: ArrayLike, y: ArrayLike, y_se: ArrayLike) -> LineFit:
    """Weighted least-squares line ``y ≈ intercept + slope x``, weights ``1 / se_i²``, standard errors as given.

    Minimises ``Σ_i ((y_i − intercept − slope x_i) / se_i)²``; the standard errors are the square
    roots of the diagonal of ``(Xᵀ W X)^{-1}``, ``W = diag(se^{-2})``: the ``se_i`` are taken as
    the true standard errors (``absolute_sigma``), not rescaled by the fit's χ². Used e.g. for an
    extrapolation in ``1/D`` of estimates with seed standard errors.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Finite; ``n >= 2``, at least two distinct ``x``.
    y_se : array_like, shape (n,)
        Positive finite standard errors of ``y``.

    Returns
    -------
    LineFit

    Notes
    -----
    :func:`numpy.polyfit` with ``w = 1/se`` and ``cov="unscaled"`` (scipy's ``curve_fit`` with
    ``absolute_sigma=True`` gives the same numbers iteratively).

    Examples
    --------
    >>> f = fit_weighted_line([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.1, 0.1, 0.1])
    >>> round(f.slope, 12), round(f.slope_se, 6)  # 0.1 / sqrt(sum((x - 2)^2))
    (2.0, 0.070711)
    >>> round(fit_weighted_line([0.0, 1.0], [0.0, 1.0], [1.0, 1.0]).intercept_se, 6)
    1.0
    """
    x, y = _fit_points(x, y, 2)
    se = np.asarray(y_se, dtype=float)
    if y.ndim != 1 or se.shape != y.shape:
        raise ValueError(f"y_se: expected shape {y.shape} like a 1-D y, got {se.shape}")
    if not np.all(np.isfinite(se)) or np.any(se <= 0):
        raise ValueError("y_se: expected positive finite standard errors")
    coef, cov = np.polyfit(x, y, 1, w=1.0 / se, cov="unscaled")
    return LineFit(
        float(coef[0]),
        float(coef[1]),
        float(np.sqrt(cov[0, 0])),
        float(np.sqrt(cov[1, 1])),
        x.size,
        float(x.min()),
        float(x.max()),
    )


def fit_power_law(x: ArrayLike, y: ArrayLike, y_se: ArrayLike | None = None) -> LineFit:
    """Power-law fit ``y ≈ A x^{slope}`` by least squares on ``log y`` against ``log x``, with standard errors.

    :func:`fit_line` of ``(log x, log y)``; with ``y_se`` given, the standard errors of ``log y`` are
    the relative errors ``se_i / y_i`` (first order). The decay exponent is ``-slope``
    (:attr:`LineFit.exponent`), the window ``[x_min, x_max]`` is in the units of ``x``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Positive, at least two distinct values.
    y : array_like, shape (n,) or (n, k)
        Positive; ``k`` series (e.g. one per independent draw) are fitted at once.
    y_se : array_like, shape (n,), optional
        Standard errors of ``y`` (1-D ``y`` only).

    Returns
    -------
    LineFit

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> f = fit_power_law(x, 3.0 * x**-0.5)
    >>> round(f.exponent, 12), round(float(f.amplitude), 12), (f.x_min, f.x_max)
    (0.5, 3.0, (1.0, 8.0))
    >>> fit_power_law(x, np.column_stack([x, x**2])).slope.round(12)
    array([1., 2.])
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x, y: a power-law fit needs positive values")
    se = None if y_se is None else np.asarray(y_se, dtype=float) / y
    line = fit_line(np.log(x), np.log(y), se)
    return LineFit(line.slope, line.intercept, line.slope_se, line.intercept_se, line.n, float(x.min()), float(x.max()))


def _same_length_samples(x: ArrayLike, y: ArrayLike, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as float arrays of one 1-D shape with at least ``minimum`` samples."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < minimum:
        raise ValueError(f"x, y: expected two 1-D arrays of the same length >= {minimum}")
    return x, y


def fit_power_law_exponent(x: ArrayLike, y: ArrayLike) -> float:
    """Least-squares decay exponent ``-d log y / d log x`` of positive samples: ``fit_power_law(x, y).exponent``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Positive, ``n >= 2``.

    Examples
    --------
    >>> x = np.geomspace(1.0, 100.0, 5)
    >>> round(fit_power_law_exponent(x, 2.0 * x**-0.75), 12)
    0.75
    """
    x, y = _same_length_samples(x, y, 2)
    return float(fit_power_law(x, y).exponent)


def fit_power_law_drift(x: ArrayLike, y: ArrayLike) -> float:
    """Pre-asymptotic error estimate of :func:`fit_power_law_exponent` on a finite window.

    The absolute difference of the fitted exponents on the first and the second half of the samples
    (ordered by ``x``; each half needs two points). A pure power law gives 0; a local slope that
    still moves across the window gives the size of that movement, which is the book's error model
    for exponent fits on theory curves (an agreement rule ``|fit - exponent| <= 3 drift``).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Positive, ``n >= 4``.

    Examples
    --------
    >>> x = np.geomspace(1.0, 100.0, 8)
    >>> fit_power_law_drift(x, x**-0.5) < 1e-12
    True
    >>> fit_power_law_drift(x, x**-0.5 + 0.1) > 0.1
    True
    """
    x, y = _same_length_samples(x, y, 4)
    order = np.argsort(x)
    x, y = x[order], y[order]
    h = x.size // 2
    return abs(fit_power_law_exponent(x[:h], y[:h]) - fit_power_law_exponent(x[h:], y[h:]))


def fit_power_law_weighted(x: ArrayLike, y: ArrayLike, se: ArrayLike) -> tuple[float, float, float]:
    """Weighted least-squares fit ``y = A x^p`` of noisy samples, with the standard error of ``p``.

    Unlike :func:`fit_power_law` (a log-log line), the samples may be noisy and even of either sign
    (e.g. a small simulated bias): the fit is done on ``y`` itself, each sample weighted by its
    standard error ``se`` (e.g. over independent seeds), and the SE of ``p`` is the square root of
    its diagonal entry in the covariance of the weighted Gauss-Newton fit (``absolute_sigma``: the
    SEs are taken as given, not rescaled by χ²). The start is the log-log slope of the positive
    samples (or ``p = 1``).

    Parameters
    ----------
    x : array_like, shape (n,)
        Positive; ``n >= 3``.
    y : array_like, shape (n,)
        Finite.
    se : array_like, shape (n,)
        Positive standard errors of ``y``.

    Returns
    -------
    (A, p, se_p) : floats
        Amplitude, exponent (growth: ``y ∝ x^p``) and the standard error of ``p``.

    Notes
    -----
    :func:`scipy.optimize.curve_fit` with ``sigma=se, absolute_sigma=True``.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> a, p, p_se = fit_power_law_weighted(x, 2.0 * x**-1.5, np.full(4, 0.01))
    >>> round(a, 6), round(p, 6), 0 < p_se < 0.05
    (2.0, -1.5, True)
    """
    x, y, se = (np.asarray(v, dtype=float) for v in (x, y, se))
    if not (x.shape == y.shape == se.shape and x.ndim == 1 and x.size >= 3):
        raise ValueError("x, y, se: expected three 1-D arrays of the same length >= 3")
    if np.any(x <= 0) or np.any(se <= 0) or not np.all(np.isfinite(np.concatenate([x, y, se]))):
        raise ValueError("x, se: expected finite positive values (y finite)")
    pos = y > 0  # starting point: log-log slope of the positive samples (or 1)
    p0 = -fit_power_law_exponent(x[pos], y[pos]) if pos.sum() >= 2 and np.ptp(x[pos]) > 0 else 1.0
    a0 = float(np.exp(np.mean(np.log(np.abs(y[pos]) if pos.any() else se) - p0 * np.log(x[pos] if pos.any() else x))))
    import scipy.optimize

    popt, pcov = scipy.optimize.curve_fit(
        lambda u, a, p: a * u**p, x, y, p0=[a0, p0], sigma=se, absolute_sigma=True, maxfev=20000
    )
    return float(popt[0]), float(popt[1]), float(np.sqrt(pcov[1, 1]))


def fit_offset_power_law(x: ArrayLike, y: ArrayLike, p0: ArrayLike) -> tuple[float, float, float]:
    """Least-squares fit of ``y = a + b x^{-q}``: an extrapolation ``a = lim_{x→∞} y`` of a sequence.

    Used to extrapolate a quantity measured at growing sizes ``x`` (e.g. a fitted exponent at growing
    model sizes) to infinite size; unweighted, started at ``p0 = (a, b, q)``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        ``x`` positive, ``y`` finite; ``n >= 3``.
    p0 : array_like, shape (3,)
        Starting values of ``(a, b, q)``.

    Returns
    -------
    (a, b, q) : floats

    Notes
    -----
    :func:`scipy.optimize.curve_fit` (Levenberg–Marquardt, ``maxfev=20000``).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    >>> a, b, q = fit_offset_power_law(x, 1.0 + 2.0 * x**-0.5, p0=[0.5, 1.0, 1.0])
    >>> round(a, 6), round(b, 6), round(q, 6)
    (1.0, 2.0, 0.5)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not (x.shape == y.shape and x.ndim == 1 and x.size >= 3):
        raise ValueError("x, y: expected two 1-D arrays of the same length >= 3")
    if np.any(x <= 0) or not np.all(np.isfinite(y)):
        raise ValueError("x, y: expected positive x and finite y")
    start = np.asarray(p0, dtype=float)
    if start.shape != (3,) or not np.all(np.isfinite(start)):
        raise ValueError(f"p0: expected three finite starting values (a, b, q), got {p0!r}")
    import scipy.optimize

    popt, _ = scipy.optimize.curve_fit(lambda u, a, b, q: a + b * u**-q, x, y, p0=start, maxfev=20000)
    return float(popt[0]), float(popt[1]), float(popt[2])


@dataclass(frozen=True)
class LinearModelFit:
    """Result of :func:`least_squares` and :func:`weighted_least_squares`.

    Attributes
    ----------
    coef : ndarray, shape (p,) or (p, k)
        The coefficients of the design's columns (``k`` series fitted at once).
    coef_se : ndarray, shape (p,)
        Their standard errors (``nan`` for the unweighted fit of ``k`` series or when ``n <= p``).
    """

    coef: np.ndarray
    coef_se: np.ndarray


def _design(design: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(design, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or X.shape[0] < X.shape[1]:
        raise ValueError(f"design: expected shape (n, p) with n >= p, got {X.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
        raise ValueError(f"y: expected shape ({X.shape[0]},) or ({X.shape[0]}, k), got {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("design, y: expected finite values")
    return X, y


def least_squares(design: ArrayLike, y: ArrayLike) -> LinearModelFit:
    """Ordinary least squares ``y ≈ design @ coef`` (:func:`numpy.linalg.lstsq`), residual standard errors.

    ``se(coef_j)² = σ² [(XᵀX)^{-1}]_{jj}`` with ``σ² = Σ r_i² / (n − p)`` for one series; for ``k``
    series at once (``y`` of shape ``(n, k)``) the standard errors are ``nan`` (the usual use is
    one fit per independent draw, whose spread is the standard error).

    Parameters
    ----------
    design : array_like, shape (n, p)
        The regressors (e.g. ``[1, log x, 1/x]``: :func:`power_law_design`), ``n >= p``.
    y : array_like, shape (n,) or (n, k)

    Returns
    -------
    LinearModelFit

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), np.arange(4.0)])
    >>> least_squares(X, [1.0, 3.0, 5.0, 7.0]).coef.round(12)
    array([1., 2.])
    """
    X, y = _design(design, y)
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    n, p = X.shape
    if y.ndim == 1 and n > p:
        sigma2 = float(np.sum((y - X @ coef) ** 2)) / (n - p)
        coef_se = np.sqrt(sigma2 * np.diag(np.linalg.inv(X.T @ X)))
    else:
        coef_se = np.full(p, np.nan)
    return LinearModelFit(coef, coef_se)


def weighted_least_squares(design: ArrayLike, y: ArrayLike, weights: ArrayLike) -> LinearModelFit:
    """Weighted least squares ``y ≈ design @ coef`` with inverse-variance weights, standard errors as given.

    ``coef = (Xᵀ W X)^{-1} Xᵀ W y`` with ``W = diag(weights)``, ``weights_i = 1 / se_i²`` for
    independent errors ``se_i`` of the ``y_i``; the standard errors are the square roots of the
    diagonal of ``(Xᵀ W X)^{-1}`` (the ``se_i`` are taken as true, not rescaled by χ²).

    Parameters
    ----------
    design : array_like, shape (n, p)
        ``n >= p``, full column rank.
    y : array_like, shape (n,)
    weights : array_like, shape (n,)
        Positive finite inverse variances.

    Returns
    -------
    LinearModelFit

    Notes
    -----
    The normal equations, solved through the explicit inverse that gives the covariance; for the
    small designs of the book (a few columns) they are as accurate as a QR solve.

    Examples
    --------
    >>> X = np.column_stack([np.ones(3), [0.0, 1.0, 2.0]])
    >>> f = weighted_least_squares(X, [1.0, 3.0, 5.0], [1.0, 1.0, 1.0])
    >>> f.coef.round(12), f.coef_se.round(6)
    (array([1., 2.]), array([0.912871, 0.707107]))
    """
    X, y = _design(design, y)
    w = np.asarray(weights, dtype=float)
    if y.ndim != 1 or w.shape != y.shape:
        raise ValueError(f"weights: expected shape {y.shape} like a 1-D y, got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights: expected positive finite inverse variances")
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    return LinearModelFit(cov @ (X.T @ (w * y)), np.sqrt(np.diag(cov)))


def power_law_design(x: ArrayLike, n_corrections: int = 1) -> np.ndarray:
    """Design ``[1, log x, x^{-1}, …, x^{-m}]`` of a power law with ``m`` finite-size corrections.

    Regressing ``log y`` on it fits ``log y = a + b log x + Σ_k c_k x^{-k}``: ``b`` (column 1) is the
    asymptotic slope as ``x → ∞``, the ``c_k x^{-k}`` absorb the leading finite-``x`` corrections
    (e.g. ``log(1 − d/x)``). Use with :func:`least_squares` or :func:`weighted_least_squares`.

    Parameters
    ----------
    x : array_like, shape (n,)
        Positive.
    n_corrections : int
        ``m >= 0``.

    Returns
    -------
    ndarray, shape (n, 2 + m)

    Examples
    --------
    >>> power_law_design([1.0, 2.0], 1)
    array([[1.        , 0.        , 1.        ],
           [1.        , 0.69314718, 0.5       ]])
    """
    x = np.asarray(x)
    if x.ndim != 1 or np.any(x <= 0):
        raise ValueError(f"x: expected a 1-D array of positive values, got shape {x.shape}")
    m = positive_int(n_corrections, "n_corrections", minimum=0)
    return np.column_stack([np.ones(len(x)), np.log(x)] + [x ** -float(k) for k in range(1, m + 1)])


def binomial_standard_error(p: float, n: int) -> float:
    """Standard error ``sqrt(p (1 − p) / n)`` of a proportion ``p`` of ``n`` independent trials.

    Parameters
    ----------
    p : float
        The observed proportion, in ``[0, 1]``.
    n : int
        Number of trials, ``>= 1``.

    Examples
    --------
    >>> binomial_standard_error(0.5, 100)
    0.05
    """
    n = positive_int(n, "n")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p: expected a proportion in [0, 1], got {p!r}")
    return float(np.sqrt(p * (1 - p) / n))


def binomial_excess_z(frequency: ArrayLike, bound: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
    """How far observed frequencies exceed probability bounds, in binomial standard deviations of the bound.

    For a frequency ``f`` of an event over ``n`` independent trials and a claimed bound ``P(event) <= p``,
    ``z = (f − p − 10⁻¹²) / max(sd, 10⁻¹²)`` with ``sd = sqrt(p (1 − p) / n)`` (``p(1 − p)`` floored at
    ``10⁻³⁰⁰``): the sampling noise a frequency may show above a true bound. The offsets make an exact
    agreement (``f = p``, also ``0 = 0`` at ``p = 0``) a negative ``z`` instead of ``0/0``.

    Parameters
    ----------
    frequency, bound : array_like, same shape
        Observed frequencies and the bounds, in ``[0, 1]``.
    n : int
        Number of trials behind each frequency.

    Returns
    -------
    (z, sd) : ndarrays, the shape of ``frequency``

    Examples
    --------
    >>> z, sd = binomial_excess_z([0.06, 0.0], [0.05, 0.0], 400)
    >>> z.round(3), sd.round(4)
    (array([ 0.918, -1.   ]), array([0.0109, 0.    ]))
    """
    f = np.asarray(frequency, dtype=float)
    p = np.asarray(bound, dtype=float)
    if f.shape != p.shape:
        raise ValueError(f"bound: expected the shape {f.shape} of frequency, got {p.shape}")
    if not (np.all((f >= 0) & (f <= 1)) and np.all((p >= 0) & (p <= 1))):
        raise ValueError("frequency, bound: expected values in [0, 1]")
    sd = np.sqrt(np.clip(p * (1 - p), 1e-300, None) / positive_int(n, "n"))
    return (f - p - 1e-12) / np.maximum(sd, 1e-12), sd


def win_rate(losses: ArrayLike, rival_losses: ArrayLike) -> tuple[float, float]:
    """Share of units (e.g. held-out prompts) on which ``losses < rival_losses``, with its binomial standard error.

    A mean of independent indicators: its standard error ``sqrt(w (1 − w) / n)``
    (:func:`binomial_standard_error`) is exact and no heavy tail of the losses can move it.

    Parameters
    ----------
    losses, rival_losses : array_like, shape (n,)
        Paired losses on the same ``n >= 1`` units.

    Returns
    -------
    (rate, se) : floats

    Examples
    --------
    >>> win_rate([1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 5.0, 5.0])
    (0.75, 0.21650635094610965)
    """
    a = np.asarray(losses, dtype=float)
    b = np.asarray(rival_losses, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(
            f"losses, rival_losses: expected two non-empty 1-D arrays of one shape, got {a.shape}, {b.shape}"
        )
    w = float(np.mean(a < b))
    return w, binomial_standard_error(w, a.size)


@dataclass(frozen=True)
class SizeExtrapolation:
    """Result of :func:`inverse_size_extrapolation`.

    Attributes
    ----------
    limit, limit_se : float
        The intercept ``a`` of ``v(D) ≈ a + c/D`` and its standard error (the ``se`` taken as given).
    curvature : float
        ``|a − (2 v(2D) − v(D))|``: the change when only the two largest sizes are used, an estimate
        of the neglected ``O(1/D²)``.
    fit : LineFit
        The weighted line in ``1/D``.
    """

    limit: float
    limit_se: float
    curvature: float
    fit: LineFit


def inverse_size_extrapolation(sizes: ArrayLike, values: ArrayLike, se: ArrayLike) -> SizeExtrapolation:
    """Extrapolate estimates ``v(D)`` to ``D → ∞`` by a weighted fit ``v ≈ a + c/D``, with a curvature term.

    For finite-size corrections of order ``1/D`` (e.g. Wishart moments): :func:`fit_weighted_line` of
    ``v`` against ``1/D`` with the standard errors ``se`` as given; its intercept ``a`` is the limit.
    The two largest sizes must be ``D`` and ``2D``: the line through them alone has intercept
    ``2 v(2D) − v(D)``, and its distance to ``a`` is the curvature term (what the ``c/D`` model leaves).

    Parameters
    ----------
    sizes : array_like, shape (n,)
        Increasing positive sizes, ``n >= 3``, the last twice the one before.
    values, se : array_like, shape (n,)
        The estimates and their positive standard errors.

    Returns
    -------
    SizeExtrapolation

    Examples
    --------
    >>> D = np.array([8.0, 16.0, 32.0])
    >>> e = inverse_size_extrapolation(D, 2.0 + 3.0 / D, np.full(3, 0.01))
    >>> round(e.limit, 12), round(e.curvature, 12)
    (2.0, 0.0)
    """
    x = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 3 or np.any(x <= 0) or np.any(np.diff(x) <= 0):
        raise ValueError(f"sizes: expected at least 3 increasing positive sizes, got {sizes!r}")
    if x[-1] != 2 * x[-2]:
        raise ValueError(f"sizes: the two largest sizes must be D and 2D, got {x[-2]:g} and {x[-1]:g}")
    fit = fit_weighted_line(1.0 / x, v, se)
    return SizeExtrapolation(fit.intercept, fit.intercept_se, float(abs(fit.intercept - (2 * v[-1] - v[-2]))), fit)


@dataclass(frozen=True)
class RelativeBias:
    """Result of :func:`relative_bias`.

    Attributes
    ----------
    max_abs : float
        ``max_t |r_t|``.
    bias, se : float
        The mean of ``r_t`` and its batch-means standard error (:func:`batch_means`).
    z : float
        ``|bias| / se``.
    z_with_reference : float
        ``|bias| / sqrt(se² + reference_sd²)``: the reference's own error in quadrature.
    """

    max_abs: float
    bias: float
    se: float
    z: float
    z_with_reference: float


def relative_bias(
    series: ArrayLike, reference: ArrayLike, reference_sd: float = 0.0, *, n_blocks: int = 10
) -> RelativeBias:
    """Relative deviation ``r_t = series_t / reference_t − 1`` of a correlated series from a reference curve.

    A simulated path (one SGD run) against its theory over a window: the largest ``|r_t|``, the mean
    bias with its standard error by batch means (consecutive blocks, :func:`batch_means`), and the
    bias in units of that standard error, alone and with the reference's relative standard deviation
    ``reference_sd`` (e.g. its Monte Carlo error) added in quadrature.

    Parameters
    ----------
    series, reference : array_like, shape (T,)
        ``reference`` non-zero.
    reference_sd : float
        Relative standard deviation of the reference (``>= 0``).
    n_blocks : int
        Batch-means blocks.

    Returns
    -------
    RelativeBias

    Examples
    --------
    >>> b = relative_bias(np.full(20, 1.1), np.ones(20) + 0.01 * np.cos(np.arange(20)))
    >>> round(b.max_abs, 2), round(b.bias, 2)
    (0.11, 0.1)
    """
    r = np.asarray(series, dtype=float) / np.asarray(reference, dtype=float) - 1
    bias, se = batch_means(r, n_blocks)
    sd = nonnegative_float(reference_sd, "reference_sd")
    return RelativeBias(float(np.max(np.abs(r))), bias, se, abs(bias) / se, abs(bias) / float(np.hypot(se, sd)))


@dataclass(frozen=True)
class MonteCarloAgreement:
    """Result of :func:`monte_carlo_agreement`.

    Attributes
    ----------
    mean, se : ndarray, shape (k,)
        Monte Carlo mean of the draws at each point and its standard error.
    max_rel : float
        ``max_k |prediction_k / mean_k − 1|``.
    max_rel_se : float
        ``max_k se_k / mean_k``.
    max_excess_z : float
        ``max_k (|prediction_k / mean_k − 1| − discretisation) / (se_k / mean_k)``.
    halves_z : float
        ``max_k |mean_k(first half) − mean_k(second half)| / sqrt(se_1² + se_2²)``.
    """

    mean: np.ndarray
    se: np.ndarray
    max_rel: float
    max_rel_se: float
    max_excess_z: float
    halves_z: float


def monte_carlo_agreement(prediction: ArrayLike, draws: ArrayLike, discretisation: float = 0.0) -> MonteCarloAgreement:
    """A deterministic prediction against independent Monte Carlo draws, with the error model of the ledger.

    The relative difference ``|prediction / mean − 1|`` is compared with the relative standard error of
    the mean (:func:`standard_error`) after subtracting a stated relative ``discretisation`` term (e.g. the
    ``O(1/N)`` finite-size error of a deterministic equivalent); the draws' two halves are compared
    with each other (a z-score of order one shows the Monte Carlo converged).

    Parameters
    ----------
    prediction : array_like, shape (k,)
    draws : array_like, shape (n, k)
        ``n >= 4`` independent draws at each of the ``k`` points; positive means.
    discretisation : float
        Allowed relative difference before the standard errors count (``>= 0``).

    Returns
    -------
    MonteCarloAgreement

    Examples
    --------
    >>> draws = 1.0 + 0.1 * np.random.default_rng(0).standard_normal((400, 3))
    >>> a = monte_carlo_agreement(np.ones(3), draws)
    >>> a.max_excess_z < 4, a.halves_z < 4, round(a.max_rel_se, 3)
    (True, True, 0.005)
    """
    x = _draws(draws, "draws", 0)
    if x.ndim != 2 or x.shape[0] < 4:
        raise ValueError(f"draws: expected shape (n >= 4, k), got {x.shape}")
    pred = np.asarray(prediction, dtype=float)
    if pred.shape != x.shape[1:]:
        raise ValueError(f"prediction: expected shape {x.shape[1:]} like a draw, got {pred.shape}")
    disc = nonnegative_float(discretisation, "discretisation")
    mean, se = x.mean(0), standard_error(x, axis=0)
    h = x.shape[0] // 2
    a, b = x[:h], x[h:]
    halves_z = float(
        np.max(np.abs(a.mean(0) - b.mean(0)) / np.hypot(standard_error(a, axis=0), standard_error(b, axis=0)))
    )
    rel, rse = np.abs(pred / mean - 1), se / mean
    return MonteCarloAgreement(
        mean, se, float(rel.max()), float(rse.max()), float(np.max((rel - disc) / rse)), halves_z
    )


# --- thin-logistic ---


def fisher_z(r: float, n: int) -> tuple[float, float]:
    """Fisher's z-transform ``z = artanh r`` of a sample correlation over ``n`` pairs and its standard error
    ``1 / sqrt(n − 3)`` (for bivariate normal data ``z`` is nearly normal around ``artanh ρ``).

    Parameters
    ----------
    r : float
        A correlation in ``[-1, 1]``.
    n : int
        Number of pairs, at least 4.

    Returns
    -------
    z, se : float

    Examples
    --------
    >>> fisher_z(0.0, 103)
    (0.0, 0.1)
    >>> z, se = fisher_z(0.5, 28)
    >>> round(z, 12), se
    (0.549306144334, 0.2)
    """
    if not abs(r) <= 1:
        raise ValueError(f"r: expected a correlation in [-1, 1], got {r!r}")
    n = positive_int(n, "n", minimum=4)
    return float(np.arctanh(r)), float(1 / np.sqrt(n - 3))
