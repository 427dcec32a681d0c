"""The executed notebooks of ``book/generated``, checked without a kernel.

``make test`` executes each notebook once (the runner); nbval re-executes only a few of them
(``iclbook.nbval_copies``). Every notebook's stored execution is checked here instead: its output folder
holds exactly the files of its manifest with their SHA-256 (``verify_folder``), for the cache key of the
current source, parameters and ``iclcore`` files (so the outputs are those of the code under test), the
executed notebook has no error output, and each cell tagged ``nbval-check-output`` has an output for nbval
to compare against.

Without ``book/generated`` (pytest run by hand before ``icl-book run``) these tests skip, unless
``ICL_REQUIRE_GENERATED=1`` (set by ``make test``), where a missing execution fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from iclbook.execution import failing_cell
from iclbook.nbval_copies import TAG
from iclbook.notebooks import discover
from iclbook.runs import make_requests
from iclbook.store import cache_key, verify_folder

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "book" / "generated"
REQUESTS = {r.notebook.name: r for r in make_requests(discover(ROOT), GENERATED)}


def _executed(name: str) -> Path:
    executed = REQUESTS[name].executed_path
    if not executed.is_file():
        if os.environ.get("ICL_REQUIRE_GENERATED") == "1":
            pytest.fail(f"{name} has not been executed ({executed.relative_to(ROOT)})")
        pytest.skip(f"{name} has not been run (icl-book run {name})")
    return executed


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_stored_outputs_match_manifest_and_current_key(name: str) -> None:
    _executed(name)
    request = REQUESTS[name]
    problem = verify_folder(request.out_dir, cache_key(request, ROOT))
    assert not problem, f"book/generated/{name}: {problem} (run `icl-book run {name}`)"


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_stored_notebook_has_no_error_and_checked_outputs(name: str) -> None:
    executed = _executed(name)
    assert failing_cell(executed) == "", f"{name}: {failing_cell(executed)}"
    cells = json.loads(executed.read_text())["cells"]
    checked = [c for c in cells if c.get("cell_type") == "code" and TAG in c.get("metadata", {}).get("tags", [])]
    assert checked, f"{name}: no cell tagged {TAG}"
    empty = [i for i, c in enumerate(checked) if not c.get("outputs")]
    assert not empty, f"{name}: cells tagged {TAG} without output (#{empty})"
