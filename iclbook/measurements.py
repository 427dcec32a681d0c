"""The book's Measurements page, built from the benchmarks' committed results.

Each benchmark writes ``benchmarks/results/<name>.json`` (``benchmarks/_results.py``): a title, its
values, the goals they are compared with, and the machine, date and commit of the run. This module
renders them as ``book/generated/measurements.md``, one section per file, so that timings and rates
appear in the book only as read from a benchmark's output, with the machine they were measured on.
A file that does not parse or lacks a field is shown as such on the page (one line naming it), never
dropped silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .numbers import fmt_count, fmt_value

__all__ = ["load_results", "render_measurements"]

RESULTS = Path("benchmarks") / "results"
_FIELDS = ("title", "values", "machine", "date", "commit")


def load_results(root: Path) -> list[tuple[str, dict[str, Any] | str]]:
    """``(name, record)`` for every ``benchmarks/results/*.json`` in name order; a bad file gives its reason."""
    out: list[tuple[str, dict[str, Any] | str]] = []
    for path in sorted((root / RESULTS).glob("*.json")):
        try:
            if path.stat().st_size > 1 << 20:
                raise ValueError("larger than 1 MiB")
            record = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(record, dict) or (missing := [f for f in _FIELDS if f not in record]):
                raise ValueError(f"missing fields {missing}" if isinstance(record, dict) else "not a JSON object")
            if not isinstance(record["values"], dict):
                raise ValueError("'values' is not an object")
            out.append((path.stem, record))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            out.append((path.stem, f"{RESULTS / path.name}: unreadable ({exc})"))
    return out


def _fmt(v: Any) -> str:
    """A value as the page shows it, in the book's style (:mod:`iclbook.numbers`): integers as counts, floats to
    4 significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return fmt_count(v)
    if isinstance(v, float):
        return fmt_value(v, 4)
    return str(v).replace("|", "\\|")


def render_measurements(root: Path) -> str:
    """The Markdown of the Measurements page."""
    lines = [
        "# Measurements",
        "",
        "Timings and rates measured by the scripts in `benchmarks/`, read from their committed outputs",
        "(`benchmarks/results/*.json`). Each section names the machine, date and commit of its run; a timing",
        "holds for that machine only. Re-run a benchmark (`make bench`, or the script named in its section) to",
        "replace its section with your machine's numbers.",
        "",
    ]
    results = load_results(root)
    if not results:
        lines.append("No benchmark has written its results yet.")
    for name, record in results:
        if isinstance(record, str):
            lines += [f"## `{name}`", "", record, ""]
            continue
        m = record["machine"] if isinstance(record["machine"], dict) else {}
        blas = ", ".join(m.get("blas", [])) or "not recorded"
        lines += [
            f"## {record['title']}",
            "",
            f"`benchmarks/results/{name}.json`: {m.get('cpu', '?')}, {m.get('cores', '?')} cores "
            f"({m.get('arch', '?')}), BLAS {blas}"
            + (f", GPU {', '.join(m['gpus'])}, torch {m.get('torch', '?')}" if m.get("gpus") else "")
            + f"; {record['date']}, commit `{record['commit']}`.",
            "",
            "| quantity | measured | goal |",
            "|---|---:|---|",
        ]
        goals = record.get("goals") or {}
        for key, v in record["values"].items():
            lines.append(f"| {key} | {_fmt(v)} | {goals.get(key, '')} |")
        lines.append("")
    return "\n".join(lines)
