"""Record the phases of one ``make test`` run (from its log) for the book's Measurements page.

Plain script::

    make test 2>&1 | tee /tmp/make-test.log        # from a fresh clone, on an idle machine
    .venv/bin/python benchmarks/record_make_test.py /tmp/make-test.log

``make test`` prints one line per phase, ``== venv: 46 s``, ``== notebooks: 540 s``, ``== tests: 610 s`` and
``== HTML build: 140 s`` (built in the background during the tests), and pytest's closing line
(``1,500 passed, 3 skipped in 600.1s``). This script reads them and writes
``benchmarks/results/make_test.json`` (:func:`_results.write_result`) with the machine it runs on, so run it
on the machine that ran ``make test``. A log without a phase line is refused, naming the phase.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result  # noqa: E402

PHASES = ("venv", "notebooks", "tests", "HTML build")
GOAL_SECONDS = 8 * 60


def phases_from_log(text: str) -> dict[str, int]:
    """Wall seconds of each phase printed by ``make test`` (``== NAME: N s``); the venv phase may be absent."""
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"^== ([A-Za-z ]+?): (\d+) s\b", text, flags=re.M)}
    missing = [p for p in PHASES[1:] if p not in found]
    if missing:
        raise ValueError(f"the log has no '== {missing[0]}: N s' line")
    return {p: found[p] for p in PHASES if p in found}


def pytest_counts(text: str) -> dict[str, int]:
    """Passed, failed and skipped counts from pytest's closing line (zeros where absent)."""
    line = next((x for x in reversed(text.splitlines()) if re.search(r"\d+ passed", x)), "")
    return {
        k: int(m.group(1).replace(",", "")) if (m := re.search(rf"([\d,]+) {k}", line)) else 0
        for k in ("passed", "failed", "skipped")
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, help="the output of make test")
    p.add_argument("--commit", help="the commit that make test ran on (default: this checkout's)")
    args = p.parse_args()
    text = args.log.read_text(errors="replace")
    try:
        phases = phases_from_log(text)
    except ValueError as exc:
        print(f"record_make_test: {args.log}: {exc}", file=sys.stderr)
        return 2
    total = sum(v for k, v in phases.items() if k != "HTML build")  # the HTML is built during the tests
    values = {f"{k} (s)": v for k, v in phases.items()} | {"total wall (s)": total} | pytest_counts(text)
    path = write_result(
        "make_test",
        values,
        title="make test from a fresh clone",
        goals={"total wall (s)": f"<= {GOAL_SECONDS}", "failed": "0"},
        commit=args.commit,
    )
    print(f"wrote {path}: {values}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
