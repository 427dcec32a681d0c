"""Benchmark: wall time of gd_probe's paper GPT training step on a torch device, alone and beside others.

Plain script, for a machine with a GPU::

    python benchmarks/bench_gpt_step_device.py [--device cuda] [--steps 300] [--processes 16] [--out FILE]
    python benchmarks/bench_gpt_step_device.py --device cpu --thread-scaling 1,2,4 [--steps 20] [--repeats 3]

The step is the one of :mod:`bench_gpt_step` ("new": :meth:`GPTMini.forward_all`, fused Adam, warm-up
and clipping through :func:`iclcore.models.training.train_loop`; d 5, n 20, 6 layers, width 64,
4 heads, batch 64, float32), with the model on ``--device`` and every batch drawn on the CPU and then
moved (as gd_probe's runs do). It reports wall seconds per step (``torch.cuda.synchronize`` before
each clock read) of ``--steps`` steps after 20 warm-up steps

* in this process alone, and
* in each of ``--processes`` spawned processes stepping at the same time on the same device (how
  gd_probe's paper preset runs its 18 trainings when ``workers`` is the number of cores),

and the paper run's 8,192 steps at each rate. Results go to ``--out`` as JSON.

``--thread-scaling 1,2,4`` instead times the step at each torch thread count in alternating blocks in
this process (the speed-up a task of several threads gets, ``map_configs(threads=...)``) and the
largest relative difference of the first 20 losses from the one-thread losses; on the CPU it writes
``benchmarks/results/gpt_step_threads.json`` for the Measurements page.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from iclcore.gd.depth_probe import probe_train_config, sample_probe_tasks  # noqa: E402
from iclcore.models.gpt_mini import GPTMini  # noqa: E402
from iclcore.models.training import train_loop  # noqa: E402

D, N, L, W, H, B = 5, 20, 6, 64, 4, 64
PAPER_STEPS = 8192
WARMUP = 20


def seconds_per_step(device: str, steps: int, seed: int = 1, threads: int = 1) -> float:
    """Wall seconds per training step of the paper GPT on ``device`` with ``threads`` torch threads (after
    ``WARMUP`` steps)."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(seed)
    model = GPTMini(D, N, L, W, H, g).float().to(device)

    def loss(_k: int) -> torch.Tensor:
        t = sample_probe_tasks(B, N, D, gen=g, m=1, dtype=torch.float32)
        X, y, xq, yq = (a.to(device) for a in (t.X, t.y, t.xq[:, 0], t.yq[:, :1]))
        pred = model.forward_all(X, y, xq)
        return 0.5 * ((pred - torch.cat([y, yq], 1)) ** 2).mean()

    def block(n: int) -> float:
        cfg = probe_train_config(steps=n, lr=1e-3, batch=B, warmup=200, fused=True)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        train_loop(list(model.parameters()), loss, cfg)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    block(WARMUP)
    return block(steps)


def thread_scaling(a: argparse.Namespace) -> None:
    """Median wall seconds per step at each thread count, the speed-up over one thread, and the largest
    relative difference of the first losses from the one-thread losses (the rounding the threads change)."""
    import statistics

    counts = [int(t) for t in a.thread_scaling.split(",")]
    times: dict[int, list[float]] = {t: [] for t in counts}
    for _ in range(a.repeats):
        for t in counts:
            times[t].append(seconds_per_step(a.device, a.steps, threads=t))
    med = {t: statistics.median(v) for t, v in times.items()}
    losses = {t: first_losses(a.device, t) for t in counts}
    result = {
        "device": a.device,
        "steps": a.steps,
        "repeats": a.repeats,
        "cores": os.cpu_count(),
        **{f"ms_per_step_{t}_threads": round(1e3 * med[t], 2) for t in counts},
        **{f"speed_up_{t}_threads": round(med[counts[0]] / med[t], 3) for t in counts[1:]},
        **{
            f"first_losses_max_rel_diff_{t}_threads": max(
                abs(x - y) / abs(y) for x, y in zip(losses[t], losses[counts[0]])
            )
            for t in counts[1:]
        },
    }
    print(json.dumps(result, indent=2))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=2)
    if a.device == "cpu":
        from _results import write_result

        write_result(
            "gpt_step_threads",
            {k: v for k, v in result.items() if k != "device"},
            title="One paper GPT training step of gd_probe at 1, 2, ... torch threads (CPU, wall time, same process)",
        )


def first_losses(device: str, threads: int, steps: int = 20) -> list[float]:
    """The first ``steps`` training losses of the paper GPT from seed 1 with ``threads`` torch threads."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    model = GPTMini(D, N, L, W, H, g).float().to(device)
    seen: list[float] = []

    def loss(_k: int) -> torch.Tensor:
        t = sample_probe_tasks(B, N, D, gen=g, m=1, dtype=torch.float32)
        X, y, xq, yq = (a.to(device) for a in (t.X, t.y, t.xq[:, 0], t.yq[:, :1]))
        value = 0.5 * ((model.forward_all(X, y, xq) - torch.cat([y, yq], 1)) ** 2).mean()
        seen.append(float(value.detach()))
        return value

    train_loop(
        list(model.parameters()), loss, probe_train_config(steps=steps, lr=1e-3, batch=B, warmup=200, fused=True)
    )
    return seen


def _worker(args: tuple[str, int, int]) -> float:
    return seconds_per_step(*args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--processes", type=int, default=16)
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--thread-scaling",
        default="",
        help="instead: comma-separated torch thread counts (e.g. 1,2,4), timed in alternating blocks in this process",
    )
    ap.add_argument("--repeats", type=int, default=3, help="alternating blocks per thread count (--thread-scaling)")
    a = ap.parse_args()
    if a.thread_scaling:
        thread_scaling(a)
        return
    alone = seconds_per_step(a.device, a.steps)
    print(f"alone: {1e3 * alone:.2f} ms/step, paper run {PAPER_STEPS * alone:.0f} s", flush=True)
    with mp.get_context("spawn").Pool(a.processes) as pool:
        t0 = time.perf_counter()
        shared = pool.map(_worker, [(a.device, a.steps, s) for s in range(a.processes)])
        wall = time.perf_counter() - t0
    mean = sum(shared) / len(shared)
    print(
        f"{a.processes} processes at once: {1e3 * mean:.2f} ms/step each (max {1e3 * max(shared):.2f}), "
        f"paper run {PAPER_STEPS * mean:.0f} s each; pool wall {wall:.0f} s",
        flush=True,
    )
    result = {
        "device": a.device,
        "device_name": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "steps": a.steps,
        "alone_ms_per_step": round(1e3 * alone, 3),
        "processes": a.processes,
        "shared_ms_per_step_mean": round(1e3 * mean, 3),
        "shared_ms_per_step_max": round(1e3 * max(shared), 3),
        "paper_run_seconds_alone": round(PAPER_STEPS * alone, 1),
        "paper_run_seconds_shared": round(PAPER_STEPS * mean, 1),
    }
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
