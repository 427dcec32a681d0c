"""The ledger's verdicts for one notebook, graded from the metrics a run stored.

:func:`ledger_verdicts` evaluates a notebook's rows of the ledger (``book/reported/*.yml``) by the
report's own rules (:class:`iclbook.ledger.Rule`) on a ``metrics.json``: row id, status, rule and the
values it read. The notebooks do not import this module (they import only ``iclcore``). The book
renders the table under each executed notebook page when it is built
(:func:`iclbook.sphinx_metrics.add_verdict_table`), from the stored ``metrics.json`` and the ledger as
it is at build time: editing a rule re-grades every page and the report without re-executing anything,
which is why the ledger is not part of a notebook's cache key (:func:`iclbook.store.cache_key`).

A reader who reruns a notebook (``icl-book run NAME -p ... --out DIR``, papermill or JupyterLab) sees
the verdicts of that run with one command::

    .venv/bin/python -m iclbook.verdicts NAME [--out DIR]

which reads ``DIR/NAME/metrics.json`` (default ``book/generated/NAME/metrics.json``); in JupyterLab,
``ledger_verdicts("NAME")`` in a scratch cell reads ``./metrics.json`` and displays as an HTML table.

The ledger is found from, in order: the ``root`` argument, the environment variable ``ICL_BOOK_ROOT``,
and the repository holding this package (``iclbook`` is installed editable).
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_ROOT",
    "VerdictTable",
    "find_root",
    "ledger_verdicts",
    "main",
]

ENV_ROOT = "ICL_BOOK_ROOT"
REPORTED = Path("book") / "reported"


def find_root(root: str | Path | None = None) -> Path | None:
    """The repository whose ``book/reported/*.yml`` is the ledger (``None`` if none is found).

    A ``root`` given is the only candidate; else ``$ICL_BOOK_ROOT``, then the repository of this package.
    """
    candidates = [root] if root is not None else [os.environ.get(ENV_ROOT), Path(__file__).resolve().parents[1]]
    for c in candidates:
        if c and any((Path(c) / REPORTED).glob("*.yml")):
            return Path(c)
    return None


@dataclass
class VerdictTable:
    """A notebook's ledger rows with their verdicts; displays as an HTML table or plain text.

    ``rows``: one dict per ledger row (``id``, ``status``, ``label``, ``rule``, ``values`` and the rule's
    ``digest``, :attr:`iclbook.ledger.Rule.digest`), in ledger order. Without rows, ``message`` says why in one line; ``error`` is true when that is because the
    ledger or the metrics could not be read (not merely because no row names the notebook).
    """

    notebook: str
    rows: list[dict[str, str]] = field(default_factory=list)
    message: str = ""
    error: bool = False

    def _text(self) -> str:
        if self.message:
            return self.message
        lines = [f"Ledger verdicts of {self.notebook} at this run's metrics ({len(self.rows)} rows):"]
        for r in self.rows:
            lines.append(f"  {r['id']:<22} {r['label']:<28} {r['rule']}")
            if r["values"]:
                lines.append(f"  {'':<22} {'':<28} {r['values']}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self._text()

    __str__ = __repr__

    def _repr_html_(self) -> str:
        if self.message:
            return f'<p class="icl-verdicts-note">{html.escape(self.message)}</p>'
        e = html.escape
        head = "<tr><th>row</th><th>status</th><th>rule</th><th>values used</th></tr>"
        body = "".join(
            f'<tr data-id="{e(r["id"])}" data-status="{e(r["status"])}"><td>{e(r["id"])}</td>'
            f"<td>{e(r['label'])}</td><td><code>{e(r['rule'])}</code></td><td>{e(r['values'])}</td></tr>"
            for r in self.rows
        )
        return (
            f"<p>Ledger verdicts of <code>{e(self.notebook)}</code> at this run's metrics "
            f"({len(self.rows)} rows; the Reproduction report applies the same rules).</p>"
            f'<table class="icl-verdicts" data-notebook="{e(self.notebook)}"><thead>{head}</thead>'
            f"<tbody>{body}</tbody></table>"
        )


def ledger_verdicts(
    notebook: str, metrics: dict[str, Any] | None = None, root: str | Path | None = None
) -> VerdictTable:
    """The ledger rows of ``notebook`` evaluated on ``metrics`` (default: ``./metrics.json``).

    Never raises for a missing or unreadable ledger or metrics: the table then carries a one-line message.
    """
    found = find_root(root)
    if found is None:
        return VerdictTable(
            notebook,
            message=f"Ledger not found (set {ENV_ROOT} to the repository): no verdicts shown.",
            error=True,
        )
    if metrics is None:
        try:
            metrics = json.loads(Path("metrics.json").read_text())
        except (OSError, ValueError) as exc:
            return VerdictTable(notebook, message=f"No metrics.json to evaluate the ledger on ({exc}).", error=True)
    from .ledger import ReportError, evaluate, format_value, load_claims, status_label

    try:
        claims = [c for c in load_claims(found / REPORTED) if c.notebook == notebook]
    except (ReportError, OSError, ValueError) as exc:
        return VerdictTable(notebook, message=f"The ledger could not be read: {exc}", error=True)
    if not claims:
        return VerdictTable(notebook, message=f"No row of the ledger names {notebook}.")
    rows = []
    for c in claims:
        row = evaluate(c, metrics)
        used = row.used or (((c.metric, row.reproduced),) if c.metric else ())
        values = ", ".join(f"{k} = {format_value(v)}" for k, v in used)
        if row.difference:
            values = f"{values}; {row.difference}" if values else row.difference
        rows.append(
            {
                "id": c.id or c.label,
                "status": row.status,
                "label": status_label(row),
                "rule": c.rule.formula(),
                "digest": c.rule.digest,
                "values": values,
            }
        )
    return VerdictTable(notebook, rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m iclbook.verdicts NAME [--out DIR] [--root ROOT]``: print the verdicts of a stored run.

    Exit status 0 when the table is printed, 2 (one line on standard error) when the run's
    ``metrics.json`` or the ledger cannot be read.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m iclbook.verdicts", description="Ledger verdicts of a notebook at a run's metrics.json."
    )
    parser.add_argument("name", metavar="NAME", help="the notebook (its ledger rows are graded)")
    parser.add_argument("--out", metavar="DIR", help="the run's output root, as given to `icl-book run --out`")
    parser.add_argument("--root", metavar="ROOT", help=f"the repository holding the ledger (default: ${ENV_ROOT})")
    args = parser.parse_args(argv)
    root = find_root(args.root)
    if root is None:
        print(
            f"icl-book verdicts: error: no ledger (book/reported/*.yml) found; give --root or set {ENV_ROOT}",
            file=sys.stderr,
        )
        return 2
    ledger = ledger_verdicts(args.name, {}, root)  # the ledger first: a broken one is named before any run
    if ledger.error:
        print(f"icl-book verdicts: error: {ledger.message}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else root / "book" / "generated"
    path = out / args.name / "metrics.json"
    try:
        metrics = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            f"icl-book verdicts: error: cannot read {path} ({reason}); run `icl-book run {args.name}`", file=sys.stderr
        )
        return 2
    if not isinstance(metrics, dict):
        print(f"icl-book verdicts: error: {path} is not a JSON object", file=sys.stderr)
        return 2
    table = ledger_verdicts(args.name, metrics, root)
    if table.error:
        print(f"icl-book verdicts: error: {table.message}", file=sys.stderr)
        return 2
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
