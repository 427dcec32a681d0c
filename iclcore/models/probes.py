"""Macroscopic probes of learning dynamics (Mainali & Teixeira §4, Eqs. 15-16, Fig. 4).

* :func:`entropy_effective_rank` — Roy & Vetterli effective rank, Eq. (15), with L1-normalised
  singular values.
* :func:`marginalized_effective_rank` — the effective rank recomputed after removing the
  ``k`` components "assumed to have converged earliest" (§4; the paper gives no formula).
  Two choices: remove the ``k`` largest values (for networks), or remove values in a given
  order (for the linear model, where the fastest mode has the *smallest* fixed point).
* :func:`subspace_distance` — Eq. (16), ``min_A ||A M(t) - M(inf)||_F / ||M(inf)||_F``,
  computed from an orthonormal basis of the row space of ``M(t)`` (rank chosen by a
  threshold), never by a pseudo-inverse with a default cut-off.
* :func:`row_space_angles` — principal angles between (rank-truncated) row spaces; for ``M(inf)`` with
  orthonormal rows, Eq. (16) squared equals the mean of ``sin^2`` of these angles.
* :func:`lag_autocorrelation`, :func:`smoothed_derivative`, :func:`find_extrema` — the
  curvature of the loss autocorrelation ``A(tau) = E[L(t) L(t + tau)]`` and of parameter
  norms (Fig. 4A-B): second derivatives by a Savitzky-Golay filter, peaks by
  ``scipy.signal.find_peaks`` with a relative prominence threshold.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iclcore.linalg import principal_angles
from iclcore.validation import positive_int

Array = NDArray[np.float64]

__all__ = [
    "uniform_window_null_rate",
    "uniform_window_null_hits",
    "nearest_event_offset",
    "window_hits",
    "entropy_effective_rank",
    "effective_rank_of_values",
    "marginalized_effective_rank",
    "row_space_basis",
    "subspace_distance",
    "row_space_angles",
    "lag_autocorrelation",
    "smoothed_derivative",
    "find_extrema",
    "moving_average",
    "block_average",
    "trailing_average",
    "checkpoint_probes",
    "first_step_where",
]


def effective_rank_of_values(values: ArrayLike) -> Array:
    """Eq. (15) on given non-negative values ``sigma_i`` along the last axis:
    ``exp(-sum_i p_i log p_i)``, ``p_i = sigma_i / sum_j sigma_j`` (zero terms dropped).

    Returns shape ``values.shape[:-1]``; an all-zero row raises (rank undefined)."""
    v = np.asarray(values, dtype=float)
    if v.ndim < 1 or v.shape[-1] == 0:
        raise ValueError("values: need at least one value along the last axis")
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError("values: singular values must be finite and >= 0")
    tot = v.sum(axis=-1, keepdims=True)
    if np.any(tot == 0):
        raise ValueError("values: effective rank of an all-zero spectrum is undefined")
    p = v / tot
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)
    return np.exp(h)


def entropy_effective_rank(M: ArrayLike) -> Array:
    """Effective rank Eq. (15) of matrices ``M`` (..., m, n) from their singular values."""
    M = np.asarray(M, dtype=float)
    if M.ndim < 2:
        raise ValueError(f"M: expected a matrix (..., m, n), got shape {M.shape}")
    return effective_rank_of_values(np.linalg.svd(M, compute_uv=False))


def marginalized_effective_rank(values: ArrayLike, n_drop: int, drop_order: ArrayLike | None = None) -> Array:
    """Marginalized effective rank (§4, Fig. 4C / 6): curve ``k`` is Eq. (15) of the values
    left after removing ``k`` components, ``k = 0..n_drop``.

    Parameters
    ----------
    values : (..., n) non-negative values (singular values, or ``|a_alpha|`` of the modes).
    n_drop : largest number of removed components (``< n``).
    drop_order : optional (n,) permutation; component ``drop_order[j]`` is the ``j``-th
        removed. Default: remove the largest values first (sorted removal).

    Returns
    -------
    (..., n_drop + 1) array; column ``k`` is the effective rank after ``k`` removals.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim < 1:
        raise ValueError("values: need an array (..., n)")
    n = v.shape[-1]
    n_drop = positive_int(n_drop, "n_drop", minimum=0, maximum=n - 1)
    if drop_order is None:
        v = -np.sort(-v, axis=-1)
        order = np.arange(n)
    else:
        order = np.asarray(drop_order)
        if order.shape != (n,) or sorted(order.tolist()) != list(range(n)):
            raise ValueError(f"drop_order: must be a permutation of range({n})")
    out = []
    for k in range(n_drop + 1):
        keep = np.sort(order[k:])
        out.append(effective_rank_of_values(v[..., keep]))
    return np.stack(out, axis=-1)


def _default_rtol(M: Array) -> float:
    eps = np.finfo(np.float32).eps if M.dtype == np.float32 else np.finfo(np.float64).eps
    return float(max(M.shape[-2:]) * eps * 10)


def row_space_basis(M: ArrayLike, rank: int | None = None, rtol: float | None = None) -> Array:
    """Orthonormal basis (n, r) of the row space of ``M`` (m, n): right singular vectors with
    ``sigma > rtol * sigma_max`` (default rtol = 10 max(m, n) eps of M's dtype), or the top
    ``rank`` ones if ``rank`` is given."""
    M = np.asarray(M)
    if M.ndim != 2:
        raise ValueError(f"M: expected a 2-d matrix, got shape {M.shape}")
    _, sv, Vt = np.linalg.svd(M.astype(np.float64), full_matrices=False)
    if rank is not None:
        r = positive_int(rank, "rank", minimum=0, maximum=sv.size)
    else:
        tol = _default_rtol(M) if rtol is None else float(rtol)
        if not 0 <= tol < 1:
            raise ValueError(f"rtol: must lie in [0, 1), got {tol}")
        r = int(np.sum(sv > tol * sv[0])) if sv.size and sv[0] > 0 else 0
    return Vt[:r].T


def subspace_distance(
    M_t: ArrayLike, M_inf: ArrayLike, *, rank: int | None = None, rtol: float | None = None, normalized: bool = True
) -> float:
    """Subspace distance Eq. (16): ``min_A ||A M(t) - M(inf)||_F``.

    The minimiser is ``A = M(inf) M(t)^+``, so the distance is ``||M(inf) (I - V V^T)||_F``
    with ``V`` an orthonormal basis of the row space of ``M(t)`` (:func:`row_space_basis`;
    pass ``rank`` for float32 products such as ``W_V W_O`` whose numerical null space is
    noisy). Divided by ``||M(inf)||_F`` if ``normalized`` (then it lies in [0, 1]).

    It is 0 whenever ``M(t)`` has full column rank: the probe is informative only for
    rank-deficient matrices (e.g. per-head OV/QK products)."""
    M_t = np.asarray(M_t)
    M_inf = np.asarray(M_inf, dtype=np.float64)
    if M_t.ndim != 2 or M_inf.ndim != 2 or M_t.shape[1] != M_inf.shape[1]:
        raise ValueError(f"M_t, M_inf: need 2-d matrices with equal column counts, got {M_t.shape}, {M_inf.shape}")
    V = row_space_basis(M_t, rank=rank, rtol=rtol)
    R = M_inf - (M_inf @ V) @ V.T
    dist = float(np.linalg.norm(R))
    if normalized:
        nrm = float(np.linalg.norm(M_inf))
        if nrm == 0:
            raise ValueError("M_inf: zero matrix, normalised distance undefined")
        dist /= nrm
    return dist


def row_space_angles(M1: ArrayLike, M2: ArrayLike, *, rank1: int | None = None, rank2: int | None = None) -> Array:
    """Principal angles (radians, ascending, :func:`iclcore.linalg.principal_angles`) between the row
    spaces of ``M1`` and ``M2``, each truncated to ``rank1`` / ``rank2`` leading right singular
    vectors (:func:`row_space_basis`; default: numerical rank)."""
    V1 = row_space_basis(M1, rank=rank1)
    V2 = row_space_basis(M2, rank=rank2)
    if V1.shape[0] != V2.shape[0]:
        raise ValueError("M1, M2: row spaces live in different dimensions")
    if V1.shape[1] == 0 or V2.shape[1] == 0:
        raise ValueError("M1, M2: a row space is trivial (zero matrix)")
    return principal_angles(V1, V2)


def lag_autocorrelation(L: ArrayLike, max_lag: int | None = None) -> Array:
    """Global lag autocorrelation ``A(tau) = mean_t L(t) L(t + tau)`` of a series on a uniform
    grid (Mainali & Teixeira §4: ``A(tau) = E[L(t) L(t + tau)]``), for ``tau = 0..max_lag`` steps.

    ``L``: (T,) or (R, T) (replicas, averaged after the product)."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    if L.ndim != 2 or L.shape[1] < 2:
        raise ValueError(f"L: expected a series (T,) or (R, T) with T >= 2, got {np.shape(L)}")
    T = L.shape[1]
    max_lag = T - 1 if max_lag is None else max_lag
    if not 0 <= max_lag < T:
        raise ValueError(f"max_lag: must lie in [0, {T}), got {max_lag}")
    return np.array([np.mean(L[:, : T - k] * L[:, k:]) for k in range(max_lag + 1)])


def smoothed_derivative(y: ArrayLike, dx: float, *, order: int = 2, window: int = 11, polyorder: int = 3) -> Array:
    """``order``-th derivative of a uniformly sampled series by a Savitzky-Golay filter
    (``window`` odd, ``polyorder < window``); the paper's "curvature" is read as the second
    derivative (``order = 2``)."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError("y: expected a 1-d series")
    if dx <= 0:
        raise ValueError(f"dx: grid spacing must be > 0, got {dx}")
    if window % 2 == 0 or window < 3 or window > y.size:
        raise ValueError(f"window: must be odd, >= 3 and <= len(y) = {y.size}, got {window}")
    if not order <= polyorder < window:
        raise ValueError(f"polyorder: need order <= polyorder < window, got {polyorder}")
    from scipy.signal import savgol_filter  # scipy.signal imports scipy.stats: only where it is used

    return savgol_filter(y, window, polyorder, deriv=order, delta=dx, mode="interp")


def find_extrema(y: ArrayLike, x: ArrayLike, *, sign: int = 1, prominence: float = 0.01) -> Array:
    """Positions ``x`` of the peaks (``sign = 1``) or troughs (``sign = -1``) of ``y`` whose
    prominence is at least ``prominence * max|y|``."""
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    if y.shape != x.shape or y.ndim != 1:
        raise ValueError(f"x, y: need equal 1-d shapes, got {x.shape}, {y.shape}")
    if sign not in (1, -1):
        raise ValueError(f"sign: must be +1 or -1, got {sign}")
    if not 0 <= prominence < 1:
        raise ValueError(f"prominence: must lie in [0, 1), got {prominence}")
    scale = np.max(np.abs(y)) if y.size else 0.0
    from scipy.signal import find_peaks

    idx, _ = find_peaks(sign * y, prominence=prominence * scale if scale > 0 else None)
    return x[idx]


def block_average(y: ArrayLike, k: int) -> Array:
    """Means of consecutive, non-overlapping blocks of ``k`` samples along the last axis.

    A trailing remainder shorter than ``k`` is dropped, so the result has length ``T // k``;
    used to thin noisy per-step SGD losses before plotting them against a theory curve.
    """
    y = np.asarray(y, dtype=float)
    k = positive_int(k, "k", maximum=y.shape[-1])  # the block length
    n = y.shape[-1] // k * k
    return y[..., :n].reshape(*y.shape[:-1], -1, k).mean(axis=-1)


def _nearest_distances(found: ArrayLike, targets: ArrayLike) -> Array:
    """``min_j |found_j - target_i|`` for each target, shape (m,) (``inf`` if nothing was found)."""
    found = np.asarray(found, dtype=float).ravel()
    targets = np.asarray(targets, dtype=float).ravel()
    if found.size == 0:
        return np.full(targets.shape, np.inf)
    return np.min(np.abs(found[None, :] - targets[:, None]), axis=1)


def window_hits(found: ArrayLike, targets: ArrayLike, halfwidths: ArrayLike) -> Array:
    """Which targets have a found event within their window: ``min_j |found_j - target_i| <= halfwidth_i``.

    ``found`` (n,), ``targets`` and ``halfwidths`` (m,); returns a boolean array (m,) (all False if
    nothing was found).
    """
    dist = _nearest_distances(found, targets)
    return dist <= np.broadcast_to(np.asarray(halfwidths, dtype=float), dist.shape)


def nearest_event_offset(found: ArrayLike, targets: ArrayLike, scales: ArrayLike) -> Array:
    """``min_j |found_j - target_i| / scale_i`` for each target, shape (m,) (``inf`` if nothing was found).

    ``found`` (n,), ``targets`` and ``scales`` (m,): how far, in units of each mode's time scale,
    the nearest detected extremum lies from the time the theory predicts.
    """
    dist = _nearest_distances(found, targets)
    scales = np.broadcast_to(np.asarray(scales, dtype=float), dist.shape)
    if np.any(~np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError(f"scales: expected positive finite time scales, got {scales!r}")
    return dist / scales


def uniform_window_null_hits(
    n_found: int,
    span: tuple[float, float],
    targets: ArrayLike,
    *,
    halfwidths: ArrayLike,
    rng: np.random.Generator,
    draws: int = 2000,
    paired: tuple[int, ArrayLike] | None = None,
) -> Array:
    """Null distribution of the number of targets hit (:func:`window_hits`) by ``n_found`` events
    placed uniformly on ``span``: an integer array (draws,).

    ``paired = (n_other, other_targets)``: a target counts only if its window *and* the window of the
    paired target ``other_targets[i]`` (same half-width) are hit, by ``n_found`` and ``n_other``
    uniform events respectively (e.g. a peak before and a trough after each mode).
    """
    rng = np.random.default_rng(rng)
    lo, hi = float(span[0]), float(span[1])
    if not hi > lo:
        raise ValueError(f"span: expected lo < hi, got {span!r}")
    for name, c in (("n_found", n_found), ("paired", paired[0] if paired is not None else 0)):
        positive_int(c, name, minimum=0)  # a count of events
    draws = positive_int(draws, "draws")
    out = np.empty(draws, dtype=int)
    for k in range(draws):
        hit = window_hits(rng.uniform(lo, hi, n_found), targets, halfwidths)
        if paired is not None:
            hit &= window_hits(rng.uniform(lo, hi, paired[0]), paired[1], halfwidths)
        out[k] = int(np.sum(hit))
    return out


def uniform_window_null_rate(
    n_found: int,
    span: tuple[float, float],
    targets: ArrayLike,
    *,
    halfwidths: ArrayLike,
    min_hits: int,
    rng: np.random.Generator,
    draws: int = 2000,
) -> float:
    """Probability that ``n_found`` events placed uniformly on ``span`` hit at least ``min_hits``
    of the target windows (:func:`window_hits`): the false-positive rate of a peak-alignment test."""
    return float(
        np.mean(
            uniform_window_null_hits(n_found, span, targets, halfwidths=halfwidths, rng=rng, draws=draws) >= min_hits
        )
    )


def trailing_average(y: ArrayLike, k: int) -> Array:
    """Causal running mean: sample ``j`` is the mean of ``y[max(0, j-k+1) : j+1]``.

    Same length as ``y`` (the first ``k - 1`` samples average the shorter history).
    """
    y = np.asarray(y, dtype=float)
    k = positive_int(k, "k")  # the window
    T = y.shape[-1]
    c = np.cumsum(np.concatenate([np.zeros(y.shape[:-1] + (1,)), y], axis=-1), axis=-1)
    j = np.arange(T)
    lo = np.maximum(0, j - k + 1)
    return (c[..., j + 1] - c[..., lo]) / (j + 1 - lo)


def moving_average(y: ArrayLike, k: int) -> Array:
    """Running mean of ``k`` consecutive samples along the last axis ("valid" part only,
    length ``T - k + 1``; sample ``j`` is centred on ``j + (k - 1)/2``). With ``k`` = log
    points per epoch it turns a per-step series into the per-epoch average of (A93) and
    removes the periodicity of a fixed task order."""
    y = np.asarray(y, dtype=float)
    k = positive_int(k, "k", maximum=y.shape[-1])  # the window
    c = np.cumsum(np.concatenate([np.zeros(y.shape[:-1] + (1,)), y], axis=-1), axis=-1)
    return (c[..., k:] - c[..., :-k]) / k


def checkpoint_probes(mats: ArrayLike, rank: int, n_drop: int = 3) -> tuple[Array, Array]:
    """Effective-rank and subspace-distance probes (Eqs. 15-16, Fig. 6) along training checkpoints.

    For each checkpoint ``t`` and each matrix ``j`` (layers/heads, flattened): the marginalized
    effective rank (:func:`marginalized_effective_rank`, sorted removal, ``k = 0..n_drop``) of the
    ``rank`` largest singular values, and the subspace distance (:func:`subspace_distance`, with
    ``rank``) of ``M_j(t)`` to the final checkpoint ``M_j(T-1)``; both averaged over ``j``.

    Parameters
    ----------
    mats : array (T, ..., m, n)
        Weight products (e.g. per-head OV or QK) at ``T`` checkpoints.
    rank : int
        Number of singular values / row-space dimension kept (``<= min(m, n)``; the head dimension
        for per-head products, whose numerical null space is noise).
    n_drop : int
        Largest number of removed components (``< rank``).

    Returns
    -------
    mer : ndarray (T, n_drop + 1)
    sd : ndarray (T,)
    """
    mats = np.asarray(mats)
    if mats.ndim < 3:
        raise ValueError(f"mats: expected shape (T, ..., m, n), got {mats.shape}")
    rank = positive_int(rank, "rank", maximum=min(mats.shape[-2:]))
    T = mats.shape[0]
    flat = mats.reshape(T, -1, *mats.shape[-2:])
    sv = np.linalg.svd(flat, compute_uv=False)[..., :rank]
    mer = marginalized_effective_rank(sv, n_drop).mean(axis=1)
    sd = np.array(
        [[subspace_distance(flat[t, j], flat[-1, j], rank=rank) for j in range(flat.shape[1])] for t in range(T)]
    ).mean(axis=1)
    return mer, sd


def first_step_where(mask: ArrayLike, steps: ArrayLike) -> float:
    """The first ``steps[i]`` with ``mask[i]`` true (``nan`` if none), e.g. a memorisation or
    generalisation step from an accuracy threshold.

    Parameters
    ----------
    mask : bool array (T,)
    steps : array (T,)
    """
    mask = np.asarray(mask)
    steps = np.asarray(steps, dtype=float)
    if mask.dtype != bool or mask.ndim != 1 or mask.shape != steps.shape:
        raise ValueError(
            f"mask, steps: expected a boolean array and steps of the same shape (T,), got {mask.shape} ({mask.dtype}), {steps.shape}"
        )
    idx = np.flatnonzero(mask)
    return float(steps[idx[0]]) if idx.size else float("nan")
