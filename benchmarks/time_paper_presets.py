"""Time every notebook's ``paper`` preset, one notebook at a time, and print a markdown table.

Plain script (long: tens of minutes on 2 cores; not part of the tests)::

    .venv/bin/python benchmarks/time_paper_presets.py [--out /tmp/paper-times] [--jobs 1] [--only NAME ...]

For each notebook that defines a ``paper`` preset it runs
``icl-book run NAME --preset paper --out OUT -j JOBS --force`` (``--force``: measure an
execution, never a cache hit; the run still lands in the store, so the Reproduction report can
show its paper column afterwards) and records the wall time of the command and the ``seconds``
of the run's manifest. With ``-j 1`` a notebook gets every core (``cores // jobs`` BLAS/torch
threads); ``--threads 1`` pins the command to one core (``taskset -c 0``), close to the
one-core-per-notebook condition of a ``-j 2`` build (the runner still starts ``cores // jobs``
threads, which then share that core). The machine should be otherwise idle: absolute times mean nothing on a
loaded machine (use ``benchmarks/bench_paper_scale.py`` for ratios there).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iclbook.notebooks import discover  # noqa: E402
from iclbook.store import STAMP  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/icl-paper-times")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="1: pin to one core (taskset -c 0)")
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [nb.name for nb in discover(ROOT) if "paper" in nb.presets and (not a.only or nb.name in a.only)]
    icl_book = str(Path(sys.executable).with_name("icl-book"))
    rows = []
    t_all = time.perf_counter()
    for name in names:
        cmd = [icl_book, "run", name, "--preset", "paper", "--out", str(out), "-j", str(a.jobs), "--force"]
        if a.threads == 1 and shutil.which("taskset"):
            cmd = ["taskset", "-c", "0", *cmd]
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        try:
            manifest = json.loads((out / name / STAMP).read_text())
            seconds, threads = manifest.get("seconds"), manifest.get("threads")
        except (OSError, ValueError):
            seconds, threads = None, None
        status = "ok" if proc.returncode == 0 else f"FAILED: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
        rows.append((name, wall, seconds, threads, status))
        print(f"{name:28s} {wall:8.1f} s  {status}", file=sys.stderr, flush=True)
    total = time.perf_counter() - t_all
    print("| notebook | wall s | run s (manifest) | threads | status |")
    print("|---|---|---|---|---|")
    for name, wall, seconds, threads, status in rows:
        print(f"| {name} | {wall:,.0f} | {'' if seconds is None else f'{seconds:,.0f}'} | {threads or ''} | {status} |")
    print(f"| **all, one after another** | {total:,.0f} | | | |")
    return 0 if all(r[4] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
