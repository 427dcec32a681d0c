"""Copy the executed notebooks for nbval's determinism check, longest run first.

``python -m iclbook.nbval_copies GENERATED DEST`` copies ``GENERATED/<name>/<name>.ipynb`` to
``DEST/<rank>_<name>/<name>.ipynb``, where ``rank`` orders the notebooks by the run time recorded in
their manifest (``.icl-run.json``), longest first. pytest collects ``DEST`` in that order, so with
pytest-xdist (``--dist loadscope``: one notebook per scope) the long re-executions start first and
the short ones and the unit tests fill the gaps (LPT scheduling).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .runner import STAMP, cpu_seconds


def executed_notebooks(generated: Path) -> list[tuple[float, str, Path]]:
    """``(seconds, name, path)`` of every executed notebook under ``generated``, longest first."""
    found = []
    for folder in sorted(p for p in Path(generated).iterdir() if p.is_dir()):
        executed = folder / f"{folder.name}.ipynb"
        if not executed.is_file():
            continue
        try:
            seconds = cpu_seconds(json.loads((folder / STAMP).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            seconds = 0.0
        found.append((seconds, folder.name, executed))
    return sorted(found, key=lambda t: (-t[0], t[1]))


def copy_for_nbval(generated: Path, dest: Path) -> list[Path]:
    """Copy each executed notebook into its own folder under ``dest`` (see the module docstring)."""
    found = executed_notebooks(generated)
    width = len(str(max(len(found) - 1, 0)))
    copies = []
    for rank, (_, name, executed) in enumerate(found):
        folder = Path(dest) / f"{rank:0{width}d}_{name}"
        folder.mkdir(parents=True, exist_ok=True)
        copies.append(Path(shutil.copy2(executed, folder / executed.name)))
    return copies


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m iclbook.nbval_copies GENERATED DEST", file=sys.stderr)
        return 2
    copies = copy_for_nbval(Path(args[0]), Path(args[1]))
    print(f"nbval: {len(copies)} executed notebooks copied to {args[1]}, longest run first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
