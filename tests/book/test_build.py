"""The built HTML book (run after `icl-book build`, as `make test` does).

Checks what a reader gets: a page for every toc entry, rendered maths with MathJax served locally,
no network URL in any `src`/`href`, every figure present, no unresolved {metric}/{param} role, and a
reproduction report with no missing value (rows of kind `absent` are listed, not missing).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
GENERATED = ROOT / "book" / "generated"

pytestmark = pytest.mark.build


@pytest.fixture(scope="module")
def html_root() -> Path:
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML / 'index.html'} is missing: build the book first (`icl-book build` or `make test`)")
    return HTML


def toc_files(node) -> list[str]:
    files = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("file", "root") and isinstance(value, str):
                files.append(value)
            else:
                files += toc_files(value)
    elif isinstance(node, list):
        for item in node:
            files += toc_files(item)
    return files


def html_pages(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.html") if "_static" not in p.parts]


def test_every_toc_entry_has_a_page(html_root: Path) -> None:
    files = toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    assert len(files) >= 4
    missing = [f for f in files if not (html_root / f"{f}.html").exists()]
    assert not missing, f"toc entries without an HTML page: {missing}"


def test_no_network_urls_in_src_or_href(html_root: Path) -> None:
    """No page *loads* anything from the network: no ``src`` on any element and no ``href`` on a
    non-anchor element (``<link>``: styles, fonts, preloads) points outside the book. Plain hyperlinks
    (``<a href>``, e.g. a bibliography entry's arXiv link) load nothing and are allowed."""
    tag = re.compile(r"<([a-zA-Z][a-zA-Z0-9-]*)\b([^>]*)>")
    attr = re.compile(r"""\b(src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", re.I)
    offenders = {}
    for page in html_pages(html_root):
        found = [
            url
            for name, attrs in tag.findall(page.read_text(errors="replace"))
            for kind, url in attr.findall(attrs)
            if not (name.lower() == "a" and kind.lower() == "href")
        ]
        if found:
            offenders[str(page.relative_to(html_root))] = sorted(set(found))[:3]
    assert not offenders, f"pages loading from the network: {offenders}"


def test_maths_is_rendered_by_local_mathjax(html_root: Path) -> None:
    intro = (html_root / "book" / "intro.html").read_text()
    assert re.search(r'<script[^>]+src="[^"]*_static/mathjax/tex-[a-z-]+\.js(?:\?[^"]*)?"', intro), (
        "no local MathJax script"
    )
    assert (html_root / "_static" / "mathjax" / "tex-chtml.js").exists()
    math_pages = [p for p in html_pages(html_root) if 'class="math' in p.read_text(errors="replace")]
    assert len(math_pages) >= 2, "fewer than two pages contain maths"


def test_no_unresolved_roles_or_errors_in_pages(html_root: Path) -> None:
    bad = [
        str(p.relative_to(html_root))
        for p in html_pages(html_root)
        if 'class="problematic"' in p.read_text(errors="replace")
    ]
    assert not bad, f"pages with unresolved roles: {bad}"


def test_every_image_referenced_by_a_page_exists(html_root: Path) -> None:
    missing = []
    for page in html_pages(html_root):
        for src in re.findall(r'<img[^>]+src="([^"]+)"', page.read_text(errors="replace")):
            if src.startswith("data:"):
                continue
            if not (page.parent / src).resolve().exists():
                missing.append(f"{page.relative_to(html_root)} -> {src}")
    assert not missing, missing[:10]


#: Notebooks whose output is a table, not a figure (the chapter shows the table).
TABLE_ONLY = {
    "gd_identities": "the identity table (family, statement, check, verdict, evidence)",
    "gd_reported": "arithmetic checks of the paper's printed numbers",
}


def test_every_notebook_was_executed_without_errors() -> None:
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py"))
    assert names
    for name in names:
        executed = GENERATED / name / f"{name}.ipynb"
        assert executed.exists(), f"{name} has not been executed"
        assert (GENERATED / name / "metrics.json").exists(), f"{name} wrote no metrics.json"
        if name not in TABLE_ONLY:
            assert list((GENERATED / name).glob("*.png")), f"{name} saved no figure"
        nb = json.loads(executed.read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"


def test_report_has_no_missing_values(html_root: Path) -> None:
    """Every row that is not `absent` has its computed value (absent rows are listed, not failures)."""
    text = (GENERATED / "report.md").read_text()
    m = re.search(
        r"\*\*(\d+) reproduced\*\* of (\d+) predicted claims · \*\*(\d+) identities verified\*\* of (\d+) · "
        r"(\d+) absent · (\d+) out of scope · (\d+) missing · (\d+) rows in all",
        text,
    )
    assert m, "report summary line not found"
    assert int(m.group(7)) == 0, "report rows (not absent) without a computed value"
    assert int(m.group(8)) > 0, "the report has no claims"
    assert "## Paper 000" in text and "| basis |" in text, "the report does not open with the basis x status tables"
    assert (html_root / "book" / "generated" / "report.html").exists()


def _provenance_lines(html: str) -> list[str]:
    return re.findall(r'<p class="icl-provenance">(.*?)</p>', html, flags=re.S)


def _complete(line: str) -> bool:
    """A provenance line with its notebook, setting, command, PNG and PDF download links and short key."""
    text = re.sub(r"<[^>]+>", "", line)
    links = re.findall(r'<a class="reference download internal"[^>]*href="[^"]+\.(png|pdf)"', line)
    pattern = r"notebook \w+ · preset \w+.* · regenerate: \.venv/bin/icl-book run \w+.* · PNG · PDF · key [0-9a-f]{8}"
    return bool(re.fullmatch(pattern, text.strip(), flags=re.S)) and links == ["png", "pdf"]


def test_every_figure_has_its_provenance_line(html_root: Path) -> None:
    """Under every figure of a chapter, and after every cell of a notebook page that saves one: the notebook,
    its setting, the command that regenerates it, links to its PNG and PDF, and the store key."""
    generated_pngs = {p.name for p in GENERATED.glob("*/*.png")}
    lacking, n_figures = [], 0
    for page in html_pages(html_root):
        html = page.read_text(errors="replace")
        for figure in re.findall(r"<figure\b.*?</figure>", html, flags=re.S):
            src = re.search(r'<img[^>]+src="([^"]+)"', figure)
            # Sphinx copies images into _images/ and suffixes a digit to a name already taken (a record
            # banner's paper-size PNG of the same name): fig.png -> fig1.png
            name = Path(src.group(1)).name if src else ""
            if name not in generated_pngs:
                name = re.sub(r"\d+(\.png)$", r"\1", name)
            if not src or name not in generated_pngs:
                continue
            n_figures += 1
            lines = _provenance_lines(figure)
            if not (len(lines) == 1 and _complete(lines[0])):
                lacking.append(f"{page.relative_to(html_root)}: {Path(src.group(1)).name}")
    assert n_figures >= 40, f"only {n_figures} figures from book/generated found in the chapters"
    for folder in sorted(p for p in GENERATED.iterdir() if (p / f"{p.name}.ipynb").exists()):
        page = html_root / "book" / "generated" / folder.name / f"{folder.name}.html"
        lines = _provenance_lines(page.read_text(errors="replace"))
        for png in sorted(folder.glob("*.png")):
            mine = [line for line in lines if f"<strong>{png.stem}</strong>" in line]
            if not (len(mine) == 1 and _complete(mine[0].split(" · ", 1)[1])):
                lacking.append(f"{page.relative_to(html_root)}: {png.name}")
    assert not lacking, f"figures without their provenance line: {lacking[:10]}"


def test_each_notebook_page_ends_with_its_verdicts_as_the_report_grades_them(html_root: Path) -> None:
    """The build renders each notebook's ledger rows under its page, with the report's statuses (from the
    same stored metrics.json and the same rules); the executed notebook itself holds no verdict."""
    from docutils.nodes import make_id

    from iclbook.report import report_rows

    report: dict[str, dict[str, str]] = {}
    for row in report_rows(ROOT, GENERATED):
        if row.claim.notebook:
            report.setdefault(row.claim.notebook, {})[make_id(row.claim.id or row.claim.label)] = row.status
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py"))
    disagree = []
    for name in names:
        executed = (GENERATED / name / f"{name}.ipynb").read_text()
        assert "icl-verdicts" not in executed and "from iclbook" not in executed, f"{name}: the notebook shows verdicts"
        html = (html_root / "book" / "generated" / name / f"{name}.html").read_text(errors="replace")
        assert "Ledger verdicts" in html, f"{name}: no section 'Ledger verdicts' on its page"
        if name not in report:
            assert "No row of the ledger names" in html, f"{name}: neither verdicts nor the note that it has none"
            continue
        shown = {
            rid: status
            for classes, rid in re.findall(r'<tr class="([^"]*)" id="verdict-([^"]+)"', html)
            for status in re.findall(r"icl-status-(\w+)", classes)
        }
        if shown != report[name]:
            diff = {k: (shown.get(k), report[name].get(k)) for k in shown.keys() | report[name].keys()}
            disagree.append(f"{name}: { ({k: v for k, v in diff.items() if v[0] != v[1]}) }")
    assert not disagree, "verdict tables (page, report):\n" + "\n".join(disagree)


def test_jupyter_books_output_goes_to_a_log_file(html_root: Path) -> None:
    """`icl-book build` keeps its own progress and the final path on the terminal; jupyter-book's hundreds of
    lines (configuration dumps, colour codes) go to ``_build/book-build.log``, whose tail is printed on failure."""
    log = ROOT / "_build" / "book-build.log"
    assert log.exists(), f"{log} is missing: the build did not write jupyter-book's output there"
    assert "build succeeded" in log.read_text(errors="replace")
