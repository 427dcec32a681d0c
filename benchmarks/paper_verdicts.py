"""Verdicts at the paper preset against the quick preset: counts by basis and every row that changes.

Plain script (reads the store; executes nothing)::

    .venv/bin/python benchmarks/paper_verdicts.py

Needs the quick outputs in ``book/generated`` (``icl-book run``) and the paper-preset runs in the
store (``icl-book run --preset paper``) under the notebooks' current keys; notebooks without a
stored paper run are listed and left out of the comparison. Prints markdown: a table of
basis x (quick status, paper status) counts over the rows that have both, then the rows whose
status changes, with both values.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iclbook.ledger import BASES  # noqa: E402
from iclbook.report import paper_metrics, paper_rows, report_rows  # noqa: E402


def main() -> int:
    generated = ROOT / "book" / "generated"
    rows = report_rows(ROOT, generated)
    notebooks = sorted({r.claim.notebook for r in rows if r.claim.notebook})
    metrics = paper_metrics(ROOT, generated, notebooks)
    paper = paper_rows(rows, metrics)
    pairs = [(r, p) for r, p in zip(rows, paper) if p is not None]
    print(f"notebooks with a stored paper run: {len(metrics)} of {len(notebooks)}")
    missing = [nb for nb in notebooks if nb not in metrics]
    if missing:
        print(f"without one (left out): {', '.join(missing)}")
    print()
    print("| basis | rows | quick: holds / fails / missing | paper: holds / fails / missing | changed |")
    print("|---|---|---|---|---|")

    def hfm(sub):
        c = Counter(x.status for x in sub)
        return f"{c['reproduced']} / {c['differs']} / {c['missing']}"

    for b in BASES:
        sub = [(r, p) for r, p in pairs if r.claim.basis == b]
        if sub:
            changed = sum(r.status != p.status for r, p in sub)
            print(f"| {b} | {len(sub)} | {hfm([r for r, _ in sub])} | {hfm([p for _, p in sub])} | {changed} |")
    print(
        f"| **all** | {len(pairs)} | {hfm([r for r, _ in pairs])} | {hfm([p for _, p in pairs])} | "
        f"{sum(r.status != p.status for r, p in pairs)} |"
    )
    print()
    print("| row | basis | quick | paper |")
    print("|---|---|---|---|")
    for r, p in pairs:
        if r.status != p.status:
            print(
                f"| {r.claim.label[:90]} | {r.claim.basis} | {r.status} ({r.reproduced}) | {p.status} ({p.reproduced}) |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
