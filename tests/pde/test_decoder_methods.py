"""The methods of the PDE recast's Table 5: fitted, trained, scored on the same held-out prompts, compared."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.pde.methods import LEARNED_METHODS, compare_decoder_methods, fit_decoder_methods
from iclcore.pde.prompts import PDEConfig, encoded_query_systems, encoder_quality, sample_pde_prompts
from iclcore.richardson.baselines import depth_risk

L = 4


@pytest.fixture(scope="module")
def pde():
    torch.set_num_threads(1)
    cfg = PDEConfig(n_el=8, M=2, q=3, sigma_u=1e-6)
    op = cfg.operator()
    rng = np.random.default_rng(0)
    p_train = sample_pde_prompts(cfg, op, 24, rng=rng)
    p_test = sample_pde_prompts(cfg, op, 16, rng=rng)
    train, _ = encoded_query_systems(cfg, op, p_train)
    test, z_enc = encoded_query_systems(cfg, op, p_test)
    fit = fit_decoder_methods(
        cfg,
        op,
        train,
        test=test,
        z_train=p_train.z,
        L=L,
        free_iter=5,
        n_heads=1,
        d_k=2,
        steps=3,
        batch=4,
        lr=1e-2,
        lr_flex=1e-5,
        seed=0,
    )
    return op, train, test, encoder_quality(op, p_test, z_enc), fit


def test_fitted_methods_are_the_stated_preconditioners(pde):
    op, train, test, _, fit = pde
    assert list(fit.P) == ["flex", "flex_static", "free", "free_lbfgs", "scalar", "jacobi", "h_inf", "oracle"]
    np.testing.assert_array_equal(fit.P["h_inf"], np.linalg.inv(op.A0))
    np.testing.assert_array_equal(fit.P["scalar"], fit.scalar.param * np.eye(op.n_h))
    assert fit.P["flex"].shape == (test.n, op.n_h, op.n_h)
    # L-BFGS from eta I never ends above its start; the fit in another summation order is the same fit up to rounding
    assert fit.free_lbfgs.train_risk <= fit.scalar.train_risk * (1 + 1e-12)
    assert depth_risk(fit.free_lbfgs_alt.P, train, L) == pytest.approx(fit.free_lbfgs.train_risk, rel=1e-6)
    assert set(fit.curves) == {"flex", "free", "flex_static"} and all(c.loss.size == 3 for c in fit.curves.values())


def test_comparison_scores_the_exact_solve_at_the_floor(pde):
    op, _, test, enc, fit = pde
    P = {"exact": np.linalg.inv(test.H), "h_inf": fit.P["h_inf"], "scalar": fit.P["scalar"]}
    cmp = compare_decoder_methods(P, test, L, P_oracle=fit.P_oracle, clip=1.0, delta=0.05, n_small=8)
    floor = np.sum((test.x_dagger - test.x_star) ** 2, axis=1) / op.n_h
    np.testing.assert_allclose(cmp.losses["exact"], floor, rtol=1e-8, atol=1e-20)
    assert cmp.e2e["exact"] == pytest.approx(enc.floor, rel=1e-8)
    assert cmp.best == "exact"
    for m in P:
        assert cmp.e2e[m] == cmp.losses[m].mean() and cmp.risk_curves[m][-1] == pytest.approx(cmp.e2e[m], rel=1e-12)
        assert cmp.eb[m].upper >= cmp.eb[m].mean and cmp.eb_small[m].n == 8
    with pytest.raises(ValueError, match="P"):
        compare_decoder_methods({}, test, L, P_oracle=fit.P_oracle, clip=1.0, delta=0.05, n_small=8)


def test_comparison_metrics_are_ratios_and_paired_differences_of_the_scores(pde):
    _, train, test, enc, fit = pde
    cmp = compare_decoder_methods(fit.P, test, L, P_oracle=fit.P_oracle, clip=1.0, delta=0.05, n_small=8)
    m = cmp.metrics(fit, encoder=enc, train=train, test=test)
    e2e = cmp.e2e
    assert m["best_e2e"] == min(e2e.values()) and cmp.methods[m["best_index"]] == cmp.best
    assert m["best_over_floor"] == e2e[cmp.best] / enc.floor
    assert m["best_learned_e2e"] == min(e2e[k] for k in LEARNED_METHODS)
    assert m["free_over_flex"] == e2e["free"] / e2e["flex"]
    assert m["flex_minus_free"] == pytest.approx(e2e["flex"] - e2e["free"], rel=1e-9, abs=1e-18)
    assert m["free_lbfgs_rounding_ratio"] == depth_risk(fit.free_lbfgs_alt.P, test, L) / e2e["free_lbfgs"]
    assert m["max_violation_rate"] == 0.0  # submultiplicativity: no P violates its own contraction bound
    assert m["free_conv_train_over_floor"] >= 1 - 1e-9  # no P beats the exact solve on the training prompts
    assert all(f"{k}_eb_upper_small" in m for k in cmp.methods)
