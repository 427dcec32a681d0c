"""Benchmark: the slowest paper presets (dmft_softmax, logistic_probes, flexformer_decoder), old path against new.

Plain script::

    .venv/bin/python benchmarks/bench_paper_scale.py [--steps 20] [--repeats 3]

Every model of both notebooks at its **paper** size (dmft_softmax: D = 16, n = 64, B = 128,
P = 32, K = 16, depths 1, 2, 4, 8, with and without MLP; logistic_probes: d_model = 64, 4 heads
of 16, seq_len = 48, batch 64, depths 1-4, and the grokking model p = 59, d_model = 64,
d_mlp = 256 full batch), trained for ``--steps`` steps instead of the preset's 1,500-10,000
(the cost per step does not depend on the step); flexformer_decoder: the four preconditioner models at
K = 16, M = 64, L = 16, batch 512, 2,000 Adam steps in the preset. "old" swaps in the term-by-term forwards of
:mod:`iclcore.models._reference` (the code before the rewrite), "new" is the package code; both
run in this process, alternately, on one thread, and the ratio old / new is that of the best
CPU times (``time.process_time``), which on a loaded machine is steadier than wall time.
The last column is the per-step share of the full notebook in the old code (weights for the
overall ratio). Both paths start from the same initialisation and data; the script checks
that their first-step losses agree to float32 rounding.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from iclcore.models import _reference as ref  # noqa: E402
from iclcore.models import flexformer as ff  # noqa: E402
from iclcore.models import toy_transformers as tt  # noqa: E402
from iclcore.models.attention import SoftmaxAttention, sample_iso_contexts, train  # noqa: E402

torch.set_num_threads(1)


@contextlib.contextmanager
def old_path():
    """Swap the reference forwards in for the duration of the block."""
    saved = (SoftmaxAttention.forward, tt._Attention.forward, tt.GrokTransformer.forward, ff.richardson_unroll)
    SoftmaxAttention.forward = ref.softmax_attention_forward
    tt._Attention.forward = ref.toy_attention_forward
    tt.GrokTransformer.forward = ref.grok_forward
    ff.richardson_unroll = ref.richardson_unroll
    try:
        yield
    finally:
        SoftmaxAttention.forward, tt._Attention.forward, tt.GrokTransformer.forward, ff.richardson_unroll = saved


def cpu_time(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def compare(name, fn, repeats, full_steps, steps):
    """Best-of-``repeats`` CPU seconds of ``fn()`` old and new (alternating); returns (old, new)."""
    t_old, t_new = [], []
    for _ in range(repeats):
        with old_path():
            t, out_old = cpu_time(fn)
        t_old.append(t)
        t, out_new = cpu_time(fn)
        t_new.append(t)
    o, n = min(t_old), min(t_new)
    diff = abs(out_old - out_new) / max(abs(out_old), 1e-12)
    print(
        f"{name:34s} old {o / steps * 1e3:8.1f} ms/step   new {n / steps * 1e3:8.1f} ms/step   "
        f"ratio {o / n:5.2f}x   first-step loss rel. diff {diff:.1e}   "
        f"(paper preset: {full_steps} steps, old ~{o / steps * full_steps:6.0f} CPU s)"
    )
    return o / steps * full_steps, n / steps * full_steps


def dmft_softmax(steps, repeats):
    D, n, B, P, K = 16, 64, 128, 32, 16
    sampler = lambda g: sample_iso_contexts(B, P, K, D=D, gen=g, dtype=torch.float32)  # noqa: E731
    tot = [0.0, 0.0]
    for mlp in (False, True):
        for L in (1, 2, 4, 8):

            def fn(L=L, mlp=mlp):
                model = SoftmaxAttention(D, n, L, torch.Generator().manual_seed(L), mlp=mlp)
                return float(
                    train(
                        model, sampler, steps, lr=2e-3, gen=torch.Generator().manual_seed(50 + L), optimizer="adam"
                    ).loss[0]
                )

            o, nw = compare(f"dmft_softmax L={L}{' +MLP' if mlp else ''}", fn, repeats, 2000, steps)
            tot[0] += o
            tot[1] += nw
    print(
        f"{'dmft_softmax training, all 8 models':34s} old ~{tot[0]:6.0f} CPU s   new ~{tot[1]:6.0f} CPU s   ratio {tot[0] / tot[1]:5.2f}x"
    )


def logistic_probes(steps, repeats):
    tot = [0.0, 0.0]
    for L in (1, 2, 3, 4):
        cfg = tt.AttnConfig(
            n_layers=L,
            d_model=64,
            n_heads=4,
            d_head=16,
            vocab=16,
            seq_len=48,
            max_period=12,
            init_scale=0.1,
            batch=64,
            steps=steps,
            log_every=25 if steps % 25 == 0 else steps,
        )
        o, nw = compare(
            f"logistic_probes ICL L={L}", lambda cfg=cfg: float(tt.train_icl(cfg).late_loss[0]), repeats, 1500, steps
        )
        tot[0] += o
        tot[1] += nw
    g = tt.GrokConfig(
        p=59, frac_train=0.5, d_model=64, n_heads=4, d_head=16, d_mlp=256, lr=1e-3, steps=steps, log_every=steps
    )
    o, nw = compare(
        "logistic_probes grokking", lambda: float(tt.train_grokking(g).train_loss[-1]), repeats, 10000, steps
    )
    tot[0] += o
    tot[1] += nw
    print(
        f"{'logistic_probes training, all':34s} old ~{tot[0]:6.0f} CPU s   new ~{tot[1]:6.0f} CPU s   ratio {tot[0] / tot[1]:5.2f}x"
    )


def flexformer_decoder(steps, repeats):
    import numpy as np

    from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics

    K, L, batch = 16, 16, 512
    cfg = TaskConfig(K=K, M=64, r=3, sigma=0.1, lam=0.0, cond=10.0, target="ridge")

    def sampler(n, g):
        p = sample_prompt_statistics(cfg, n, g)
        return p.H_M, p.d, p.z_star

    P0 = 0.01 * np.eye(K)
    models = {
        "flex": lambda: ff.Flexformer(
            ff.FlexformerConfig(K=K, rank=3, n_heads=2, d_k=4), torch.Generator().manual_seed(0), P_init=P0
        ),
        "free": lambda: ff.Flexformer(
            ff.FlexformerConfig(K=K, rank=K, n_heads=0), torch.Generator().manual_seed(0), P_init=P0
        ),
    }
    tot = [0.0, 0.0]
    for name, make in models.items():

        def fn(make=make):
            res = ff.train_preconditioner(
                make(), sampler, L, steps=steps, batch=batch, lr=3e-3, rng=np.random.default_rng(1)
            )
            return float(res.loss[0])

        o, nw = compare(f"flexformer_decoder {name}", fn, repeats, 2000, steps)
        tot[0] += o
        tot[1] += nw
    print(
        f"{'flexformer_decoder, flex + free':34s} old ~{tot[0]:6.0f} CPU s   new ~{tot[1]:6.0f} CPU s   ratio {tot[0] / tot[1]:5.2f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("dmft_softmax", "logistic_probes", "flexformer_decoder"))
    a = ap.parse_args()
    for name, bench in (
        ("dmft_softmax", dmft_softmax),
        ("logistic_probes", logistic_probes),
        ("flexformer_decoder", flexformer_decoder),
    ):
        if a.only in (None, name):
            bench(a.steps, a.repeats)


if __name__ == "__main__":
    main()
