"""The curvature probes of Mainali & Teixeira §4 (Fig. 4A-B) and their extrema, on one run
(:func:`curvature_probes`) and on replica means of growing size, the finite-size check of the counts
(ledger row logistic-10).

On a single SGD run the curvature probes (:mod:`iclcore.models.probes`) show spurious extrema from the
batch noise. :func:`replica_sweep_extrema_counts` counts the extrema of the same probes on the replica
mean of the first ``R`` independent data streams, for several ``R`` at once, so that the count's excess
over the noise-free theory count can be followed as ``R`` grows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iclcore.models.probes import find_extrema, lag_autocorrelation, moving_average, smoothed_derivative
from iclcore.validation import positive_float, positive_int

Array = NDArray[np.float64]

__all__ = ["CurvatureProbes", "curvature_probes", "batched_lag_autocorrelation", "replica_sweep_extrema_counts"]


@dataclass(frozen=True)
class CurvatureProbes:
    """The two curvature probes of §4 (Fig. 4A-B) on a simulation and on the theory (:func:`curvature_probes`).

    Attributes
    ----------
    lag : ndarray, shape (T',)
        Lags of the loss autocorrelation (epochs).
    body : ndarray of bool, shape (T',)
        The lags where ``A''`` peaks are counted: past the smoothing window, before the last quarter.
    A2_sim, A2_theory : ndarray, shape (T',)
        ``A''(lag)`` of the averaged simulated and theory losses.
    t_norm : ndarray, shape (T'',)
        Times of the averaged parameter norm (centred on the averaging window).
    n2_sim, n2_theory : ndarray, shape (T'',)
        ``d²‖p2‖_F / dt²`` of the averaged norms.
    A2_peaks, norm_peaks, norm_troughs : ndarray
        Positions of the simulation's extrema (prominence 0.01 of the maximum for ``A''``, 0.05 for the norm).
    n_A2_peaks_theory, n_norm_extrema_theory : int
        The same counts on the noise-free theory curves.
    """

    lag: np.ndarray
    body: np.ndarray
    A2_sim: np.ndarray
    A2_theory: np.ndarray
    t_norm: np.ndarray
    n2_sim: np.ndarray
    n2_theory: np.ndarray
    A2_peaks: np.ndarray
    norm_peaks: np.ndarray
    norm_troughs: np.ndarray
    n_A2_peaks_theory: int
    n_norm_extrema_theory: int


def curvature_probes(
    t: ArrayLike,
    loss_sim: ArrayLike,
    loss_theory: ArrayLike,
    *,
    norm_sim: ArrayLike,
    norm_theory: ArrayLike,
    avg: int,
    window: int,
) -> CurvatureProbes:
    """Curvature of the loss autocorrelation and of the parameter norm, with their extrema (Mainali & Teixeira §4).

    Each series is first averaged over ``avg`` log points (:func:`iclcore.models.probes.moving_average`:
    one epoch removes the period of the fixed task order), then differentiated twice by a Savitzky-Golay
    filter of ``window`` points (:func:`iclcore.models.probes.smoothed_derivative`). (A) ``A''(lag)`` of
    ``A(lag) = mean_t L(t) L(t + lag)`` (:func:`iclcore.models.probes.lag_autocorrelation`), peaks counted
    on :attr:`CurvatureProbes.body`; (B) ``d²‖p2‖_F/dt²``, peaks and troughs
    (:func:`iclcore.models.probes.find_extrema`). The same probes on the theory curves give the counts
    a noise-free run would show.

    Parameters
    ----------
    t : array_like, shape (T + 1,)
        Evenly spaced log times (epochs), ``t[0] = 0``.
    loss_sim, loss_theory : array_like, shape (T,)
        The losses after ``t[0]`` (simulation: replica mean).
    norm_sim, norm_theory : array_like, shape (T + 1,)
        ``‖p2‖_F`` (simulation: replica mean) and its theory (``sqrt(Σ_α a_α)``).
    avg : int
        Log points of the moving average.
    window : int
        Savitzky-Golay window (odd).

    Returns
    -------
    CurvatureProbes
    """
    t = np.asarray(t, dtype=float)
    dt = t[1] - t[0]
    L_sim = moving_average(loss_sim, avg)
    L_th = moving_average(loss_theory, avg)
    lag = np.arange(L_sim.size) * dt
    A2_sim = smoothed_derivative(lag_autocorrelation(L_sim), dt, window=window)
    A2_th = smoothed_derivative(lag_autocorrelation(L_th), dt, window=window)
    body = (lag > window * dt) & (lag < 0.75 * lag[-1])  # skip the lag-0 noise kink and the poorly sampled tail
    nrm_sim = moving_average(norm_sim, avg)
    nrm_th = moving_average(norm_theory, avg)
    t_n = t[: nrm_sim.size] + (avg - 1) / 2 * dt
    n2_sim = smoothed_derivative(nrm_sim, dt, window=window)
    n2_th = smoothed_derivative(nrm_th, dt, window=window)
    n_ext_th = len(find_extrema(n2_th, t_n, prominence=0.05)) + len(find_extrema(n2_th, t_n, sign=-1, prominence=0.05))
    return CurvatureProbes(
        lag,
        body,
        A2_sim,
        A2_th,
        t_n,
        n2_sim,
        n2_th,
        find_extrema(A2_sim[body], lag[body], prominence=0.01),
        find_extrema(n2_sim, t_n, prominence=0.05),
        find_extrema(n2_sim, t_n, sign=-1, prominence=0.05),
        len(find_extrema(A2_th[body], lag[body], prominence=0.01)),
        n_ext_th,
    )


def batched_lag_autocorrelation(L: ArrayLike) -> Array:
    """``A(k) = mean_{t < T-k} L(t) L(t + k)`` for ``k = 0..T-1`` of each series along the last axis
    (§4's ``A(τ) = E[L(t) L(t + τ)]``; :func:`iclcore.models.probes.lag_autocorrelation` of one
    series), by FFT: shape of ``L`` (..., T)."""
    L = np.asarray(L, dtype=float)
    if L.ndim < 1 or L.shape[-1] < 2 or not np.all(np.isfinite(L)):
        raise ValueError(f"L: expected finite series (..., T) with T >= 2, got shape {L.shape}")
    T = L.shape[-1]
    n = 1 << int(np.ceil(np.log2(2 * T)))
    F = np.fft.rfft(L, n, axis=-1)
    s = np.fft.irfft(F * np.conj(F), n, axis=-1)[..., :T]
    return s / (T - np.arange(T))


def replica_sweep_extrema_counts(
    loss_replicas: ArrayLike,
    pT: ArrayLike,
    replica_counts: ArrayLike,
    *,
    avg: int,
    dt: float,
    window: int,
    body: ArrayLike,
    t_norm: ArrayLike,
    prominence_loss: float = 0.01,
    prominence_norm: float = 0.05,
) -> NDArray[np.int64]:
    """Numbers of probe extrema on the mean of the first ``R`` replicas, for each ``R`` in ``replica_counts``.

    Parameters
    ----------
    loss_replicas : (T + 1, R_max) per-replica loss at the log points (the first point, at t = 0, dropped).
    pT : (T', R_max, d, 2d) read-out blocks ``p^T = (p1 p2)``; the probe norm is ``||p2||_F`` per replica,
        averaged over replicas (the first ``T`` points after the moving average are used).
    replica_counts : (n,) integers in [1, R_max].
    avg : log points of the moving average (one epoch; :func:`iclcore.models.probes.moving_average`).
    dt : spacing of the log points (epochs); ``window``: Savitzky-Golay window (odd, polyorder 3).
    body : boolean mask over the lags of the averaged loss: where ``A''`` peaks are counted.
    t_norm : times of the averaged norm (for the extrema positions; only their number is returned).

    Returns
    -------
    (n, 2) integers: ``A''(lag)`` peaks (prominence ``prominence_loss`` of the maximum) and
    ``d²||p2||/dt²`` peaks plus troughs (prominence ``prominence_norm``), as in Fig. 4A-B.
    """
    Lr = np.asarray(loss_replicas, dtype=float)
    P = np.asarray(pT, dtype=float)
    if Lr.ndim != 2 or P.ndim != 4 or P.shape[1] != Lr.shape[1] or P.shape[-1] != 2 * P.shape[-2]:
        raise ValueError(f"loss_replicas, pT: expected (T+1, R) and (T', R, d, 2d), got {Lr.shape}, {P.shape}")
    R_max = Lr.shape[1]
    Rs = np.asarray(replica_counts)
    if Rs.ndim != 1 or Rs.size == 0 or np.any(Rs != np.round(Rs)) or np.any(Rs < 1) or np.any(Rs > R_max):
        raise ValueError(f"replica_counts: expected integers in [1, {R_max}], got {replica_counts!r}")
    Rs = Rs.astype(int)
    avg = positive_int(avg, "avg")
    positive_float(dt, "dt")
    window = positive_int(window, "window", minimum=5)
    body = np.asarray(body, dtype=bool)
    t_norm = np.asarray(t_norm, dtype=float)
    d = P.shape[-2]
    # replica means of the first R streams, all R at once (cumulative sums over the replica axis)
    loss_means = (np.cumsum(Lr[1:], axis=1)[:, Rs - 1] / Rs).T  # (n, T)
    norms = np.sqrt(np.sum(P[..., d:] ** 2, axis=(-2, -1)))  # (T', R)
    norm_means = (np.cumsum(norms, axis=1)[:, Rs - 1] / Rs).T  # (n, T')
    A = batched_lag_autocorrelation(moving_average(loss_means, avg))
    from scipy.signal import savgol_filter  # scipy.signal imports scipy.stats: only where it is used

    A2 = savgol_filter(A, window, 3, deriv=2, delta=dt, mode="interp", axis=-1)
    n2 = savgol_filter(moving_average(norm_means, avg), window, 3, deriv=2, delta=dt, mode="interp", axis=-1)
    if body.shape != A2.shape[1:] or t_norm.shape != n2.shape[1:]:
        raise ValueError(
            f"body, t_norm: expected shapes {A2.shape[1:]}, {n2.shape[1:]}, got {body.shape}, {t_norm.shape}"
        )
    lag = np.arange(A2.shape[1]) * dt
    out = np.empty((Rs.size, 2), dtype=np.int64)
    for i in range(Rs.size):  # peak finding is per curve
        out[i, 0] = len(find_extrema(A2[i, body], lag[body], prominence=prominence_loss))
        out[i, 1] = len(find_extrema(n2[i], t_norm, prominence=prominence_norm)) + len(
            find_extrema(n2[i], t_norm, sign=-1, prominence=prominence_norm)
        )
    return out
