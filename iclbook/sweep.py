"""Sweeps over the settings the papers leave unstated, and the robustness band of each ledger row.

Declared ranges
---------------
``notebooks/sweeps.yml`` lists, per notebook, the settings its paper does not state, each with at least
three ``values``, a one-line ``why`` and the ``paper`` (seed) that leaves it open. :func:`load_plans` reads
and checks it against the notebooks' declared parameter domains (``range:``/``choices:`` comments of the
parameters cell, :mod:`iclbook.notebooks`): an unknown notebook or parameter, a list-valued parameter, a
grid with fewer than three values, or a value outside the domain is a :class:`SweepError` naming the
parameter, before any kernel starts.

Grid
----
:func:`expand` makes the points: one-at-a-time around the quick preset (each setting takes its values
alone, the others stay at the preset; the preset point is shared), or the full product (``full=True``).
Points with the same resolved parameters are one point. Each point is a normal run in the
content-addressed store (:func:`iclbook.store.cache_key` of the quick preset with the point's
parameters), so the preset point is the book's own quick run, a repeated sweep is all cache hits and an
interrupted one resumes. :func:`run_sweep` serves the points with ``jobs`` local workers or on Dask
(``scheduler``, :class:`iclbook.distributed.DaskLauncher`), with the usual progress line; a failing
point is one line naming its parameters and the others go on.

Bands
-----
:func:`stored_points` reads, without executing anything, the metrics of every point whose run the store
holds under its *current* key. :func:`band` evaluates one ledger row's rule (the report's ``evaluate``,
passed in, so that this module does not import :mod:`iclbook.ledger`) at every stored point:
``robust`` (holds at every point of the grid), ``fragile`` (holds at the preset, fails at some point),
``fails`` (fails at the preset), ``partial`` (holds where run, some points not in the store) or
``not swept``. :func:`spec_curve` draws the specification curve (Simonsohn, Simmons & Nelson 2020) of
one row's metric over the points.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .execution import Interrupts
from .loaders import SWEEPS as SWEEPS_FILE
from .loaders import InputFileError, load_file
from .notebooks import (
    MAX_LITERAL_CHARS,
    QUICK,
    Notebook,
    NotebookError,
    brief,
    check_type,
    is_sequence,
    python_literal,
)
from .runs import RunRequest, RunResult
from .scheduling import execute_requests, expected_seconds
from .store import cache_key, cleanup_stale_temp, import_scans, store_dir, verify_folder

__all__ = [
    "FAILED_POINTS",
    "MAX_POINTS",
    "MIN_VALUES",
    "SWEEPS",
    "Band",
    "Plan",
    "Point",
    "Setting",
    "SweepError",
    "SweepSummary",
    "add_command",
    "band",
    "cmd_sweep",
    "count_points",
    "expand",
    "grid_overrides",
    "load_plans",
    "point_label",
    "run_sweep",
    "spec_curve",
    "stored_points",
]

#: The declared ranges of unstated settings, relative to the project root.
SWEEPS = Path("notebooks") / "sweeps.yml"
#: The smallest grid of a declared setting (at least three settings of each).
MIN_VALUES = 3
#: The most points a sweep runs unless ``--max-points`` allows more (each point is a notebook run).
MAX_POINTS = 500
_SEEDS = ("000", "001", "002", "003", "004")


class SweepError(NotebookError):
    """A sweep declaration or a grid given on the command line is refused (one line, naming the parameter)."""


@dataclass(frozen=True)
class Setting:
    """One unstated setting of a notebook: its name, grid values, the reason for the range, the paper."""

    name: str
    values: tuple[Any, ...]
    why: str = ""
    paper: str = ""


@dataclass(frozen=True)
class Plan:
    """The sweep of one notebook: its unstated settings and the row its figure shows (``""``: the default)."""

    notebook: Notebook
    settings: tuple[Setting, ...]
    figure: str = ""

    @property
    def grid(self) -> dict[str, tuple[Any, ...]]:
        return {s.name: s.values for s in self.settings}


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the resolved parameters and the settings that differ from the preset (``()``: the preset)."""

    notebook: str
    params: dict[str, Any] = field(hash=False)
    changed: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        return point_label(self.changed)


def point_label(changed: Sequence[tuple[str, Any]]) -> str:
    """``"M=64, sigma=0.2"``, or ``"preset"`` for the preset point."""
    return ", ".join(f"{k}={python_literal(v)}" for k, v in changed) or "preset"


# --------------------------------------------------------------------------- declarations
def check_values(nb: Notebook, name: str, values: Any, where: str) -> tuple[Any, ...]:
    """``values`` as a tuple of the parameter's type, each inside its declared domain; else a :class:`SweepError`."""
    if name not in nb.parameters:
        raise SweepError(
            f"{where}: notebook {nb.name!r} has no parameter {name!r}; its parameters are: {', '.join(nb.parameters)}"
        )
    default = nb.parameters[name]
    if is_sequence(default):
        raise SweepError(f"{where}: parameter {name!r} of {nb.name} is a list; only scalar settings are swept")
    if not isinstance(values, (list, tuple)):
        raise SweepError(f"{where}: parameter {name!r}: the grid must be a list of values, got {brief(values)}")
    if not values:
        raise SweepError(f"{where}: parameter {name!r}: the grid is empty")
    out = []
    for v in values:
        try:
            typed = check_type(v, default, name)
            if name in nb.ranges:
                nb.ranges[name].check(name, typed, f"notebooks/{nb.path.name}")
        except NotebookError as exc:
            raise SweepError(f"{where}: {exc}") from None
        out.append(typed)
    return tuple(dict.fromkeys(out))


def load_plans(root: Path, notebooks: Sequence[Notebook]) -> dict[str, Plan]:  # noqa: C901 (the checks of notebooks/sweeps.yml per notebook and setting, in file order, each naming its place)
    """The checked sweep of every notebook in ``notebooks/sweeps.yml`` (see the module docstring)."""
    path = root / SWEEPS
    if not path.exists():
        return {}
    where = SWEEPS.as_posix()
    try:
        data = load_file(path, SWEEPS_FILE, where) or {}
    except InputFileError as exc:
        raise SweepError(str(exc)) from None
    if not isinstance(data, dict):
        raise SweepError(f"{where}: must map notebook names to their sweeps")
    by_name = {nb.name: nb for nb in notebooks}
    plans = {}
    for name, spec in data.items():
        if name not in by_name:
            raise SweepError(f"{where}: unknown notebook {name!r}")
        if not isinstance(spec, dict) or not isinstance(spec.get("settings"), dict) or not spec["settings"]:
            raise SweepError(f"{where}: {name}: needs `settings:`, a mapping of parameter names")
        unknown = sorted(set(spec) - {"settings", "figure"})
        if unknown:
            raise SweepError(f"{where}: {name}: unknown keys {unknown} (allowed: settings, figure)")
        nb, settings = by_name[name], []
        for pname, s in spec["settings"].items():
            at = f"{where}: {name}.{pname}"
            if not isinstance(s, dict) or set(s) != {"values", "why", "paper"}:
                raise SweepError(f"{at}: needs exactly `values`, `why` and `paper`")
            values = check_values(nb, str(pname), s["values"], at)
            if len(values) < MIN_VALUES:
                raise SweepError(f"{at}: parameter {pname!r} needs at least {MIN_VALUES} distinct values, got {values}")
            if not str(s["why"] or "").strip():
                raise SweepError(f"{at}: parameter {pname!r}: `why` (the reason for the range) is empty")
            if str(s["paper"]) not in _SEEDS:
                raise SweepError(f"{at}: paper {s['paper']!r} is not one of {_SEEDS}")
            settings.append(Setting(str(pname), values, str(s["why"]).strip(), str(s["paper"])))
        plans[name] = Plan(nb, tuple(settings), str(spec.get("figure") or ""))
    return plans


def grid_overrides(plan: Plan, pairs: Sequence[Sequence[str]] | None) -> dict[str, tuple[Any, ...]]:
    """The plan's grid with ``-p NAME "[v1, v2]"`` pairs replacing a setting's values (checked like the file).

    A name that is not one of the notebook's swept settings, a value that is not a list literal, an empty
    list or a value outside the parameter's domain is a :class:`SweepError` naming the parameter.
    """
    grid = dict(plan.grid)
    for name, raw in pairs or []:
        if name not in grid:
            raise SweepError(
                f"parameter {name!r} is not swept in {plan.notebook.name} (the paper states it, or it is not a "
                f"setting); its swept settings are: {', '.join(grid) or 'none'} ({SWEEPS.as_posix()})"
            )
        if len(raw) > MAX_LITERAL_CHARS:
            raise SweepError(
                f"parameter {name!r}: the grid has {len(raw):,} characters, more than the {MAX_LITERAL_CHARS:,} "
                "a command-line value may have"
            )
        try:
            values = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise SweepError(f"parameter {name!r}: cannot read {brief(raw)} as a list such as [64, 128, 256]") from None
        grid[name] = check_values(plan.notebook, name, values, "-p")
    return grid


def count_points(grid: dict[str, Sequence[Any]], full: bool = False) -> int:
    """The number of points :func:`expand` makes of ``grid`` at most (before duplicates are dropped), computed
    without making them: the preset and each value alone, or the product of the grid's sizes."""
    return math.prod(len(v) for v in grid.values()) + 1 if full else 1 + sum(len(v) for v in grid.values())


def check_points(plans: Sequence[tuple[Plan, dict[str, tuple[Any, ...]]]], full: bool, bound: int, root: Path) -> None:
    """A :class:`SweepError` before anything runs if the sweep of ``plans`` (each with its grid) has more than
    ``bound`` points: the count, the expected time from the notebooks' quick runs, and how to allow it."""
    counts = {plan.notebook.name: count_points(grid, full) for plan, grid in plans}
    total = sum(counts.values())
    if total <= bound:
        return
    seconds = expected_seconds(root)
    known = [(n, c * seconds[(n, QUICK)]) for n, c in counts.items() if (n, QUICK) in seconds]
    work = sum(t for _, t in known)
    when = f", ~{work / 3600:,.1f} CPU hours at the notebooks' quick run times" if known else ""
    what = "the full product grid" if full else "one setting at a time"
    sizes = " x ".join(str(len(v)) for _, grid in plans for v in grid.values()) if full else ""
    raise SweepError(
        f"sweep of {', '.join(counts)}: {what} is {total:,} points{f' ({sizes})' if sizes else ''}{when}; "
        f"more than the bound of {bound:,}: pass --max-points {total} to run it, or shrink the grid"
    )


def expand(nb: Notebook, grid: dict[str, Sequence[Any]], full: bool = False) -> list[Point]:
    """The points of ``grid`` around the quick preset of ``nb``: one-at-a-time (default) or the full product.

    The preset point comes first; a point whose resolved parameters equal an earlier one's is dropped.
    """
    base = nb.resolve(QUICK)
    names = list(grid)
    if full:
        combos = [tuple(zip(names, vals)) for vals in itertools.product(*(grid[n] for n in names))]
    else:
        combos = [((n, v),) for n in names for v in grid[n]]
    points, seen = [Point(nb.name, base, ())], {python_literal(sorted(base.items()))}
    for combo in combos:
        params = dict(base, **dict(combo))
        sig = python_literal(sorted(params.items()))
        if sig in seen:
            continue
        seen.add(sig)
        changed = tuple((k, v) for k, v in combo if v != base[k])
        points.append(Point(nb.name, nb.resolve(QUICK, dict(changed)), changed))
    return points


# --------------------------------------------------------------------------- running
@dataclass
class SweepSummary:
    """What happened to each point, in grid order."""

    points: list[Point] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)

    @property
    def failures(self) -> list[tuple[Point, RunResult]]:
        return [(p, r) for p, r in zip(self.points, self.results) if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failures and all(r.status != "interrupted" for r in self.results)


def run_sweep(
    points: Sequence[Point],
    notebooks: dict[str, Notebook],
    root: Path,
    jobs: int | None = None,
    scheduler: str | None = None,
    stream: Any = None,
    interrupts: Interrupts | None = None,
    cores: int | None = None,
) -> SweepSummary:
    """Serve every point from the store or execute it (``jobs`` local workers, or Dask at ``scheduler``).

    Each point is executed at most once (a store entry per cache key, locked while it runs). Its outputs
    are copied to a temporary folder that is removed afterwards: the sweep's results live in the store
    only, where the report reads them (:func:`stored_points`).
    """
    if jobs is not None and jobs < 1:
        raise SweepError(f"-j/--jobs must be at least 1, got {jobs}")
    interrupts = interrupts or Interrupts()
    cleanup_stale_temp(root)
    (store_dir(root) / "tmp").mkdir(parents=True, exist_ok=True)
    # the points' output copies, removed in any case; named with this process's id, so that a later run
    # removes it if this one is killed (iclbook.store.cleanup_stale_temp)
    with tempfile.TemporaryDirectory(prefix=f"sweep-{os.getpid()}-", dir=store_dir(root) / "tmp") as tmp:
        out_root = Path(tmp)
        requests = [
            RunRequest(notebooks[p.notebook], p.params, QUICK, out_root / f"{p.notebook}-{i:04d}")
            for i, p in enumerate(points)
        ]
        seconds = expected_seconds(root)

        def before_finish(i: int, key: str, res: RunResult) -> None:
            if res.status == "failed":
                res.error = " ".join(res.error.split())[:300]
                _record_failure(root, key, res.error)
            elif res.status in ("executed", "cached"):
                (store_dir(root) / FAILED_POINTS / f"{key}.txt").unlink(missing_ok=True)

        summary = SweepSummary(list(points))
        summary.results = execute_requests(
            requests,
            root,
            order=sorted(range(len(points)), key=lambda i: -seconds.get((points[i].notebook, QUICK), 0.0)),
            jobs=jobs,
            cores=cores,
            scheduler=scheduler,
            force=False,
            stream=stream,
            interrupts=interrupts,
            labels=[f"{p.notebook} ({p.label})" for p in points],
            before_finish=before_finish,
            on_result=lambda i, key, res: shutil.rmtree(requests[i].out_dir, ignore_errors=True),
        )
        return summary


# --------------------------------------------------------------------------- reading the store
#: Folder of the store recording, per cache key, the one-line error of a sweep point whose run failed
#: (never an entry: a later sweep executes the point again, and a success removes the record).
FAILED_POINTS = "sweep-failed"


def _record_failure(root: Path, key: str, error: str) -> None:
    try:
        folder = store_dir(root) / FAILED_POINTS
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key}.txt").write_text(error + "\n")
    except OSError:
        pass  # the record only words the report; the failure itself is printed


def stored_points(
    root: Path,
    plan: Plan,
    scans: Any = None,
    recorded: dict[str, dict[str, Any]] | None = None,
    carried: dict[tuple[tuple[str, Any], ...], dict[str, Any]] | None = None,
) -> list[tuple[Point, dict[str, Any] | str | None]]:
    """Each point of the plan's one-at-a-time grid with its metrics from the store, else from ``recorded``
    (key -> metrics: the committed record's points, :func:`iclbook.record.recorded_sweep_metrics`), else from
    ``carried`` (changed settings -> metrics: the recorded points of a notebook whose record entry is carried
    forward, :func:`iclbook.record.carried_sweep_points`); ``None``: not run under the notebook's current key
    (or the entry does not verify); a string: the run failed with that error (recorded by :func:`run_sweep`
    for the same key). Nothing is executed."""
    entries = store_dir(root) / "entries"
    scans = scans if scans is not None else import_scans(root)
    recorded = recorded or {}
    out: list[tuple[Point, dict[str, Any] | str | None]] = []
    for p in expand(plan.notebook, plan.grid):
        metrics: dict[str, Any] | str | None = None
        try:
            key = cache_key(RunRequest(plan.notebook, p.params, QUICK, entries), root, scans)
            entry, failed = entries / key, store_dir(root) / FAILED_POINTS / f"{key}.txt"
            if entry.is_dir() and not verify_folder(entry, key):
                data = json.loads((entry / "metrics.json").read_text())
                metrics = data if isinstance(data, dict) else None
            elif key in recorded:
                metrics = recorded[key]
            elif carried and _frozen(p.changed) in carried:
                metrics = carried[_frozen(p.changed)]
            elif failed.is_file():
                metrics = failed.read_text().strip() or "the run failed"
        except (OSError, ValueError, NotebookError):
            metrics = None
        out.append((p, metrics))
    return out


def _frozen(changed: Sequence[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    return tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in changed)


# --------------------------------------------------------------------------- bands
ROBUST, FRAGILE, FAILS, PARTIAL, NOT_SWEPT = "robust", "fragile", "fails", "partial", "not swept"


@dataclass(frozen=True)
class Band:
    """One row's rule over the sweep: ``holds`` of ``n`` stored points, the ``failing`` points, ``unrun`` points."""

    label: str
    holds: int = 0
    n: int = 0
    failing: tuple[str, ...] = ()
    unrun: int = 0
    reason: str = ""

    def describe(self) -> str:
        """``"robust: holds at 7 of 7 settings"``, ``"fragile: holds at 5 of 7 settings; fails at M=64"``."""
        if self.label == NOT_SWEPT:
            return f"not swept{': ' + self.reason if self.reason else ''}"
        text = f"{self.label}: holds at {self.holds} of {self.n} settings"
        if self.failing:
            text += "; fails at " + "; ".join(self.failing)
        if self.unrun:
            text += f"; {self.unrun} setting(s) not run yet"
        return text


def band(
    claim: Any,
    points: Sequence[tuple[Point, dict[str, Any] | None]],
    evaluate: Callable[[Any, dict[str, Any] | None], Any],
) -> Band:
    """The robustness band of one ledger row over stored sweep points (``evaluate(claim, metrics)`` gives a row
    with ``status`` ``"reproduced"`` when the rule holds). A point whose metric is missing, or whose run
    failed (its metrics are the error string, :func:`stored_points`), counts as failing."""
    if not points:
        return Band(NOT_SWEPT, reason="its notebook declares no unstated setting (notebooks/sweeps.yml)")
    stored = [(p, m) for p, m in points if m is not None]
    if not stored:
        return Band(NOT_SWEPT, reason="no sweep point in the store (run `make sweep`)", unrun=len(points))
    status = {p.label: "run failed" if isinstance(m, str) else evaluate(claim, m).status for p, m in stored}
    failing = tuple(
        label + (" (the notebook fails there)" if st == "run failed" else "")
        for label, st in status.items()
        if st != "reproduced"
    )
    holds, unrun = len(status) - len(failing), len(points) - len(stored)
    preset = status.get("preset")
    if preset is not None and preset != "reproduced":
        label = FAILS
    elif failing:
        label = FRAGILE
    else:
        label = ROBUST if not unrun else PARTIAL
    return Band(label, holds, len(stored), failing, unrun)


# --------------------------------------------------------------------------- figure
def spec_curve(
    title: str,
    points: Sequence[tuple[Point, float, bool, float | None]],
    reported: float | None,
    band_lo: float | None,
    band_hi: float | None,
    out_stem: Path,
) -> list[Path]:
    """The specification curve: ``points`` (point, value, rule holds, half-width of the rule's interval at
    that point or None) sorted by value, the paper's value and the rule's band marked, and below it a dot
    matrix of the settings that produced each point. A positive metric spanning more than a factor 30 is
    drawn on a log scale.

    Written as ``out_stem.png`` and ``out_stem.pdf``; returns the paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(points, key=lambda t: t[1])
    rows = sorted({f"{k}={python_literal(v)}" for p, *_ in pts for k, v in p.changed}) + ["preset"]
    fig, (ax, bx) = plt.subplots(
        2, 1, figsize=(6.4, 2.4 + 0.22 * len(rows)), sharex=True, gridspec_kw={"height_ratios": [2.2, 0.25 * len(rows)]}
    )
    x = list(range(len(pts)))
    if band_lo is not None or band_hi is not None:
        lo = band_lo if band_lo is not None else min(v for _, v, *_ in pts)
        hi = band_hi if band_hi is not None else max(v for _, v, *_ in pts)
        ax.axhspan(lo, hi, color="0.88", label="rule's band")
    if reported is not None and math.isfinite(reported):
        ax.axhline(reported, color="k", lw=1, ls="--", label="reported")
    values = [v for _, v, *_ in pts]
    for i, (_, v, ok, half) in enumerate(pts):
        colour = "tab:blue" if ok else "tab:red"
        if half is not None and math.isfinite(half):
            ax.errorbar(i, v, yerr=half, color=colour, lw=1, capsize=2, zorder=2)
        ax.scatter(i, v, color=colour, zorder=3, s=22)
    if min(values) > 0 and max(values) > 30 * min(values):
        ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    for i, (p, *_) in enumerate(pts):
        labels = {f"{k}={python_literal(v)}" for k, v in p.changed} or {"preset"}
        for j, r in enumerate(rows):
            bx.scatter(i, j, s=14, c="k" if r in labels else "0.85")
    bx.set_yticks(range(len(rows)), rows, fontsize=7)
    bx.set_xticks(x, [""] * len(x))
    bx.set_xlabel("sweep points, sorted by the metric (red: the rule fails)", fontsize=8)
    fig.tight_layout()
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = out_stem.with_suffix(f".{ext}")
        fig.savefig(path, dpi=120, metadata={"CreationDate": None} if ext == "pdf" else {"Software": None})
        paths.append(path)
    plt.close(fig)
    return paths


# --------------------------------------------------------------------------- command line
def cmd_sweep(args: Any, root: Path) -> int:
    """``icl-book sweep NOTEBOOK [-p NAME "[v1, v2]"] [--full] [-j N] [--scheduler ADDR]`` or ``--all``."""
    import signal
    import sys

    from .notebooks import discover_all, notebook_name

    good, bad = discover_all(root)
    plans = load_plans(root, good)
    names = list(dict.fromkeys(notebook_name(n) for n in args.names))
    bound = MAX_POINTS if getattr(args, "max_points", None) is None else args.max_points
    if bound < 1:
        raise SweepError(f"--max-points must be at least 1, got {bound}")
    if args.all == bool(names):
        raise SweepError("give one or more notebooks, or --all (not both)")
    if args.param and (args.all or len(names) != 1):
        raise SweepError('-p NAME "[values]" sets the grid of one notebook; name exactly one')
    for n in names:
        if n in bad:
            raise bad[n]
        if n not in plans:
            known = {nb.name for nb in good}
            what = "declares no unstated setting in " + SWEEPS.as_posix() if n in known else "is not a notebook"
            raise SweepError(f"{n!r} {what}; sweepable notebooks: {', '.join(plans)}")
    chosen = [plans[n] for n in names] if names else list(plans.values())
    grids = [(plan, grid_overrides(plan, args.param)) for plan in chosen]
    check_points(grids, args.full, bound, root)  # before a single point is made
    points = [p for plan, grid in grids for p in expand(plan.notebook, grid, args.full)]
    (store_dir(root) / "entries").mkdir(parents=True, exist_ok=True)
    interrupts: Interrupts = args.interrupts
    start = time.monotonic()
    summary = run_sweep(
        points, {p.notebook.name: p.notebook for p in chosen}, root, args.jobs, args.scheduler, interrupts=interrupts
    )
    elapsed = time.monotonic() - start
    if interrupts.stopping:
        print(
            f"icl-book: sweep interrupted by {signal.Signals(interrupts.signum).name}; finished points are stored",
            file=sys.stderr,
        )
        return 128 + interrupts.signum
    executed = sum(r.status == "executed" for r in summary.results)
    cached = sum(r.status == "cached" for r in summary.results)
    print(
        f"icl-book: sweep of {len(chosen)} notebook(s): {len(points)} points, {executed} executed, {cached} cached, "
        f"{len(summary.failures)} failed in {elapsed:.1f}s; results in the store: rebuild the book "
        "(`make book` or `icl-book build`) to see the bands"
    )
    if summary.failures:
        print("icl-book: FAILED sweep points:", file=sys.stderr)
        for p, r in summary.failures:
            print(f"  {p.notebook} ({p.label}): {r.error}", file=sys.stderr)
        return 1
    return 0


def add_command(sub: Any) -> None:
    """The ``sweep`` subcommand."""
    sw = sub.add_parser("sweep", help="run notebooks over their unstated settings (notebooks/sweeps.yml), cached")
    sw.add_argument("names", nargs="*", metavar="NAME", help="notebooks to sweep")
    sw.add_argument("--all", action="store_true", help="sweep every notebook declared in notebooks/sweeps.yml")
    sw.add_argument(
        "-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUES"), help='a grid: -p M "[64, 128]"'
    )
    sw.add_argument("--full", action="store_true", help="the product grid instead of one setting at a time")
    sw.add_argument(
        "--max-points",
        type=int,
        default=None,
        metavar="N",
        help=f"refuse a sweep of more than N points before it starts (default: {MAX_POINTS})",
    )
    sw.add_argument("-j", "--jobs", type=int, default=None, help="parallel points (default: number of cores)")
    sw.add_argument("--scheduler", metavar="ADDRESS", default=None, help="execute on Dask (as for `run`)")
    sw.set_defaults(func=cmd_sweep)
