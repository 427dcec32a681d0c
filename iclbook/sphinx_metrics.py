"""Sphinx extension: the ``{metric}`` role renders a computed number at build time.

Usage in MyST: ``{metric}`proof_ladder:max_err_decoder``` or with a format
specification ``{metric}`proof_ladder:max_err_decoder:.2e```. The value is read
from ``book/generated/<notebook>/metrics.json``; a missing notebook, key or a
bad format is a build warning (an error in strict mode), so a chapter can never
show a number the build did not compute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes


def format_metric(value: Any, spec: str = "") -> str:
    """Format a metric value; booleans read "yes"/"no", floats default to 4 significant digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec:
        return format(value, spec)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


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
    """Format a parameter: as written (``g`` for floats) unless ``spec`` is given.

    A list or tuple parameter is its elements, each formatted so, joined by ", " (``[50, 200]`` reads
    "50, 200" in a sentence).
    """
    if isinstance(value, (list, tuple)):
        return ", ".join(format_param(v, spec) for v in value)
    if spec:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def setup(app):  # noqa: D103
    app.add_config_value("icl_generated_dir", "book/generated", "env")
    app.add_role("metric", metric_role)
    app.add_role("param", param_role)
    # Load MathJax on every page. By default Sphinx adds it only to pages whose math it saw
    # while reading them, and an incremental build that rewrites a page without re-reading it
    # (e.g. after a toc change) dropped the script from pages with maths (seen on book/intro).
    app.set_html_assets_policy("always")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
