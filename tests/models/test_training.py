"""The shared training configuration and loop (iclcore.models.training).

The regression tests pin the first losses of every loop that goes through :func:`train_loop`, at
tiny sizes, to the values of the seven hand-written loops it replaced (computed on the code before
the change, stored with ``float.hex``). On the machine where they were stored the match was
bit-for-bit. Across CPUs it cannot be: torch picks its SIMD kernels (AVX2, AVX-512) from the CPU, and
a different kernel sums in a different order. The pins therefore hold to a rounding error model
fixed in advance (:data:`ROUNDING_ULPS`), which is orders of magnitude below what any change to the
loop itself (a step skipped, a learning rate or an order of updates changed) does to a loss.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclcore.models.training import TrainConfig, TrainLog, cadence_steps, train_loop

torch.set_num_threads(1)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


#: Relative tolerance of a pinned loss, in units of the machine epsilon of its precision. Error
#: model: a reordered reduction of length n changes a result by at most ~n ulp; the reductions at
#: these sizes have n <= 32 (widths 16, batches 16, contexts 24), and the pinned losses come from at
#: most 12 optimizer steps of well-conditioned tiny models, which we allow to amplify that by 4.
ROUNDING_ULPS = 128


def _expect(got: np.ndarray, hexes: list[str]) -> None:
    """Compare losses with pinned ``float.hex`` values to ROUNDING_ULPS ulps of their precision.

    A pin written with at most 6 hexadecimal digits is a float32 value (24-bit significand), any
    other a float64 value.
    """
    want = np.array([float.fromhex(h) for h in hexes])
    single = all(len(h.split(".")[1].split("p")[0]) <= 6 for h in hexes)
    eps = np.finfo(np.float32 if single else np.float64).eps
    got = np.asarray(got, dtype=float).ravel()[: want.size]
    np.testing.assert_allclose(got, want, rtol=ROUNDING_ULPS * eps, atol=0.0)


# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"steps": -1}, "steps"),
        ({"steps": 2.0}, "steps"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"batch": 0}, "batch"),
        ({"betas": (0.9, 1.0)}, "betas"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"clip": 0.0}, "clip"),
        ({"schedule": "step"}, "schedule"),
        ({"warmup": -1}, "warmup"),
        ({"log_every": 0}, "log_every"),
        ({"nonfinite": "warn"}, "nonfinite"),
        ({"fused": True}, "fused"),
        ({"optimizer": "adam", "fused": 1}, "fused"),
    ],
)
def test_config_errors_name_the_parameter(kwargs, name):
    base = {"steps": 3, "lr": 0.1}
    with pytest.raises(ValueError, match=f"^{name}:"):
        TrainConfig(**{**base, **kwargs})


def test_cadence_steps():
    assert cadence_steps(7, 3) == [0, 3, 6]
    assert cadence_steps(6, 3) == [0, 3, 6]
    assert cadence_steps(0, 5) == [0]


# --------------------------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------------------------


def _quadratic(steps: int = 4, **kw) -> tuple[torch.nn.Parameter, TrainConfig]:
    return torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64)), TrainConfig(steps=steps, lr=0.25, **kw)


def test_hooks_are_called_in_order():
    w, cfg = _quadratic()
    events: list[tuple] = []

    def batch_loss(k: int) -> torch.Tensor:
        events.append(("batch", k))
        return (w**2).sum()

    log = train_loop(
        [w],
        batch_loss,
        cfg,
        on_loss=lambda k, loss: events.append(("loss", k, float(loss.detach()))),
        on_checkpoint=lambda k: events.append(("checkpoint", k, torch.is_grad_enabled())),
        checkpoints=cadence_steps(cfg.steps, 2),
    )
    kinds = [e[:2] for e in events]
    assert kinds == [
        ("checkpoint", 0),
        ("batch", 0),
        ("loss", 0),
        ("batch", 1),
        ("loss", 1),
        ("checkpoint", 2),
        ("batch", 2),
        ("loss", 2),
        ("batch", 3),
        ("loss", 3),
        ("checkpoint", 4),
    ]
    assert not any(e[2] for e in events if e[0] == "checkpoint")  # checkpoints run under no_grad
    # plain SGD on |w|^2: w <- (1 - 2 lr) w = w / 2, so the loss falls by 4 each step
    assert isinstance(log, TrainLog) and log.skipped == 0
    np.testing.assert_allclose(log.loss, 5.0 / 4.0 ** np.arange(4), rtol=1e-15)
    assert [e[2] for e in events if e[0] == "loss"] == list(log.loss)


def test_lr_factor_and_schedules():
    w, cfg = _quadratic(steps=3)
    log = train_loop([w], lambda k: (w**2).sum(), cfg, lr_factor=lambda k: 0.0 if k == 1 else 1.0)
    np.testing.assert_allclose(log.loss, [5.0, 1.25, 1.25], rtol=1e-15)  # step 1 runs at lr 0
    w, cfg = _quadratic(steps=3, schedule="warmup", warmup=2)
    log = train_loop([w], lambda k: (w**2).sum(), cfg)
    np.testing.assert_allclose(log.loss, [5.0, 5.0 * 0.75**2, 5.0 * 0.75**2 / 4], rtol=1e-15)
    w, cfg = _quadratic(schedule="cosine")
    with pytest.raises(ValueError, match="^lr_factor:"):
        train_loop([w], lambda k: (w**2).sum(), cfg, lr_factor=lambda k: 1.0)
    with pytest.raises(TypeError, match="^cfg:"):
        train_loop([w], lambda k: (w**2).sum(), {"steps": 3, "lr": 0.1})


def test_nonfinite_policies():
    def losses(nonfinite: str) -> TrainLog:
        w, cfg = _quadratic(steps=3, nonfinite=nonfinite, clip=10.0)
        return train_loop([w], lambda k: (w**2).sum() * (float("inf") if k == 1 else 1.0), cfg)

    skip = losses("skip")
    assert skip.skipped == 1 and skip.loss[2] == skip.loss[0] / 4  # step 1 left the parameters alone
    with pytest.raises(FloatingPointError, match="^lr:"):
        losses("raise")
    assert np.isnan(losses("ignore").loss[2])  # an infinite gradient poisons the parameters


# --------------------------------------------------------------------------------------------
# identity with the loops this one replaced (first losses at tiny sizes, stored before the change;
# to rounding, see ROUNDING_ULPS)
# --------------------------------------------------------------------------------------------


def test_toy_transformer_loops_are_unchanged():
    from iclcore.models import toy_transformers as tt

    cfg = tt.AttnConfig(
        n_layers=2, d_model=16, n_heads=2, d_head=4, vocab=8, seq_len=12, min_period=2, max_period=4,
        batch=8, steps=6, log_every=3,
    )  # fmt: skip
    _expect(tt.train_icl(cfg, seed=0).late_loss, ["0x1.419dc2p+1", "0x1.3b796cp+1", "0x1.353778p+1"])
    g = tt.GrokConfig(
        p=7, frac_train=0.5, d_model=8, n_heads=2, d_head=4, d_mlp=16, steps=5, log_every=2, warmup=3, lr=3e-3
    )
    _expect(tt.train_grokking(g, seed=0).train_loss, ["0x1.0ad2b6p+1", "0x1.06736ep+1", "0x1.ff676p+0"])


def test_attention_train_is_unchanged():
    from iclcore.models.attention import (
        LinearAttention,
        ReducedGammaStack,
        SoftmaxAttention,
        sample_iso_contexts,
        sample_rrs_contexts,
        train,
    )

    m = SoftmaxAttention(4, 8, 2, _gen(0))
    res = train(
        m, lambda g: sample_iso_contexts(16, 8, 4, 4, g, dtype=torch.float32), 7, 1e-3, _gen(1), optimizer="adam"
    )
    _expect(res.loss, ["0x1.943196p+1", "0x1.047444p+2", "0x1.191da6p+1", "0x1.42bf4ap+0", "0x1.8a6eb2p+0"])
    m = LinearAttention(4, 2, 0.5)
    res = train(
        m, lambda g: sample_iso_contexts(16, 8, 4, 4, g), 9, 0.05, _gen(2), schedule=lambda k: 1.0 / (1.0 + k / 3)
    )
    _expect(
        res.loss,
        [
            "0x1.26bfd560c06ecp+0",
            "0x1.abc0f7a9c2a7ep-1",
            "0x1.cc1940964e8f2p-1",
            "0x1.051d844d8df68p+0",
            "0x1.663defe09fe3dp-1",
        ],
    )
    assert res.gamma.shape == (10, 1)
    m = ReducedGammaStack(3, 2)
    lam = np.array([1.0, 0.5, 0.2])
    res = train(m, lambda g: sample_rrs_contexts(8, 1, 1, lam, np.ones(3), g), 6, 0.1, _gen(3), population=True)
    _expect(
        res.loss,
        [
            "0x1.5ae5fddffc2aep-1",
            "0x1.934aa7b8f6c42p-1",
            "0x1.04bf246c94978p-1",
            "0x1.3a279517cb2a6p-1",
            "0x1.efcf76c02d2a4p-2",
        ],
    )


def test_flexformer_training_is_unchanged():
    from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
    from iclcore.models.flexformer import Flexformer, FlexformerConfig, train_preconditioner

    task = TaskConfig(K=5, M=20, r=2, sigma=0.1, cond=5.0, target="ridge")

    def sampler(n, rng):
        p = sample_prompt_statistics(task, n, rng)
        return p.H_M, p.d, p.z_star

    m = Flexformer(FlexformerConfig(K=5, rank=2, n_heads=2, d_k=3), _gen(0))
    res = train_preconditioner(m, sampler, 3, 8, 16, 1e-2, np.random.default_rng(8))
    _expect(
        res.loss,
        [
            "0x1.f218ca6627b20p-2",
            "0x1.1e24b482bb2e2p-1",
            "0x1.4edf90bc45a95p-2",
            "0x1.bd2792d38ee26p-2",
            "0x1.0df538b61cad3p-2",
        ],
    )


def test_probe_query_attention_training_is_unchanged():
    from iclcore.lsq.tasks import TaskConfig
    from iclcore.models.softmax import AttentionConfig, ProbeQueryAttention, train_attention

    task = TaskConfig(K=6, M=24, r=1, sigma=0.1, lam=0.0, cond=10.0)
    m = ProbeQueryAttention(AttentionConfig(K=6, n_heads=3, d_k=5), _gen(0))
    hist = train_attention(m, task, TrainConfig(steps=12, batch=8, lr=0.05, log_every=5), np.random.default_rng(0))
    assert hist.step == [0, 5, 10, 12]
    _expect(hist.loss, ["0x1.28709ce5b5453p-5", "0x1.74e82eb380525p-4", "0x1.5efe50424ad53p-4", "0x1.8910ca55c5ef3p-5"])


def test_lsa_trainings_are_unchanged():
    from iclcore.gd import depth_probe as dp
    from iclcore.gd.construction import train_one_layer_lsa
    from iclcore.models.gpt_mini import GPTMini
    from iclcore.models.lsa import UntiedLSA

    _, curve = train_one_layer_lsa(3, 10, 9, 16, 1e-2, _gen(0), seed=0)
    _expect(
        curve,
        [
            "0x1.37c3833637193p-1",
            "0x1.c5d1370f363cep-1",
            "0x1.06c60b2ec9858p-2",
            "0x1.0154b3b31a098p+0",
            "0x1.ef2ddbf0588fcp-2",
        ],
    )
    runs = {
        "lsa": (UntiedLSA(3, 2, _gen(6)), 2e-3, 3),
        "gpt": (GPTMini(3, 10, 2, 16, 2, _gen(6)).float(), 1e-3, 4),
    }
    want = {
        "lsa": ["0x1.8cbbab61d83e8p+1", "0x1.fb20c931f2d16p-1", "0x1.0ff02cfad4853p+1", "0x1.cbc0b179201cep-1", "0x1.9f7851998f461p+1"],
        "gpt": ["0x1.1f51b2p+1", "0x1.04d458p+1", "0x1.b5f7d8p+0", "0x1.d1a47ap+0", "0x1.56d5b2p+1"],
    }  # fmt: skip
    for kind, (model, lr, warmup) in runs.items():
        cfg = dp.ProbeTraining(dp.probe_train_config(steps=9, lr=lr, batch=16, warmup=warmup), n=10, d=3)
        recs, curve, skipped = dp.train_with_checkpoints(model, cfg, _gen(7), lambda s, m: {"step": s})
        assert [r["step"] for r in recs] == [0, 1, 2, 4, 8, 9] and skipped == 0
        _expect(curve, want[kind])
