"""The replica sweep of the curvature-probe extrema (iclcore.logistic.probes; ledger row logistic-10)."""

import numpy as np
import pytest

from iclcore.logistic.probes import batched_lag_autocorrelation, replica_sweep_extrema_counts
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
