"""pde_galerkin's inner tasks (``iclcore.parallel.map_configs``): picklable, and the same bits on any executor.

The notebook maps three functions over independent configurations: the L-BFGS fits of the free
linear ``P`` (:func:`iclcore.pde.decoder.free_linear_fit`), the trainings of the learned decoders
(:func:`iclcore.models.flexformer.train_preconditioner_job` on the picklable
:func:`iclcore.pde.prompts.encoded_query_sampler`) and every method's scores
(:func:`iclcore.pde.decoder.decoder_scores`). Each, at a tiny size, survives a pickle round trip and
gives on a thread pool exactly what it gives serially.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from iclcore.parallel import map_configs
from iclcore.pde.decoder import DecoderScoring, FreeLinearFit, decoder_scores, free_linear_fit
from iclcore.pde.prompts import PDEConfig, encoded_query_sampler, encoded_query_systems, sample_pde_prompts

L = 3


@pytest.fixture(scope="module")
def pde():
    cfg = PDEConfig(n_el=8, M=2, q=3, sigma_u=1e-6)
    op = cfg.operator()
    rng = np.random.default_rng(0)
    train, _ = encoded_query_systems(cfg, op, sample_pde_prompts(cfg, op, 16, rng=rng))
    test, _ = encoded_query_systems(cfg, op, sample_pde_prompts(cfg, op, 12, rng=rng))
    return cfg, op, train, test


def both_ways(fn, configs):
    """``map_configs`` serially and on two threads (after a pickle round trip of ``fn`` and the configs)."""
    fn2, configs2 = pickle.loads(pickle.dumps((fn, configs)))
    serial = map_configs(fn, configs, 1)
    with ThreadPoolExecutor(2) as pool:
        threaded = map_configs(fn2, configs2, executor=pool)
    return serial, threaded


def test_free_linear_fits_are_picklable_and_executor_independent(pde):
    _, op, train, _ = pde
    eye = np.eye(op.n_h)
    fits = [FreeLinearFit(train, L, 0.1 * eye, 5), FreeLinearFit(train, L, 0.1 * eye, 5, chunk=4)]
    serial, threaded = both_ways(free_linear_fit, fits)
    assert [pickle.dumps(b) for b in serial] == [pickle.dumps(b) for b in threaded]
    with pytest.raises(ValueError, match="P0"):
        FreeLinearFit(train, L, np.eye(2), 5)


def test_decoder_scores_are_picklable_and_executor_independent(pde):
    _, op, _, test = pde
    P_shared = np.linalg.inv(op.A0)
    P_stack = 0.5 * np.linalg.inv(test.H)
    scorings = [DecoderScoring(P, test, L, P_shared, n_small=4) for P in (P_shared, P_stack)]
    serial, threaded = both_ways(decoder_scores, scorings)
    assert [pickle.dumps(s) for s in serial] == [pickle.dumps(s) for s in threaded]
    assert serial[0].losses.shape == (test.n,) and serial[0].risk_curve.shape == (L + 1,)
    with pytest.raises(ValueError, match="P"):
        DecoderScoring(np.eye(2), test, L, P_shared)


def test_decoder_trainings_on_the_pde_sampler_are_executor_independent(pde):
    import torch

    from iclcore.models.flexformer import (
        Flexformer,
        FlexformerConfig,
        KernelDictionaryPreconditioner,
        PreconditionerJob,
        kernel_dictionary,
        train_preconditioner_job,
    )

    cfg, op, _, _ = pde
    sampler = encoded_query_sampler(cfg, op)
    H, d, xs = sampler(4, np.random.default_rng(1))
    assert H.shape == (4, op.n_h, op.n_h) and d.shape == xs.shape == (4, op.n_h)

    def jobs():
        flex = Flexformer(
            FlexformerConfig(K=op.n_h, rank=op.n_h, n_heads=1, d_k=2),
            torch.Generator().manual_seed(0),
            positions=op.nodes,
        )
        static = KernelDictionaryPreconditioner(
            kernel_dictionary(op.nodes, ("identity", "green")), P_init=0.1 * np.eye(op.n_h)
        )
        return [PreconditionerJob(m, sampler, L, 3, 4, 1e-3, s) for m, s in ((flex, 1), (static, 2))]

    def bits(out):
        return [p.detach().numpy().tobytes() for model, _ in out for p in model.parameters()] + [
            res.loss.tobytes() for _, res in out
        ]

    serial = map_configs(train_preconditioner_job, jobs(), 1)
    js = pickle.loads(pickle.dumps(jobs()))
    with ThreadPoolExecutor(2) as pool:
        threaded = map_configs(train_preconditioner_job, js, executor=pool)
    assert bits(serial) == bits(threaded)
    with pytest.raises(TypeError, match="config"):
        encoded_query_sampler(op)
