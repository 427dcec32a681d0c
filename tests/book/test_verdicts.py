"""The verdict table of a notebook's last cell (iclbook.verdicts) and the cache key that keeps it honest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iclbook.ledger_rules import ledger_rule_digest
from iclbook.loaders import InputFileError
from iclbook.notebooks import discover_all
from iclbook.pages import evaluate, load_claims, status_label
from iclbook.runs import make_requests
from iclbook.store import cache_key
from iclbook.verdicts import ENV_ROOT, find_root, ledger_verdicts, show_ledger_verdicts

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


def test_without_a_ledger_one_line_and_no_failure(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("IPython.display.display", print)
    table = ledger_verdicts("demo", {"n": 1}, root=tmp_path)
    assert table.rows == [] and "Ledger not found" in repr(table) and "\n" not in repr(table)
    show_ledger_verdicts("demo", {"n": 1}, root=tmp_path)
    assert capsys.readouterr().out.count("\n") == 1
    assert "No row of the ledger names nobody" in repr(ledger_verdicts("nobody", {}, root=ROOT))
    monkeypatch.chdir(tmp_path)
    assert "No metrics.json" in repr(ledger_verdicts("demo", root=ROOT))


def test_ledger_is_found_from_the_environment_or_the_package(project: Path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_ROOT, str(project))
    assert find_root() == project
    monkeypatch.delenv(ENV_ROOT)
    assert find_root() == ROOT  # iclbook is installed editable: its repository holds the ledger


def test_rule_fields_change_the_key_notes_do_not(project: Path) -> None:
    reported = project / "book" / "reported" / "demo.yml"
    nb = next(n for n in discover_all(project)[0] if n.name == "demo")

    def key() -> str:
        return cache_key(make_requests([nb], project / "out")[0], project)

    base, digest = key(), ledger_rule_digest(reported.parent, "demo")
    assert b"a test row" not in digest and b"enough points" not in digest
    for old, new, changes in [
        ("note: 'a test row'", "note: 'another note'", False),
        ("claim: 'enough points'", "claim: 'plenty of points'", False),
        ("section: '§1'\n  kind: min", "section: '§3'\n  kind: min", False),
        ("tolerance: 100", "tolerance: 90", True),
        ("predicate: 'max < 1 and ok'", "predicate: 'max < 2 and ok'", True),
        ("basis: theorem", "basis: construction", True),
        ("kind: abs\n  tolerance: 0.1", "kind: abs\n  tolerance: 0.2", False),  # another notebook's row
    ]:
        text = reported.read_text()
        assert old in text
        reported.write_text(text.replace(old, new))
        assert (key() != base) == changes, (old, new)
        reported.write_text(text)
        assert key() == base
    reported.write_text(LEDGER + "- not: [valid")  # a broken ledger stops the key with one line; never re-keys
    with pytest.raises(InputFileError, match=r"^book/reported/demo.yml:\d+: not valid YAML"):
        key()
