"""The shared training configuration and loop (iclcore.models.training).

Every training that goes through :func:`train_loop` (the toy transformers, the attention stacks, the
Flexformer, the probe-query softmax layer, the one-layer LSA and the depth-probe models) is checked,
at tiny sizes, against the same training written out step by step in the test (:func:`_written_out`:
a fresh batch, backprop, clipping, ``optimizer.step()`` of torch's SGD, Adam or AdamW with the
settings the training's docstring states, and its learning-rate schedule in closed form). The losses
(and the logged evaluations) agree to a rounding error model fixed in advance
(:data:`ROUNDING_ULPS`), orders of magnitude below what any change to the loop does to a loss (a
step skipped, a learning rate, a schedule, a clip or an order of updates changed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclcore.models.training import TrainConfig, TrainLog, cadence_steps, train_loop

torch.set_num_threads(1)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


#: Relative tolerance of a loss against its written-out training, in units of the machine epsilon of
#: its precision. Error model: both sides run the same operations in the same order, except the cosine
#: schedule, which torch updates recursively and the reference writes in closed form (a learning rate a
#: few ulp apart); a reordered reduction of length n would move a result by at most ~n ulp, the
#: reductions at these sizes have n <= 32, and at most 12 optimizer steps of well-conditioned tiny
#: models are allowed to amplify that by 4.
ROUNDING_ULPS = 128


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
# every training that goes through the loop equals the same training written out step by step
# with torch's optimizer (to rounding, see ROUNDING_ULPS)
# --------------------------------------------------------------------------------------------


def _written_out(params, batch_loss, steps, optimizer, *, lr_at=None, clip=None, at_state=None) -> np.ndarray:
    """The losses of ``steps`` training steps written out: the loss of a fresh batch, zeroed gradients,
    backprop, the gradient norm clipped to ``clip``, ``optimizer.step()`` at the learning rate
    ``lr_at(k)``; ``at_state(k)`` sees the parameters after ``k`` updates, under ``torch.no_grad``."""
    params = list(params)
    losses = []
    for k in range(steps + 1):
        if at_state is not None:
            with torch.no_grad():
                at_state(k)
        if k == steps:
            break
        loss = batch_loss()
        if lr_at is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(k)
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


def _warmup(lr: float, warmup: int):
    """The linear warm-up of the loop: step ``k`` at ``lr min(1, (k + 1)/warmup)``."""
    return lambda k: lr * min(1.0, (k + 1) / warmup)


def _agree(got, want, dtype: torch.dtype) -> None:
    """``got`` and ``want`` agree to ROUNDING_ULPS ulps of ``dtype``, and are not empty."""
    got, want = np.asarray(got, dtype=float).ravel(), np.asarray(want, dtype=float).ravel()
    assert got.size == want.size > 0
    np.testing.assert_allclose(got, want, rtol=ROUNDING_ULPS * torch.finfo(dtype).eps, atol=0.0)


def test_toy_transformer_trainings_are_adamw_steps_on_fresh_batches():
    import torch.nn.functional as F

    from iclcore.models import toy_transformers as tt

    cfg = tt.AttnConfig(
        n_layers=2, d_model=16, n_heads=2, d_head=4, vocab=8, seq_len=12, min_period=2, max_period=4,
        batch=8, steps=6, log_every=3,
    )  # fmt: skip
    run = tt.train_icl(cfg, seed=0)
    gen = _gen(0)
    model = tt.AttnOnlyTransformer(cfg, gen)
    tokens = tt.periodic_batch(cfg, 256, _gen(10_000))
    q = cfg.seq_len // 4
    early, late = [], []

    def evaluate(k: int) -> None:  # the per-position loss of the evaluation batch at the logged states
        if k % cfg.log_every == 0:
            nll = F.cross_entropy(model(tokens[:, :-1]).transpose(1, 2), tokens[:, 1:], reduction="none").mean(0)
            early.append(float(nll[:q].mean()))
            late.append(float(nll[-q:].mean()))

    def batch_loss() -> torch.Tensor:
        batch = tt.periodic_batch(cfg, cfg.batch, gen)
        return F.cross_entropy(model(batch[:, :-1]).reshape(-1, cfg.vocab), batch[:, 1:].reshape(-1))

    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    _written_out(model.parameters(), batch_loss, cfg.steps, opt, at_state=evaluate)
    assert list(run.steps) == [0, 3, 6]
    _agree(run.late_loss, late, torch.float32)
    _agree(run.early_loss, early, torch.float32)

    g = tt.GrokConfig(
        p=7, frac_train=0.5, d_model=8, n_heads=2, d_head=4, d_mlp=16, steps=5, log_every=2, warmup=3, lr=3e-3
    )
    grok = tt.train_grokking(g, seed=0)
    model = tt.GrokTransformer(g, _gen(0))
    xtr, ytr, _, _ = tt.modular_addition_split(g, 0)
    train_loss = []

    def evaluate_train(k: int) -> None:
        if k % g.log_every == 0:
            train_loss.append(float(F.cross_entropy(model(xtr), ytr)))

    opt = torch.optim.AdamW(model.parameters(), lr=g.lr, betas=(0.9, 0.98), weight_decay=g.weight_decay)
    _written_out(
        model.parameters(),
        lambda: F.cross_entropy(model(xtr), ytr),
        g.steps,
        opt,
        lr_at=_warmup(g.lr, g.warmup),
        at_state=evaluate_train,
    )
    assert list(grok.steps) == [0, 2, 4]
    _agree(grok.train_loss, train_loss, torch.float32)


def test_attention_train_is_sgd_or_adam_on_the_query_loss():
    from iclcore.models.attention import (
        LinearAttention,
        ReducedGammaStack,
        SoftmaxAttention,
        sample_iso_contexts,
        sample_rrs_contexts,
        train,
    )

    def query_loss(model, ctx) -> torch.Tensor:
        return ((model(ctx.X, ctx.y, ctx.Xs) - ctx.ys) ** 2).mean()

    def iso32(g):
        return sample_iso_contexts(16, 8, 4, D=4, gen=g, dtype=torch.float32)

    res = train(SoftmaxAttention(4, 8, 2, _gen(0)), iso32, 7, lr=1e-3, gen=_gen(1), optimizer="adam")
    m, g = SoftmaxAttention(4, 8, 2, _gen(0)), _gen(1)
    want = _written_out(m.parameters(), lambda: query_loss(m, iso32(g)), 7, torch.optim.Adam(m.parameters(), lr=1e-3))
    _agree(res.loss, want, torch.float32)

    def iso(g):
        return sample_iso_contexts(16, 8, 4, D=4, gen=g)

    def schedule(k: int) -> float:
        return 1.0 / (1.0 + k / 3)

    res = train(LinearAttention(4, 2, 0.5), iso, 9, lr=0.05, gen=_gen(2), schedule=schedule)
    m, g, gamma = LinearAttention(4, 2, 0.5), _gen(2), []
    want = _written_out(
        m.parameters(),
        lambda: query_loss(m, iso(g)),
        9,
        torch.optim.SGD(m.parameters(), lr=0.05),
        lr_at=lambda k: 0.05 * schedule(k),
        at_state=lambda k: gamma.append(m.gamma()),
    )
    _agree(res.loss, want, torch.float64)
    assert res.gamma.shape == (10, 1)
    _agree(res.gamma, gamma, torch.float64)
    np.testing.assert_allclose(res.t, np.concatenate([[0.0], np.cumsum([0.05 * schedule(k) for k in range(9)])]))

    lam = np.array([1.0, 0.5, 0.2])

    def rrs(g):
        return sample_rrs_contexts(8, 1, 1, lam=lam, omega=np.ones(3), gen=g)

    res = train(ReducedGammaStack(3, 2), rrs, 6, lr=0.1, gen=_gen(3), population=True)
    m, g = ReducedGammaStack(3, 2), _gen(3)
    want = _written_out(m.parameters(), lambda: m.population_loss(rrs(g)), 6, torch.optim.SGD(m.parameters(), lr=0.1))
    _agree(res.loss, want, torch.float64)


def test_flexformer_training_is_clipped_adam_on_a_cosine_schedule():
    from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
    from iclcore.models.flexformer import Flexformer, FlexformerConfig, depth_loss, train_preconditioner

    task = TaskConfig(K=5, M=20, r=2, sigma=0.1, cond=5.0, target="ridge")

    def sampler(n, rng):
        p = sample_prompt_statistics(task, n, rng)
        return p.H_M, p.d, p.z_star

    config = FlexformerConfig(K=5, rank=2, n_heads=2, d_k=3)
    res = train_preconditioner(
        Flexformer(config, _gen(0)), sampler, 3, steps=8, batch=16, lr=1e-2, rng=np.random.default_rng(8)
    )
    m, rng = Flexformer(config, _gen(0)), np.random.default_rng(8)
    params = [p for p in m.parameters() if p.requires_grad]

    def batch_loss() -> torch.Tensor:
        H, d, x_star = (torch.as_tensor(a, dtype=torch.float64) for a in sampler(16, rng))
        return depth_loss(m, H, d, x_star=x_star, L=3)

    lr, lo = 1e-2, 1e-2 / 100  # cosine annealing from lr to lr/100 over the 8 steps
    want = _written_out(
        params,
        batch_loss,
        8,
        torch.optim.Adam(params, lr=lr),
        lr_at=lambda k: lo + (lr - lo) * (1 + math.cos(math.pi * k / 8)) / 2,
        clip=10.0,
    )
    _agree(res.loss, want, torch.float64)


def test_probe_query_attention_training_logs_the_loss_of_the_batch_about_to_be_trained_on():
    from iclcore.lsq.tasks import TaskConfig
    from iclcore.models.softmax import AttentionConfig, ProbeQueryAttention, sample_torch_prompts, train_attention

    task = TaskConfig(K=6, M=24, r=1, sigma=0.1, lam=0.0, cond=10.0)
    config = AttentionConfig(K=6, n_heads=3, d_k=5)
    hist = train_attention(
        ProbeQueryAttention(config, _gen(0)),
        task,
        TrainConfig(steps=12, batch=8, lr=0.05, log_every=5),
        rng=np.random.default_rng(0),
    )
    m, rng = ProbeQueryAttention(config, _gen(0)), np.random.default_rng(0)

    def batch_loss() -> torch.Tensor:  # (1/2K) E |Delta(0; X, y) - beta|^2
        b = sample_torch_prompts(task, 8, rng)
        return ((m(b["X"].new_zeros(8, 6), b["X"], b["y"]) - b["beta"]) ** 2).sum(dim=1).mean() / 12

    losses = _written_out(m.parameters(), batch_loss, 12, torch.optim.SGD(m.parameters(), lr=0.05))
    assert hist.step == [0, 5, 10, 12]
    _agree(hist.loss, [losses[0], losses[5], losses[10], batch_loss().item()], torch.float64)


def test_lsa_trainings_are_adam_steps_with_warmup_and_clipping():
    from iclcore.gd import depth_probe as dp
    from iclcore.gd.construction import sample_regression, train_one_layer_lsa
    from iclcore.models.gpt_mini import GPTMini
    from iclcore.models.lsa import TrainedLSA, UntiedLSA

    _, curve = train_one_layer_lsa(3, 10, 9, batch=16, lr=1e-2, gen=_gen(0), seed=0)
    m, rng = TrainedLSA(3, _gen(0), 0.1), np.random.default_rng(0)

    def regression_loss() -> torch.Tensor:
        X, y, xq, yq = (torch.from_numpy(a) for a in sample_regression(16, 10, 3, rng=rng)[:4])
        return 0.5 * ((m(X, y, xq) - yq) ** 2).mean()

    want = _written_out(m.parameters(), regression_loss, 9, torch.optim.Adam(m.parameters(), lr=1e-2))
    _agree(curve, want, torch.float64)

    def probe_loss(model, gen, dtype) -> torch.Tensor:  # the loss at every x position (GPT) or at the query
        t = dp.sample_probe_tasks(16, 10, 3, gen=gen, m=1, s_lo=0.5, s_hi=2.0, dtype=dtype)
        if isinstance(model, GPTMini):
            pred, target = model.forward_all(t.X, t.y, t.xq[:, 0]), torch.cat([t.y, t.yq[:, :1]], 1)
            return 0.5 * ((pred - target) ** 2).mean()
        return 0.5 * ((model(t.X, t.y, t.xq) - t.yq) ** 2).mean()

    runs = {
        "lsa": (lambda: UntiedLSA(3, 2, _gen(6)), 2e-3, 3, torch.float64),
        "gpt": (lambda: GPTMini(3, 10, 2, 16, 2, _gen(6)).float(), 1e-3, 4, torch.float32),
    }
    for make, lr, warmup, dtype in runs.values():
        cfg = dp.ProbeTraining(dp.probe_train_config(steps=9, lr=lr, batch=16, warmup=warmup), n=10, d=3)
        recs, got, skipped = dp.train_with_checkpoints(make(), cfg, _gen(7), at_checkpoint=lambda s, m: {"step": s})
        assert [r["step"] for r in recs] == [0, 1, 2, 4, 8, 9] and skipped == 0
        model, gen = make(), _gen(7)
        want = _written_out(
            model.parameters(),
            lambda model=model, gen=gen, dtype=dtype: probe_loss(model, gen, dtype),
            9,
            torch.optim.Adam(model.parameters(), lr=lr),
            lr_at=_warmup(lr, warmup),
            clip=1.0,
        )
        _agree(got, want, dtype)
