"""``icl-book plan``: predicted wall time of a build on ``N`` workers of ``C`` threads each.

The tasks of a build are the notebooks and their inner tasks (:func:`iclcore.parallel.map_configs`):
notebook ``nb`` is a *serial* task (its own code, outside its ``map_configs`` calls) after which its
inner tasks become ready, one *batch* per ``map_configs`` call in the order of the calls: batch
``k + 1`` is ready when the last task of batch ``k`` ends, since the notebook's code between two calls
needs the results of the first (the kernel waits for them without holding a worker, as on Dask, where
the notebook's task secedes from the worker's thread pool). The serial part is not recorded per gap
between calls, so it is modelled as one task before the first batch. Durations (seconds on one thread):

* from the store: the newest manifest of ``(notebook, preset)``: CPU seconds of the run and of each
  inner task where it ran (``"cpu"`` and ``"inner"``, :mod:`iclcore.progress`; CPU, not wall time,
  so that a run on a loaded machine still predicts an idle one; :func:`tasks_from_manifest`);
* else from the committed hint ``notebooks/seconds.json``: ``{preset: {notebook: seconds}}`` (the
  notebook's single-thread total) and ``{"inner": {preset: {notebook: [seconds, ...]}}}`` (its inner
  tasks, one batch; the serial part is the total minus their sum), or ``{"tasks": [...], "serial":
  seconds, "batches": [n_1, n_2, ...]}`` (the number of tasks of each batch, in order;
  :func:`tasks_from_hint`). The output says which source each came from.

``icl-book plan --write-hint`` writes the durations of the store's newest runs into that hint
(:func:`hint_from_store`), with where and when each was measured under ``"measured"``, so that a
fresh clone plans from measured durations; notebooks without a run in the store keep their entry.

The simulation (:func:`simulate`) is list scheduling: whenever a worker has free threads it takes the
ready task with the longest path to the end of its notebook (its own duration plus the longest task
of every later batch) among those that fit, ties in book order. The critical path is the longest
notebook chain, ``serial + sum over batches of max(batch)``; no schedule on any number of workers
beats it, nor the total work divided by the threads.

Tasks of several threads (``--threads-per-worker C``): an inner task that declares ``d`` threads
(:func:`iclcore.parallel.map_configs`' ``threads``) runs on ``t = min(d, C)`` threads of one worker and
lasts its one-thread duration divided by its measured speed-up at ``t`` threads (the largest measured
thread count not above ``t``; 1 where none is). Declarations and speed-ups come from the committed hint,
``{"threads": {preset: {notebook: {"declared": [d_1, ...], "speedup": {"2": s_2, "4": s_4}}}}}``, with
``declared`` aligned with the notebook's inner tasks in the order of their ``map_configs`` calls
(the notebook's threads parameter, such as gd_probe's ``gpt_threads``, set to that count when it
runs). The serial part of a notebook takes one thread.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from .loaders import SECONDS_HINT as SECONDS_FILE
from .loaders import load_file
from .notebooks import NotebookError, discover_all, notebook_name
from .scheduling import SECONDS_HINT
from .store import STAMP, read_manifest, store_dir

__all__ = ["Plan", "Task", "add_command", "cmd_plan", "hint_from_store", "load_tasks", "simulate"]

INNER_KEY = "inner"  # in notebooks/seconds.json: {"inner": {preset: {notebook: [seconds, ...]}}}
THREADS_KEY = "threads"  # in notebooks/seconds.json: {"threads": {preset: {notebook: {"declared", "speedup"}}}}
MEASURED_KEY = "measured"  # in notebooks/seconds.json: {"measured": {preset: {notebook: {"date", "machine"}}}}


@dataclass(frozen=True)
class Task:
    """One task: ``notebook``, its ``label`` (``""`` for the serial part), duration ``seconds``, ``source``,
    and, for an inner task, its ``batch``: the order of its ``map_configs`` call (batches run in increasing
    order; the serial part ignores it)."""

    notebook: str
    label: str
    seconds: float
    source: str
    batch: int = 0
    threads: int = 1  # threads the task declares (it gets at most the worker's)
    speedup: tuple[tuple[int, float], ...] = ()  # measured (threads, one-thread seconds / seconds at them)

    @property
    def name(self) -> str:
        return self.notebook if not self.label else f"{self.notebook}[{self.label}]"

    def on_threads(self, per_worker: int) -> Task:
        """This task as it runs on a worker of ``per_worker`` threads: ``threads = min(declared, per_worker)``
        and its seconds divided by the measured speed-up at the largest measured count not above that."""
        t = min(self.threads, per_worker)
        factor = max((s for n, s in self.speedup if n <= t), default=1.0)
        return replace(self, threads=t, seconds=self.seconds / factor, speedup=())


@dataclass
class Plan:
    """The outcome of :func:`simulate`: predicted wall time, critical path, total work, the tasks."""

    workers: int
    wall: float
    critical: float
    critical_notebook: str
    total: float
    tasks: list[Task] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    threads_per_worker: int = 1

    def longest(self, k: int = 5) -> list[Task]:
        return sorted(self.tasks, key=lambda t: -t.seconds)[:k]


def _chains(tasks: list[Task]) -> dict[str, tuple[Task, list[list[Task]]]]:
    """Per notebook (in order of first appearance): its serial part and its inner tasks by batch, in order."""
    serials: dict[str, Task | None] = {}
    batches: dict[str, dict[int, list[Task]]] = {}
    for t in tasks:
        serials.setdefault(t.notebook, None)
        if t.label:
            batches.setdefault(t.notebook, {}).setdefault(t.batch, []).append(t)
        else:
            serials[t.notebook] = t
    return {
        nb: (serial or Task(nb, "", 0.0, "none", 0), [b for _, b in sorted(batches.get(nb, {}).items())])
        for nb, serial in serials.items()
    }


def _rest(batches: list[list[Task]]) -> list[float]:
    """``rest[k]``: the longest path through batches ``k, k+1, ...`` (sum of their longest tasks); ``rest[-1] = 0``."""
    rest = [0.0] * (len(batches) + 1)
    for k in range(len(batches) - 1, -1, -1):
        rest[k] = rest[k + 1] + max(t.seconds for t in batches[k])
    return rest


def _count_option(value: object, option: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NotebookError(f"{option}: expected a number of {what} >= 1, got {value!r}")
    return value


def simulate(tasks: list[Task], workers: int, threads_per_worker: int = 1) -> Plan:
    """List-schedule ``tasks`` on ``workers`` workers of ``threads_per_worker`` threads (see the module docstring)."""
    workers = _count_option(workers, "--workers", "workers")
    per_worker = _count_option(threads_per_worker, "--threads-per-worker", "threads per worker")
    tasks = [t.on_threads(per_worker) for t in tasks]
    chains = _chains(tasks)
    order = {nb: i for i, nb in enumerate(chains)}
    rest = {nb: _rest(batches) for nb, (_, batches) in chains.items()}
    pending = {nb: 0 for nb in chains}  # tasks of the notebook's current batch still running or ready
    ready: list[tuple[float, int, int, int, Task]] = []  # (-rank, book order, seq, batch index, task)
    seq = 0

    def release(nb: str, k: int) -> None:  # batch k (0-based) of nb becomes ready
        nonlocal seq
        batch = chains[nb][1][k]
        pending[nb] = len(batch)
        for t in batch:
            heapq.heappush(ready, (-(t.seconds + rest[nb][k + 1]), order[nb], seq, k, t))
            seq += 1

    for nb, (serial, _) in chains.items():
        heapq.heappush(ready, (-(serial.seconds + rest[nb][0]), order[nb], seq, -1, serial))
        seq += 1
    running: list[tuple[float, int, int, int, Task]] = []  # (end, seq, batch index, worker, task)
    free, now = [per_worker] * workers, 0.0
    while ready or running:
        skipped = []
        while ready and max(free) > 0:
            item = heapq.heappop(ready)
            task = item[-1]
            fits = [w for w in range(workers) if free[w] >= task.threads]
            if not fits:
                skipped.append(item)  # waits for a worker with enough free threads; smaller ones go first
                continue
            w = min(fits, key=lambda w: (free[w], w))  # the fullest worker it fits on
            free[w] -= task.threads
            heapq.heappush(running, (now + task.seconds, seq, item[3], w, task))
            seq += 1
        for item in skipped:
            heapq.heappush(ready, item)
        now, _, k, w, task = heapq.heappop(running)
        free[w] += task.threads
        nb = task.notebook
        if k >= 0:
            pending[nb] -= 1
        if (k < 0 or pending[nb] == 0) and k + 1 < len(chains[nb][1]):
            release(nb, k + 1)
    lengths = {nb: serial.seconds + rest[nb][0] for nb, (serial, _) in chains.items()}
    critical_nb = max(lengths, key=lambda nb: (lengths[nb], -order[nb]), default="")
    return Plan(
        workers=workers,
        wall=now,
        critical=lengths.get(critical_nb, 0.0),
        critical_notebook=critical_nb,
        total=sum(t.seconds * t.threads for t in tasks),
        tasks=list(tasks),
        threads_per_worker=per_worker,
    )


def _store_runs(root: Path, preset: str) -> dict[str, tuple[Path, dict]]:
    """The newest manifest of each notebook at ``preset`` in the store, with its path."""
    newest: dict[str, tuple[float, Path, dict]] = {}
    for path in (store_dir(root) / "entries").glob(f"*/{STAMP}"):
        try:
            m = read_manifest(path.parent)
            when = path.stat().st_mtime
            if m.get("preset") == preset and when > newest.get(m["notebook"], (-1.0, path, {}))[0]:
                newest[str(m["notebook"])] = (when, path, m)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return {nb: (path, m) for nb, (_, path, m) in newest.items()}


def _store_manifests(root: Path, preset: str) -> dict[str, dict]:
    """The newest manifest of each notebook at ``preset`` in the store."""
    return {nb: m for nb, (_, m) in _store_runs(root, preset).items()}


def tasks_from_manifest(m: dict) -> list[Task]:
    """The serial part and inner tasks of one recorded run, in CPU seconds (one thread).

    A task's duration is its thread-CPU seconds where it ran (``"cpu"`` of its ``map_configs``
    record), else its wall seconds. The notebook's total is the run's CPU seconds (``"cpu"``: the
    child and its descendants, which include the inner tasks run in the kernel or its process
    pool), else its wall seconds times its threads; its serial part is the total minus the inner
    tasks that ran locally (tasks that ran on Dask are not in the kernel's CPU time; without ``"cpu"``
    the wall time of each ``map_configs`` call is subtracted instead).
    """
    nb, threads = str(m["notebook"]), max(1, int(m.get("threads", 1)))
    records = [r for r in m.get(INNER_KEY, []) if isinstance(r, dict)]
    tasks, local = [], 0.0
    for batch, r in enumerate(records, start=1):
        wall = [float(x) for x in r.get("seconds", [])]
        cpu = [float(x) for x in r.get("cpu", [])]
        secs = cpu if len(cpu) == len(wall) and all(c > 0 for c in cpu) else wall
        label = str(r.get("label", "tasks"))
        tasks += [Task(nb, f"{label} {i + 1}", x, "store", batch) for i, x in enumerate(secs)]
        if r.get("where") in ("serial", "processes"):
            local += sum(secs)
    if "cpu" in m:
        serial = float(m["cpu"]) - local
    else:
        serial = (float(m["seconds"]) - sum(float(r.get("wall", 0.0)) for r in records)) * threads
    return [Task(nb, "", max(0.0, serial), "store", 0), *tasks]


def _hint(root: Path) -> dict:
    """The committed hint through the loader; ``{}`` if there is none (a malformed one is an error naming it)."""
    try:
        return load_file(root / SECONDS_HINT, SECONDS_FILE, SECONDS_HINT.as_posix())
    except OSError:
        return {}


def tasks_from_hint(hint: dict, preset: str, nb: str) -> list[Task] | None:
    """The serial part and inner tasks of ``nb`` from the committed hint, or None if it has no time.

    ``hint["inner"][preset][nb]`` is a list of inner-task seconds (one batch; the serial part is then
    the notebook's total minus their sum) or ``{"tasks": [...], "serial": seconds, "batches": [n_1, ...]}``
    (``batches``, optional, the number of tasks of each ``map_configs`` call in order; they must add up
    to the number of tasks, else all are one batch).
    """
    table = hint.get(preset, {})
    if not isinstance(table, dict) or not isinstance(table.get(nb), (int, float)):
        return None
    entry = hint.get(INNER_KEY, {}).get(preset, {}).get(nb, [])
    inner = entry.get("tasks", []) if isinstance(entry, dict) else entry
    inner = [float(s) for s in inner] if isinstance(inner, list) else []
    serial = float(table[nb]) - sum(inner)
    if isinstance(entry, dict) and isinstance(entry.get("serial"), (int, float)):
        serial = float(entry["serial"])
    counts = entry.get("batches") if isinstance(entry, dict) else None
    valid = isinstance(counts, list) and all(isinstance(c, int) and c > 0 for c in counts)
    counts = counts if valid and sum(counts) == len(inner) else [len(inner)]
    batch_of = [b for b, c in enumerate(counts, start=1) for _ in range(c)]
    return [Task(nb, "", max(0.0, serial), "hint", 0)] + [
        Task(nb, f"inner {i + 1}", s, "hint", batch_of[i]) for i, s in enumerate(inner)
    ]


def hint_from_store(root: Path, preset: str, names: list[str] | None = None) -> tuple[dict, list[str]]:
    """The committed hint with the durations of the store's newest ``preset`` runs written in.

    For every notebook (or those in ``names``) with a run at ``preset`` in the store:
    ``hint[preset][nb]`` is the run's single-thread total (:func:`tasks_from_manifest`: serial part
    plus inner tasks, CPU seconds), ``hint["inner"][preset][nb] = {"tasks": [...], "serial": s}`` (with
    ``"batches"`` if the run made more than one ``map_configs`` call; or
    no entry if the run had no inner tasks), and ``hint["measured"][preset][nb]`` the date of the
    entry and the machine (the archive's machine for an imported entry, else this one). Returns the
    new hint and the notebooks written; the others keep their entries.
    """
    from .archive import machine_record, utc_timestamp  # the same machine record as an exported archive

    hint = _hint(root)
    newest = _store_runs(root, preset)
    written = []
    for nb in sorted(newest):
        if names and nb not in names:
            continue
        path, m = newest[nb]
        try:
            serial, *inner = tasks_from_manifest(m)
        except (KeyError, TypeError, ValueError):
            continue
        hint.setdefault(preset, {})[nb] = round(serial.seconds + sum(t.seconds for t in inner), 1)
        table = hint.setdefault(INNER_KEY, {}).setdefault(preset, {})
        if inner:
            table[nb] = {"tasks": [round(t.seconds, 1) for t in inner], "serial": round(serial.seconds, 1)}
            counts = Counter(t.batch for t in inner)
            if len(counts) > 1:
                table[nb]["batches"] = [counts[b] for b in sorted(counts)]
        else:
            table.pop(nb, None)
        when = utc_timestamp(path.stat().st_mtime)
        machine = m.get("exported_on") or machine_record()
        hint.setdefault(MEASURED_KEY, {}).setdefault(preset, {})[nb] = {"date": when, "machine": machine}
        written.append(nb)
    return hint, written


def check_preset(preset: str, known: list[str]) -> None:
    """A :class:`NotebookError` (one line, the CLI's exit code 2) unless some notebook defines ``preset``."""
    if preset in known:
        return
    near = [k for k in known if k.lower() == preset.strip().lower()]
    hint = f"; did you mean {near[0]!r}? (presets are case-sensitive)" if near else ""
    raise NotebookError(f"--preset {preset!r}: no notebook defines it; the presets are: {', '.join(known)}{hint}")


def load_tasks(root: Path, preset: str, names: list[str] | None = None) -> tuple[list[Task], list[str]]:
    """Tasks of every notebook (or of ``names``) at ``preset``, store first, then hint; and the notebooks without a time."""
    notebooks, _ = discover_all(root)
    check_preset(preset, sorted({p for nb in notebooks for p in nb.preset_names}))
    wanted = [nb.name for nb in notebooks if preset in nb.presets or preset == "quick"]
    if names:
        names = [notebook_name(n) for n in names]
        unknown = sorted(set(names) - {nb.name for nb in notebooks})
        if unknown:
            raise NotebookError(f"plan: no notebook named {', '.join(unknown)}")
        wanted = [n for n in wanted if n in names]
    stored, hint = _store_manifests(root, preset), _hint(root)
    tasks: list[Task] = []
    missing = []
    for nb in wanted:
        found = None
        if nb in stored:
            try:
                found = tasks_from_manifest(stored[nb])
            except (KeyError, TypeError, ValueError):
                found = None
        if found is None:
            found = tasks_from_hint(hint, preset, nb)
        if found is None:
            missing.append(nb)
        else:
            tasks += with_declared_threads(found, hint.get(THREADS_KEY, {}).get(preset, {}).get(nb))
    return tasks, missing


def with_declared_threads(tasks: list[Task], entry: dict | None) -> list[Task]:
    """``tasks`` of one notebook (serial part first) with the hint's ``declared`` threads and ``speedup``
    given to its inner tasks in order; unchanged without an entry, or if its length differs from theirs."""
    inner = [t for t in tasks if t.label]
    if not entry or len(entry["declared"]) != len(inner):
        return tasks
    speedup = tuple(sorted((int(n), float(s)) for n, s in entry["speedup"].items()))
    declared = iter(entry["declared"])
    return [replace(t, threads=int(next(declared)), speedup=speedup) if t.label else t for t in tasks]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min ({seconds:.0f} s)"


def format_plan(plan: Plan, preset: str) -> str:
    notebooks = {t.notebook for t in plan.tasks}
    sources = {}
    for t in plan.tasks:
        sources.setdefault(t.source, set()).add(t.notebook)
    where = "; ".join(
        f"{len(v)} notebook(s) from {'the store' if k == 'store' else SECONDS_HINT.as_posix() + ' (no ' + preset + ' run in the store)'}"
        for k, v in sorted(sources.items())
    )
    inner = sum(1 for t in plan.tasks if t.label)
    wide = sum(1 for t in plan.tasks if t.threads > 1)
    c = plan.threads_per_worker
    shape = "single-thread worker(s)" if c == 1 else f"worker(s) of {c} threads"
    lines = [
        f"plan: preset {preset}, {plan.workers} {shape}, {len(notebooks)} notebooks, "
        f"{inner} inner tasks ({wide} of several threads); durations: {where or 'none'}",
        f"predicted wall time: {_minutes(plan.wall)}",
        f"critical path: {_minutes(plan.critical)} ({plan.critical_notebook}: serial part and the longest inner task of each batch)",
        f"total work: {_minutes(plan.total)} thread-time (at least {_minutes(plan.total / (plan.workers * c))} "
        f"on {plan.workers * c} threads)",
        "five longest tasks:",
    ]
    lines += [
        f"  {t.seconds:8.0f} s  {t.name} ({t.source}{f', {t.threads} threads' if t.threads > 1 else ''})"
        for t in plan.longest(5)
    ]
    if plan.missing:
        lines.append(f"no recorded time (left out): {', '.join(plan.missing)}")
    return "\n".join(lines)


def cmd_plan(args: argparse.Namespace, root: Path) -> int:
    _count_option(args.workers, "--workers", "workers")
    _count_option(args.threads_per_worker, "--threads-per-worker", "threads per worker")
    if args.write_hint:
        check_preset(args.preset, sorted({p for nb in discover_all(root)[0] for p in nb.preset_names}))
        hint, written = hint_from_store(root, args.preset, args.names or None)
        if not written:
            raise NotebookError(f"plan --write-hint: no {args.preset} run in the store to write")
        target = root / SECONDS_HINT
        fd, part = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        try:  # renamed into place: an interrupt leaves the old hint or the new one, never half of it
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(hint, indent=1, sort_keys=True) + "\n")
            os.replace(part, target)
        finally:
            Path(part).unlink(missing_ok=True)
        print(f"wrote the {args.preset} durations of {len(written)} notebook(s) into {SECONDS_HINT.as_posix()}")
    tasks, missing = load_tasks(root, args.preset, args.names or None)
    plan = simulate(tasks, args.workers, args.threads_per_worker)
    plan.missing = missing
    print(format_plan(plan, args.preset))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    """The ``plan`` subcommand."""
    pl = sub.add_parser("plan", help="predict the wall time of a build on N workers of C threads (nothing is executed)")
    pl.add_argument("names", nargs="*", metavar="NAME", help="notebooks to plan (default: all)")
    pl.add_argument("--preset", default="paper", help="parameter preset (default: paper)")
    pl.add_argument("--workers", type=int, default=16, help="workers (default: 16)")
    pl.add_argument(
        "--threads-per-worker",
        type=int,
        default=1,
        help="threads of each worker (default: 1); tasks declared in notebooks/seconds.json to use several get "
        "up to this many, at their measured speed-up",
    )
    pl.add_argument(
        "--write-hint",
        action="store_true",
        help="first write the store's measured durations of this preset into notebooks/seconds.json",
    )
    pl.set_defaults(func=cmd_plan)
