"""Inner tasks of ``notebooks/flexformer_encdec.py``: its two latent-decoder trainings through ``map_configs``.

The task is :func:`iclcore.models.flexformer.train_preconditioner_job` with the latent sampler
:func:`iclcore.models.flexformer.latent_prompt_sampler`; checked at a tiny size: the sampler gives
the triples of :func:`iclcore.richardson.encdec.latent_systems` bit for bit, the task and its jobs
survive a pickle round trip, and a thread pool returns the serial results exactly.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from iclcore.lsq.lowrank import make_lowrank_model, sample_lowrank_prompts
from iclcore.models.flexformer import (
    Flexformer,
    FlexformerConfig,
    PreconditionerJob,
    latent_prompt_sampler,
    train_preconditioner_job,
)
from iclcore.parallel import map_configs
from iclcore.richardson.encdec import latent_systems

K, R = 6, 2


def tiny_problem():
    rng = np.random.default_rng(0)
    model = make_lowrank_model(K, R, 10, sigma=0.1, lam=0.01, cond_x=4.0, mu_z=np.array([0.2, 0.05]), rng=rng)
    U = np.linalg.qr(rng.standard_normal((K, R)))[0]
    return model, U


def jobs() -> list[PreconditionerJob]:
    model, U = tiny_problem()
    sampler = latent_prompt_sampler(model, U)
    return [
        PreconditionerJob(
            Flexformer(FlexformerConfig(K=R, rank=R, n_heads=h, d_k=2), torch.Generator().manual_seed(0)),
            sampler,
            3,
            4,
            8,
            1e-3,
            1 + i,
            {"model": (i + 1, 2)},
        )
        for i, h in enumerate((2, 0))
    ]


def bits(out) -> list[bytes]:
    return [p.detach().numpy().tobytes() for model, _ in out for p in model.parameters()] + [
        res.loss.tobytes() for _, res in out
    ]


def test_latent_sampler_equals_latent_systems_bit_for_bit():
    model, U = tiny_problem()
    got = latent_prompt_sampler(model, U)(5, np.random.default_rng(3))
    p = sample_lowrank_prompts(model, 5, np.random.default_rng(3))
    want = [a[0] for a in latent_systems(U, p)]
    assert [a.shape for a in got] == [(5, R, R), (5, R), (5, R)]
    assert [a.tobytes() for a in got] == [a.tobytes() for a in want]


def test_latent_sampler_refuses_bad_input():
    model, U = tiny_problem()
    with pytest.raises(TypeError, match="model"):
        latent_prompt_sampler("model", U)
    with pytest.raises(ValueError, match="U"):
        latent_prompt_sampler(model, U[:-1])


def test_jobs_pickle_and_a_thread_pool_gives_the_serial_bits():
    fn = pickle.loads(pickle.dumps(train_preconditioner_job))
    assert fn is train_preconditioner_job
    serial = bits(map_configs(train_preconditioner_job, jobs(), 1))
    assert bits(map_configs(fn, [pickle.loads(pickle.dumps(j)) for j in jobs()], 1)) == serial
    with ThreadPoolExecutor(2) as pool:
        threaded = map_configs(train_preconditioner_job, jobs(), executor=pool, cost=lambda j: j.model.config.n_heads)
    assert bits(threaded) == serial
