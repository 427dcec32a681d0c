"""Sphinx extension: every figure offers its PDF for download next to it.

The notebooks save each figure twice, ``<stem>.png`` (shown) and ``<stem>.pdf`` (vector, for
print), with :func:`iclcore.plotting.save_figure`. For every ``figure`` whose image is a PNG with a
PDF beside it, this extension appends a download link to the caption ("PDF"). On an executed
notebook page, whose figures are cell outputs, it adds one line listing the PDFs of the notebook's
output folder. Sphinx copies the PDFs into ``_downloads/``, so the links work offline.

Enable it in ``_config.yml`` under ``sphinx.extra_extensions`` as ``iclbook.sphinx_figures``.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

CLASS = "icl-figure-pdf"


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


def add_pdf_links(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read`` handler (runs before Sphinx collects download files)."""
    docname = app.env.docname
    linked = set()
    for figure in list(doctree.findall(nodes.figure)):
        images = list(figure.findall(nodes.image))
        if not images:
            continue
        target = _pdf_beside(app, images[0].get("uri", ""), docname)
        if target is None:
            continue
        linked.add(target)
        captions = [c for c in figure.children if isinstance(c, nodes.caption)]
        if captions:
            captions[0] += nodes.Text(" ")
            captions[0] += _download(target, docname, "PDF")
        else:  # a legend, not a caption: a caption would make the figure numbered
            legend = nodes.legend()
            legend += nodes.paragraph("", "", _download(target, docname, "PDF"))
            figure += legend

    # An executed notebook page: its figures are outputs; list the PDFs its run saved.
    source = Path(app.env.doc2path(docname))
    if source.suffix == ".ipynb":
        pdfs = sorted(source.parent.glob("*.pdf"))
        srcdir = Path(app.srcdir)
        targets = ["/" + p.relative_to(srcdir).as_posix() for p in pdfs if p.is_relative_to(srcdir)]
        targets = [t for t in targets if t not in linked]
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


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", add_pdf_links, priority=400)  # before the download-file collector (500)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
