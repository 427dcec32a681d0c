"""The replica sweep of the curvature-probe extrema (iclcore.logistic.probes; ledger row logistic-10)."""

import numpy as np
import pytest

from iclcore.logistic.probes import batched_lag_autocorrelation, curvature_probes, replica_sweep_extrema_counts
from iclcore.models import probes as pr


def test_batched_autocorrelation_equals_the_direct_sum() -> None:
    rng = np.random.default_rng(0)
    L = rng.standard_normal((3, 37))
    for i in range(3):
        np.testing.assert_allclose(batched_lag_autocorrelation(L)[i], pr.lag_autocorrelation(L[i]), atol=1e-12)


def test_sweep_equals_the_per_R_loop() -> None:
    # the notebook's former loop: probes on the replica mean of the first R streams, one R at a time
    rng = np.random.default_rng(1)
    T, R, d, dt, ep, win = 120, 6, 2, 0.1, 4, 9
    t = np.arange(T + 1) * dt
    loss = np.exp(-t)[:, None] + 0.05 * rng.standard_normal((T + 1, R))
    pT = np.tanh(t)[:, None, None, None] + 0.05 * rng.standard_normal((T + 1, R, d, 2 * d))
    n_avg = T - ep + 1
    lag = np.arange(n_avg) * dt
    body = (lag > win * dt) & (lag < 0.75 * lag[-1])
    t_n = t[: T + 1 - ep + 1] + (ep - 1) / 2 * dt
    Rs = [1, 3, 6]
    got = replica_sweep_extrema_counts(loss, pT, Rs, avg=ep, dt=dt, window=win, body=body, t_norm=t_n)
    for i, R_ in enumerate(Rs):
        L_ = pr.moving_average(loss[1:, :R_].mean(1), ep)
        A2 = pr.smoothed_derivative(pr.lag_autocorrelation(L_), dt, window=win)
        n_ = pr.moving_average(np.sqrt(np.sum(pT[:, :R_, :, d:] ** 2, axis=(-2, -1))).mean(1), ep)
        n2 = pr.smoothed_derivative(n_, dt, window=win)
        want = (
            len(pr.find_extrema(A2[body], lag[body], prominence=0.01)),
            len(pr.find_extrema(n2, t_n, prominence=0.05)) + len(pr.find_extrema(n2, t_n, sign=-1, prominence=0.05)),
        )
        assert tuple(got[i]) == want


def test_bad_input_names_the_parameter() -> None:
    loss, pT = np.ones((11, 2)), np.ones((11, 2, 1, 2))
    kw = dict(avg=2, dt=0.1, window=5, body=np.ones(9, bool), t_norm=np.ones(10))
    with pytest.raises(ValueError, match="replica_counts"):
        replica_sweep_extrema_counts(loss, pT, [3], **kw)
    with pytest.raises(ValueError, match="loss_replicas"):
        replica_sweep_extrema_counts(loss[:, :1], pT, [1], **kw)
    with pytest.raises(ValueError, match="L:"):
        batched_lag_autocorrelation(np.ones(1))


def test_curvature_probes_find_the_mode_times_and_agree_with_the_sweep() -> None:
    """Four logistic modes (half times 5, 10, 20, 40): A'' peaks at the mode times, a strong mode bends the
    norm up before and down after its half time; the noise-free input gives the theory counts, and the
    counts agree with the replica sweep at R = 1."""
    dt, T, ep, win = 0.05, 1600, 4, 21
    t = np.arange(T + 1) * dt
    t_half, tau = np.array([5.0, 10.0, 20.0, 40.0]), np.array([0.5, 1.0, 2.0, 4.0])
    a = 1.0 / (1.0 + np.exp(-(t[:, None] - t_half) / tau)) * np.array([1.0, 0.8, 0.6, 0.4])
    loss = np.sum((1.0 - a) * np.array([1.0, 0.7, 0.5, 0.3]) ** 2, axis=1)
    norm = np.sqrt(a.sum(1))
    cp = curvature_probes(t, loss[1:], loss[1:], norm_sim=norm, norm_theory=norm, avg=ep, window=win)
    assert cp.n_A2_peaks_theory == len(cp.A2_peaks) and cp.n_norm_extrema_theory == len(cp.norm_peaks) + len(
        cp.norm_troughs
    )
    # the two strongest modes: the norm bends up within 3 tau before and down within 3 tau after t_half
    assert np.all((cp.norm_peaks[:2] > t_half[:2] - 3 * tau[:2]) & (cp.norm_peaks[:2] < t_half[:2]))
    assert np.all((cp.norm_troughs[:2] > t_half[:2]) & (cp.norm_troughs[:2] < t_half[:2] + 3 * tau[:2]))
    np.testing.assert_allclose(cp.A2_peaks[:3], t_half[:3], atol=1.0)  # A'' peaks at the mode times
    assert not cp.body[: win + 1].any()  # the smoothing window at small lags is skipped
    pT = np.zeros((T + 1, 1, 1, 2))
    pT[:, 0, 0, 1] = norm
    counts = replica_sweep_extrema_counts(
        loss[:, None], pT, [1], avg=ep, dt=dt, window=win, body=cp.body, t_norm=cp.t_norm
    )
    assert counts[0, 1] == len(cp.norm_peaks) + len(cp.norm_troughs)
