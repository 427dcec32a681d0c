"""Sphinx extension: every figure says where it comes from, and offers its PNG and PDF.

The notebooks save each figure twice, ``<stem>.png`` (shown) and ``<stem>.pdf`` (vector, for
print), with :func:`iclcore.plotting.save_figure`, into an output folder whose run manifest
(``.icl-run.json``) records the notebook, preset, parameters and store key. Under every ``figure``
whose image is such a PNG this extension puts a provenance line (:func:`provenance_nodes`)::

    notebook decoder_outer · preset quick · regenerate: .venv/bin/icl-book run decoder_outer · PNG · PDF · key 5b1bc42d

naming the parameters that differ from the quick preset and the one command that regenerates the
figure with them. On an executed notebook page, the line follows each cell that saves a figure. A PNG
without a manifest keeps only its PDF link (in the caption), and a notebook page lists any PDF not
linked otherwise. Sphinx copies the files into ``_downloads/``, so the links work offline.

Enable it in ``_config.yml`` under ``sphinx.extra_extensions`` as ``iclbook.sphinx_figures``.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

from .notebooks import QUICK, NotebookError, python_literal, read_notebook
from .worker_env import STAMP

CLASS = "icl-figure-pdf"
PROVENANCE = "icl-provenance"
COMMAND = ".venv/bin/icl-book run"
SHORT_KEY = 8
#: A figure saved by a notebook cell: ``save_figure(fig, "stem")`` or ``finish_figure(fig, "stem")`` (which
#: calls it; a computed stem matches no literal).
SAVE_FIGURE = re.compile(r"(?:save|finish)_figure\(\s*[^,()]+,\s*(?:[\"']([A-Za-z0-9_-]+)[\"']|[^)]*)")


@dataclass(frozen=True)
class Provenance:
    """Where the figures of one output folder come from (read from its run manifest)."""

    notebook: str
    preset: str
    differ: tuple[tuple[str, str], ...]  # (parameter, value as written) that differ from the quick preset
    command: str  # the one command that regenerates the folder, parameters included
    key: str  # the store key, shortened

    def text(self, stem: str = "") -> str:
        """The line as plain text (``PNG · PDF`` stand for the links)."""
        files = " · PNG · PDF" if stem else ""
        return f"notebook {self.notebook} · {self.setting()} · regenerate: {self.command}{files} · key {self.key}"

    def setting(self) -> str:
        if not self.differ:
            return f"preset {self.preset}"
        changed = ", ".join(f"{k} = {v}" for k, v in self.differ)
        verb = "differs" if len(self.differ) == 1 else "differ"
        return f"preset {self.preset} ({changed} {verb} from quick)"


def _same(a: Any, b: Any) -> bool:
    norm = lambda v: [norm(x) for x in v] if isinstance(v, (list, tuple)) else v  # noqa: E731
    try:
        return python_literal(norm(a)) == python_literal(norm(b))
    except NotebookError:
        return a == b


def _shown(value: Any) -> str:
    from .sphinx_metrics import format_param

    return format_param(value)


def _cli_value(value: Any) -> str:
    """``value`` as ``icl-book run -p NAME VALUE`` reads it (a string as is, anything else as its literal)."""
    if isinstance(value, str):
        return shlex.quote(value)
    if isinstance(value, (list, tuple)):
        return shlex.quote("[" + ", ".join(python_literal(v) for v in value) + "]")
    return shlex.quote(python_literal(value))


def provenance(
    manifest: dict[str, Any], quick: dict[str, Any] | None, preset: dict[str, Any] | None = None
) -> Provenance:
    """The provenance of a run from its manifest.

    ``quick``: the notebook's parameter defaults (the quick preset); ``preset``: the parameters of the
    manifest's preset (``quick`` itself for the quick preset). Without them (no notebook source), no
    parameter is listed and the command names only the notebook and preset.
    """
    name, preset_name = str(manifest.get("notebook", "?")), str(manifest.get("preset", QUICK))
    params = manifest.get("params") or {}
    differ = tuple(
        (k, _shown(v)) for k, v in sorted(params.items()) if quick is not None and k in quick and not _same(v, quick[k])
    )
    base = preset if preset is not None else quick
    words = [COMMAND, name] + (["--preset", preset_name] if preset_name != QUICK else [])
    for k, v in sorted(params.items()):
        if base is not None and k in base and not _same(v, base[k]):
            words += ["-p", k, _cli_value(v)]
    return Provenance(name, preset_name, differ, " ".join(words), str(manifest.get("key", ""))[:SHORT_KEY])


@lru_cache(maxsize=256)
def _folder_provenance(folder: str, mtime_ns: int, root: str) -> Provenance | None:
    try:
        manifest = json.loads((Path(folder) / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    quick = preset = None
    source = Path(root) / "notebooks" / f"{manifest.get('notebook', '')}.py"
    if source.is_file():
        try:
            nb = read_notebook(source)
            quick = dict(nb.parameters)
            preset = nb.resolve(str(manifest.get("preset", QUICK)))
        except NotebookError:
            pass
    return provenance(manifest, quick, preset)


def folder_provenance(folder: Path, root: Path) -> Provenance | None:
    """The :class:`Provenance` of an output folder (``None`` without a readable manifest)."""
    try:
        mtime = (folder / STAMP).stat().st_mtime_ns
    except OSError:
        return None
    return _folder_provenance(str(folder), mtime, str(root))


def provenance_nodes(prov: Provenance, docname: str, png: str = "", pdf: str = "") -> nodes.paragraph:
    """The provenance line, with download links to ``png`` and ``pdf`` (paths from the source root)."""
    para = nodes.paragraph(classes=[PROVENANCE])
    para += nodes.Text("notebook ")
    para += nodes.literal(prov.notebook, prov.notebook)
    para += nodes.Text(f" · {prov.setting()} · regenerate: ")
    para += nodes.literal(prov.command, prov.command)
    for target, label in ((png, "PNG"), (pdf, "PDF")):
        if target:
            para += nodes.Text(" · ")
            para += _download(target, docname, label)
    para += nodes.Text(" · key ")
    para += nodes.literal(prov.key, prov.key)
    return para


def _download(target: str, docname: str, text: str) -> addnodes.download_reference:
    """A download reference to ``target`` (a path from the source root, starting with ``/``)."""
    ref = addnodes.download_reference(
        "", "", reftarget=target, refdoc=docname, refexplicit=True, refdomain="", reftype="download"
    )
    ref += nodes.literal(text, text, classes=["download", CLASS])
    return ref


def _pdf_beside(app: Sphinx, uri: str, docname: str) -> str | None:
    """``/path/to/stem.pdf`` (from the source root) when ``uri`` is a PNG with a PDF beside it."""
    if "://" in uri or not uri.lower().endswith(".png"):
        return None
    rel, absolute = app.env.relfn2path(uri, docname)
    pdf = Path(absolute).with_suffix(".pdf")
    if not pdf.is_file():
        return None
    return "/" + str(Path(rel).with_suffix(".pdf")).replace("\\", "/")


def _rel(app: Sphinx, path: Path) -> str | None:
    """``/path`` from the source root (``None`` outside it)."""
    srcdir = Path(app.srcdir)
    return "/" + path.relative_to(srcdir).as_posix() if path.is_relative_to(srcdir) else None


def _legend(figure: nodes.figure) -> nodes.legend:
    """The figure's legend (created if it has none; a legend, unlike a caption, is not numbered)."""
    for child in figure.children:
        if isinstance(child, nodes.legend):
            return child
    legend = nodes.legend()
    figure += legend
    return legend


def add_pdf_links(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read`` handler (runs before Sphinx collects download files)."""
    docname = app.env.docname
    root = Path(app.srcdir)
    linked = set()
    for figure in list(doctree.findall(nodes.figure)):
        images = list(figure.findall(nodes.image))
        if not images:
            continue
        target = _pdf_beside(app, images[0].get("uri", ""), docname)
        if target is None:
            continue
        linked.add(target)
        png_abs = root / target.lstrip("/")
        prov = folder_provenance(png_abs.parent, root)
        if prov is not None:
            png = str(Path(target).with_suffix(".png"))
            _legend(figure).append(provenance_nodes(prov, docname, png, target))
            continue
        captions = [c for c in figure.children if isinstance(c, nodes.caption)]
        if captions:
            captions[0] += nodes.Text(" ")
            captions[0] += _download(target, docname, "PDF")
        else:
            _legend(figure).append(nodes.paragraph("", "", _download(target, docname, "PDF")))

    # An executed notebook page: its figures are saved by cells; a provenance line follows each such cell.
    source = Path(app.env.doc2path(docname))
    if source.suffix == ".ipynb":
        linked |= _notebook_provenance(app, doctree, source, docname)
        pdfs = sorted(source.parent.glob("*.pdf"))
        targets = [t for t in (_rel(app, p) for p in pdfs) if t and t not in linked]
        if targets:
            para = nodes.paragraph(classes=[CLASS + "-list"])
            para += nodes.Text("Figures of this page as PDF: ")
            for i, t in enumerate(targets):
                if i:
                    para += nodes.Text(", ")
                para += _download(t, docname, Path(t).name)
            para += nodes.Text(".")
            sections = list(doctree.findall(nodes.section))
            (sections[0] if sections else doctree).append(para)


def saved_stems(cell_source: str) -> tuple[list[str], bool]:
    """The figure stems a cell saves with a literal name, and whether it also saves one with a computed name."""
    found = SAVE_FIGURE.findall(cell_source)
    return [s for s in found if s], any(not s for s in found)


def _notebook_provenance(app: Sphinx, doctree: nodes.document, source: Path, docname: str) -> set[str]:
    """Put a provenance line after each cell that saves a figure; the PDF targets linked."""
    prov = folder_provenance(source.parent, Path(app.srcdir))
    try:
        cells = json.loads(source.read_text()).get("cells", [])
    except (OSError, ValueError):
        return set()
    if prov is None:
        return set()
    pngs = {p.stem for p in source.parent.glob("*.png")}
    containers = [
        c for c in doctree.findall(nodes.container) if c.get("nb_element") == "cell_code" and "cell_index" in c
    ]
    plan: list[tuple[nodes.container, list[str]]] = []
    computed: list[nodes.container] = []
    for c in containers:
        index = c["cell_index"]
        text = "".join(cells[index].get("source", "")) if 0 <= index < len(cells) else ""
        stems, other = saved_stems(text)
        plan.append((c, [s for s in stems if s in pngs]))
        if other:
            computed.append(c)
    named = {s for _, stems in plan for s in stems}
    rest = sorted(pngs - named)  # saved under a computed name: after the (first) cell that does that
    if rest and computed:
        plan = [(c, stems + rest) if c is computed[0] else (c, stems) for c, stems in plan]
    linked = set()
    for container, stems in plan:
        where = container.parent.index(container) + 1
        for stem in reversed(stems):
            png = _rel(app, source.parent / f"{stem}.png")
            pdf_path = source.parent / f"{stem}.pdf"
            pdf = _rel(app, pdf_path) if pdf_path.is_file() else None
            if png is None:
                continue
            if pdf:
                linked.add(pdf)
            para = provenance_nodes(prov, docname, png, pdf or "")
            para.insert(0, nodes.Text(" · "))
            para.insert(0, nodes.strong(stem, stem))
            container.parent.insert(where, para)
    return linked


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", add_pdf_links, priority=400)  # before the download-file collector (500)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
