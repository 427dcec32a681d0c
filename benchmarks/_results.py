"""Write a benchmark's measurements where the book's Measurements page reads them.

Every benchmark that reports a number a reader may want to check calls :func:`write_result` once at
the end. It writes ``benchmarks/results/<name>.json``: the values (numbers, strings, booleans), the
goals they are compared with, and the facts that make a timing meaningful: the machine (CPU model,
cores, architecture, the BLAS that numpy dispatches to), the date, and the commit. The page
``book/generated/measurements.md`` (``iclbook.measurements``) is built from these files, so no
measured number is typed by hand into the README or the book. The files are committed: re-running a
benchmark on another machine replaces them, and the page says which machine each came from.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

__all__ = ["RESULTS", "machine_facts", "write_result"]


def _cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (Linux), else ``platform.processor()``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, Any]:
    """CPU model, usable cores, architecture and the BLAS kernels numpy dispatches to (threadpoolctl)."""
    facts: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "arch": platform.machine(),
        "python": platform.python_version(),
    }
    try:
        from threadpoolctl import threadpool_info

        facts["blas"] = sorted(
            {f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture', '?')})" for i in threadpool_info()}
        )
    except ImportError:  # threadpoolctl is a dependency of the lock; a bare interpreter may lack it
        facts["blas"] = []
    return facts


def _commit() -> str:
    """The checkout's commit (``unknown`` outside git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=RESULTS.parent, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_result(
    name: str,
    values: dict[str, Any],
    *,
    title: str,
    goals: dict[str, str] | None = None,
    folder: Path = RESULTS,
    commit: str | None = None,
    machine: dict[str, Any] | None = None,
) -> Path:
    """Write ``folder/<name>.json`` with ``values``, ``goals`` and the machine, date and commit.

    ``values`` maps a label to a number, string or boolean (a finite float: a NaN is refused);
    ``goals`` maps a label of ``values`` to the goal in words (for example ``">= 1.25"``). ``commit`` names the
    commit measured when it is not this checkout's (a log read afterwards); ``machine`` the machine that
    measured, when it is not this one (a run on a lent GPU machine whose output was copied back).
    """
    if not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name: {name!r} must be letters, digits, '_' and '-'")
    for key, v in values.items():
        if not isinstance(v, (int, float, str, bool)) or (isinstance(v, float) and v != v):
            raise ValueError(f"values[{key!r}]: {v!r} is not a finite number, a string or a boolean")
    record = {
        "title": title,
        "values": values,
        "goals": goals or {},
        "machine": machine if machine is not None else machine_facts(),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit or _commit(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
