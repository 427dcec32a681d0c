"""Inner tasks of ``logistic_probes`` the trainings of the probe transformers and of the
grokking model are tasks of :func:`iclcore.parallel.map_configs`, with the same bits on any executor."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace

import numpy as np
import pytest

from iclcore.models import toy_transformers as tt
from iclcore.parallel import map_configs

ATTN = tt.AttnConfig(
    n_layers=2, d_model=8, n_heads=2, d_head=4, vocab=6, seq_len=10, min_period=2, max_period=3, batch=4, steps=4,
    log_every=2,
)  # fmt: skip
GROK = tt.GrokConfig(p=5, frac_train=0.5, d_model=8, n_heads=2, d_head=4, d_mlp=8, steps=4, log_every=2)
JOBS = [
    tt.ToyModelJob(replace(ATTN, n_layers=1), 0, ("depth", (1, 2))),
    tt.ToyModelJob(ATTN, 0, ("depth", (2, 2))),
    tt.ToyModelJob(ATTN, 1000, ("stagger seed", (2, 2))),
    tt.ToyModelJob(GROK, 0, ("grokking", "training")),
]


def bits(run: tt.ICLRun | tt.GrokRun) -> list[bytes]:
    """The bytes of every field of a run except its wall-clock ``seconds``."""
    return [pickle.dumps(getattr(run, f.name)) for f in fields(run) if f.name != "seconds"]


def test_task_and_jobs_pickle_round_trip():
    assert pickle.loads(pickle.dumps(tt.train_toy_model)) is tt.train_toy_model
    assert pickle.loads(pickle.dumps(JOBS)) == JOBS


@pytest.mark.usefixtures("one_torch_thread")
def test_thread_pool_gives_the_serial_bits():
    serial = map_configs(tt.train_toy_model, JOBS, 1)
    with ThreadPoolExecutor(2) as pool:
        threaded = map_configs(tt.train_toy_model, JOBS, executor=pool, cost=tt.toy_model_cost)
    assert [type(r) for r in serial] == [tt.ICLRun, tt.ICLRun, tt.ICLRun, tt.GrokRun]
    assert [bits(r) for r in threaded] == [bits(r) for r in serial]
    # the task is the training it names: same bits as the direct call
    assert bits(serial[2]) == bits(tt.train_icl(ATTN, seed=1000))
    assert bits(serial[3]) == bits(tt.train_grokking(GROK, seed=0))
    assert not np.array_equal(serial[1].late_loss, serial[2].late_loss)  # the seed matters


def test_cost_orders_deeper_and_longer_trainings_first():
    costs = [tt.toy_model_cost(j) for j in JOBS]
    assert costs[0] < costs[1] == costs[2] and all(c > 0 for c in costs)


def test_bad_job_is_refused_naming_the_parameter():
    with pytest.raises(TypeError, match="config"):
        tt.ToyModelJob("not a config")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        tt.ToyModelJob(ATTN, -1)
    with pytest.raises(TypeError, match="job"):
        tt.train_toy_model(ATTN)  # type: ignore[arg-type]


@pytest.mark.slow
def test_spawned_processes_give_the_serial_bits():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the pool's processes (float32 sums depend on the thread count)
    try:
        serial = map_configs(tt.train_toy_model, JOBS, 1)
    finally:
        torch.set_num_threads(threads)
    spawned = map_configs(tt.train_toy_model, JOBS, 2, cost=tt.toy_model_cost)
    assert [bits(r) for r in spawned] == [bits(r) for r in serial]
