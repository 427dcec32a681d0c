"""Benchmark: ``icl-book run`` of every notebook when every run is a cache hit (goal: at most 2 s on 2 cores).

Plain script::

    .venv/bin/python benchmarks/bench_cached_run.py [--repeats 5] [--root DIR] [--populate]

A cached rebuild still reads every notebook, computes every key (the source, the typed parameters,
the lock file and the ``iclcore`` files it imports, from the import graph), re-hashes every file of
every store entry and of every output folder against its manifest, and starts no kernel. This
script times it end to end, as a user runs it (a fresh interpreter: ``python -m iclbook.cli run
--out DIR``), after one untimed run that fills ``DIR``. Notebooks without a stored run are left out
(and named) unless ``--populate`` executes them first.

Printed: the median and best wall seconds of the cached run, and, measured in this process, what
its parts cost: the interpreter and the CLI's imports (the floor of any ``icl-book`` call, a
subprocess ``import iclbook.cli``), computing the keys with the store's import-scan cache against
parsing every module again (the ratio is what the cache saves), and verifying every entry and
output folder (SHA-256 of every file).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iclbook.imports import ScanCache, scan_source
from iclbook.notebooks import discover_all
from iclbook.runs import make_requests
from iclbook.store import STAMP, cache_key, import_scans, store_dir, verify_folder

GOAL_SECONDS = 2.0


def wall(cmd: list[str], repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` runs of ``cmd`` (each must exit 0)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return times


def best_of(fn, repeats: int) -> float:
    """Best wall seconds of ``repeats`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="project root")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--populate", action="store_true", help="execute the notebooks without a stored run first")
    args = p.parse_args()
    root = args.root.resolve()
    cli = [sys.executable, "-m", "iclbook.cli", "--root", str(root)]

    notebooks, _ = discover_all(root)
    with tempfile.TemporaryDirectory(prefix="bench-cached-") as d:
        out = Path(d)
        requests = make_requests(notebooks, out)
        scans = import_scans(root)
        keys = {r.notebook.name: cache_key(r, root, scans) for r in requests}
        missing = [n for n, k in keys.items() if not (store_dir(root) / "entries" / k / STAMP).is_file()]
        if missing and args.populate:
            print(f"populating the store: {len(missing)} notebook(s) execute", flush=True)
            subprocess.run([*cli, "run", *missing, "--out", str(out)], check=True)
            missing = []
        names = [n for n in keys if n not in missing]
        if missing:
            print(f"not stored (left out; --populate runs them): {', '.join(missing)}")
        if not names:
            print("no notebook has a stored run: nothing to time")
            return
        run = [*cli, "run", *(names if missing else []), "--out", str(out)]
        wall(run, 1)  # fills the output folders from the store
        times = wall(run, args.repeats)
        floor = wall([sys.executable, "-c", "import iclbook.cli"], args.repeats)

        chosen = [r for r in requests if r.notebook.name in names]

        def parse_all() -> None:
            scan_source.cache_clear()  # the in-process memo too: every module parsed, as in a fresh process
            for r in chosen:
                cache_key(r, root, ScanCache())

        cold = best_of(parse_all, 3)
        warm = best_of(lambda: [cache_key(r, root, scans) for r in chosen], 3)

        def verify() -> None:
            for r in chosen:
                entry = store_dir(root) / "entries" / keys[r.notebook.name]
                assert verify_folder(entry, keys[r.notebook.name]) == ""
                assert verify_folder(r.out_dir, keys[r.notebook.name]) == ""

        checked = best_of(verify, 3)
        size = sum(f.stat().st_size for r in chosen for f in r.out_dir.rglob("*") if f.is_file())

    med, best = statistics.median(times), min(times)
    print(f"cached `icl-book run` of {len(names)} notebooks: median {med:.2f} s, best {best:.2f} s")
    print(f"  goal <= {GOAL_SECONDS:.1f} s: {'met' if med <= GOAL_SECONDS else 'NOT met'}")
    print(f"  floor (python + import iclbook.cli): median {statistics.median(floor):.2f} s")
    print(
        f"  keys: {warm:.3f} s with the import-scan cache, {cold:.3f} s parsing every module: ratio {cold / warm:.1f}"
    )
    print(f"  verification (SHA-256 of {2 * size / 1e6:.0f} MB in entries and output folders): {checked:.3f} s")


if __name__ == "__main__":
    main()
