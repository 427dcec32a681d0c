"""Benchmark: one training step of gd_probe's paper GPT, the fused-attention step against the explicit one.

Plain script::

    .venv/bin/python benchmarks/bench_gpt_step.py [--steps 10] [--repeats 7] [--compile]

The step is that of a paper-preset GPT training of ``gd_probe`` (:class:`iclcore.models.gpt_mini.GPTMini`,
d 5, n 20 so 42 tokens, 6 layers, width 64, 4 heads, batch 64, float32, all-position loss; Adam with
warm-up and gradient clipping through :func:`iclcore.models.training.train_loop`: fresh batch,
forward, backward, clipping, update; the new step's Adam is the fused kernel, as gd_probe's GPT runs
use it). "old" is the forward through the fused ``nn.MultiheadAttention``
call (:func:`iclcore.models._reference.gpt_hidden`, the code before the change), "new" the package's
:meth:`GPTMini.forward_all` (explicit masked-matmul attention; the last layer computes only the rows
that are read out). Both train from the same initialisation on
the same batches, in this process, on one torch thread, in alternating blocks of ``--steps`` steps
(the order flips every repeat); times are CPU seconds (``time.process_time``), steadier than wall
time on a shared machine. The script prints the median and the spread (min-max) of each, the ratio of
the medians and the median of the per-repeat ratios, checks that the first losses agree to float32
rounding, and says whether the 1.25x goal is met or by how much it is missed.

Achieved GFLOP/s counts ``3 x`` the forward's matrix-product FLOPs (``bench_roofline.gpt_forward_flops``)
for both steps (the new one skips the rows of the last layer that are not read out, so its figure is
the rate at which it does the old step's work),
against the GEMM peak measured here: ``torch.matmul`` of a ``2688 x 64`` by ``64 x 256`` float32 matrix
(the MLP's first product: 2,688 = batch x tokens) and of two ``1024 x 1024`` matrices, one thread,
median of repeats. The BLAS kernel actually called is shown by running one such product in a child
process under ``MKL_VERBOSE=1`` / ``ONEDNN_VERBOSE=1`` (the lines it prints name the routine).

``--compile`` also times the new step with its loss under ``torch.compile`` (inductor), with the
compile time, and prints whether it pays over the 8,192 steps of a paper run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _results import write_result  # noqa: E402
from bench_roofline import gpt_forward_flops  # noqa: E402

from iclcore.gd.depth_probe import probe_train_config, sample_probe_tasks  # noqa: E402
from iclcore.models import _reference as ref  # noqa: E402
from iclcore.models.gpt_mini import GPTMini  # noqa: E402
from iclcore.models.training import TrainConfig, train_loop  # noqa: E402

D, N, L, W, H, B = 5, 20, 6, 64, 4, 64
PAPER_STEPS = 8192
GOAL = 1.25


def paper_gpt(
    forward: str, steps: int, compiled: bool = False
) -> tuple[list, Callable[[int], torch.Tensor], TrainConfig]:
    """Parameters, batch loss and config of the paper GPT training with ``forward`` in {"old", "new"}."""
    g = torch.Generator().manual_seed(1)
    model = GPTMini(D, N, L, W, H, g).float()

    def loss_of(X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, yq: torch.Tensor) -> torch.Tensor:
        if forward == "old":
            pred = model.lens(ref.gpt_hidden(model, X, y, xq)[0][-1])[:, 1::2]
        else:
            pred = model.forward_all(X, y, xq)
        return 0.5 * ((pred - torch.cat([y, yq], 1)) ** 2).mean()

    f = torch.compile(loss_of) if compiled else loss_of

    def loss(_k: int) -> torch.Tensor:
        t = sample_probe_tasks(B, N, D, gen=g, m=1, dtype=torch.float32)
        return f(t.X, t.y, t.xq[:, 0], t.yq[:, :1])

    cfg = probe_train_config(steps=steps, lr=1e-3, batch=B, warmup=200, fused=forward == "new")
    return list(model.parameters()), loss, cfg


def block_seconds(run: tuple[list, Callable[[int], torch.Tensor], TrainConfig]) -> float:
    """CPU seconds per step of one block of ``cfg.steps`` steps."""
    params, loss, cfg = run
    t0 = time.process_time()
    train_loop(params, loss, cfg)
    return (time.process_time() - t0) / cfg.steps


def gemm_gflops(m: int, k: int, n: int, repeats: int) -> float:
    """Median GFLOP/s (CPU time) of an ``m x k`` by ``k x n`` float32 ``torch.matmul`` on one thread."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    reps = max(1, int(2e8 / (2 * m * k * n)))
    a @ b
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(reps):
            a @ b
        times.append((time.process_time() - t0) / reps)
    return 2 * m * k * n / statistics.median(times) / 1e9


def blas_dispatch() -> list[str]:
    """The verbose lines of MKL / oneDNN for one ``linear`` of the MLP's shape, run in a child process."""
    code = (
        "import torch; torch.set_num_threads(1); "
        "torch.nn.functional.linear(torch.randn(2688, 64), torch.randn(256, 64), torch.randn(256))"
    )
    env = {**os.environ, "MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    lines = [s for s in (out.stdout + out.stderr).splitlines() if "VERBOSE" in s or s.startswith("onednn")]
    return lines or ["(no verbose output: neither MKL nor oneDNN reported a call)"]


def spread(xs: list[float]) -> str:
    return (
        f"median {1e3 * statistics.median(xs):7.2f} ms  (min {1e3 * min(xs):.2f}, max {1e3 * max(xs):.2f}, n {len(xs)})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="steps per timed block")
    ap.add_argument("--repeats", type=int, default=7, help="alternating blocks of each step")
    ap.add_argument("--compile", action="store_true", help="also time the new step under torch.compile")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, 1 thread")
    cfg_lines = [s.strip() for s in torch.__config__.show().splitlines() if "BLAS_INFO" in s or "Math Kernel" in s]
    for s in cfg_lines:
        print("  " + (s if len(s) < 120 else s[: s.find(",", s.find("BLAS_INFO"))] if "BLAS_INFO" in s else s[:120]))
    print("BLAS kernel dispatched for the MLP product (child process, verbose):")
    for s in blas_dispatch():
        print("  " + s[:160])

    flops = 3 * gpt_forward_flops(B, N, D, L, W)
    runs = {k: paper_gpt(k, args.steps) for k in ("old", "new")}
    first = {k: train_loop(*paper_gpt(k, 3)).loss for k in ("old", "new")}
    rel = float(np.max(np.abs(first["old"] - first["new"]) / np.abs(first["old"])))
    print(f"\nfirst 3 losses, old {first['old']}, new {first['new']}: max relative difference {rel:.2e}"
          f" ({rel / np.finfo(np.float32).eps:.1f} float32 ulp)")  # fmt: skip
    for r in runs.values():  # warm-up
        block_seconds(r)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for i in range(args.repeats):
        for k in ("old", "new") if i % 2 == 0 else ("new", "old"):
            times[k].append(block_seconds(runs[k]))
    peak_mlp = gemm_gflops(B * (2 * N + 2), W, 4 * W, args.repeats)
    peak_sq = gemm_gflops(1024, 1024, 1024, args.repeats)

    print(f"\npaper GPT step (d {D}, n {N}: {2 * N + 2} tokens, L {L}, W {W}, {H} heads, B {B}, float32):"
          f" {flops / 1e9:.2f} GFLOP/step counted")  # fmt: skip
    for k, label in (("old", "old (fused nn.MultiheadAttention)"), ("new", "new (explicit masked matmul)")):
        rate = flops / statistics.median(times[k]) / 1e9
        print(f"  {label:36s} {spread(times[k])}  {rate:6.1f} GFLOP/s = {rate / peak_mlp:5.1%} of the GEMM peak")
    print(
        f"  GEMM peak, 1 thread: {B * (2 * N + 2)} x {W} x {4 * W} {peak_mlp:6.1f} GFLOP/s; 1024^3 {peak_sq:6.1f} GFLOP/s"
    )
    ratio = statistics.median(times["old"]) / statistics.median(times["new"])
    pairs = statistics.median(o / n for o, n in zip(times["old"], times["new"]))
    ratios = [o / n for o, n in zip(times["old"], times["new"])]
    print(f"\nspeed-up old/new: {ratio:.3f}x (ratio of medians); {pairs:.3f}x (median of per-repeat ratios,"
          f" min {min(ratios):.3f}, max {max(ratios):.3f})")  # fmt: skip
    if ratio >= GOAL:
        print(f"goal >= {GOAL}x: MET")
    else:
        print(f"goal >= {GOAL}x: NOT met, {GOAL / ratio:.3f}x short (the new step would need to be "
              f"{1e3 * (statistics.median(times['new']) - statistics.median(times['old']) / GOAL):.1f} ms faster)")  # fmt: skip

    new_rate = flops / statistics.median(times["new"]) / 1e9
    write_result(
        "gpt_step",
        {
            "old step, median (ms)": round(1e3 * statistics.median(times["old"]), 2),
            "new step, median (ms)": round(1e3 * statistics.median(times["new"]), 2),
            "speed-up old/new (ratio of medians)": round(ratio, 3),
            "speed-up, smallest per-repeat ratio": round(min(ratios), 3),
            "new step (GFLOP/s)": round(new_rate, 1),
            "share of the 1-thread GEMM peak": round(new_rate / peak_mlp, 3),
            "GEMM peak, 1 thread (GFLOP/s)": round(peak_mlp, 1),
            "first losses, max relative difference": float(f"{rel:.3g}"),
            "repeats": args.repeats,
        },
        title="One paper-size GPT training step of gd_probe (1 thread, float32), old against new in one process",
        goals={"speed-up old/new (ratio of medians)": f">= {GOAL}"},
    )

    if args.compile:
        t0, w0 = time.process_time(), time.perf_counter()
        comp = paper_gpt("new", args.steps, compiled=True)
        train_loop(comp[0], comp[1], replace(comp[2], steps=2))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        ct, nt = [], []
        for _ in range(args.repeats):
            ct.append(block_seconds(comp))
            nt.append(block_seconds(runs["new"]))
        saved = PAPER_STEPS * (statistics.median(nt) - statistics.median(ct))
        print(f"\ntorch.compile of the new step's loss: compile {cpu:.1f} s CPU in this process, {wall:.1f} s wall")
        print(
            f"  compiled {spread(ct)};  eager new {spread(nt)}; ratio {statistics.median(nt) / statistics.median(ct):.3f}x"
        )
        print(f"  over {PAPER_STEPS:,} paper steps it saves {saved:.0f} s CPU against {wall:.0f} s wall of compiling:"
              f" {'pays' if saved > wall else 'does not pay'}")  # fmt: skip


if __name__ == "__main__":
    main()
