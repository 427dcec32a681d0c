"""Benchmark: the planned wall time of a paper build against the goals of a paper build.

Plain script::

    .venv/bin/python benchmarks/plan_paper_build.py [--preset paper] [--workers 2 16 64]

For each number of single-thread workers, :func:`iclbook.plan.simulate` (list scheduling of the
notebooks' serial parts and their inner tasks in batches; see :mod:`iclbook.plan`) on the durations
``icl-book plan`` uses: the store's newest runs of the preset, else the committed hint
``notebooks/seconds.json`` (measured paper runs, with the machine under ``"measured"``). Printed: the
predicted wall time and critical path of the whole book and of the book without ``gd_probe`` (whose
GPT models are the longest single tasks), each against the goals (16 workers: whole book <= 20 min,
critical path <= 12 min; 64 workers: <= 10 min). Nothing is executed; it takes a second.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from iclbook.plan import load_tasks, simulate

ROOT = Path(__file__).resolve().parents[1]
GOALS = {16: 20.0, 64: 10.0}  # minutes, whole book
CRITICAL_GOAL = 12.0  # minutes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 16, 64])
    args = parser.parse_args()
    tasks, missing = load_tasks(ROOT, args.preset)
    sources = sorted({t.source for t in tasks})
    print(
        f"preset {args.preset}: {len({t.notebook for t in tasks})} notebooks, {len(tasks)} tasks; durations from {', '.join(sources)}"
    )
    if missing:
        print(f"no duration (left out): {', '.join(missing)}")
    for label, subset in (("whole book", tasks), ("without gd_probe", [t for t in tasks if t.notebook != "gd_probe"])):
        print(f"\n{label}: {sum(t.seconds for t in subset) / 3600:.2f} CPU-hours")
        for n in args.workers:
            plan = simulate(subset, n)
            line = f"  {n:>3} workers: {plan.wall / 60:7.1f} min, critical path {plan.critical / 60:5.1f} min ({plan.critical_notebook})"
            if label == "whole book" and n in GOALS:
                line += f"  goal <= {GOALS[n]:.0f} min: {'met' if plan.wall / 60 <= GOALS[n] else 'not met'}"
            print(line)
    critical = simulate(tasks, 1).critical / 60  # the longest notebook chain: the same on any number of workers
    print(
        f"\ncritical path {critical:.1f} min <= {CRITICAL_GOAL:.0f} min: {'met' if critical <= CRITICAL_GOAL else 'not met'}"
    )


if __name__ == "__main__":
    main()
