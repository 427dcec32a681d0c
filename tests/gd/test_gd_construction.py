"""von Oswald et al. (2023) construction as explicit K, Q, V, P matrices (seed 004 App. A).

Extends the seed-002 block-attention check (`test_block_attention_is_in_context_gd` in
tests/models/test_attention_models.py, which checks the tied, aligned block model) to the von Oswald token
layout, untied (layer-varying) steps and an arbitrary preconditioner.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.gd.construction import (
    gd_predict,
    lsa_forward,
    optimal_single_step,
    sample_regression,
    squared_loss_half,
    train_one_layer_lsa,
    von_oswald_layers,
)
from iclcore.lsq.iterates import in_context_gd_predict

torch.set_num_threads(1)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_k_layers_equal_k_gd_steps(k):
    X, y, xq, _, _ = sample_regression(6, 10, 10, rng=0)
    etas = np.random.default_rng(k).uniform(0.1, 1.5, k)
    f = lsa_forward(X, y, xq, layers=von_oswald_layers(10, etas), return_all=True)
    for j in range(k + 1):
        ref = gd_predict(X, y, xq, etas=etas[:j]) if j else np.zeros(6)
        np.testing.assert_allclose(f[j], ref, rtol=1e-12, atol=1e-12)


def test_preconditioned_tied_layers_match_the_dmft_reference():
    """Tied steps with a non-symmetric Gamma equal the seed-002 reference predictor
    (iclcore.lsq.iterates.in_context_gd_predict, whose step is Gamma/L) to 1e-12."""
    rng = np.random.default_rng(3)
    d, L, eta = 4, 3, 0.4
    G = rng.standard_normal((d, d))
    X, y, xq, _, _ = sample_regression(5, 9, d, rng=1, x_dist="gaussian")
    f = lsa_forward(X, y, xq[:, None, :].repeat(2, 1), layers=von_oswald_layers(d, [eta] * L, G))
    ref = np.array([in_context_gd_predict(L * eta * G.T, X[b], y[b], Xq=xq[b][None], L=L)[0] for b in range(5)])
    np.testing.assert_allclose(f[:, 0], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f[:, 1], f[:, 0], rtol=0, atol=0)  # queries do not interact


def test_layer_varying_steps_reach_least_squares_in_d_layers():
    """Steps eta_l = 1/lambda_l of H = X^T X / n: after d layers the prediction is x_q^T w_OLS
    (our lift L4), one layer per eigenvalue; a single context, exact up to conditioning."""
    d, n = 3, 6
    X, y, xq, _, _ = sample_regression(1, n, d, rng=5, noise=0.3)
    lam = np.linalg.eigvalsh(X[0].T @ X[0] / n)
    f = lsa_forward(X, y, xq, layers=von_oswald_layers(d, 1 / lam))
    w_ols = np.linalg.lstsq(X[0], y[0], rcond=None)[0]
    assert f[0] == pytest.approx(xq[0] @ w_ols, rel=1e-9, abs=1e-9)
    f2 = lsa_forward(X, y, xq, layers=von_oswald_layers(d, 1 / lam[:-1]))
    assert abs(f2[0] - xq[0] @ w_ols) > 1e-6


def test_constructed_layer_has_the_loss_of_the_optimal_gd_step():
    Xt, yt, xqt, yqt, _ = sample_regression(4000, 10, 10, rng=1)
    eta = optimal_single_step(Xt, yt, xqt, yq=yqt)
    Xe, ye, xqe, yqe, _ = sample_regression(2000, 10, 10, rng=2)
    lg = squared_loss_half(gd_predict(Xe, ye, xqe, etas=[eta]), yqe)
    ll = squared_loss_half(lsa_forward(Xe, ye, xqe, layers=von_oswald_layers(10, [eta])), yqe)
    assert ll[0] == pytest.approx(lg[0], rel=1e-12)
    z = squared_loss_half(np.zeros_like(yqe), yqe)
    assert lg[0] < z[0] - 5 * z[1]  # one GD step beats predicting 0 (here E y^2 / 2 = d/6)


def test_trained_lsa_learns_a_gd_step_small():
    """Smoke test (d = 3): Adam on one LSA layer ends within 3 SE (paired) of the optimal single GD
    step, plus an optimisation allowance of 0.01 (about 4% of the loss) for 400 steps."""
    d, n = 3, 10
    m, curve = train_one_layer_lsa(d, n, 400, batch=256, lr=3e-3, gen=torch.Generator().manual_seed(0), seed=0)
    Xt, yt, xqt, yqt, _ = sample_regression(4000, n, d, rng=1)
    eta = optimal_single_step(Xt, yt, xqt, yq=yqt)
    Xe, ye, xqe, yqe, _ = sample_regression(4000, n, d, rng=2)
    with torch.no_grad():
        p = m(*(torch.from_numpy(a) for a in (Xe, ye, xqe))).numpy()
    diff = 0.5 * (p - yqe) ** 2 - 0.5 * (gd_predict(Xe, ye, xqe, etas=[eta]) - yqe) ** 2
    assert abs(diff.mean()) <= 3 * diff.std(ddof=1) / np.sqrt(diff.size) + 0.01
    assert np.isfinite(curve).all()


def test_bad_input():
    with pytest.raises(ValueError, match="etas"):
        von_oswald_layers(3, [])
    with pytest.raises(ValueError, match="Gamma"):
        von_oswald_layers(3, [0.1], np.eye(2))
    with pytest.raises(ValueError, match="d:"):
        von_oswald_layers(0, [0.1])
    with pytest.raises(ValueError, match="X, y, xq"):
        lsa_forward(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 5)), layers=von_oswald_layers(4, [0.1]))
    with pytest.raises(ValueError, match="x_dist"):
        sample_regression(2, 3, 4, rng=0, x_dist="cauchy")
