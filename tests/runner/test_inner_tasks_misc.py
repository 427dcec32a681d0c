"""Inner tasks of ``softmax_qk``, ``order_parameters`` and ``decoder_outer`` (``iclcore.parallel.map_configs``).

Each task function is picklable with its configuration, and a thread pool returns
the same bits as the serial map, on tiny configurations.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest

from iclcore.parallel import map_configs


def roundtrip(fn, configs) -> None:
    """``fn`` and every configuration survive a pickle round trip (what a pool process or Dask needs)."""
    assert pickle.loads(pickle.dumps(fn)) is fn
    for c in configs:
        assert pickle.dumps(pickle.loads(pickle.dumps(c))) == pickle.dumps(c)


def attention_bytes(results) -> list[bytes]:
    """The bytes of every parameter of each trained layer and the pickle of each training history."""
    return [t.detach().numpy().tobytes() for model, _ in results for t in model.parameters()] + [
        pickle.dumps(hist) for _, hist in results
    ]


def attention_runs() -> list:
    from iclcore.lsq.tasks import TaskConfig
    from iclcore.models.softmax import AttentionConfig, AttentionRun
    from iclcore.models.training import TrainConfig

    task = TaskConfig(K=3, M=6, r=1, sigma=0.1, lam=0.0, cond=2.0)
    train = TrainConfig(steps=4, batch=5, lr=0.5, optimizer="sgd", log_every=2)
    return [
        AttentionRun(
            AttentionConfig(K=3, n_heads=2, d_k=2, attention=a, init_std=0.1, qk_init_ratio=2.0), task, train, 0, 1
        )
        for a in ("softmax", "linear")
    ]


def test_train_attention_run_thread_pool_equals_serial():
    from iclcore.models.softmax import train_attention_run

    runs = attention_runs()
    roundtrip(train_attention_run, runs)
    serial = map_configs(train_attention_run, runs, 1)
    pooled = map_configs(train_attention_run, runs, executor=ThreadPoolExecutor(2))
    assert attention_bytes(pooled) == attention_bytes(serial)
    assert len(serial[0][1].step) == 3  # checkpoints at steps 0, 2, 4


def test_attention_run_refuses_bad_seeds():
    from iclcore.models.softmax import AttentionRun

    run = attention_runs()[0]
    with pytest.raises(ValueError, match="data_seed"):
        AttentionRun(run.attention, run.task, run.train, 0, -1)


def decoder_runs() -> list:
    from iclcore.lsq.tasks import TaskConfig
    from iclcore.richardson.decoder import DecoderRun

    cfg = TaskConfig(K=3, M=8, cond=2.0, sigma=0.1)
    return [DecoderRun(cfg, 0.05, 5, 16, (0, j), (0, 2, 5)) for j in range(3)] + [DecoderRun(cfg, 0.05, 4, 16, 7)]


def test_online_decoder_run_thread_pool_equals_serial_and_continues_the_stream():
    import numpy as np

    from iclcore.richardson.decoder import online_decoder_run, online_decoder_training

    runs = decoder_runs()
    roundtrip(online_decoder_run, runs)
    serial = map_configs(online_decoder_run, runs, 1)
    pooled = map_configs(online_decoder_run, runs, executor=ThreadPoolExecutor(2))
    assert [pickle.dumps(r) for r in pooled] == [pickle.dumps(r) for r in serial]
    # the same bits as online_decoder_training on the caller's generator, which the returned state continues
    rng = np.random.default_rng([0, 1])
    direct = online_decoder_training(runs[1].config, 0.05, 5, batch_size=16, rng=rng, checkpoints=np.array([0, 2, 5]))
    assert direct.P.tobytes() == serial[1].run.P.tobytes() and direct.steps.tolist() == [0, 2, 5]
    after = np.random.default_rng()
    after.bit_generator.state = serial[1].rng_state
    assert after.random(3).tobytes() == rng.random(3).tobytes()
    # an int seed (decoder_outer's main run: the notebook's default_rng(seed) continues after it)
    rng = np.random.default_rng(7)
    direct = online_decoder_training(runs[3].config, 0.05, 4, batch_size=16, rng=rng)
    assert direct.P.tobytes() == serial[3].run.P.tobytes()
    after.bit_generator.state = serial[3].rng_state
    assert after.random(3).tobytes() == rng.random(3).tobytes()


def test_decoder_run_refuses_a_bad_seed():
    from iclcore.richardson.decoder import DecoderRun

    with pytest.raises(ValueError, match="seed"):
        DecoderRun(decoder_runs()[0].config, 0.05, 5, 16, (0, -1))
