"""The ledger's verdicts of a notebook (iclbook.verdicts), graded at build time from the stored metrics.

The notebooks do not show verdicts; the book's notebook pages do (iclbook.sphinx_metrics), and a
reader's rerun is graded by ``python -m iclbook.verdicts``. The ledger is not part of any cache key,
so editing a rule changes no key and changes the rendered verdict.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from iclbook.ledger import evaluate, load_claims, status_label
from iclbook.notebooks import discover_all
from iclbook.runs import make_requests
from iclbook.sphinx_metrics import add_verdict_table, notebook_of_page
from iclbook.store import cache_key
from iclbook.verdicts import ENV_ROOT, find_root, ledger_verdicts, main

ROOT = Path(__file__).resolve().parents[2]
LEDGER = (
    "- id: demo-01\n  notebook: demo\n  metric: n\n  claim: 'enough points'\n  reported: 100\n  seed: '000'\n"
    "  section: '§1'\n  kind: min\n  tolerance: 100\n  basis: predicted\n  note: 'a test row'\n"
    "- id: demo-02\n  notebook: demo\n  claim: 'peak below one'\n  reported: 'peak < 1'\n  seed: '000'\n"
    "  section: '§1'\n  kind: predicate\n  predicate: 'max < 1 and ok'\n  basis: theorem\n"
    "- id: other-01\n  notebook: second\n  metric: m\n  claim: 'other'\n  reported: 1.0\n  seed: '000'\n"
    "  section: '§2'\n  kind: abs\n  tolerance: 0.1\n  basis: predicted\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(ROOT / "tests" / "fixtures" / "demo_project", root)
    (root / "book" / "reported").mkdir(parents=True)
    (root / "book" / "reported" / "demo.yml").write_text(LEDGER)
    return root


def stored_run(root: Path, metrics: dict) -> Path:
    """``book/generated/demo/`` as a run leaves it: the executed notebook page and its metrics.json."""
    folder = root / "book" / "generated" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "demo.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def render_page(root: Path) -> tuple[nodes.document, list[str]]:
    """The doctree of the page ``book/generated/demo/demo`` after the extension's ``doctree-read`` handler."""
    deps: list[str] = []
    env = SimpleNamespace(
        srcdir=str(root),
        docname="book/generated/demo/demo",
        doc2path=lambda doc: str(root / f"{doc}.ipynb"),
        config=SimpleNamespace(icl_generated_dir="book/generated"),
        note_dependency=deps.append,
    )
    doctree = new_document("demo", get_default_settings(Parser))
    section = nodes.section(ids=["demo"])
    section += nodes.title("", "Demo notebook")
    doctree += section
    add_verdict_table(SimpleNamespace(env=env), doctree)
    return doctree, deps


def rendered_statuses(doctree: nodes.document) -> dict[str, str]:
    """Row id -> status of the rendered verdict table (from the rows' ids and classes)."""
    found = {}
    for row in doctree.findall(nodes.row):
        status = [c.removeprefix("icl-status-") for c in row["classes"] if c.startswith("icl-status-")]
        if status:
            found[row.children[0].astext()] = status[0]
    return found


def test_table_holds_the_notebooks_rows_with_the_reports_verdicts(project: Path) -> None:
    metrics = {"n": 50, "max": 0.9995, "ok": True}
    table = ledger_verdicts("demo", metrics, root=project)
    assert [r["id"] for r in table.rows] == ["demo-01", "demo-02"]
    claims = [c for c in load_claims(project / "book" / "reported") if c.notebook == "demo"]
    expected = [evaluate(c, metrics) for c in claims]
    assert [r["status"] for r in table.rows] == [e.status for e in expected] == ["differs", "reproduced"]
    assert [r["label"] for r in table.rows] == [status_label(e) for e in expected]
    assert table.rows[0]["rule"] == "value >= 100" and "n = 50" in table.rows[0]["values"]
    assert table.rows[1]["rule"] == "max < 1 and ok" and "max = 0.9995" in table.rows[1]["values"]
    html = table._repr_html_()
    assert 'data-notebook="demo"' in html and 'data-id="demo-01" data-status="differs"' in html
    text = repr(table)
    assert "demo-01" in text and "✗ differs" in text and "✓ identity verified" in text


def test_metrics_default_to_the_runs_metrics_json(project: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps({"n": 500, "max": 2.0, "ok": True}))
    assert [r["status"] for r in ledger_verdicts("demo", root=project).rows] == ["reproduced", "differs"]


def test_without_a_ledger_or_metrics_one_line_marked_as_an_error(tmp_path: Path, monkeypatch) -> None:
    table = ledger_verdicts("demo", {"n": 1}, root=tmp_path)
    assert table.rows == [] and table.error and "Ledger not found" in repr(table) and "\n" not in repr(table)
    nobody = ledger_verdicts("nobody", {}, root=ROOT)
    assert "No row of the ledger names nobody" in repr(nobody) and not nobody.error
    monkeypatch.chdir(tmp_path)
    missing = ledger_verdicts("demo", root=ROOT)
    assert "No metrics.json" in repr(missing) and missing.error


def test_ledger_is_found_from_the_environment_or_the_package(project: Path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_ROOT, str(project))
    assert find_root() == project
    monkeypatch.delenv(ENV_ROOT)
    assert find_root() == ROOT  # iclbook is installed editable: its repository holds the ledger


def test_command_grades_a_rerun_in_its_output_folder(project: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "rerun"
    (out / "demo").mkdir(parents=True)
    (out / "demo" / "metrics.json").write_text(json.dumps({"n": 500, "max": 2.0, "ok": True}))
    assert main(["demo", "--out", str(out), "--root", str(project)]) == 0
    text = capsys.readouterr().out
    assert "demo-01" in text and "✓ reproduced" in text and "✗ identity fails" in text
    # the default output folder is the book's, book/generated/
    stored_run(project, {"n": 50, "max": 0.5, "ok": True})
    assert main(["demo", "--root", str(project)]) == 0
    assert "✗ differs" in capsys.readouterr().out


def test_command_refuses_a_missing_run_in_one_line(project: Path, tmp_path: Path, capsys) -> None:
    assert main(["demo", "--out", str(tmp_path / "nowhere"), "--root", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere/demo/metrics.json" in err and "icl-book run demo" in err
    (tmp_path / "bad" / "demo").mkdir(parents=True)
    (tmp_path / "bad" / "demo" / "metrics.json").write_text("[1, 2]")
    assert main(["demo", "--out", str(tmp_path / "bad"), "--root", str(project)]) == 2
    assert "not a JSON object" in capsys.readouterr().err


def test_notebook_page_is_recognised_by_its_place_in_the_generated_folder(tmp_path: Path) -> None:
    generated = tmp_path / "book" / "generated"
    assert notebook_of_page(generated / "demo" / "demo.ipynb", generated) == "demo"
    assert notebook_of_page(generated / "demo" / "other.ipynb", generated) is None
    assert notebook_of_page(generated / "report.md", generated) is None
    assert notebook_of_page(tmp_path / "elsewhere" / "demo" / "demo.ipynb", generated) is None


def test_notebook_page_ends_with_the_verdict_table_of_its_stored_metrics(project: Path) -> None:
    folder = stored_run(project, {"n": 50, "max": 0.9995, "ok": True})
    doctree, deps = render_page(project)
    last = doctree.children[0].children[-1]
    assert isinstance(last, nodes.section) and last.children[0].astext() == "Ledger verdicts"
    assert rendered_statuses(doctree) == {"demo-01": "differs", "demo-02": "reproduced"}
    assert "python -m iclbook.verdicts demo --out DIR" in last.astext() and "n = 50" in last.astext()
    assert str(folder / "metrics.json") in deps and str(project / "book" / "reported" / "demo.yml") in deps


def test_a_page_of_a_notebook_without_ledger_rows_says_so(project: Path) -> None:
    (project / "book" / "reported" / "demo.yml").write_text(LEDGER.split("- id: other-01")[0].replace("demo", "x"))
    stored_run(project, {"n": 50})
    doctree, _ = render_page(project)
    assert rendered_statuses(doctree) == {} and "No row of the ledger names demo" in doctree.astext()


def test_a_page_with_unreadable_metrics_warns_naming_the_file(project: Path, monkeypatch) -> None:
    warned: list[str] = []
    monkeypatch.setattr("iclbook.sphinx_metrics.logger.warning", lambda msg, **kw: warned.append(msg))
    folder = stored_run(project, {})
    for text in ("[1, 2]", "{not json"):
        (folder / "metrics.json").write_text(text)
        doctree, _ = render_page(project)
        assert "Ledger verdicts" not in doctree.astext()
        assert len(warned) == 1 and str(folder / "metrics.json") in warned.pop()


def test_editing_a_rule_changes_no_cache_key_and_regrades_the_page(project: Path) -> None:
    """A copy of the ledger with one tolerance changed: every key is the same, the rendered verdict flips."""
    reported = project / "book" / "reported" / "demo.yml"
    stored_run(project, {"n": 50, "max": 0.9995, "ok": True})
    notebooks = discover_all(project)[0]

    def keys() -> list[str]:
        return [cache_key(r, project) for r in make_requests(notebooks, project / "out")]

    before_keys, (before, _) = keys(), render_page(project)
    assert rendered_statuses(before)["demo-01"] == "differs"
    for old, new in [
        ("tolerance: 100", "tolerance: 40"),  # the rule that grades demo-01
        ("predicate: 'max < 1 and ok'", "predicate: 'max < 0.5 and ok'"),
        ("kind: abs\n  tolerance: 0.1", "kind: abs\n  tolerance: 0.2"),
        ("note: 'a test row'", "note: 'another note'"),
    ]:
        assert old in reported.read_text()
        reported.write_text(reported.read_text().replace(old, new))
        assert keys() == before_keys, (old, new)
    after, _ = render_page(project)
    assert rendered_statuses(after) == {"demo-01": "reproduced", "demo-02": "differs"}
    reported.write_text(LEDGER + "- not: [valid")  # even a broken ledger keys nothing
    assert keys() == before_keys
