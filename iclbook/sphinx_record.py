"""Sphinx extension: a banner on every executed notebook page saying which run the reader sees.

The page itself is the run the book was built with (the quick preset, unless ``make book PRESET=paper``).
:func:`add_record_banner` puts above its first cell a banner that names that preset and, where the
committed record (:mod:`iclbook.record`) holds a paper-size run of the notebook, shows that run's
figures with the commit, date and machine it was computed on and its state at this checkout: *current*,
*carried forward* (with the files changed since), or *stale* (greyed out, with the same facts; the
report does not count it). Where the record holds none, the banner says so and how to make one. The
record's files are dependencies of the page, so a refreshed record re-renders it on the next build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util import logging

from .record import RECORD, STALE, RecordError, entry_state, record_entry, state_note
from .sphinx_metrics import current_notebook_page

logger = logging.getLogger(__name__)

__all__ = ["add_record_banner", "banner_text", "setup"]

PAPER = "paper"


def banner_text(built_preset: str, name: str, note: str | None, state: str | None) -> str:
    """The banner's sentence: which run the page shows, and what the record holds of the paper preset."""
    shown = f"This page shows the `{built_preset}`-preset run of `{name}`, executed when the book was built."
    if built_preset == PAPER:
        return shown
    if note is None:
        return (
            shown + " The committed record holds no paper-size run of this notebook "
            f"(make one with `icl-book record refresh --only {name}`)."
        )
    if state == STALE:
        return shown + f" The record's paper-size run is stale and not counted: {note}."
    return shown + f" Below, the figures of the paper-size run {note}."


def _built_preset(folder: Path) -> str:
    try:
        return str(json.loads((folder / ".icl-run.json").read_text()).get("preset", "quick"))
    except (OSError, ValueError, AttributeError):
        return "quick"


def _record_state(srcdir: Path, name: str) -> tuple[str | None, str | None, list[str]]:
    """(note, state, figure paths relative to the source folder) of the record's paper entry, if it verifies."""
    from .notebooks import discover_all

    try:
        manifest = record_entry(srcdir, PAPER, name)
    except RecordError as exc:
        if "not listed" in str(exc) and not (srcdir / RECORD / PAPER / name).exists():
            return None, None, []
        logger.warning(f"record: {exc}")
        return None, None, []
    nb = next((n for n in discover_all(srcdir)[0] if n.name == name), None)
    if nb is None:
        return None, None, []
    state = entry_state(srcdir, nb, manifest)
    figures = sorted(f"{RECORD}/{PAPER}/{name}/{f}" for f in manifest["files"] if f.endswith(".png"))
    return state_note(state), state.state, figures


def _paragraph(text: str) -> nodes.paragraph:
    """A paragraph of ``text`` whose backquoted parts (``like this``) are code."""
    para = nodes.paragraph()
    for i, part in enumerate(text.split("`")):
        if part:
            para += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    return para


def add_record_banner(app: Any, doctree: nodes.document) -> None:
    """``doctree-read`` handler: the banner (and the record's paper-size figures) at the top of a notebook page."""
    env = app.env
    srcdir, source, name = current_notebook_page(env)
    if name is None:
        return
    for dep in (srcdir / RECORD / "digest.json", srcdir / RECORD / PAPER / name / "record.json"):
        env.note_dependency(str(dep))
    built = _built_preset(source.parent)
    note, state, figures = _record_state(srcdir, name) if built != PAPER else (None, None, [])
    classes = ["icl-record-banner"] + (["icl-record-stale"] if state == STALE else [])
    banner = nodes.admonition(classes=classes)
    banner += nodes.title("", "Paper-size run" if figures else f"The {built} preset")
    banner += _paragraph(banner_text(built, name, note, state))
    for fig in figures:
        banner += nodes.image(uri="/" + fig, alt=f"{name}: {Path(fig).name} at the paper preset")
    sections = list(doctree.findall(nodes.section))
    target = sections[0] if sections else doctree
    index = next(
        (i for i, child in enumerate(target.children) if not isinstance(child, nodes.title)), len(target.children)
    )
    target.insert(index, banner)


def setup(app: Any) -> dict[str, Any]:  # noqa: D103
    app.connect("doctree-read", add_record_banner, priority=440)  # before the image collector (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
