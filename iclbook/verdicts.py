"""The ledger's verdicts for one notebook, shown where the reader works: in the notebook itself.

The last cell of every notebook calls :func:`show_ledger_verdicts` on the ``metrics.json`` it has
just written. It displays the notebook's rows of the ledger (``book/reported/*.yml``) evaluated by the
report's own rules (:func:`iclbook.pages.evaluate`): row id, status, rule and the values it read. A
reader who reruns the notebook with other parameters (``icl-book run -p``, papermill, JupyterLab) sees
which verdicts hold at their setting.

The ledger is found from, in order: the ``root`` argument, the environment variable ``ICL_BOOK_ROOT``,
and the repository holding this package (``iclbook`` is installed editable). Without a ledger the
cell prints one line and the notebook goes on.

Honesty: the stored executed notebook must never show a verdict that differs from the report. The
report evaluates the same rules on the same ``metrics.json``; and the cache key of a notebook covers
the rule fields of its ledger rows (:func:`iclbook.ledger_rules.ledger_rule_digest`, used by
:func:`iclbook.store.cache_key`), so changing a rule re-executes the notebook (changing a note does not).
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
    "show_ledger_verdicts",
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


def _rule(c: Any) -> str:
    """The rule of a claim in plain text (the report's wording, without Markdown)."""
    if c.kind == "predicate":
        return c.predicate
    if c.kind == "within_se":
        disc = f" + {c.discretisation:g}" if c.discretisation else ""
        return f"|value - {c.reported:g}| <= {c.z:g} SE{disc}"
    if c.kind == "rel":
        return f"|value - {c.reported:g}| / |{c.reported:g}| <= {c.tolerance:g}"
    if c.kind == "abs":
        return f"|value - {c.reported:g}| <= {c.tolerance:g}"
    if c.kind == "max":
        return f"value <= {c.tolerance:g}"
    if c.kind == "min":
        return f"value >= {c.tolerance:g}"
    if c.kind == "exact":
        return f"value == {c.reported:g}"
    return c.kind


@dataclass
class VerdictTable:
    """A notebook's ledger rows with their verdicts; displays as an HTML table or plain text."""

    notebook: str
    rows: list[dict[str, str]] = field(default_factory=list)
    message: str = ""

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
            notebook, message=f"Ledger not found (set {ENV_ROOT} to the repository): no verdicts shown."
        )
    if metrics is None:
        try:
            metrics = json.loads(Path("metrics.json").read_text())
        except (OSError, ValueError) as exc:
            return VerdictTable(notebook, message=f"No metrics.json to evaluate the ledger on ({exc}).")
    from .pages import ReportError, evaluate, load_claims, status_label

    try:
        claims = [c for c in load_claims(found / REPORTED) if c.notebook == notebook]
    except (ReportError, OSError, ValueError) as exc:
        return VerdictTable(notebook, message=f"The ledger could not be read: {exc}")
    if not claims:
        return VerdictTable(notebook, message=f"No row of the ledger names {notebook}.")
    rows = []
    for c in claims:
        row = evaluate(c, metrics)
        used = row.used or (((c.metric, row.reproduced),) if c.metric else ())
        values = ", ".join(f"{k} = {_fmt(v)}" for k, v in used)
        if row.difference:
            values = f"{values}; {row.difference}" if values else row.difference
        rows.append(
            {
                "id": c.id or c.label,
                "status": row.status,
                "label": status_label(row),
                "rule": _rule(c),
                "values": values,
            }
        )
    return VerdictTable(notebook, rows)


def _fmt(v: Any) -> str:
    from .pages import _fmt as fmt

    return fmt(v)


def show_ledger_verdicts(notebook: str, metrics: dict[str, Any] | None = None, root: str | Path | None = None) -> None:
    """Display :func:`ledger_verdicts` (HTML in Jupyter, text elsewhere); never fails the notebook."""
    try:
        table = ledger_verdicts(notebook, metrics, root)
    except Exception as exc:  # noqa: BLE001 (a verdict table must never fail the notebook)
        print(f"Ledger verdicts not shown: {type(exc).__name__}: {exc}")
        return
    try:
        from IPython.display import display
    except ImportError:
        print(table)
        return
    display(table)
