"""What a notebook's import cell loads: torch only where a model is trained, ``scipy.stats`` only
where a function needs it, and ``torch._dynamo`` never from our code (each is seconds of start-up
per notebook kernel).

Each check runs in a fresh interpreter, so modules imported by other tests do not count.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMPY_NOTEBOOKS = ("mp_spectrum", "dmft_scaling")  # no torch model is trained in these


def _loaded_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after running ``code`` in a fresh interpreter on this checkout."""
    probe = "\nimport json as _json, sys as _sys\nprint(_json.dumps(sorted(_sys.modules)))\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code + probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _import_cell(name: str) -> str:
    tree = ast.parse((ROOT / "notebooks" / f"{name}.py").read_text())
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom))


def test_numpy_notebooks_import_cells_load_neither_torch_nor_scipy_stats():
    cells = [_import_cell(name) for name in NUMPY_NOTEBOOKS]
    assert all("iclcore" in cell for cell in cells)
    loaded = _loaded_after("\n".join(cells))
    assert "iclcore.stats" in loaded  # the module that used to load scipy.stats is imported
    assert {"torch", "scipy.stats", "scipy.signal"}.isdisjoint(loaded)


def test_importing_every_iclcore_module_never_loads_torch_dynamo():
    code = (
        "import importlib, pkgutil, iclcore\n"
        "for m in pkgutil.walk_packages(iclcore.__path__, 'iclcore.'):\n"
        "    importlib.import_module(m.name)\n"
    )
    loaded = _loaded_after(code)
    assert {"torch", "iclcore.models.training", "iclcore.gd.depth_probe"} <= loaded
    assert "torch._dynamo" not in loaded
