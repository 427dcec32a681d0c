"""Which executed notebooks nbval re-executes in `make test` (``iclbook.nbval_copies.select``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from iclbook.nbval_copies import checked_cells, main, select
from iclbook.store import STAMP

COSTS = {"a": 2.0, "b": 3.0, "c": 10.0, "d": 20.0, "e": 40.0, "f": 90.0}


def _notebook(checked: str) -> str:
    return f'# %% tags=["parameters"]\nK = 8\n\n# %%\nx = K\n\n# %% tags=["nbval-check-output"]\nprint({checked})\n'


def _project(tmp_path: Path, git: bool = True) -> Path:
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    for name, seconds in COSTS.items():
        (root / "notebooks" / f"{name}.py").write_text(_notebook("x"))
        out = root / "book" / "generated" / name
        out.mkdir(parents=True)
        (out / f"{name}.ipynb").write_text("{}")
        (out / STAMP).write_text(json.dumps({"seconds": seconds / 2, "threads": 2}))
    if git:
        for args in (
            ["init", "-q"],
            ["add", "notebooks"],
            ["commit", "-qm", "one"],
            ["commit", "-qm", "two", "--allow-empty"],
        ):
            subprocess.run(
                ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                check=True,
                capture_output=True,
            )
    return root


def test_checked_cells_reads_tagged_percent_cells() -> None:
    src = _notebook("x") + '\n# %% tags=["nbval-check-output", "hide-input"]\nprint(2)\n# %%\ny = 1\n'
    assert checked_cells(src) == ["print(x)", "print(2)"]
    assert checked_cells("x = 1\n") == []


def test_cheapest_and_one_rotating_within_budget(tmp_path: Path) -> None:
    root = _project(tmp_path)
    gen = root / "book" / "generated"
    picks = set()
    for number in range(12):
        chosen, notes = select(root, gen, budget=30.0, cheapest=2, seed=(number, "test"))
        reasons = {c.name: c.reason for c in chosen}
        assert reasons["a"] == reasons["b"] == "cheapest"
        assert len(chosen) == 3 and sum(c.seconds for c in chosen) <= 30.0
        (rotating,) = set(reasons) - {"a", "b"}
        assert reasons[rotating].startswith("rotating") and rotating in {"c", "d"}  # e, f do not fit in 25 s
        picks.add(rotating)
        assert any("e, f" in n for n in notes)  # named as never rotated
    assert picks == {"c", "d"}  # the rotation covers every notebook that fits
    assert [c.name for c in select(root, gen, budget=30.0, seed=(0, "t"))[0]] == ["c", "b", "a"]  # longest first
    assert select(root, gen, budget=30.0, seed=(5, "t")) == select(root, gen, budget=30.0, seed=(5, "t"))


def test_changed_checked_cells_are_always_reexecuted(tmp_path: Path) -> None:
    root = _project(tmp_path)
    gen = root / "book" / "generated"
    (root / "notebooks" / "f.py").write_text(_notebook("x") + "\n# %%\ny = 2  # a cell that nbval does not compare\n")
    assert "f" not in {c.name for c in select(root, gen, budget=30.0, seed=(0, "t"))[0]}
    (root / "notebooks" / "f.py").write_text(_notebook("x + 1"))
    chosen = {c.name: c.reason for c in select(root, gen, budget=30.0, seed=(0, "t"))[0]}
    assert "changed" in chosen["f"]  # over the budget, re-executed all the same
    assert set(chosen) == {"a", "b", "f"}  # and it used up the budget: no rotating notebook


def test_without_git_and_explicit_requests(tmp_path: Path) -> None:
    root = _project(tmp_path, git=False)
    gen = root / "book" / "generated"
    chosen, notes = select(root, gen, budget=30.0, base="HEAD~1")
    assert {c.reason for c in chosen if c.name in "ab"} == {"cheapest"} and len(chosen) == 3
    assert any("no git revision" in n for n in notes)
    assert {c.name for c in select(root, gen, request="all")[0]} == set(COSTS)
    assert [c.name for c in select(root, gen, request="f, c")[0]] == ["f", "c"]
    with pytest.raises(ValueError, match="nope"):
        select(root, gen, request="nope")


def test_main_copies_the_selection_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path)
    dest = tmp_path / "copies"
    assert main([str(root / "book" / "generated"), str(dest)]) == 0
    out = capsys.readouterr().out
    copied = sorted(p.parent.name.split("_", 1)[1] for p in dest.glob("*/*.ipynb"))
    assert len(copied) == 3 and {"a", "b"} <= set(copied)
    assert "re-executing 3 of 6" in out and "cheapest" in out and "rotating" in out
    assert main(["--all", str(root / "book" / "generated"), str(tmp_path / "every")]) == 0
    assert len(list((tmp_path / "every").glob("*/*.ipynb"))) == 6
