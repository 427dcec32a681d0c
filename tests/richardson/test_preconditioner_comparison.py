"""Tests for iclcore.richardson.preconditioner_diagnostics.compare_preconditioners: Table 2 of several
preconditioners on the same held-out tasks (MMNN report §4.2)."""

import numpy as np
import pytest

from iclcore.lsq.iterates import contraction_factor
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.richardson.baselines import LinearSystems, depth_risk
from iclcore.richardson.preconditioner_diagnostics import compare_preconditioners, decoder_diagnostics

CFG = TaskConfig(K=4, M=30, r=2, sigma=0.1, cond=3.0, target="ridge")


def _setup(n=300, seed=0):
    prompts = sample_prompt_statistics(CFG, n, np.random.default_rng(seed))
    test = LinearSystems.from_prompts(prompts)
    P_star = oracle_preconditioner(closed_form_moments(CFG))
    rng = np.random.default_rng(seed + 1)
    P = {
        "task": P_star + 0.02 * rng.standard_normal((n, 4, 4)),  # task-dependent
        "oracle": P_star,
        "half": 0.5 * P_star,
        "zero": np.zeros((4, 4)),
        "exact": np.linalg.inv(test.H),
    }
    return prompts, test, P_star, P


def test_comparison_rows_are_the_diagnostics_and_the_floor_is_zero():
    prompts, test, P_star, P = _setup()
    methods = ("task", "oracle", "half", "zero")
    cmp = compare_preconditioners(P, test, 5, P_oracle=P_star, beta=prompts.beta, methods=methods, n_small=10)
    assert cmp.diagnostics["half"] == decoder_diagnostics(P["half"], test, 5, P_oracle=P_star, n_small=10)
    assert cmp.risk_curves["exact"][-1] < 1e-25 and cmp.risk_curves["zero"].shape == (6,)
    assert cmp.risks["zero"] == pytest.approx(cmp.zero_risk, rel=1e-13)  # doing nothing
    assert cmp.risks["half"] == pytest.approx(depth_risk(P["half"], test, 5), rel=1e-13)
    assert cmp.best == min(cmp.risks, key=cmp.risks.get) and cmp.risk_ratio("half", "half") == 1.0
    exact_beta = np.sum((test.x_dagger - prompts.beta) ** 2, 1) / 4  # the exact solve's error to beta
    assert np.allclose(cmp.beta_losses["exact"], exact_beta, rtol=1e-10)
    assert np.allclose(cmp.operator_norms("task"), contraction_factor(P["task"], test.H).operator_norm, rtol=1e-13)
    assert cmp.certificate("task").violation_rate == 0.0
    assert cmp.losses("task").mean() == pytest.approx(cmp.risks["task"], rel=1e-13)


def test_metrics_of_the_paired_comparison():
    prompts, test, P_star, P = _setup()
    cmp = compare_preconditioners(
        P, test, 5, P_oracle=P_star, beta=prompts.beta, methods=("task", "oracle", "half", "zero"), n_small=10
    )
    m = cmp.metrics(reference="task", rival="oracle")
    assert m["best_index"] == ["task", "oracle", "half", "zero"].index(cmp.best)
    assert m["task_minus_oracle"] == pytest.approx(cmp.risks["task"] - cmp.risks["oracle"], abs=1e-15)
    assert m["task_minus_oracle_se"] > 0 and m["max_violation_rate"] == 0.0
    assert m["task_risk_over_zero"] == cmp.risks["task"] / cmp.zero_risk and m["exact_risk"] < 1e-25
    assert 0.0 < m["task_task_variation"] < 0.2
    same = cmp.metrics(reference="half", rival="half")
    assert same["half_minus_half"] == 0.0 and same["half_minus_half_se"] == 0.0
    assert same["half_task_variation"] < 1e-13  # one matrix for every task (rounding of the mean)
    assert {"task_rho_mean", "half_rho_mean", "zero_risk_beta_se", "exact_risk_beta"} <= set(m)


def test_missing_method_is_named():
    prompts, test, P_star, P = _setup(n=20)
    with pytest.raises(ValueError, match="preconditioners: no matrix for \\['jacobi'\\]"):
        compare_preconditioners(P, test, 3, P_oracle=P_star, beta=prompts.beta, methods=("task", "jacobi"), n_small=5)


def _latent(n=300, seed=10):
    from iclcore.lsq.lowrank import latent_systems, make_lowrank_model, sample_lowrank_prompts

    rng = np.random.default_rng(seed)
    model = make_lowrank_model(8, 2, 24, sigma=0.2, lam=0.01, cond_x=5.0, mu_z=np.array([0.3, 0.1]), rng=rng)
    prompts = sample_lowrank_prompts(model, n, rng)
    U = np.linalg.qr(model.U_star + 0.1 * rng.standard_normal((8, 2)))[0]
    A, d, _ = latent_systems(U, prompts)
    P = {
        "exact": np.linalg.inv(A[0]),
        "good": np.array([[0.5, 0.05], [0.02, 0.7]]),
        "slow": 0.1 * np.eye(2),
    }
    return U, P, A[0], d[0], prompts.beta, model.Sigma_x


def test_latent_comparison_splits_every_risk_and_the_exact_decoder_sits_on_the_floor():
    from iclcore.richardson.preconditioner_diagnostics import compare_latent_decoders, latent_decomposition

    U, P, A, d, beta, Sx = _latent()
    methods = ("good", "slow", "exact")
    table = compare_latent_decoders(U, P, 4, A=A, d=d, beta=beta, Sigma_x=Sx, methods=methods, clip=1.0, delta=0.05)
    ref = latent_decomposition(U, P["good"], A, d=d, beta=beta, Sigma_x=Sx, L=4)
    assert table.decompositions["good"].e2e == ref.e2e and table.decompositions["good"].dec == ref.dec
    exact = table.decompositions["exact"]
    assert exact.dec < 1e-25 and exact.e2e == pytest.approx(exact.floor, rel=1e-12)  # no decoder error
    m = table.metrics(reference="good", rival="slow")
    for k in methods:  # R_e2e = R_floor + R_dec + 2 cross, to rounding (main paper §6.3)
        assert m[f"{k}_decomposition_gap_rel"] < 1e-12 and m[f"{k}_eb_upper"] >= m[f"{k}_e2e"]
    assert m["best_index"] == 2 and methods[m["best_dec_index"]] == "exact"
    assert m["good_minus_slow_e2e"] == pytest.approx(m["good_e2e"] - m["slow_e2e"], rel=1e-10)
    assert m["good_minus_slow_e2e_se"] > 0 and m["good_violation_rate"] == m["slow_violation_rate"] == 0.0
    # the exact solve has rho = 0 to rounding: its certificate compares rounding errors with 0
    assert m["max_violation_rate"] == m["exact_violation_rate"] > 0
    assert m["good_dec_over_floor"] == m["good_dec"] / m["good_floor"]
    assert table.e2e_ratio("slow", "good") == m["slow_e2e"] / m["good_e2e"] and table.dec_ratio("good", "good") == 1.0
    with pytest.raises(ValueError, match="no matrix for \\['flex'\\]"):
        compare_latent_decoders(U, P, 4, A=A, d=d, beta=beta, Sigma_x=Sx, methods=("flex",))
