"""Tests for iclcore.dmft.sgd_sweep: the (eta, B) sweep of the late SGD bias of the reduced model (Bordelon et al. App. C.1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_gradient_flow, rrs_loss_grad
from iclcore.dmft.scaling import scalar_descent_path
from iclcore.dmft.sgd_sweep import ReducedSGDTask, late_bias_sweep, reduced_sgd_gamma_path
from iclcore.models.attention import ReducedGammaStack, sample_rrs_contexts, train

LAM, OM = power_law_spectrum(6, 1.0, 1.0)


def _task(eta, B, n, r):
    return ReducedSGDTask(tuple(LAM), tuple(OM), 2, False, None, eta, B, n, train_seed=100 + r)


@pytest.mark.slow
def test_sweep_equals_the_explicit_loop() -> None:
    """Same seeds, same numbers as training the untied model by hand (the loop the notebooks had)."""
    flow = lambda t: rrs_gradient_flow(t, LAM, OM, L=2)[0]  # noqa: E731
    grad = lambda g: rrs_loss_grad(g, LAM, OM, L=2)  # noqa: E731
    pts = late_bias_sweep([(0.5, 4), (0.25, 8)], _task, 2, horizon=10.0, flow=flow, grad=grad)
    for pt in pts:
        n = int(round(10.0 / pt.eta))
        t = pt.eta * np.arange(n + 1)
        th, late = flow(t), slice(n // 10, None)
        runs = []
        for r in range(2):
            res = train(
                ReducedGammaStack(6, 2, tied=False),
                lambda g: sample_rrs_contexts(pt.B, 1, 1, lam=LAM, omega=OM, gen=g),
                n,
                lr=pt.eta * 6 * 2 / 2,
                gen=torch.Generator().manual_seed(100 + r),
                population=True,
            )
            runs.append(np.mean(res.gamma[late].mean(axis=1) / th[late] - 1))
        disc = np.mean(scalar_descent_path(grad, 0.5 * pt.eta, n)[late] / th[late] - 1)
        assert pt.disc == disc and pt.bias == np.mean(runs) - disc
        assert pt.se == pytest.approx(np.std(runs, ddof=1) / np.sqrt(2), rel=1e-12)


def test_width_task_uses_its_frame_and_tied_learning_rate() -> None:
    task = ReducedSGDTask(tuple(LAM), tuple(OM), 2, True, 3, 0.5, 4, 5, train_seed=1, frame_seed=2)
    path = reduced_sgd_gamma_path(task)
    assert path.shape == (6,) and path[0] == 0.0 and np.all(np.isfinite(path))


def test_bad_inputs() -> None:
    flow = lambda t: t  # noqa: E731
    with pytest.raises(ValueError, match="seeds"):
        late_bias_sweep([(0.5, 4)], _task, 1, horizon=10.0, flow=flow, grad=lambda g: g)
    with pytest.raises(ValueError, match="configs"):
        late_bias_sweep([], _task, 2, horizon=10.0, flow=flow, grad=lambda g: g)
    with pytest.raises(ValueError, match="late_frac"):
        late_bias_sweep([(0.5, 4)], _task, 2, horizon=10.0, flow=flow, grad=lambda g: g, late_frac=1.5)
    with pytest.raises(ValueError, match="eta"):
        late_bias_sweep([(-0.5, 4)], _task, 2, horizon=10.0, flow=flow, grad=lambda g: g)
