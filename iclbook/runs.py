"""What to run and what happened: :class:`RunRequest`, :class:`RunResult`, :class:`RunSummary`.

Plain records shared by the store, the execution, the progress line and the scheduler
(imports :mod:`iclbook.notebooks` only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .notebooks import QUICK, Notebook


@dataclass(frozen=True)
class RunRequest:
    """One notebook execution to perform: the notebook, its resolved typed parameters, preset and output folder."""

    notebook: Notebook
    params: dict[str, Any]
    preset: str
    out_dir: Path

    @property
    def executed_path(self) -> Path:
        return self.out_dir / f"{self.notebook.name}.ipynb"


@dataclass
class RunResult:
    """What happened to one notebook."""

    name: str
    status: str  # "executed", "cached", "failed" or "interrupted"
    seconds: float = 0.0
    error: str = ""
    out_dir: Path | None = None
    note: str = ""


@dataclass
class RunSummary:
    """The results of one ``run`` call, in book order."""

    results: list[RunResult] = field(default_factory=list)

    @property
    def failures(self) -> list[RunResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def executed(self) -> list[RunResult]:
        return [r for r in self.results if r.status == "executed"]

    @property
    def ok(self) -> bool:
        return not self.failures and all(r.status != "interrupted" for r in self.results)


def make_requests(
    notebooks: Sequence[Notebook],
    out_root: Path,
    preset: str = QUICK,
    overrides: dict[str, Any] | None = None,
) -> list[RunRequest]:
    """Resolve parameters for each notebook (a repeated notebook once).

    Every selected notebook must define ``preset`` and every override name;
    otherwise :class:`~iclbook.notebooks.NotebookError` names the problem.
    """
    unique = {nb.name: nb for nb in notebooks}
    return [RunRequest(nb, nb.resolve(preset, overrides), preset, out_root / nb.name) for nb in unique.values()]
