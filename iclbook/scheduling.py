"""Scheduling of notebook runs: serve each from the store or execute it, on local workers or Dask.

:func:`run_notebooks` runs a list of requests with ``jobs`` local workers (threads that each wait
on one child process, :func:`iclbook.execution.execute`), or on a Dask cluster
(:class:`iclbook.distributed.DaskLauncher`, imported only then). :func:`run_one` serves one request:
a verified store entry is a cache hit, anything else executes; then the output folder is made a
verified copy of the entry.

Order: notebooks start longest expected run first (:func:`longest_first`; the time comes from the
store's newest run of the notebook, else from the committed hint ``notebooks/seconds.json``), so that
no worker idles at the end while another finishes a long run. Results are reported in book order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .execution import LOOPBACK_HINT, Interrupts, execute, loopback_problem
from .loaders import SECONDS_HINT as SECONDS_FILE
from .loaders import InputFileError, load_file
from .notebooks import NotebookError, discover_all, python_literal
from .progress import Progress
from .runs import RunRequest, RunResult, RunSummary
from .store import (
    STAMP,
    acquire,
    cache_key,
    cleanup_stale_temp,
    fill,
    import_scans,
    os_reason,
    read_manifest,
    store_dir,
    verify_folder,
)
from .worker_env import available_cores

__all__ = [
    "SECONDS_HINT",
    "check_loopback",
    "cpu_seconds",
    "describe_seconds",
    "expected_seconds",
    "longest_first",
    "preset_literals",
    "run_notebooks",
    "run_one",
    "timed_seconds",
]

#: Committed hint for scheduling a fresh clone: seconds of each notebook's quick preset on one thread.
SECONDS_HINT = Path("notebooks") / "seconds.json"


def run_one(  # noqa: C901 (one notebook through the store (lock, hit or execute, copy out, verify); each outcome is returned where it occurs)
    req: RunRequest,
    root: Path,
    key: str,
    threads: int,
    force: bool,
    interrupts: Interrupts,
    say: Callable[[str], None],
    launcher: Callable[..., int] | None = None,
) -> RunResult:
    """Serve ``req`` from the store (verified) or execute it, then fill its output folder from the store."""
    from filelock import FileLock

    name = req.notebook.name
    store = store_dir(root)
    (store / "locks").mkdir(parents=True, exist_ok=True)
    entry_lock = FileLock(str(store / "locks" / f"{key}.lock"))
    if not acquire(entry_lock, f"the store entry of {name}", interrupts.is_stopping, say):
        return RunResult(name, "interrupted", 0.0, "", req.out_dir)
    try:
        entry = store / "entries" / key
        status, seconds, note = "cached", 0.0, ""
        need = force or not entry.exists()
        if not need:
            problem = verify_folder(entry, key)
            if problem:
                say(f"icl-book: {name}: stored output damaged ({problem}); re-executing")
                need = True
        if need:
            res = execute(req, root, threads, key, interrupts, launcher)
            if res.status != "executed":
                return res
            status, seconds = "executed", res.seconds
        stamp = read_manifest(entry)
        expected = stamp["files"]
        if status == "cached" and isinstance(stamp.get("origin"), dict):
            note = f"imported from archive {stamp['origin'].get('archive_sha256', '')[:16]}, not computed here"
            say(f"icl-book: {name}: served from the store: {note}")
        out_problem = verify_folder(req.out_dir, key, expected) if req.out_dir.exists() else "missing"
        if out_problem:
            req.out_dir.parent.mkdir(parents=True, exist_ok=True)
            out_lock = FileLock(str(req.out_dir.parent / f".{name}.lock"))
            if not acquire(out_lock, f"the output folder {req.out_dir}", interrupts.is_stopping, say):
                return RunResult(name, "interrupted", seconds, "", req.out_dir)
            try:
                if status == "cached" and out_problem not in {"missing", "it holds another run", f"{STAMP} is missing"}:
                    note = f"output folder: {out_problem}; restored from the store"
                    say(f"icl-book: {name}: {note}")
                fill(entry, req.out_dir)
            finally:
                out_lock.release()
        return RunResult(name, status, seconds, "", req.out_dir, note)
    except OSError as exc:
        where = exc.filename or req.out_dir
        return RunResult(name, "failed", 0.0, f"cannot write the outputs: {where}: {os_reason(exc)}", req.out_dir)
    finally:
        entry_lock.release()


def run_notebooks(
    requests: Sequence[RunRequest],
    root: Path,
    jobs: int | None = None,
    force: bool = False,
    cores: int | None = None,
    stream: Any = None,
    on_result: Callable[[RunResult], None] | None = None,
    interrupts: Interrupts | None = None,
    scheduler: str | None = None,
    threads: int | None = None,
) -> RunSummary:
    """Run ``requests`` (served from the store unless ``force``) with ``jobs`` workers.

    Each worker gets ``max(1, cores // jobs)`` BLAS/torch threads so that
    parallel notebooks do not oversubscribe the machine, or exactly ``threads`` if given (the canonical
    quick run of the record is one thread per notebook, as ``make test`` runs them: float results depend on
    the thread count in their last bits). A request repeated
    (same notebook, same output folder) runs once.

    ``scheduler`` (a Dask scheduler address, or ``local:N`` for a local cluster of N worker
    processes) executes the notebooks on Dask workers (:mod:`iclbook.distributed`), one
    thread each, as many at a time as the cluster has worker threads unless ``jobs`` is given;
    verification and the store are the same as for a local run.
    """
    if jobs is not None and jobs < 1:
        raise NotebookError(f"-j/--jobs must be at least 1, got {jobs}")
    seen: set[tuple[str, Path]] = set()
    unique = []
    for req in requests:
        if (req.notebook.name, req.out_dir) not in seen:
            seen.add((req.notebook.name, req.out_dir))
            unique.append(req)
    requests = unique
    interrupts = interrupts or Interrupts()
    seconds = expected_seconds(root)
    summary = RunSummary()
    summary.results = execute_requests(
        requests,
        root,
        order=longest_first(requests, seconds),
        jobs=jobs,
        cores=cores,
        threads=threads,
        scheduler=scheduler,
        force=force,
        stream=stream,
        interrupts=interrupts,
        on_result=(lambda i, key, res: on_result(res)) if on_result else None,
    )
    return summary


def execute_requests(
    requests: Sequence[RunRequest],
    root: Path,
    *,
    order: Sequence[int],
    jobs: int | None,
    cores: int | None,
    threads: int | None = None,
    scheduler: str | None,
    force: bool,
    stream: Any,
    interrupts: Interrupts,
    labels: Sequence[str] | None = None,
    before_finish: Callable[[int, str, RunResult], None] | None = None,
    on_result: Callable[[int, str, RunResult], None] | None = None,
) -> list[RunResult]:
    """The one scheduler of ``icl-book run``, ``sweep`` and ``record refresh`` (which calls ``run``): run
    ``requests`` (each under its cache key) in the order ``order``, ``jobs`` at a time, with one progress line.

    Locally each request gets ``max(1, cores // jobs)`` BLAS/torch threads (``jobs`` defaults to the
    cores); with ``scheduler`` (a Dask address or ``local:N``) the notebooks run on Dask workers, one thread
    each, ``jobs`` defaulting to the cluster's worker threads. ``labels[i]`` names a request on the progress
    line (default: its notebook); ``before_finish(i, key, result)`` runs before the progress line reports
    it, ``on_result(i, key, result)`` after. A scheduler that cannot be reached is reported before
    anything is written. Returns the results in the order of ``requests``.
    """
    launcher = None
    if scheduler:
        from .distributed import DaskLauncher  # Dask is imported only on this path

        launcher = DaskLauncher(scheduler, root)
        jobs, threads = max(1, min(jobs or launcher.slots(), len(requests) or 1)), 1
    else:
        cores = cores or available_cores()
        jobs = max(1, min(jobs or cores, len(requests) or 1))
        threads = threads or max(1, cores // jobs)
    try:
        cleanup_stale_temp(root)
        scans = import_scans(root)
        keys = [cache_key(req, root, scans) for req in requests]
        with interrupts.held():  # the scan cache is renamed into place: not cut in two
            scans.save()
        if launcher is None and (force or any(not (store_dir(root) / "entries" / k).exists() for k in keys)):
            check_loopback()
        with Progress(len(requests), stream=stream, tmp_root=store_dir(root) / "tmp") as progress:

            def work(i: int) -> RunResult:
                req = requests[i]
                label = labels[i] if labels else req.notebook.name
                if interrupts.stopping:
                    return RunResult(label, "interrupted", 0.0, "", req.out_dir)
                progress.start(label)
                res = run_one(req, root, keys[i], threads, force, interrupts, progress.say, launcher)
                res.name = label
                if before_finish:
                    before_finish(i, keys[i], res)
                progress.finish(res)
                if on_result:
                    on_result(i, keys[i], res)
                return res

            with ThreadPoolExecutor(max_workers=jobs) as pool:
                done = dict(zip(order, pool.map(work, order)))
        return [done[i] for i in range(len(requests))]
    finally:
        if launcher is not None:
            launcher.close()


def check_loopback() -> None:
    """Before starting kernels: a :class:`NotebookError` (one line) if 127.0.0.1 cannot be reached over TCP."""
    problem = loopback_problem()
    if problem:
        raise NotebookError(
            f"cannot start a Jupyter kernel: {LOOPBACK_HINT.split(';')[0]}; 127.0.0.1 is not reachable here: {problem}"
        )


def cpu_seconds(manifest: dict) -> float:
    """CPU seconds of a recorded run: its wall time times its threads (a manifest's ``seconds``, ``threads``)."""
    return float(manifest["seconds"]) * max(1, int(manifest.get("threads", 1)))


def expected_seconds(root: Path) -> dict[tuple[str, str], float]:
    """Expected execution time per ``(notebook, preset)``, for scheduling only (:func:`timed_seconds`)."""
    return {k: sec for k, (sec, _) in timed_seconds(root).items()}


def timed_seconds(root: Path) -> dict[tuple[str, str], tuple[float, str]]:
    """``(seconds, source)`` per ``(notebook, preset)``; ``source`` is ``"store"`` or ``"hint"``.

    The newest run in the store *at the preset's exact parameters* wins (its CPU seconds,
    :func:`cpu_seconds`): a sweep point (:mod:`iclbook.sweep`, stored as a ``quick`` run at other
    parameters), a run with ``-p`` overrides, or a run of an older default does not count. Otherwise the
    committed hint ``notebooks/seconds.json`` (``{"quick": {name: seconds}}``; a stale or missing hint
    only changes the order of execution and what ``icl-book list`` shows).
    """
    seconds: dict[tuple[str, str], tuple[float, str]] = {}
    try:
        hint = load_file(root / SECONDS_HINT, SECONDS_FILE, SECONDS_HINT.as_posix())
    except (OSError, InputFileError):
        hint = {}  # a missing or malformed hint only changes the order of execution (plan and list say so)
    for preset, table in hint.items():
        for name, sec in table.items():
            if isinstance(sec, (int, float)):  # {"inner": {preset: {name: [...]}}} is for icl-book plan
                seconds[(str(name), str(preset))] = (float(sec), "hint")
    exact = preset_literals(root)
    newest: dict[tuple[str, str], float] = {}
    for manifest in (store_dir(root) / "entries").glob(f"*/{STAMP}"):
        try:
            m = read_manifest(manifest.parent)
            when, k = manifest.stat().st_mtime, (str(m["notebook"]), str(m["preset"]))
            if k not in exact or m.get("param_literals") != exact[k]:
                continue
            if when > newest.get(k, -1.0):
                newest[k], seconds[k] = when, (cpu_seconds(m), "store")
        except (OSError, ValueError):
            continue
    return seconds


def preset_literals(root: Path) -> dict[tuple[str, str], dict[str, str]]:
    """The resolved parameters of every readable notebook's presets as exact literals, per
    ``(notebook, preset)`` (as a run's manifest records them in ``param_literals``)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for nb in discover_all(root)[0]:
        for preset in nb.preset_names:
            try:
                out[(nb.name, preset)] = {k: python_literal(v) for k, v in nb.resolve(preset).items()}
            except NotebookError:
                continue
    return out


def describe_seconds(timed: tuple[float, str] | None) -> str:
    """``"~12 s (hint)"``, ``"~3 min (store)"``, or ``"—"`` when there is no time."""
    if timed is None:
        return "—"
    sec, source = timed
    text = f"~{sec:.1f} s" if sec < 10 else f"~{sec:.0f} s" if sec < 600 else f"~{sec / 60:.0f} min"
    return f"{text} ({source})"


def longest_first(requests: Sequence[RunRequest], seconds: dict[tuple[str, str], float]) -> list[int]:
    """Indices of ``requests``, longest expected run first (LPT scheduling: the last notebook to start
    is a short one, so no worker idles while another finishes a long run); unknown ones keep their order
    after the known ones."""
    known = [seconds.get((r.notebook.name, r.preset)) for r in requests]
    return sorted(range(len(requests)), key=lambda i: (known[i] is None, -(known[i] or 0.0), i))
