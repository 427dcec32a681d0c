"""Sphinx extension: computed numbers and the ledger's verdicts, rendered at build time.

The ``{metric}`` role renders a computed number.

Usage in MyST: ``{metric}`proof_ladder:max_err_decoder``` or with a format: a named one
(``value``, ``signed``, ``se``, ``sci``, ``percent``, ``power``, ``count``) or a Python specification
such as ``{metric}`proof_ladder:max_err_decoder:.2e```, rendered in the book's number style
(:mod:`iclbook.numbers`: ``1.23×10⁻⁵``, ``−``, thousands separators from 10,000). The value is read
from ``book/generated/<notebook>/metrics.json``; a missing notebook, key or a
bad format is a build warning (an error in strict mode), so a chapter can never
show a number the build did not compute. The ``{param}`` role renders a run's parameter.

Under every executed notebook page (``book/generated/<name>/<name>.ipynb``) :func:`add_verdict_table`
puts the notebook's ledger verdicts: its rows of ``book/reported/*.yml`` graded by the report's rules
on the stored ``metrics.json`` beside it (:func:`iclbook.verdicts.ledger_verdicts`). The page depends
on the ledger files, so editing a rule re-grades the page on the next build; nothing is re-executed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util import logging

from .numbers import format_spec
from .verdicts import REPORTED, VerdictTable, ledger_verdicts

logger = logging.getLogger(__name__)


def format_metric(value: Any, spec: str = "") -> str:
    """Format a metric value; booleans read "yes"/"no", strings as they are (or by a Python ``spec``), numbers
    in the book's style (:func:`iclbook.numbers.format_spec`; no ``spec``: a count, or 3 significant figures)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return format(value, spec) if spec else value
    return format_spec(value, spec)


def metric_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: D103
    env = inliner.document.settings.env
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]):
        msg = inliner.reporter.warning(f"metric role: expected `notebook:key[:format]`, got {text!r}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    notebook, key = parts[0], parts[1]
    spec = parts[2] if len(parts) == 3 else ""
    generated = Path(env.srcdir) / env.config.icl_generated_dir
    path = generated / notebook / "metrics.json"
    env.note_dependency(str(path))
    if not path.exists():
        msg = inliner.reporter.warning(
            f"metric role: {path} does not exist (run `icl-book run {notebook}`)", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    metrics = json.loads(path.read_text())
    if key not in metrics:
        msg = inliner.reporter.warning(
            f"metric role: {notebook}/metrics.json has no key {key!r}; keys: {', '.join(sorted(metrics))}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    try:
        text_value = format_metric(metrics[key], spec)
    except (ValueError, TypeError) as exc:
        msg = inliner.reporter.warning(f"metric role: cannot format {key!r} with {spec!r}: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    node = nodes.inline(rawtext, text_value, classes=["icl-metric"])
    return [node], []


RUN_STAMP = ".icl-run.json"


def param_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: D103
    env = inliner.document.settings.env
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]):
        msg = inliner.reporter.warning(f"param role: expected `notebook:name[:format]`, got {text!r}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    notebook, key = parts[0], parts[1]
    spec = parts[2] if len(parts) == 3 else ""
    path = Path(env.srcdir) / env.config.icl_generated_dir / notebook / RUN_STAMP
    env.note_dependency(str(path))
    if not path.exists():
        msg = inliner.reporter.warning(
            f"param role: {path} does not exist (run `icl-book run {notebook}`)", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    params = json.loads(path.read_text()).get("params", {})
    if key not in params:
        msg = inliner.reporter.warning(
            f"param role: {notebook} has no parameter {key!r}; parameters: {', '.join(sorted(params))}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    try:
        text_value = format_param(params[key], spec)
    except (ValueError, TypeError) as exc:
        msg = inliner.reporter.warning(f"param role: cannot format {key!r} with {spec!r}: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.inline(rawtext, text_value, classes=["icl-param"])], []


def format_param(value: Any, spec: str = "") -> str:
    """Format a parameter in the book's style (:func:`iclbook.numbers.format_spec`): a float to 6 significant
    figures (``g``), an integer as a count, unless ``spec`` is given; a string as it is.

    A list or tuple parameter is its elements, each formatted so, joined by ", " (``[50, 200]`` reads
    "50, 200" in a sentence).
    """
    if isinstance(value, (list, tuple)):
        return ", ".join(format_param(v, spec) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return format(value, spec) if spec else str(value)
    return format_spec(value, spec or ("g" if isinstance(value, float) else ""))


VERDICTS = "icl-verdicts"
VERDICT_HEADER = ("row", "status", "rule", "values used")


def _entry(node: nodes.Node) -> nodes.entry:
    entry = nodes.entry()
    entry += nodes.paragraph("", "", node)
    return entry


def verdict_table_node(table: VerdictTable) -> nodes.table:
    """A docutils table of ``table.rows``: row id, status label, rule, values used.

    Each row carries the class ``icl-status-<status>`` and the id ``verdict-<row id>`` (a link target).
    """
    node = nodes.table(classes=[VERDICTS])
    group = nodes.tgroup(cols=len(VERDICT_HEADER))
    node += group
    for width in (2, 2, 4, 5):
        group += nodes.colspec(colwidth=width)
    head, body = nodes.thead(), nodes.tbody()
    group += head
    group += body
    head += nodes.row("", *(_entry(nodes.Text(h)) for h in VERDICT_HEADER))
    for r in table.rows:
        row = nodes.row(classes=[f"icl-status-{r['status']}"], ids=[f"verdict-{nodes.make_id(r['id'])}"])
        row += _entry(nodes.literal(r["id"], r["id"]))
        row += _entry(nodes.Text(r["label"]))
        row += _entry(nodes.literal(r["rule"], r["rule"]))
        row += _entry(nodes.Text(r["values"]))
        body += row
    return node


def verdict_section(table: VerdictTable) -> nodes.section:
    """The section "Ledger verdicts" of a notebook page: an introduction and :func:`verdict_table_node`."""
    section = nodes.section(ids=["ledger-verdicts"], classes=[VERDICTS + "-section"])
    section += nodes.title("", "Ledger verdicts")
    if not table.rows:
        section += nodes.paragraph("", table.message)
        return section
    intro = nodes.paragraph()
    intro += nodes.Text(
        f"The {len(table.rows)} rows of the ledger that name this notebook, graded when the book was built "
        "by the Reproduction report's rules on this run's metrics.json. After a rerun, "
    )
    command = f".venv/bin/python -m iclbook.verdicts {table.notebook} --out DIR"
    intro += nodes.literal(command, command)
    intro += nodes.Text(" grades that run's metrics the same way.")
    section += intro
    section += verdict_table_node(table)
    return section


def notebook_of_page(source: Path, generated: Path) -> str | None:
    """The notebook an executed notebook page shows (``<generated>/<name>/<name>.ipynb``), else ``None``."""
    if source.suffix != ".ipynb" or source.stem != source.parent.name:
        return None
    return source.stem if source.parent.parent.resolve() == generated.resolve() else None


def current_notebook_page(env: Any) -> tuple[Path, Path, str | None]:
    """The source folder, the page being read and the notebook it shows (``None``: not a notebook page)."""
    srcdir = Path(env.srcdir)
    source = Path(env.doc2path(env.docname))
    return srcdir, source, notebook_of_page(source, srcdir / env.config.icl_generated_dir)


def add_verdict_table(app, doctree: nodes.document) -> None:
    """``doctree-read`` handler: the section "Ledger verdicts" at the end of an executed notebook page.

    The ledger files and the ``metrics.json`` become dependencies of the page. An unreadable ledger or
    metrics file is a build warning naming it (an error in strict mode).
    """
    env = app.env
    srcdir, source, name = current_notebook_page(env)
    if name is None:
        return
    metrics_path = source.parent / "metrics.json"
    for dep in [metrics_path, *sorted((srcdir / REPORTED).glob("*.yml"))]:
        env.note_dependency(str(dep))
    try:
        metrics = json.loads(metrics_path.read_text())
    except (OSError, ValueError) as exc:
        metrics, why = None, str(exc)
    else:
        why = "not a JSON object"
    if not isinstance(metrics, dict):
        logger.warning(
            f"ledger verdicts: cannot read {metrics_path} ({why}); run `icl-book run {name}`", location=source
        )
        return
    table = ledger_verdicts(name, metrics, root=srcdir)
    if table.error:
        logger.warning(f"ledger verdicts of {name}: {table.message}", location=source)
        return
    sections = list(doctree.findall(nodes.section))
    (sections[0] if sections else doctree).append(verdict_section(table))


def setup(app):  # noqa: D103
    app.add_config_value("icl_generated_dir", "book/generated", "env")
    app.add_role("metric", metric_role)
    app.add_role("param", param_role)
    app.connect("doctree-read", add_verdict_table, priority=450)  # before the toc collector (500)
    # Load MathJax on every page. By default Sphinx adds it only to pages whose math it saw
    # while reading them, and an incremental build that rewrites a page without re-reading it
    # (e.g. after a toc change) dropped the script from pages with maths (seen on book/intro).
    app.set_html_assets_policy("always")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
