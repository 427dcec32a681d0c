"""Tests for the Flexformer ablation family, its side-by-side training and its frozen identity
(iclcore.models.flexformer; MMNN report §4.2-4.3)."""

import numpy as np
import pytest
import torch

from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.models.flexformer import (
    Flexformer,
    KernelDictionaryPreconditioner,
    PreconditionerJob,
    flexformer_variants,
    frozen_identity_gap,
    preconditioners_numpy,
    prompt_sampler,
    train_preconditioner_job,
    train_preconditioners,
)

torch.set_num_threads(1)
CFG = TaskConfig(K=5, M=20, r=2, sigma=0.1, cond=5.0, target="ridge")
P0 = 0.3 * np.eye(5) + 0.01 * np.arange(25.0).reshape(5, 5) / 25


def _tasks(n, seed):
    p = sample_prompt_statistics(CFG, n, np.random.default_rng(seed))
    return p.H_M, p.d


def test_untrained_variants_are_the_warm_start_or_its_best_approximations():
    models = flexformer_variants(5, P0, rank=2, n_heads=2, d_k=3, seed=0)
    assert list(models) == ["flex", "flex_heads_off", "free", "flex_static"]
    assert isinstance(models["flex"], Flexformer) and isinstance(models["flex_static"], KernelDictionaryPreconditioner)
    H, d = _tasks(7, 1)
    P = {name: preconditioners_numpy(m, H, d) for name, m in models.items()}
    assert np.allclose(P["free"], P0, atol=1e-14)  # full rank, no heads: exactly P_init
    W, S, Vt = np.linalg.svd(P0)
    rank2 = (W[:, :2] * S[:2]) @ Vt[:2]
    assert np.allclose(P["flex_heads_off"], rank2, atol=1e-14)
    assert np.allclose(P["flex"], rank2, atol=1e-14)  # heads start switched off
    assert models["flex"].config.n_heads == 2 and models["flex_heads_off"].config.n_heads == 0
    # the static dictionary P is the same for every task: the least-squares fit of P_init
    assert np.allclose(P["flex_static"], P["flex_static"][0], atol=0)
    assert np.linalg.norm(P["flex_static"][0] - P0) <= np.linalg.norm(P0)
    only = flexformer_variants(5, P0, rank=5, n_heads=1, d_k=2, seed=0, variants=("flex", "free"))
    assert list(only) == ["flex", "free"]
    with pytest.raises(ValueError, match="variants"):
        flexformer_variants(5, P0, rank=2, n_heads=1, d_k=2, seed=0, variants=("flex", "deep"))


def test_side_by_side_training_is_each_models_own_job():
    sampler = prompt_sampler(CFG)
    models = flexformer_variants(5, P0, rank=2, n_heads=1, d_k=2, seed=3, variants=("flex", "free"))
    trained, curves = train_preconditioners(models, sampler, 3, steps=4, batch=8, lr=1e-2, seed=3)
    assert list(trained) == list(curves) == ["flex", "free"]
    for i, name in enumerate(("flex", "free")):
        ref = flexformer_variants(5, P0, rank=2, n_heads=1, d_k=2, seed=3, variants=(name,))[name]
        ref_model, ref_res = train_preconditioner_job(PreconditionerJob(ref, sampler, 3, 4, 8, 1e-2, 3 + 1 + i))
        assert np.array_equal(curves[name].loss, ref_res.loss) and curves[name].loss.shape == (4,)
        for a, b in zip(trained[name].parameters(), ref_model.parameters()):
            assert torch.equal(a, b)
    with pytest.raises(ValueError, match="models"):
        train_preconditioners({}, sampler, 3, steps=1, batch=1, lr=1e-2, seed=0)


def test_frozen_identity_gap_is_rounding_and_detects_a_wrong_matrix():
    m = flexformer_variants(5, P0, rank=2, n_heads=2, d_k=3, seed=0, variants=("flex",))["flex"]
    with torch.no_grad():  # switch the heads on so that P depends on the task
        m.c.copy_(torch.tensor([0.1, 0.2], dtype=torch.float64))
    H, d = _tasks(30, 2)
    gap = frozen_identity_gap(m, H, d, L=6)
    assert gap < 1e-12
    assert frozen_identity_gap(m, H, d, L=6, P=preconditioners_numpy(m, H, d)) == gap
    shared = np.broadcast_to(preconditioners_numpy(m, H, d).mean(0), H.shape)  # not the per-task matrix
    assert frozen_identity_gap(m, H, d, L=6, P=shared) > 1e-6
    with pytest.raises(ValueError, match="P"):
        frozen_identity_gap(m, H, d, L=6, P=np.eye(5))
