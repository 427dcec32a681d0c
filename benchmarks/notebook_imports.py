"""What each notebook's import cell costs, and which heavy packages it pulls in.

For every notebook in ``notebooks/`` the script collects the module-level
``import`` statements of the notebook source, runs them in fresh interpreters
under ``python -X importtime``, and prints, per notebook: the median wall time of
the import cell over the repeats, the self time summed per top-level package
(median over repeats), and which heavy modules were loaded (torch,
torch._dynamo, scipy.optimize/stats/special, sympy, matplotlib.pyplot, dask).

Usage::

    PYTHONPATH=$PWD python benchmarks/notebook_imports.py [NAME ...] [--repeats 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "torch",
    "torch._dynamo",
    "scipy.optimize",
    "scipy.stats",
    "scipy.special",
    "sympy",
    "matplotlib.pyplot",
    "dask",
)


def import_cell(notebook: Path) -> str:
    """The notebook's module-level import statements, one per line, in source order."""
    tree = ast.parse(notebook.read_text())
    lines = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(lines)


def measure_once(code: str) -> tuple[float, dict[str, int], set[str]]:
    """One fresh interpreter: wall seconds, self microseconds per top-level package, heavy modules loaded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    probe = f"\nimport sys as _sys\nprint(' '.join(m for m in {HEAVY!r} if m in _sys.modules))"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code + probe],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"import cell failed: {proc.stderr.strip().splitlines()[-1]}")
    per_package: dict[str, int] = {}
    loaded = set(proc.stdout.split())
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        top = name.strip().split(".")[0]
        per_package[top] = per_package.get(top, 0) + int(self_us)
    return wall, per_package, loaded


def measure(notebook: Path, repeats: int) -> dict:
    """Median wall time and per-package self time of the notebook's import cell over ``repeats`` runs."""
    code = import_cell(notebook)
    walls, packages, loaded = [], {}, set()
    for _ in range(repeats):
        wall, per_package, loaded = measure_once(code)
        walls.append(wall)
        for top, us in per_package.items():
            packages.setdefault(top, []).append(us)
    self_ms = {top: statistics.median(v) / 1000 for top, v in packages.items()}
    return {
        "wall_s": statistics.median(walls),
        "self_ms": dict(sorted(self_ms.items(), key=lambda kv: -kv[1])),
        "heavy": [m for m in HEAVY if m in loaded],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    notebooks = sorted((ROOT / "notebooks").glob("*.py"))
    if args.names:
        known = {p.stem: p for p in notebooks}
        missing = [n for n in args.names if n not in known]
        if missing:
            parser.error(f"unknown notebook(s): {', '.join(missing)}")
        notebooks = [known[n] for n in args.names]
    results = {}
    for nb in notebooks:
        r = measure(nb, args.repeats)
        results[nb.stem] = r
        top = ", ".join(f"{k} {v:.0f}" for k, v in list(r["self_ms"].items())[:6])
        print(f"{nb.stem:24s} {r['wall_s']:6.2f} s  [{top}]  heavy: {' '.join(r['heavy'])}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
