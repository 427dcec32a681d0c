"""Compare the ``metrics.json`` of notebook runs with a baseline, key by key.

Usage: ``python benchmarks/compare_metrics.py [--rtol R] NEW_DIR BASELINE_DIR [NAME ...]`` where each directory
holds ``<name>/metrics.json`` (the layout of ``icl-book run --out DIR``). A numeric metric agrees when
``|new - base| <= rtol max(|new|, |base|)`` (``rtol = 1e-12``), any other value when it is equal;
``--rtol`` sets another; a key present on one side only is a disagreement; wall-clock timings (``runtime``, ``seconds``, ``t_*``)
are skipped and listed. Prints one line per notebook (``N of N compared``)
and each disagreeing key; exits 1 if any disagrees.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from iclbook.record import TIMING_METRIC

RTOL = 1e-12
#: wall-clock timings, not results: reported as skipped, never compared (the record's own rule)
TIMING = TIMING_METRIC


def _agree(a: object, b: object, rtol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def compare_metrics(new: dict, base: dict, rtol: float = RTOL) -> tuple[int, list[str]]:
    """Number of keys compared and a description of every disagreeing key (values ``dict``, ``list`` compared recursively)."""
    bad: list[str] = []
    n = 0
    for key in sorted(set(new) | set(base)):
        if TIMING.search(key):
            continue
        n += 1
        if key not in new or key not in base:
            bad.append(f"{key}: only in {'new' if key in new else 'baseline'}")
            continue
        a, b = new[key], base[key]
        if isinstance(a, dict) and isinstance(b, dict):
            m, sub = compare_metrics(a, b, rtol)
            bad += [f"{key}.{s}" for s in sub]
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b) or not all(_agree(x, y, rtol) for x, y in zip(a, b)):
                bad.append(f"{key}: {a!r} != {b!r}")
        elif not _agree(a, b, rtol):
            rel = abs(a - b) / max(abs(a), abs(b)) if isinstance(a, float) and isinstance(b, float) else float("nan")
            bad.append(f"{key}: {a!r} != {b!r} (relative {rel:.1e})")
    return n, bad


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtol", type=float, default=RTOL, help=f"relative tolerance (default {RTOL:g}; 0: bit-identical)")
    ap.add_argument("new_dir", type=Path, help="folder of <name>/metrics.json (icl-book run --out)")
    ap.add_argument("base_dir", type=Path, help="the baseline folder, same layout")
    ap.add_argument("names", nargs="*", help="notebooks to compare (default: every one in NEW_DIR)")
    args = ap.parse_args(argv)
    if not (args.rtol >= 0):
        ap.error(f"--rtol must be a non-negative number, got {args.rtol}")
    for d in (args.new_dir, args.base_dir):
        if not d.is_dir():
            ap.error(f"{d}: not a folder")
    rtol, new_dir, base_dir = args.rtol, args.new_dir, args.base_dir
    names = args.names or sorted(p.name for p in new_dir.iterdir() if (p / "metrics.json").exists())
    failed = False
    for name in names:
        missing = [str(d) for d in (new_dir, base_dir) if not (Path(d) / name / "metrics.json").is_file()]
        if missing:
            print(f"{name}: no metrics.json in {', '.join(missing)}")
            failed = True
            continue
        new = json.loads((Path(new_dir) / name / "metrics.json").read_text())
        base = json.loads((Path(base_dir) / name / "metrics.json").read_text())
        n, bad = compare_metrics(new, base, rtol)
        skipped = sorted(k for k in set(new) | set(base) if TIMING.search(k))
        print(f"{name}: {n - len(bad)} of {n} agree at rtol {rtol:g} (timings skipped: {', '.join(skipped)})")
        for line in bad:
            print("   ", line)
        failed |= bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
