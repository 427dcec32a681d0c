"""Notebook pages lead with the science: the setup cells are collapsed or removed on the page.

A setup cell is the ``parameters`` cell, the ``presets`` cell, or a code cell that opens with an
import. Each carries a jupyter-book tag that hides its source (``hide-input``, ``remove-input``) or the
whole cell (``remove-cell``). The parameter table that the runner puts under the title stays: it is
a Markdown cell (``iclbook.execution.parameter_table``) with none of these tags.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
HIDING = frozenset({"hide-input", "remove-input", "remove-cell", "hide-cell"})


def opens_with_an_import(source: str) -> bool:
    """Whether the first statement of a code cell's ``source`` is an import (a cell that does not parse: no)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return bool(body) and isinstance(body[0], (ast.Import, ast.ImportFrom))


def unhidden_setup_cells(path: Path) -> list[str]:
    """The setup cells of the notebook at ``path`` that the page would show, as ``cell N (tags)``."""
    found = []
    for i, cell in enumerate(jupytext.read(path).cells):
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        setup = bool(tags & {"parameters", "presets"}) or opens_with_an_import(cell.source)
        if setup and not tags & HIDING:
            found.append(f"cell {i} ({sorted(tags)})")
    return found


def test_the_check_finds_a_shown_setup_cell(tmp_path: Path) -> None:
    path = tmp_path / "nb.py"
    path.write_text(
        '# %% [markdown]\n# # Title\n\n# %% tags=["parameters"]\nn = 1\n\n# %% tags=["presets", "remove-cell"]\n'
        'PRESETS = {"paper": {"n": 2}}\n\n# %% tags=["hide-input"]\nimport numpy as np\n\n# %%\n'
        "from math import pi\nx = pi\n\n# %%\ny = np.ones(n)\n"
    )
    assert unhidden_setup_cells(path) == ["cell 1 (['parameters'])", "cell 4 ([])"]
    assert opens_with_an_import("import numpy\nx = 1") and not opens_with_an_import("x = 1\nimport numpy")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_setup_cells_are_hidden_on_the_page(path: Path) -> None:
    assert not unhidden_setup_cells(path), f"{path.name}: setup cells shown on the page (tag them hide-input)"
