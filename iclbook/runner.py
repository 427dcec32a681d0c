"""Execution of notebooks: jupytext -> papermill, cached, in parallel.

Each notebook ``notebooks/<name>.py`` is converted to ipynb in a scratch
folder (never paired with its source), executed by papermill in a subprocess
whose working directory is the output folder ``<out>/<name>/``, and the
result (executed notebook, figures, ``metrics.json``) stays there.

The cache key of a run covers the notebook source, the resolved parameters,
the preset, every file of ``iclcore/`` and the lock file; a run whose key is
unchanged and whose outputs exist is not executed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .notebooks import QUICK, Notebook

STAMP = ".icl-run.json"


@dataclass(frozen=True)
class RunRequest:
    """One notebook execution to perform."""

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
    status: str  # "executed", "cached" or "failed"
    seconds: float = 0.0
    error: str = ""
    out_dir: Path | None = None


@dataclass
class RunSummary:
    results: list[RunResult] = field(default_factory=list)

    @property
    def failures(self) -> list[RunResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def executed(self) -> list[RunResult]:
        return [r for r in self.results if r.status == "executed"]

    @property
    def ok(self) -> bool:
        return not self.failures


def _package_files(package_dir: Path) -> list[Path]:
    return sorted(
        p
        for p in package_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    )


def cache_key(request: RunRequest, root: Path) -> str:
    """SHA-256 over notebook source, parameters, preset, ``iclcore/`` and the lock file."""
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    add("notebook", request.notebook.path.read_bytes())
    add("params", json.dumps(request.params, sort_keys=True).encode())
    add("preset", request.preset.encode())
    package = root / "iclcore"
    for p in _package_files(package):
        add("iclcore/" + p.relative_to(package).as_posix(), p.read_bytes())
    lock = root / "requirements.lock"
    add("lock", lock.read_bytes() if lock.exists() else b"")
    return h.hexdigest()


def is_cached(request: RunRequest, key: str) -> bool:
    stamp = request.out_dir / STAMP
    if not (stamp.exists() and request.executed_path.exists()):
        return False
    try:
        return json.loads(stamp.read_text()).get("key") == key
    except (OSError, json.JSONDecodeError):
        return False


def thread_env(threads: int) -> dict[str, str]:
    """Environment for one worker: ``threads`` BLAS/OpenMP/torch threads, headless matplotlib."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = str(threads)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


def failing_cell(executed: Path) -> str:
    """Describe the first error output in an executed notebook ('' if none)."""
    try:
        nb = json.loads(executed.read_text())
    except (OSError, json.JSONDecodeError):
        return ""
    code_cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    for index, cell in enumerate(code_cells, start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                src = "".join(cell.get("source", "")).strip().splitlines()
                first = src[0] if src else ""
                return f"code cell {index} (`{first[:80]}`): {out.get('ename')}: {out.get('evalue')}"
    return ""


def _to_ipynb(notebook: Notebook, target: Path) -> None:
    import jupytext

    nb = jupytext.read(notebook.path)
    # The scratch copy must not be paired with the source: drop jupytext's pairing metadata.
    nb.metadata.get("jupytext", {}).pop("formats", None)
    nb.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    jupytext.write(nb, target, fmt="ipynb")


def execute(request: RunRequest, root: Path, threads: int, key: str | None = None) -> RunResult:
    """Execute one notebook (no cache check) and stamp it with its cache ``key``.

    Never raises for a failing notebook; a failed run leaves no stamp.
    """
    start = time.monotonic()
    name = request.notebook.name
    out_dir = request.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP).unlink(missing_ok=True)
    key = key or cache_key(request, root)
    with tempfile.TemporaryDirectory(prefix=f"icl-{name}-") as tmp:
        source = Path(tmp) / f"{name}.ipynb"
        params_file = Path(tmp) / "params.json"
        try:
            _to_ipynb(request.notebook, source)
        except Exception as exc:  # a malformed source is a failure of this notebook only
            return RunResult(name, "failed", time.monotonic() - start, f"jupytext conversion failed: {exc}", out_dir)
        params_file.write_text(json.dumps(request.params))
        cmd = [
            sys.executable, "-m", "papermill", str(source), str(request.executed_path),
            "-f", str(params_file), "--cwd", str(out_dir), "--kernel", "python3",
            "--no-progress-bar", "--log-level", "ERROR",
        ]
        proc = subprocess.run(cmd, env=thread_env(threads), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        detail = failing_cell(request.executed_path)
        if not detail:
            tail = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
            detail = tail[-1] if tail else f"papermill exited with code {proc.returncode}"
        return RunResult(name, "failed", seconds, detail, out_dir)
    if not (out_dir / "metrics.json").exists():
        return RunResult(name, "failed", seconds, "the notebook wrote no metrics.json (call iclcore.plotting.write_metrics)", out_dir)
    stamp = {"key": key, "notebook": name, "preset": request.preset, "params": request.params, "seconds": round(seconds, 2), "threads": threads}
    (out_dir / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    return RunResult(name, "executed", seconds, "", out_dir)


class Progress:
    """A one-line progress display: done/total, running notebooks with elapsed time."""

    def __init__(self, total: int, stream: Any = None, interval: float = 1.0) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.interval = interval
        self.done = 0
        self.running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_plain = 0.0
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._tty:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _line(self) -> str:
        now = time.monotonic()
        with self._lock:
            running = ", ".join(f"{n} {now - t0:.0f}s" for n, t0 in self.running.items())
            return f"[{self.done}/{self.total}] running: {running or '-'}"

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if self._tty:
                self.stream.write("\r\033[K" + self._line())
                self.stream.flush()
            elif time.monotonic() - self._last_plain > 30:
                self._last_plain = time.monotonic()
                self.stream.write(self._line() + "\n")
                self.stream.flush()

    def start(self, name: str) -> None:
        with self._lock:
            self.running[name] = time.monotonic()

    def finish(self, result: RunResult) -> None:
        with self._lock:
            self.running.pop(result.name, None)
            self.done += 1
            done = self.done
        word = {"executed": "ran", "cached": "cached", "failed": "FAILED"}[result.status]
        msg = f"[{done}/{self.total}] {word:6s} {result.name}"
        if result.status != "cached":
            msg += f" ({result.seconds:.1f}s)"
        if result.error:
            msg += f": {result.error}"
        prefix = "\r\033[K" if self._tty else ""
        self.stream.write(prefix + msg + "\n")
        self.stream.flush()


def run_notebooks(
    requests: Sequence[RunRequest],
    root: Path,
    jobs: int | None = None,
    force: bool = False,
    cores: int | None = None,
    stream: Any = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> RunSummary:
    """Run ``requests`` (cached unless ``force``) with ``jobs`` workers.

    Each worker gets ``max(1, cores // jobs)`` BLAS/torch threads so that
    parallel notebooks do not oversubscribe the machine.
    """
    cores = cores or os.cpu_count() or 1
    jobs = max(1, min(jobs or cores, len(requests) or 1))
    threads = max(1, cores // jobs)
    summary = RunSummary()
    pending: list[RunRequest] = []
    keys = {}
    for req in requests:
        keys[req.notebook.name] = key = cache_key(req, root)
        if not force and is_cached(req, key):
            summary.results.append(RunResult(req.notebook.name, "cached", 0.0, "", req.out_dir))
        else:
            pending.append(req)
    with Progress(len(requests), stream=stream) as progress:
        for r in summary.results:
            progress.finish(r)

        def work(req: RunRequest) -> RunResult:
            progress.start(req.notebook.name)
            res = execute(req, root, threads, keys[req.notebook.name])
            progress.finish(res)
            if on_result:
                on_result(res)
            return res

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            summary.results.extend(pool.map(work, pending))
    order = {req.notebook.name: i for i, req in enumerate(requests)}
    summary.results.sort(key=lambda r: order[r.name])
    return summary


def make_requests(
    notebooks: Sequence[Notebook],
    out_root: Path,
    preset: str = QUICK,
    overrides: dict[str, str] | None = None,
) -> list[RunRequest]:
    """Resolve parameters for each notebook.

    Every selected notebook must define ``preset`` and every override name;
    otherwise :class:`~iclbook.notebooks.NotebookError` names the problem.
    """
    return [
        RunRequest(nb, nb.resolve(preset, overrides), preset, out_root / nb.name)
        for nb in notebooks
    ]
