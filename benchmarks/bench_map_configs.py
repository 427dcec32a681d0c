"""Benchmark: overhead of the local executor of ``iclcore.parallel.map_configs`` over running the same tasks serially.

Plain script::

    .venv/bin/python benchmarks/bench_map_configs.py [--tasks 4] [--workers 2] [--steps 300]

The tasks are ``dmft_softmax`` models at the paper size (``SoftmaxRun``: D = 16, n = 64, B = 128,
P = 32, K = 16, L = 2, no MLP; ``--steps`` Adam steps instead of 2,000). Both ways run them on one
thread each: "serial" calls them one after another in this process (``workers=1``), "pool" in
``--workers`` spawned processes (``workers > 1``). Measured in CPU seconds (this process's
``time.process_time`` plus, for the pool, the reaped children's ``getrusage``), which on a loaded
machine is steadier than wall time; the ratio pool / serial is the executor's overhead (spawning
the processes, importing numpy and torch in each, pickling configurations and results). The
overhead is a fixed cost per process, so the ratio falls as the tasks get longer; the script also
prints that fixed cost and the ratio it implies for ``gd_probe``'s paper tasks. The results of
both ways are checked bit for bit.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from iclcore.models.attention import SoftmaxRun, softmax_run  # noqa: E402
from iclcore.parallel import map_configs  # noqa: E402

torch.set_num_threads(1)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    runs = [SoftmaxRun(16, 32, 16, 64, 2, False, 128, 2e-3, args.steps, 1000, seed) for seed in range(args.tasks)]

    t, w = time.process_time(), time.perf_counter()
    serial = map_configs(softmax_run, runs, workers=1)
    serial_cpu, serial_wall = time.process_time() - t, time.perf_counter() - w

    t, c, w = time.process_time(), children_cpu(), time.perf_counter()
    pooled = map_configs(softmax_run, runs, workers=args.workers)
    pool_cpu = (time.process_time() - t) + (children_cpu() - c)
    pool_wall = time.perf_counter() - w

    same = all(a.tobytes() == b.tobytes() for s, p in zip(serial, pooled) for a, b in zip(s, p))
    ratio = pool_cpu / serial_cpu
    fixed = max(0.0, pool_cpu - serial_cpu) / min(args.workers, args.tasks)
    print(
        f"{args.tasks} tasks of {serial_cpu / args.tasks:.1f} CPU s each, {args.workers} processes; results identical: {same}"
    )
    print(
        f"serial: {serial_cpu:.1f} CPU s ({serial_wall:.1f} s wall); pool: {pool_cpu:.1f} CPU s ({pool_wall:.1f} s wall)"
    )
    print(f"CPU ratio pool / serial: {ratio:.3f}  (overhead {100 * (ratio - 1):+.1f} %; goal <= +5 %)")
    print(f"fixed cost per process: {fixed:.1f} CPU s")
    gd_cpu = 10931.0  # gd_probe paper preset, 18 models (notebooks/seconds.json)
    for procs in (2, 16):
        print(
            f"  implied overhead for gd_probe's paper tasks on {procs} processes: {100 * fixed * procs / gd_cpu:.2f} %"
        )
    load = os.getloadavg()[0]
    print(f"load average (1 min) {load:.1f} on {os.cpu_count()} cores: wall times mean little above ~{os.cpu_count()}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
