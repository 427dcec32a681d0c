"""Opt-in Dask execution of notebooks (``icl-book run|build --scheduler ADDRESS`` or ``local:N``).

Only this module imports :mod:`dask.distributed`, and only when ``--scheduler`` is given; the
default path (local processes) never imports Dask. Install with the ``cluster`` extra
(``pip install -e '.[cluster]'``); workers need the same environment (``iclbook`` and the
locked dependencies), but no shared filesystem:

* the client ships, with each task, the notebook source, its run spec (parameters, metadata)
  and every ``iclcore/*.py`` file of the project (a superset of the files in the cache key);
* the worker executes ``python -m iclbook._child`` in a temporary folder, with the shipped
  ``iclcore`` first on ``PYTHONPATH`` and the runner's thread settings, and returns the output
  files as bytes together with the exit code and the log;
* the client writes them into the run's private folder and continues exactly as for a local
  run (:func:`iclbook.runner.execute`): failing cell, metrics schema, manifest, store.

A worker that dies mid-task is handled by Dask: the scheduler reschedules the task on another
worker (``distributed.scheduler.allowed-failures``); the result is the same because each run is
a pure function of what the task carries.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from .notebooks import NotebookError

CONNECT_TIMEOUT = 8.0  # seconds before an unreachable scheduler is reported


class SchedulerError(NotebookError):
    """The Dask scheduler cannot be reached or started (one-line message; the CLI prints it as an error)."""


def package_files(root: Path) -> dict[str, bytes]:
    """Every ``iclcore/**/*.py`` of the project, relative path -> bytes."""
    pkg = root / "iclcore"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(pkg.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def run_on_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """Execute one notebook in a fresh temporary folder on this machine; return ``rc``, ``log``, ``files``.

    ``payload``: ``name``, ``source`` (bytes of the py:percent file), ``spec`` (the runner's
    spec without paths), ``package`` (relative path -> bytes), ``threads``.
    """
    from iclbook.runner import PROGRESS_ENV, PROGRESS_FILE, _files, thread_env

    with tempfile.TemporaryDirectory(prefix=f"icl-{payload['name']}-") as d:
        tmp = Path(d)
        src = tmp / "src"
        for rel, data in payload["package"].items():
            path = src / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        source = tmp / f"{payload['name']}.py"
        source.write_bytes(payload["source"])
        work = tmp / "out"
        work.mkdir()
        spec = dict(payload["spec"], source=str(source), output=str(work / f"{payload['name']}.ipynb"), cwd=str(work))
        import json

        (tmp / "spec.json").write_text(json.dumps(spec))
        env = thread_env(payload["threads"], src)
        env[PROGRESS_ENV] = str(tmp / PROGRESS_FILE)
        proc = subprocess.run(
            [sys.executable, "-m", "iclbook._child", str(tmp / "spec.json")],
            env=env,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        return {
            "rc": proc.returncode,
            "log": proc.stdout,
            "files": {rel: (work / rel).read_bytes() for rel in _files(work)},
        }


class DaskLauncher:
    """Runs the child of :func:`iclbook.runner.execute` on a Dask cluster instead of locally."""

    def __init__(self, scheduler: str, root: Path) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SchedulerError("--scheduler needs dask and distributed: pip install -e '.[cluster]'") from None
        self.root = root
        self.cluster = None
        if scheduler.startswith("local:"):
            try:
                n = int(scheduler.split(":", 1)[1])
                if n < 1:
                    raise ValueError
            except ValueError:
                raise SchedulerError(f"--scheduler {scheduler}: expected local:N with N >= 1 workers") from None
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            address = self.cluster.scheduler_address
        else:
            address = scheduler
        try:
            self.client = Client(address, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            if self.cluster is not None:
                self.cluster.close()
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT:.0f} s ({type(exc).__name__})"
            ) from None
        self.package = package_files(root)

    def slots(self) -> int:
        """Worker threads in the cluster (at least 1): how many notebooks to keep in flight."""
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def __call__(self, name: str, spec: dict[str, Any], tmp: Path, work: Path, threads: int, interrupts: Any) -> int:
        """Submit, wait (polling for interrupts), write the returned files into ``work``; the child's exit code."""
        payload = {
            "name": name,
            "source": Path(spec["source"]).read_bytes(),
            "spec": {k: v for k, v in spec.items() if k not in ("source", "output", "cwd")},
            "package": self.package,
            "threads": threads,
        }
        future = self.client.submit(run_on_worker, payload, key=f"icl-book-{name}-{uuid.uuid4().hex[:12]}", pure=False)
        while True:
            if interrupts.stopping:
                future.cancel()
                raise InterruptedError(name)
            try:
                result = future.result(timeout=0.5)
                break
            except TimeoutError:
                continue
            except Exception as exc:  # noqa: BLE001  (the task itself failed, e.g. too many worker deaths)
                (tmp / "log.txt").write_text(f"Dask task failed: {type(exc).__name__}: {exc}\n")
                return 1
        (tmp / "log.txt").write_bytes(result["log"])
        for rel, data in result["files"].items():
            path = work / rel
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                raise ValueError(f"{name}: the worker returned a file outside the output folder: {rel}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return int(result["rc"])

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


__all__ = ["DaskLauncher", "SchedulerError", "package_files", "run_on_worker", "CONNECT_TIMEOUT"]
