"""Choose and copy the executed notebooks that nbval re-executes (the determinism check), longest run first.

``make test`` executes every notebook once, through the runner (``icl-book run``: cached in the store).
A second execution of *every* notebook by nbval doubled the notebooks' share of the test time, so the
determinism check re-executes a subset only (:func:`select`), chosen deterministically:

* ``cheapest``: the ``K`` notebooks with the smallest recorded CPU time (default 2), every run;
* ``changed``: every notebook whose cells tagged ``nbval-check-output`` differ between the base revision
  (``ICL_NBVAL_BASE``, default ``HEAD~1``) and the working tree, or that is new since then, whatever it costs;
* ``rotating``: one more notebook, picked by the commit (``git rev-parse HEAD``; the day when there is no
  git) among those that fit in what is left of the CPU budget (default 60 s), so that successive commits
  cover every notebook that fits.

``ICL_NBVAL=all`` (or ``make test NBVAL=all``) re-executes every notebook; ``ICL_NBVAL=a,b`` exactly these.
The notebooks that are not re-executed are still checked, without a kernel, by
``tests/book/test_stored_notebooks.py``: the stored executed notebook has no error output and the output
folder matches its manifest hashes and the current cache key.

Costs are the CPU seconds recorded in each output folder's manifest (``.icl-run.json``: wall time x
threads), or else the committed hint ``notebooks/seconds.json``.

``python -m iclbook.nbval_copies GENERATED DEST`` prints the selection (each notebook with its reason and
cost) and copies ``GENERATED/<name>/<name>.ipynb`` to ``DEST/<rank>_<name>/<name>.ipynb`` for the selected
ones, ``rank`` ordering them longest first: pytest collects ``DEST`` in that order, so with pytest-xdist
(``--dist loadscope``: one notebook per scope) the long re-executions start first (LPT scheduling).
``--all`` copies every executed notebook (the former behaviour).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .loaders import SECONDS_HINT as SECONDS_FILE
from .loaders import InputFileError, load_file
from .scheduling import SECONDS_HINT, cpu_seconds
from .store import STAMP

TAG = "nbval-check-output"
BUDGET_ENV, SELECT_ENV, BASE_ENV = "ICL_NBVAL_BUDGET", "ICL_NBVAL", "ICL_NBVAL_BASE"
DEFAULT_BUDGET = 60.0  # CPU seconds of re-execution per `make test` (the cheapest and the rotating ones)
DEFAULT_CHEAPEST = 2


@dataclass(frozen=True)
class Choice:
    name: str
    seconds: float  # recorded CPU seconds (0.0 when unknown)
    reason: str  # "cheapest", "changed", "rotating (...)", "requested"


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


def copy_for_nbval(generated: Path, dest: Path, names: set[str] | None = None) -> list[Path]:
    """Copy each executed notebook (or those in ``names``) into its own folder under ``dest``, longest first."""
    found = [t for t in executed_notebooks(generated) if names is None or t[1] in names]
    width = len(str(max(len(found) - 1, 0)))
    copies = []
    for rank, (_, name, executed) in enumerate(found):
        folder = Path(dest) / f"{rank:0{width}d}_{name}"
        folder.mkdir(parents=True, exist_ok=True)
        copies.append(Path(shutil.copy2(executed, folder / executed.name)))
    return copies


# --- the cells nbval compares ---------------------------------------------------------------------------

_CELL = re.compile(r"^# %%(.*)$", re.M)


def checked_cells(source: str) -> list[str]:
    """Sources of the py:percent cells tagged ``nbval-check-output``, in order."""
    marks = list(_CELL.finditer(source))
    cells = []
    for i, m in enumerate(marks):
        if TAG in m.group(1):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(source)
            cells.append(source[m.end() : end].strip())
    return cells


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def changed_checked_cells(root: Path, names: list[str], base: str) -> tuple[set[str], str]:
    """Notebooks whose ``nbval-check-output`` cells differ between git revision ``base`` and the working tree
    (a notebook absent at ``base`` counts as changed), and '' or why none could be compared."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}") is None:
        return set(), f"no git revision {base!r} to compare with"
    changed = set()
    for name in names:
        path = root / "notebooks" / f"{name}.py"
        old = _git(root, "show", f"{base}:notebooks/{name}.py")
        now = path.read_text() if path.is_file() else ""
        if old is None or checked_cells(old) != checked_cells(now):
            changed.add(name)
    return changed, ""


# --- the selection ------------------------------------------------------------------------------------------


def costs(root: Path, generated: Path) -> dict[str, float]:
    """CPU seconds per executed notebook: its manifest's, else the quick hint of ``notebooks/seconds.json``."""
    try:
        hint = load_file(root / SECONDS_HINT, SECONDS_FILE, SECONDS_HINT.as_posix()).get("quick", {})
    except (OSError, InputFileError):
        hint = {}  # the hint only orders the copies
    return {name: seconds or hint.get(name, 0.0) for seconds, name, _ in executed_notebooks(generated)}


def rotation_seed(root: Path) -> tuple[int, str]:
    """The number that picks the rotating notebook: the commit hash, or the day's ordinal without git."""
    head = (_git(root, "rev-parse", "HEAD") or "").strip()
    if re.fullmatch(r"[0-9a-f]{40,64}", head):
        return int(head, 16), f"commit {head[:10]}"
    today = datetime.date.today()
    return today.toordinal(), f"day {today.isoformat()}"


def select(
    root: Path,
    generated: Path,
    *,
    budget: float = DEFAULT_BUDGET,
    cheapest: int = DEFAULT_CHEAPEST,
    base: str = "HEAD~1",
    request: str = "",
    seed: tuple[int, str] | None = None,
) -> tuple[list[Choice], list[str]]:
    """The notebooks to re-execute (see the module docstring) and notes on the selection.

    ``request``: '' (the rule above), ``all``, or comma-separated names. ``seed``: ``(number, label)``
    overriding :func:`rotation_seed` (tests).
    """
    cost = costs(root, generated)
    names = sorted(cost)
    notes: list[str] = []
    if request.strip():
        wanted = names if request.strip() == "all" else [n.strip() for n in request.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            raise ValueError(f"{SELECT_ENV}: no executed notebook {unknown}; executed: {names}")
        return [Choice(n, cost[n], "requested") for n in wanted], notes
    chosen: dict[str, Choice] = {}
    for name in sorted(names, key=lambda n: (cost[n], n))[: max(cheapest, 0)]:
        chosen[name] = Choice(name, cost[name], "cheapest")
    changed, why_not = changed_checked_cells(root, names, base)
    if why_not:
        notes.append(f"changed cells not compared: {why_not}")
    for name in sorted(changed - set(chosen)):
        chosen[name] = Choice(name, cost[name], f"{TAG} cells changed since {base}")
    left = budget - sum(c.seconds for c in chosen.values())
    fits = [n for n in names if n not in chosen and cost[n] <= left]
    number, label = seed if seed is not None else rotation_seed(root)
    if fits:
        pick = fits[number % len(fits)]
        chosen[pick] = Choice(
            pick, cost[pick], f"rotating: {label} picks 1 of the {len(fits)} that fit in {left:.0f} s"
        )
    over = sorted(n for n in names if n not in chosen and cost[n] > max(left, 0.0))
    if over:
        notes.append(f"never rotated (over the {budget:.0f} s budget; run with {SELECT_ENV}=all): {', '.join(over)}")
    return sorted(chosen.values(), key=lambda c: (-c.seconds, c.name)), notes


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    every = "--all" in args
    args = [a for a in args if a != "--all"]
    if len(args) != 2:
        print("usage: python -m iclbook.nbval_copies [--all] GENERATED DEST", file=sys.stderr)
        return 2
    generated, dest = Path(args[0]), Path(args[1])
    if every:
        copies = copy_for_nbval(generated, dest)
        print(f"nbval: all {len(copies)} executed notebooks copied to {dest}, longest run first")
        return 0
    root = generated.resolve().parents[1]  # <root>/book/generated
    try:
        chosen, notes = select(
            root,
            generated,
            budget=float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET)),
            base=os.environ.get(BASE_ENV, "HEAD~1"),
            request=os.environ.get(SELECT_ENV, ""),
        )
    except ValueError as exc:
        print(f"nbval: error: {exc}", file=sys.stderr)
        return 2
    dest.mkdir(parents=True, exist_ok=True)  # pytest is given the folder even when nothing is re-executed
    copies = copy_for_nbval(generated, dest, {c.name for c in chosen})
    total = len(executed_notebooks(generated))
    print(
        f"nbval: re-executing {len(copies)} of {total} notebooks ({sum(c.seconds for c in chosen):.0f} CPU s recorded);"
        " the others are checked without a kernel (tests/book/test_stored_notebooks.py)"
    )
    for c in chosen:
        print(f"  {c.name:24s} {c.seconds:6.1f} s  {c.reason}")
    for note in notes:
        print(f"  ({note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
