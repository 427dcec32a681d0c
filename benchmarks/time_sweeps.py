"""Time the sweeps over unstated settings (``make sweep``), or estimate their total, and print a markdown table.

Plain script (not part of the tests; running every sweep takes tens of minutes)::

    .venv/bin/python benchmarks/time_sweeps.py                         # estimate only, nothing executed
    .venv/bin/python benchmarks/time_sweeps.py --run encdec_encoder    # run and time these sweeps

The estimate multiplies, per notebook, the number of points of its one-at-a-time grid
(``notebooks/sweeps.yml``, :func:`iclbook.sweep.expand`) by the notebook's quick-preset time from the
committed hint ``notebooks/seconds.json`` (seconds of one run on one thread; the store's newest "quick" run
may be a run with overridden parameters, a sweep point among them, so it is not used), and
divides the sum by the number of cores for the wall time of ``make sweep`` (``-j`` = cores, one thread
per point: the points are independent, the longest notebooks start first). It is an estimate: a point
with a larger size than the preset costs more. ``--run`` executes the named sweeps with ``--jobs``
workers (``cores // jobs`` threads each) and reports the wall time and, per notebook, the summed
seconds of the points' manifests (what they cost, cache hits included as their recorded time).
Absolute times depend on the machine's load: the printed load average says how loaded it was.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iclbook.notebooks import QUICK, discover  # noqa: E402
from iclbook.runs import RunRequest  # noqa: E402
from iclbook.scheduling import SECONDS_HINT, cpu_seconds  # noqa: E402
from iclbook.store import STAMP, cache_key, import_scans, store_dir  # noqa: E402
from iclbook.sweep import expand, load_plans, run_sweep  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="*", default=None, metavar="NAME", help="run and time these sweeps")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    plans = load_plans(ROOT, discover(ROOT))
    hint = json.loads((ROOT / SECONDS_HINT).read_text())[QUICK]
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| notebook | settings | points | quick run (s, notebooks/seconds.json) | estimated point-seconds |")
    print("|---|---|---|---|---|")
    total = 0.0
    for name, plan in plans.items():
        n = len(expand(plan.notebook, plan.grid))
        sec = float(hint.get(name, 0.0))
        total += n * sec
        print(f"| {name} | {len(plan.settings)} | {n} | {sec:.1f} | {n * sec:.0f} |")
    print(
        f"\nEstimate (not a measurement): {total:.0f} point-seconds, i.e. {total / 60:.0f} min on one core, "
        f"about {total / 60 / args.cores:.0f} min of `make sweep` on {args.cores} cores."
    )
    if not args.run:
        return 0
    print("\n| notebook | points | executed | cached | failed | wall (s) | manifest seconds (sum) |")
    print("|---|---|---|---|---|---|---|")
    scans = import_scans(ROOT)
    for name in args.run:
        plan = plans[name]
        points = expand(plan.notebook, plan.grid)
        t0 = time.monotonic()
        summary = run_sweep(points, {name: plan.notebook}, ROOT, jobs=args.jobs, cores=args.cores)
        wall = time.monotonic() - t0
        spent = 0.0
        for p in points:
            key = cache_key(RunRequest(plan.notebook, p.params, QUICK, ROOT), ROOT, scans)
            try:
                spent += cpu_seconds(json.loads((store_dir(ROOT) / "entries" / key / STAMP).read_text()))
            except (OSError, ValueError, KeyError):
                pass
        st = [r.status for r in summary.results]
        print(
            f"| {name} | {len(points)} | {st.count('executed')} | {st.count('cached')} | {st.count('failed')} "
            f"| {wall:.0f} | {spent:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
