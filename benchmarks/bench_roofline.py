"""Benchmark: achieved GFLOP/s of the book's torch trainings against this machine's GEMM peak.

Plain script::

    .venv/bin/python benchmarks/bench_roofline.py [--repeats 3] [--size 1536]

The trainings whose paper presets take the CPU-hours of a paper build are ``gd_probe`` (9 untied-LSA
and 9 GPT-miniature models, 8,192 Adam steps each) and ``dmft_softmax`` (8 softmax-attention models).
Each is timed here at its paper size for a few real training steps (:func:`iclcore.models.training.
train_loop`: fresh batch, forward, backward, clipping, Adam; one torch thread, as every task of a
build runs), and its FLOPs per step are counted analytically:

    FLOPs/step = 3 × (forward matrix-product FLOPs),

a product of an ``a × b`` by a ``b × c`` matrix counting ``2abc``, and the backward pass two products
of the same size per forward product (gradients with respect to both factors). Elementwise work
(softmax, GELU, LayerNorm, residual adds), the batch sampling and Adam's update are not counted:
they are in the measured time but not in the FLOPs, so the ratio below is the share of the step's time
that GEMMs at peak speed would need. ``torch.utils.flop_counter`` is printed beside the count as a
cross-check. The forward counts, per batch element:

* untied LSA (``iclcore.models.lsa.UntiedLSA``; ``D = d + 1`` token width, ``n`` context pairs,
  ``m`` queries, ``L`` layers), per layer ``l``: the moment ``S = Z^T Z`` (``2 n D^2``), the map
  ``W_PV S W_KQ`` (``4 D^3``), the query update (``2 m D^2``) and, for ``l < L - 1``, the context
  update (``2 n D^2``);
* GPT miniature (``iclcore.models.gpt_mini.GPTMini``; ``T = 2n + 2`` tokens, width ``W``, ``L``
  layers, MLP ratio 4): per layer ``24 T W^2`` (Q, K, V, output projections ``8 T W^2``, MLP
  ``16 T W^2``) plus ``4 T^2 W`` (scores and weighted values over all ``T`` positions; the causal
  mask saves nothing in ``nn.MultiheadAttention``); embedding ``2 T (d+1) W`` and head ``2 T W``;
* softmax attention (``iclcore.models.attention.SoftmaxAttention``; ``P`` labelled tokens, ``K``
  queries, width ``n``, ``N = P + K`` tokens in every layer but the last, which updates the ``K``
  queries only): per layer on ``R`` updated rows, ``2 R n^2`` (rows times ``W_q^T W_k``), ``2 P n^2``
  (values), ``4 R P n`` (scores and weighted values), with MLP blocks ``16 R n^2``; embedding
  ``2 N D n``; plus, once per step and not per element, ``2 n^3`` per layer for ``W_q^T W_k``.

The peak is ``torch.matmul`` of two square ``size × size`` matrices in float32 and float64, in this
process, on 1 thread (CPU time) and on all cores (wall time), best of ``repeats``; the trainings
are timed in CPU time on 1 thread, best of ``repeats``. The ratio printed is achieved GFLOP/s over
the 1-thread peak of the model's dtype (the LSA trains in float64, the others in float32).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from iclcore.gd.depth_probe import probe_train_config, sample_probe_tasks
from iclcore.models.attention import SoftmaxAttention, sample_iso_contexts
from iclcore.models.gpt_mini import GPTMini
from iclcore.models.lsa import UntiedLSA
from iclcore.models.training import TrainConfig, train_loop


def gemm_gflops(size: int, dtype: torch.dtype, threads: int, repeats: int) -> float:
    """Best GFLOP/s of ``A @ B`` (``size × size``) on ``threads`` torch threads (CPU time if 1 thread, else wall)."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g, dtype=dtype)
    b = torch.randn(size, size, generator=g, dtype=dtype)
    clock = time.process_time if threads == 1 else time.perf_counter
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        a @ b
        best = min(best, clock() - t0)
    torch.set_num_threads(1)
    return 2 * size**3 / best / 1e9


@dataclass(frozen=True)
class Training:
    """One training of the book at its paper preset: name, dtype, forward FLOPs per step, a step function."""

    name: str
    dtype: torch.dtype
    forward_flops: float
    make: Callable[[], tuple[list[torch.nn.Parameter], Callable[[int], torch.Tensor], TrainConfig]]
    steps: int
    paper_steps: int = 0  # the paper preset's training steps (for the time floor of one training)


def lsa_forward_flops(B: int, n: int, d: int, L: int, m: int = 1) -> float:
    D = d + 1
    per = [2 * n * D**2 + 4 * D**3 + 2 * m * D**2 + (2 * n * D**2 if l < L - 1 else 0) for l in range(L)]
    return float(B * sum(per))


def gpt_forward_flops(B: int, n: int, d: int, L: int, W: int) -> float:
    T = 2 * n + 2
    return float(B * (L * (24 * T * W**2 + 4 * T**2 * W) + 2 * T * (d + 1) * W + 2 * T * W))


def softmax_forward_flops(B: int, P: int, K: int, D: int, n: int, L: int, mlp: bool) -> float:
    N = P + K
    total = 2 * N * D * n + 2 * K * n  # embedding, readout
    for l in range(L):
        R = K if l == L - 1 else N
        total += 2 * R * n**2 + 2 * P * n**2 + 4 * R * P * n + (16 * R * n**2 if mlp else 0)
    return float(B * total + L * 2 * n**3)


def gd_probe_lsa() -> Training:
    """``gd_probe`` paper preset, LSA: d 5, n 20, 4 layers, batch 64, float64, Adam with warm-up and clipping."""
    d, n, L, B = 5, 20, 4, 64

    def make():
        g = torch.Generator().manual_seed(1)
        model = UntiedLSA(d, L, g)

        def loss(_k: int) -> torch.Tensor:
            t = sample_probe_tasks(B, n, d, gen=g, m=1, dtype=torch.float64)
            return 0.5 * ((model(t.X, t.y, t.xq) - t.yq) ** 2).mean()

        return list(model.parameters()), loss, probe_train_config(steps=0, lr=2e-4, batch=B, warmup=200)

    return Training("gd_probe LSA (d 5, n 20, L 4, B 64, f64)", torch.float64, lsa_forward_flops(B, n, d, L), make, 400)


def gd_probe_gpt() -> Training:
    """``gd_probe`` paper preset, GPT: d 5, n 20, 6 layers, width 64, 4 heads, batch 64, float32, all-position loss."""
    d, n, L, W, H, B = 5, 20, 6, 64, 4, 64

    def make():
        g = torch.Generator().manual_seed(1)
        model = GPTMini(d, n, L, W, H, g).float()

        def loss(_k: int) -> torch.Tensor:
            t = sample_probe_tasks(B, n, d, gen=g, m=1, dtype=torch.float32)
            pred = model.forward_all(t.X, t.y, t.xq[:, 0])
            return 0.5 * ((pred - torch.cat([t.y, t.yq[:, :1]], 1)) ** 2).mean()

        return list(model.parameters()), loss, probe_train_config(steps=0, lr=1e-3, batch=B, warmup=200)

    return Training(
        "gd_probe GPT (n 20, L 6, W 64, B 64, f32)",
        torch.float32,
        gpt_forward_flops(B, n, d, L, W),
        make,
        20,
        paper_steps=8192,
    )


def dmft_softmax(L: int, mlp: bool) -> Training:
    """``dmft_softmax`` paper preset: D 16, P 32, K 16, width 64, batch 128, float32, Adam."""
    D, P, K, n, B = 16, 32, 16, 64, 128

    def make():
        g = torch.Generator().manual_seed(1)
        model = SoftmaxAttention(D, n, L, g, mlp=mlp)

        def loss(_k: int) -> torch.Tensor:
            c = sample_iso_contexts(B, P, K, D=D, gen=g, dtype=torch.float32)
            return ((model(c.X, c.y, c.Xs) - c.ys) ** 2).mean()

        return list(model.parameters()), loss, TrainConfig(steps=0, lr=2e-3, optimizer="adam", nonfinite="raise")

    name = f"dmft_softmax L {L}{' + MLP' if mlp else ''} (n 64, B 128, f32)"
    return Training(name, torch.float32, softmax_forward_flops(B, P, K, D, n, L, mlp), make, 60 // L)


def counted_flops(t: Training) -> float:
    """FLOPs of one forward and backward pass as ``torch.utils.flop_counter`` counts them (a cross-check)."""
    from torch.utils.flop_counter import FlopCounterMode

    _, loss, _ = t.make()
    with FlopCounterMode(display=False) as counter:
        loss(0).backward()
    return float(counter.get_total_flops())


def seconds_per_step(t: Training, repeats: int) -> float:
    """Best CPU seconds per training step (one torch thread) over ``repeats`` blocks of ``t.steps`` steps."""
    torch.set_num_threads(1)
    params, loss, cfg = t.make()
    train_loop(params, loss, replace(cfg, steps=3))  # warm-up
    run = replace(cfg, steps=t.steps)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        train_loop(params, loss, run)
        best = min(best, (time.process_time() - t0) / t.steps)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=1536, help="side of the square GEMM of the peak")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    peak = {}
    print(f"torch {torch.__version__}, {cores} core(s); GEMM peak of torch.matmul {args.size} x {args.size}:")
    for dtype in (torch.float32, torch.float64):
        one = gemm_gflops(args.size, dtype, 1, args.repeats)
        every = gemm_gflops(args.size, dtype, cores, args.repeats)
        peak[dtype] = one
        print(f"  {str(dtype)[6:]:8s} 1 thread {one:7.1f} GFLOP/s   {cores} threads {every:7.1f} GFLOP/s")
    print()
    head = f"{'training (paper preset)':44s} {'GFLOP/step':>10s} {'counted':>8s} {'ms/step':>8s} {'GFLOP/s':>8s} {'of peak':>8s}"
    print(head)
    trainings = [gd_probe_lsa(), gd_probe_gpt(), *(dmft_softmax(L, mlp) for mlp in (False, True) for L in (1, 8))]
    floors = []
    for t in trainings:
        flops = 3 * t.forward_flops
        s = seconds_per_step(t, args.repeats)
        rate = flops / s / 1e9
        counted = counted_flops(t) / 1e9
        print(f"{t.name:44s} {flops / 1e9:10.4f} {counted:8.4f} {1e3 * s:8.2f} {rate:8.2f} {rate / peak[t.dtype]:8.1%}")
        if t.paper_steps:
            floors.append((t, t.paper_steps * flops / (peak[t.dtype] * 1e9), t.paper_steps * s))
    for t, floor, at_rate in floors:
        print(
            f"\n{t.name}, {t.paper_steps:,} sequential steps (one inner task of the paper build): {at_rate:.0f} s at"
            f" the measured rate; {floor:.0f} s ({floor / 60:.1f} min) even at 100 % of the 1-thread GEMM peak."
            "\nNo schedule on single-thread workers of this machine has a shorter critical path than that floor."
        )
    print(
        "\nGFLOP/step: the analytic count (module docstring); counted: torch.utils.flop_counter on one forward and"
        "\nbackward pass (it skips products for inputs that need no gradient, and the CPU attention kernel of the"
        "\nGPT, 4 T^2 W per layer). of peak: achieved GFLOP/s over the 1-thread GEMM peak of the same dtype"
        "\n(CPU time, best of repeats). The all-core peak is wall time: on a busy machine it is not a peak."
    )


if __name__ == "__main__":
    main()
