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


def test_a_first_stage_of_the_runs_is_the_single_training_at_that_seed():
    """The end of a first stage (steps, 1.0) of run ``s`` is train_one_layer_lsa's layer at gen s, seed s + 1."""
    from iclcore.gd.construction import train_lsa_runs

    d, n, eta = 3, 6, 0.8
    runs = train_lsa_runs(
        d,
        n,
        [4, 7],
        stages=[(30, 1.0), (5, 0.5)],
        batch=16,
        lr=3e-3,
        eta=eta,
        n_test=50,
        test_rng=np.random.default_rng(0),
    )
    test = np.random.default_rng(0)
    for r, s in enumerate([4, 7]):
        X, y, xq, yq, _ = sample_regression(50, n, d, rng=test)
        m, _ = train_one_layer_lsa(d, n, 30, batch=16, lr=3e-3, gen=torch.Generator().manual_seed(s), seed=s + 1)
        with torch.no_grad():
            p = m(*(torch.from_numpy(a) for a in (X, y, xq))).numpy()
        diff = 0.5 * (p - yq) ** 2 - 0.5 * (gd_predict(X, y, xq, etas=[eta]) - yq) ** 2
        assert runs.gap[r, 0] == diff.mean()
        assert runs.gap_se[r, 0] == pytest.approx(diff.std(ddof=1) / np.sqrt(50), rel=1e-12)
    assert runs.stage_ends.tolist() == [30, 35] and runs.gap.shape == runs.cosine.shape == (2, 2)


def test_a_stage_at_step_zero_leaves_every_run_unchanged():
    """Adam at step size 0 does not move the layer: the gap after a zero-step stage is the gap before it."""
    from iclcore.gd.construction import train_lsa_runs

    runs = train_lsa_runs(
        3,
        6,
        [0, 1, 2],
        stages=[(20, 1.0), (10, 0.0)],
        batch=8,
        lr=1e-2,
        eta=0.8,
        n_test=40,
        test_rng=np.random.default_rng(1),
    )
    np.testing.assert_array_equal(runs.gap[:, 1], runs.gap[:, 0])
    np.testing.assert_array_equal(runs.cosine[:, 1], runs.cosine[:, 0])


def test_runs_summary_is_the_worst_run_and_the_spread_over_runs():
    """Planted gaps: the largest |gap| / SE over the runs, the mean over runs and its SE from their spread."""
    from iclcore.gd.construction import TrainedRuns

    gap = np.array([[0.01, -0.004], [0.03, 0.002], [0.02, 0.0]])
    se = np.array([[0.01, 0.001], [0.01, 0.001], [0.004, 0.001]])
    runs = TrainedRuns(np.array([10, 20]), np.array([1.0, 0.25]), gap, se, np.ones_like(gap))
    np.testing.assert_allclose(runs.max_z(), [5.0, 4.0])
    np.testing.assert_allclose(runs.mean(), [0.02, -0.002 / 3])
    np.testing.assert_allclose(runs.se_over_runs(), gap.std(axis=0, ddof=1) / np.sqrt(3))


def test_train_lsa_runs_refuses_bad_stages_and_seeds():
    from iclcore.gd.construction import train_lsa_runs

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="seeds"):
        train_lsa_runs(3, 6, [], stages=[(5, 1.0)], batch=8, lr=1e-2, eta=0.8, n_test=10, test_rng=rng)
    with pytest.raises(ValueError, match="stages"):
        train_lsa_runs(3, 6, [0], stages=[], batch=8, lr=1e-2, eta=0.8, n_test=10, test_rng=rng)
    with pytest.raises(ValueError, match="stages: steps"):
        train_lsa_runs(3, 6, [0], stages=[(0, 1.0)], batch=8, lr=1e-2, eta=0.8, n_test=10, test_rng=rng)
    with pytest.raises(ValueError, match="stages: lr_factor"):
        train_lsa_runs(3, 6, [0], stages=[(5, -1.0)], batch=8, lr=1e-2, eta=0.8, n_test=10, test_rng=rng)
    with pytest.raises(ValueError, match="n_test"):
        train_lsa_runs(3, 6, [0], stages=[(5, 1.0)], batch=8, lr=1e-2, eta=0.8, n_test=1, test_rng=rng)
