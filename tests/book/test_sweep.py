"""Sweeps over unstated settings: declarations checked before any kernel, the one-at-a-time grid,
one small sweep end to end (cached, resumed, a failing point in one line) and the robustness band."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclbook.cli import main
from iclbook.notebooks import read_notebook
from iclbook.sweep import SweepError, expand, grid_overrides, load_plans

HEADER = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"
TOY = """# %% [markdown]
# # Toy

# %% tags=["parameters"]
a = 2        # a size; range: [1, 10]
b = 0.5      # a fraction; range: (0, 1)
ks = [1, 2]  # a list parameter; range: [1, 5]

# %%
import json
if a == 5:
    raise RuntimeError("a = 5 is not supported")
json.dump({"y": a * a + b}, open("metrics.json", "w"))
"""
SWEEPS = """toy:
  settings:
    a:
      values: [1, 2, 3]
      why: "the paper does not state a."
      paper: "000"
"""
LEDGER = """- id: toy-01
  notebook: toy
  metric: y
  claim: y stays small
  reported: 4.5
  seed: "000"
  section: "§1"
  kind: max
  tolerance: 4.5
  basis: predicted
  note: "exact arithmetic; any y above 4.5 is detected."
"""


def project(root: Path, sweeps: str = SWEEPS) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "iclcore").mkdir()
    (root / "book" / "reported").mkdir(parents=True)
    (root / "requirements.lock").write_text("numpy==0\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: book/generated/toy/toy\n")
    (root / "notebooks" / "toy.py").write_text(HEADER + TOY)
    (root / "notebooks" / "sweeps.yml").write_text(sweeps)
    (root / "book" / "reported" / "toy.yml").write_text(LEDGER)
    return root


def plans_of(root: Path):
    return load_plans(root, [read_notebook(root / "notebooks" / "toy.py")])


def test_one_at_a_time_grid_shares_the_preset(tmp_path: Path) -> None:
    text = SWEEPS + '    b:\n      values: [0.25, 0.5, 0.75]\n      why: "not stated."\n      paper: "001"\n'
    plan = plans_of(project(tmp_path, text))["toy"]
    points = expand(plan.notebook, plan.grid)
    assert [p.label for p in points] == ["preset", "a=1", "a=3", "b=0.25", "b=0.75"]
    assert points[1].params == {"a": 1, "b": 0.5, "ks": [1, 2]}
    assert len(expand(plan.notebook, plan.grid, full=True)) == 9


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("a:\n      values: [1, 2, 11]", "parameter 'a' = 11 is outside its range [1, 10]"),
        ("a:\n      values: []", "parameter 'a': the grid is empty"),
        ("a:\n      values: [1, 2]", "parameter 'a' needs at least 3 distinct values"),
        ("c:\n      values: [1, 2, 3]", "has no parameter 'c'"),
        ("ks:\n      values: [1, 2, 3]", "parameter 'ks' of toy is a list"),
        ("b:\n      values: [0.2, 0.5, 1.0]", "parameter 'b' = 1.0 is outside its range (0, 1)"),
    ],
)
def test_bad_declarations_are_refused_naming_the_parameter(tmp_path: Path, setting: str, message: str) -> None:
    text = f'toy:\n  settings:\n    {setting}\n      why: "x"\n      paper: "000"\n'
    with pytest.raises(SweepError, match="^notebooks/sweeps.yml: toy") as exc:
        plans_of(project(tmp_path, text))
    assert message in str(exc.value)


def test_bad_command_line_grids_are_refused_before_any_kernel(tmp_path: Path, capsys) -> None:
    root = project(tmp_path)
    plan = plans_of(root)["toy"]
    with pytest.raises(SweepError, match="parameter 'b' is not swept in toy"):
        grid_overrides(plan, [["b", "[0.1, 0.2]"]])
    with pytest.raises(SweepError, match="parameter 'a': the grid is empty"):
        grid_overrides(plan, [["a", "[]"]])
    with pytest.raises(SweepError, match="parameter 'a' = 0 is outside its range"):
        grid_overrides(plan, [["a", "[0, 1]"]])
    assert grid_overrides(plan, [["a", "[4, 6]"]]) == {"a": (4, 6)}
    for args in (["-p", "a", "[20]"], ["-p", "b", "[0.2]"], ["-p", "a", "[]"]):
        assert main(["--root", str(root), "sweep", "toy", *args]) == 2
        assert "icl-book: error:" in capsys.readouterr().err
    assert main(["--root", str(root), "sweep", "nothere"]) == 2
    assert not (root / ".icl-store" / "entries").exists() or not any((root / ".icl-store" / "entries").iterdir())


@pytest.mark.slow
def test_sweep_end_to_end_cached_band_and_failing_point(tmp_path: Path, capsys) -> None:
    from iclbook.report import report_rows
    from iclbook.robustness import sweep_bands

    root = project(tmp_path)
    assert main(["--root", str(root), "sweep", "toy", "-j", "1"]) == 0
    assert "3 points, 3 executed, 0 cached, 0 failed" in capsys.readouterr().out
    assert main(["--root", str(root), "sweep", "toy", "-j", "1"]) == 0  # no point is executed twice
    assert "3 points, 0 executed, 3 cached, 0 failed" in capsys.readouterr().out

    rows = report_rows(root, root / "book" / "generated")  # the book itself was never built: status missing
    bands, lines = sweep_bands(root, rows, tmp_path / "gen")
    b = bands[id(rows[0])]
    assert (b.label, b.holds, b.n, b.failing) == ("fragile", 2, 3, ("a=3",))  # y = a^2 + 1/2 <= 4.5 fails at a = 3
    assert (tmp_path / "gen" / "sweep-toy.png").exists() and (tmp_path / "gen" / "sweep-toy.pdf").exists()
    assert any("| `toy` | `a` | 1, **2**, 3 |" in line for line in lines)

    # a failing point is one line with its parameters; the others are served (the preset from the store)
    assert main(["--root", str(root), "sweep", "toy", "-j", "1", "-p", "a", "[2, 5]"]) == 1
    out = capsys.readouterr()
    assert "2 points, 0 executed, 1 cached, 1 failed" in out.out
    failed = [line for line in out.err.splitlines() if line.startswith("  toy (a=5): ")]
    assert len(failed) == 1 and "a = 5 is not supported" in failed[0]
    (root / "notebooks" / "sweeps.yml").write_text(SWEEPS.replace("[1, 2, 3]", "[1, 2, 5]"))
    bands, _ = sweep_bands(root, rows, tmp_path / "gen")  # the failed point is a failing setting, not an unrun one
    assert bands[id(rows[0])].failing == ("a=5 (the notebook fails there)",)


def _row(status_value: float, **extra):
    from iclbook.ledger import Claim, evaluate

    d = {
        "id": extra.pop("id", "toy-01"),
        "notebook": "toy",
        "metric": "y",
        "claim": "y small",
        "reported": 4.5,
        "seed": extra.pop("seed", "000"),
        "section": "§1",
        "kind": "max",
        "tolerance": 4.5,
        "basis": extra.pop("basis", "predicted"),
        **extra,
    }
    return evaluate(Claim.from_dict(d, "toy.yml"), {"y": status_value})


def test_band_labels() -> None:
    from iclbook.ledger import evaluate
    from iclbook.sweep import Point, band

    row = _row(1.0)
    pts = [Point("toy", {}, ()), Point("toy", {}, (("a", 1),)), Point("toy", {}, (("a", 3),))]
    ok, bad = {"y": 1.0}, {"y": 9.0}
    assert band(row.claim, [], evaluate).label == "not swept"
    assert band(row.claim, [(p, None) for p in pts], evaluate).label == "not swept"
    assert band(row.claim, [(p, ok) for p in pts], evaluate).describe() == "robust: holds at 3 of 3 settings"
    fragile = band(row.claim, [(pts[0], ok), (pts[1], ok), (pts[2], bad)], evaluate)
    assert fragile.describe() == "fragile: holds at 2 of 3 settings; fails at a=3"
    assert band(row.claim, [(pts[0], bad), (pts[1], ok), (pts[2], ok)], evaluate).label == "fails"
    assert band(row.claim, [(pts[0], ok), (pts[1], ok), (pts[2], None)], evaluate).label == "partial"
    assert band(row.claim, [(pts[0], ok), (pts[1], {}), (pts[2], ok)], evaluate).label == "fragile"  # metric missing


def test_headline_counts_and_bands_in_the_report() -> None:
    from iclbook.report import outcome_counts, render_report
    from iclbook.sweep import Band

    rows = [
        _row(1.0, id="toy-01"),
        _row(1.0, id="toy-02"),
        _row(9.0, id="toy-03", diagnosis="setting", diagnosis_note="holds for M >= 128"),
        _row(9.0, id="toy-04", diagnosis="open", diagnosis_note="tried two seeds", seed="002"),
        _row(9.0, id="toy-05", seed="002"),
    ]
    bands = {id(rows[0]): Band("robust", 3, 3), id(rows[1]): Band("fragile", 2, 3, ("M=64",))}
    c = outcome_counts(rows, bands)
    assert (c["predicted"], c["reproduced"], c["robust"], c["explained"], c["open"]) == (5, 2, 1, 1, 2)
    text = render_report(rows, bands=bands)
    assert "| 000 | quick | 3 | 2 | 1 | 1 | 0 | 0 | 0 + 0 |" in text
    assert "| **all** | quick | 5 | 2 | 1 | 1 | 2 | 0 | 0 + 0 |" in text
    assert (
        "✓ reproduced · fragile" in text and "*Robustness:* fragile: holds at 2 of 3 settings; fails at M=64." in text
    )
    closing = text.split("## Robustness across unstated settings", 1)[1]
    assert "1 robust · 1 fragile" in closing and "**toy-02** (predicted, `toy`)" in closing
