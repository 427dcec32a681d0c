"""The trained-layer analyses of iclcore.models.softmax: gauge check, §8 Jacobian analysis, Q/K training summary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig
from iclcore.models.softmax import (
    AttentionConfig,
    AttentionRun,
    ProbeQueryAttention,
    conserved_gap,
    gauge_check,
    jacobian_analysis,
    kernel_training_summary,
    linearized_preconditioner,
    sample_torch_prompts,
    train_attention_run,
    train_attention_variants,
)
from iclcore.models.training import TrainConfig
from iclcore.stats import standard_error

TASK = TaskConfig(K=5, M=20, r=1, sigma=0.1, lam=0.0, cond=10.0)
P_STAR = oracle_preconditioner(closed_form_moments(TASK))


def _model(attention="softmax", seed=0):
    cfg = AttentionConfig(K=5, n_heads=2, d_k=4, attention=attention, init_std=0.3)
    return ProbeQueryAttention(cfg, torch.Generator().manual_seed(seed))


def _prompts(n=24, seed=1):
    return sample_torch_prompts(TASK, n, np.random.default_rng(seed))


def test_gauge_check_moves_raw_matrices_but_not_kernels_or_outputs():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(2, 4, 4)) + 2.0 * np.eye(4)
    g = gauge_check(_model(), A, _prompts(), z=rng.normal(size=(24, 5)))
    assert g.output_rel_diff < 1e-12 and g.kernel_rel_diff < 1e-12
    assert g.raw_rel_change > 0.1
    same = gauge_check(_model(), np.eye(4), _prompts(), z=rng.normal(size=(24, 5)))
    assert same.raw_rel_change == 0.0 and same.balance_after == pytest.approx(same.balance_before, rel=1e-15)


def test_jacobian_analysis_of_linear_attention_is_its_global_preconditioner():
    model = _model("linear")
    jac = jacobian_analysis(model, _prompts(), 3, P_star=P_STAR)
    P_lin = linearized_preconditioner(model)
    np.testing.assert_allclose(jac.J, np.broadcast_to(P_lin, jac.J.shape), atol=1e-12)
    assert jac.spread.max() < 1e-10 and jac.lin_vs_Jbar < 1e-10 and jac.offset < 1e-10
    assert jac.fit_lin == pytest.approx(1.0, abs=1e-12) and jac.fit_proj == pytest.approx(1.0, abs=1e-12)
    assert jac.lin_vs_Pstar == pytest.approx(np.linalg.norm(P_lin - P_STAR) / np.linalg.norm(P_STAR), rel=1e-12)


def test_jacobian_analysis_of_softmax_attention_is_affine_per_prompt_but_spread_across_prompts():
    jac = jacobian_analysis(_model("softmax"), _prompts(), 3, P_star=P_STAR)
    assert jac.delta.shape == jac.r.shape == (3, 24, 5) and jac.risk.shape == (2,)
    assert jac.affine_err < 1e-10  # Δ(z_l) - Δ(z_0) = J (r_l - r_0): the scores read only the keys
    assert jac.spread.mean() > 1e-3 and jac.offset > 1e-6
    assert jac.spread_se == standard_error(jac.spread)
    assert jac.fit_proj >= jac.fit_lin - 1e-12  # P_proj is the least-squares global P
    u, s, vt = np.linalg.svd(jac.J_bar)
    assert jac.sigma1 == s[0]
    np.testing.assert_allclose(jac.top_component.mean(), s[0], rtol=1e-10)  # u1' J_bar v1 = sigma_1


def test_attention_variants_are_the_single_runs_with_identical_seeds():
    cfg = AttentionConfig(K=5, n_heads=2, d_k=4, init_std=0.1, qk_init_ratio=2.0)
    train = TrainConfig(steps=6, batch=8, lr=0.5, optimizer="sgd", log_every=2)
    models, hists = train_attention_variants(cfg, TASK, train, seed=3)
    assert list(models) == ["softmax", "linear"]
    for a in ("softmax", "linear"):
        run = AttentionRun(
            AttentionConfig(K=5, n_heads=2, d_k=4, attention=a, init_std=0.1, qk_init_ratio=2.0), TASK, train, 3, 4
        )
        model, hist = train_attention_run(run)
        assert torch.equal(models[a].W_Q, model.W_Q) and hists[a].loss == hist.loss
    with pytest.raises(TypeError, match="config"):
        train_attention_variants(TASK, TASK, train, seed=3)


def test_kernel_training_summary_reads_the_first_and_last_checkpoints():
    cfg = AttentionConfig(K=5, n_heads=2, d_k=4, init_std=0.1, qk_init_ratio=2.0)
    train = TrainConfig(steps=6, batch=8, lr=0.5, optimizer="sgd", log_every=2)
    _, hists = train_attention_variants(cfg, TASK, train, seed=3, attentions=("softmax",))
    h = hists["softmax"]
    s = kernel_training_summary(h)
    assert s["loss_initial"] == h.loss[0] and s["loss_final"] == h.loss[-1]
    assert s["balance_initial"] == h.stats[0].balance and s["stable_rank_final"] == h.stats[-1].stable_rank_mean
    gap = conserved_gap(h)
    np.testing.assert_array_equal(gap, [st.conserved_heads.sum() for st in h.stats])
    assert s["conserved_gap_rel_drift"] == abs(gap[-1] - gap[0]) / abs(gap[0])
    with pytest.raises(ValueError, match="history"):
        kernel_training_summary(type(h)())
