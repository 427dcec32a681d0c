"""Validate ``icl-book plan`` against a measured run: the prediction is written before the run starts.

Plain script::

    .venv/bin/python benchmarks/validate_plan.py --name NAME [--preset quick] [--workers 2]
        [--threads-per-worker 1] NOTEBOOK [NOTEBOOK ...]

1. predicts the wall time of executing the notebooks on a local Dask cluster of ``--workers`` workers of
   ``--threads-per-worker`` threads (:func:`iclbook.plan.load_tasks` and :func:`iclbook.plan.simulate`, from
   the durations in this machine's store or the committed hint) and writes the prediction, with the time
   it was made, to ``benchmarks/results/plan_validation_NAME.json`` before anything runs;
2. runs ``icl-book run NOTEBOOKS --preset P --force --scheduler local:NxC`` and measures its wall time
   (the cluster's start included, as a reader would see it);
3. rewrites the file with the measured time and the relative error ``(predicted - measured) / measured``
   (the goal is within 25 %).

The plan models a Dask cluster, where a notebook's inner tasks (``map_configs``) spread over the workers;
a local ``-j`` run keeps them inside the notebook's process, so it is not what the plan predicts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from _results import write_result

from iclbook.plan import load_tasks, simulate

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.25


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--name", required=True, help="names the result file plan_validation_NAME.json")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads-per-worker", type=int, default=1)
    a = ap.parse_args()
    tasks, missing = load_tasks(ROOT, a.preset, a.notebooks)
    if missing:
        print(f"no recorded time for {', '.join(missing)}: run them once first", file=sys.stderr)
        return 2
    plan = simulate(tasks, a.workers, a.threads_per_worker)
    shape = f"local:{a.workers}" + (f"x{a.threads_per_worker}" if a.threads_per_worker > 1 else "")
    title = f"icl-book plan against a measured run: {len(a.notebooks)} notebooks at {a.preset} on {shape}"
    values: dict[str, float | str] = {
        "notebooks": " ".join(a.notebooks),
        "predicted wall (s)": round(plan.wall, 1),
        "predicted critical path (s)": round(plan.critical, 1),
        "prediction written (UTC)": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    name = f"plan_validation_{a.name}"
    write_result(name, values, title=title)
    print(f"predicted {plan.wall:.0f} s (critical path {plan.critical:.0f} s); running on {shape} ...", flush=True)
    cmd = [sys.executable, "-m", "iclbook.cli", "run", *a.notebooks, "--preset", a.preset, "--force"]
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, "--scheduler", shape], cwd=ROOT)
    measured = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"the run failed (exit {proc.returncode}); nothing measured", file=sys.stderr)
        return proc.returncode
    error = (plan.wall - measured) / measured
    values |= {"measured wall (s)": round(measured, 1), "relative error": round(error, 3)}
    write_result(name, values, title=title, goals={"relative error": f"within +-{GOAL:.0%}"})
    print(f"measured {measured:.0f} s; relative error {error:+.1%} (goal within +-{GOAL:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
