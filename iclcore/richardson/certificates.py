"""Statistical certificate for held-out losses: the clipped empirical-Bernstein bound.

MMNN report §2: for a held-out loss ``ℓ ≥ 0`` clipped at ``c``, ``ℓ_c = min(ℓ, c) ∈ [0, c]``,
with probability at least ``1 − δ`` over ``n`` i.i.d. held-out draws

.. math::

    R_c \\le \\hat R_c + \\sqrt{\\frac{2 \\hat V_c \\log(2/δ)}{n}} + \\frac{7 c \\log(2/δ)}{3 (n - 1)},

where ``R_c = E ℓ_c``, ``\\hat R_c`` is the sample mean and ``\\hat V_c`` the unbiased
sample variance of the clipped losses. This is Maurer & Pontil's (2009, Thm. 4)
empirical-Bernstein inequality rescaled from ``[0, 1]`` to ``[0, c]``; it is
distribution-free after clipping. Note that it bounds the *clipped* risk
``R_c ≤ R``; it certifies ``R`` itself only when ``ℓ ≤ c`` almost surely.

The deterministic per-prompt optimisation certificate lives in
:func:`iclcore.lsq.iterates.richardson_certificate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EBBound", "clipped_empirical_bernstein", "eb_coverage_from_pool", "eb_coverage"]


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


def _check(clip: float, delta: float) -> None:
    if not np.isfinite(clip) or clip <= 0:
        raise ValueError(f"clip: clipping level must be finite and > 0, got {clip!r}")
    if not np.isfinite(delta) or not 0 < delta < 1:
        raise ValueError(f"delta: confidence parameter must lie in (0, 1), got {delta!r}")


def clipped_empirical_bernstein(losses: np.ndarray, clip: float, delta: float = 0.05) -> EBBound:
    """Clipped empirical-Bernstein upper bound (MMNN report §2).

    Parameters
    ----------
    losses : ndarray, shape (..., n)
        Non-negative held-out losses; the bound is computed along the last axis
        (leading axes = independent repetitions).
    clip : float
        Clipping level ``c > 0``.
    delta : float
        Failure probability in (0, 1).

    Returns
    -------
    EBBound
    """
    _check(clip, delta)
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
    return EBBound(mean=mean, variance=var, upper=upper, n=int(n), clip=float(clip), delta=float(delta))


def eb_coverage_from_pool(
    pool: np.ndarray, n: int, clip: float, delta: float, n_repeats: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Coverage of the bound when the law of the loss is the empirical law of ``pool``.

    Draws ``n_repeats`` samples of size ``n`` with replacement from ``pool``; the
    true clipped risk of that law is exactly ``mean(min(pool, c))``. The EB
    inequality holds for every law on ``[0, c]``, so the coverage must be
    ``≥ 1 − δ`` up to Monte Carlo error ``O(n_repeats^{-1/2})``.

    Returns
    -------
    coverage : float
        Fraction of repetitions with ``R_c ≤ upper``.
    true_clipped_risk : float
    """
    _check(clip, delta)
    pool = np.asarray(pool, float)
    if pool.ndim != 1 or pool.size < 2:
        raise ValueError(f"pool: expected a 1-D array of >= 2 losses, got shape {pool.shape}")
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n: sample size must be an integer >= 2, got {n!r}")
    if not isinstance(n_repeats, (int, np.integer)) or n_repeats < 1:
        raise ValueError(f"n_repeats: must be a positive integer, got {n_repeats!r}")
    true = float(np.minimum(pool, clip).mean())
    idx = rng.integers(0, pool.size, size=(n_repeats, n))
    b = clipped_empirical_bernstein(pool[idx], clip, delta)
    return float(np.mean(true <= np.asarray(b.upper))), true


def eb_coverage(
    draw_losses, true_clipped_risk: float, n: int, clip: float, delta: float, n_repeats: int, rng: np.random.Generator
) -> float:
    """Coverage over repeated fresh draws: ``draw_losses(n_repeats, n, rng) -> (n_repeats, n)`` losses.

    Returns the fraction of repetitions whose upper bound is ``≥ true_clipped_risk``.
    """
    _check(clip, delta)
    x = np.asarray(draw_losses(n_repeats, n, rng), float)
    if x.shape != (n_repeats, n):
        raise ValueError(f"draw_losses: must return shape {(n_repeats, n)}, got {x.shape}")
    b = clipped_empirical_bernstein(x, clip, delta)
    return float(np.mean(true_clipped_risk <= np.asarray(b.upper)))
