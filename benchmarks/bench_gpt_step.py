"""Benchmark: one training step of gd_probe's paper GPT, the fused-attention step against the explicit one.

Plain script::

    .venv/bin/python benchmarks/bench_gpt_step.py [--steps 10] [--repeats 7] [--no-compile]

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

"compiled" (on by default; ``--no-compile`` leaves it out) is the new step with its loss under
``torch.compile`` (inductor), as gd_probe runs it with ``-p gpt_compile true``: its losses equal the
eager ones to float32 rounding, not bit for bit. The script prints the compile time (cold: a fresh inductor cache), the speed-up of
each against "old", and whether compiling pays over the 8,192 steps of a paper run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
# compile cold, as the first compiled run on a machine does (inductor caches its kernels on disk)
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench-gpt-inductor-"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _results import write_result  # noqa: E402
from bench_roofline import gpt_forward_flops  # noqa: E402

from iclcore.gd.depth_probe import (  # noqa: E402
    ProbeTasks,
    compiled_gpt_loss,
    gpt_batch_loss,
    probe_train_config,
    sample_probe_tasks,
)
from iclcore.models import _reference as ref  # noqa: E402
from iclcore.models.gpt_mini import GPTMini  # noqa: E402
from iclcore.models.training import TrainConfig, train_loop  # noqa: E402

D, N, L, W, H, B = 5, 20, 6, 64, 4, 64
PAPER_STEPS = 8192
GOAL = 1.25


def paper_gpt(forward: str, steps: int) -> tuple[list, Callable[[int], torch.Tensor], TrainConfig]:
    """Parameters, batch loss and config of the paper GPT training with ``forward`` in {"old", "new",
    "compiled"}: "new" is gd_probe's loss (:func:`iclcore.gd.depth_probe.gpt_batch_loss`), "compiled"
    the same under ``torch.compile`` as gd_probe's ``gpt_compile`` runs it
    (:func:`iclcore.gd.depth_probe.compiled_gpt_loss`; it compiles at its first call)."""
    g = torch.Generator().manual_seed(1)
    model = GPTMini(D, N, L, W, H, g).float()

    def old_loss(t: ProbeTasks) -> torch.Tensor:
        pred = model.lens(ref.gpt_hidden(model, t.X, t.y, t.xq[:, 0])[0][-1])[:, 1::2]
        return 0.5 * ((pred - torch.cat([t.y, t.yq[:, :1]], 1)) ** 2).mean()

    if forward == "old":
        f = old_loss
    elif forward == "compiled":
        f = compiled_gpt_loss(model, True)
    else:
        f = lambda t: gpt_batch_loss(model, t.X, t.y, t.xq, t.yq, True)  # noqa: E731

    def loss(_k: int) -> torch.Tensor:
        return f(sample_probe_tasks(B, N, D, gen=g, m=1, dtype=torch.float32))

    cfg = probe_train_config(steps=steps, lr=1e-3, batch=B, warmup=200, fused=forward != "old")
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
    ap.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the step under torch.compile (gd_probe's gpt_compile; default: yes)",
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, 1 thread")
    cfg_lines = [s.strip() for s in torch.__config__.show().splitlines() if "BLAS_INFO" in s or "Math Kernel" in s]
    for s in cfg_lines:
        print("  " + (s if len(s) < 120 else s[: s.find(",", s.find("BLAS_INFO"))] if "BLAS_INFO" in s else s[:120]))
    print("BLAS kernel dispatched for the MLP product (child process, verbose):")
    for s in blas_dispatch():
        print("  " + s[:160])

    kinds = ("old", "new", "compiled") if args.compile else ("old", "new")
    flops = 3 * gpt_forward_flops(B, N, D, L, W)
    first = {k: train_loop(*paper_gpt(k, 3)).loss for k in ("old", "new")}
    rel = float(np.max(np.abs(first["old"] - first["new"]) / np.abs(first["old"])))
    print(f"\nfirst 3 losses, old {first['old']}, new {first['new']}: max relative difference {rel:.2e}"
          f" ({rel / np.finfo(np.float32).eps:.1f} float32 ulp)")  # fmt: skip
    runs = {k: paper_gpt(k, args.steps) for k in kinds}
    if args.compile:
        w0 = time.perf_counter()
        first["compiled"] = train_loop(*paper_gpt("compiled", 3)).loss  # compiles here
        compile_wall = time.perf_counter() - w0
        crel = float(np.max(np.abs(first["compiled"] - first["new"]) / np.abs(first["new"])))
        print(f"first 3 losses, compiled {first['compiled']}: max relative difference to new {crel:.2e}"
              f" ({crel / np.finfo(np.float32).eps:.1f} float32 ulp); compiling took {compile_wall:.1f} s wall")  # fmt: skip
    for r in runs.values():  # warm-up (the compiled run compiles again: its own model and closure)
        block_seconds(r)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(args.repeats):
        for k in kinds if i % 2 == 0 else kinds[::-1]:
            times[k].append(block_seconds(runs[k]))
    peak_mlp = gemm_gflops(B * (2 * N + 2), W, 4 * W, args.repeats)
    peak_sq = gemm_gflops(1024, 1024, 1024, args.repeats)

    print(f"\npaper GPT step (d {D}, n {N}: {2 * N + 2} tokens, L {L}, W {W}, {H} heads, B {B}, float32):"
          f" {flops / 1e9:.2f} GFLOP/step counted")  # fmt: skip
    labels = {
        "old": "old (fused nn.MultiheadAttention)",
        "new": "new (explicit masked matmul)",
        "compiled": "new under torch.compile",
    }
    for k in kinds:
        rate = flops / statistics.median(times[k]) / 1e9
        print(f"  {labels[k]:36s} {spread(times[k])}  {rate:6.1f} GFLOP/s = {rate / peak_mlp:5.1%} of the GEMM peak")
    print(
        f"  GEMM peak, 1 thread: {B * (2 * N + 2)} x {W} x {4 * W} {peak_mlp:6.1f} GFLOP/s; 1024^3 {peak_sq:6.1f} GFLOP/s"
    )
    values: dict[str, object] = {}
    for k in kinds[1:]:
        ratio = statistics.median(times["old"]) / statistics.median(times[k])
        ratios = [o / n for o, n in zip(times["old"], times[k])]
        what = "bit-identical losses" if k == "new" else "losses to float32 rounding, opt-in gpt_compile"
        print(f"\nspeed-up old/{k} ({what}): {ratio:.3f}x (ratio of medians); "
              f"{statistics.median(ratios):.3f}x (median of per-repeat ratios, min {min(ratios):.3f}, max {max(ratios):.3f})")  # fmt: skip
        if ratio >= GOAL:
            print(f"  goal >= {GOAL}x: MET")
        else:
            short_ms = 1e3 * (statistics.median(times[k]) - statistics.median(times["old"]) / GOAL)
            print(
                f"  goal >= {GOAL}x: NOT met, {GOAL / ratio:.3f}x short (the step would need to be {short_ms:.1f} ms faster)"
            )
        rate = flops / statistics.median(times[k]) / 1e9
        values |= {
            f"{k} step, median (ms)": round(1e3 * statistics.median(times[k]), 2),
            f"speed-up old/{k} (ratio of medians)": round(ratio, 3),
            f"speed-up old/{k}, smallest per-repeat ratio": round(min(ratios), 3),
            f"{k} step (GFLOP/s)": round(rate, 1),
            f"{k} step, share of the 1-thread GEMM peak": round(rate / peak_mlp, 3),
        }
    if args.compile:
        saved = PAPER_STEPS * (statistics.median(times["new"]) - statistics.median(times["compiled"]))
        print(f"\ncompiled against eager: over {PAPER_STEPS:,} paper steps it saves {saved:.0f} s CPU against "
              f"{compile_wall:.0f} s wall of compiling: {'pays' if saved > compile_wall else 'does not pay'}")  # fmt: skip
        values |= {
            "compiling (s wall)": round(compile_wall, 1),
            "first losses compiled vs new, max relative difference": float(f"{crel:.3g}"),
        }
    write_result(
        "gpt_step",
        {
            "old step, median (ms)": round(1e3 * statistics.median(times["old"]), 2),
            **values,
            "GEMM peak, 1 thread (GFLOP/s)": round(peak_mlp, 1),
            "first losses, max relative difference": float(f"{rel:.3g}"),
            "repeats": args.repeats,
        },
        title="One paper-size GPT training step of gd_probe (1 thread, float32): old, new and compiled in one process",
        goals={
            "speed-up old/new (ratio of medians)": f">= {GOAL} (bit-identical losses)",
            "speed-up old/compiled (ratio of medians)": f">= {GOAL} (losses to float32 rounding)",
        },
    )


if __name__ == "__main__":
    main()
