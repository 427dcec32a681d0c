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
  run (:func:`iclbook.execution.execute`): failing cell, metrics schema, manifest, store;
* while the notebook runs, the worker relays its progress file (:mod:`iclcore.progress`) through a
  Dask ``Variable`` (:class:`ProgressRelay`), and the client copies it into the run's private
  folder, so the progress line shows a remote notebook's counters as it does a local one's;
* the notebook's inner tasks (:func:`iclcore.parallel.map_configs`) go to the same cluster: the
  kernel gets the scheduler's address in :data:`iclcore.parallel.SCHEDULER_ENV` and submits each
  configuration as a task of its own; once the kernel reports inner tasks (the ``tasks`` counter of
  its progress file), the notebook's worker thread secedes from the worker's thread pool
  (``distributed.secede``) for the rest of the run, so that a notebook waiting for its inner tasks
  never holds the slot they need (no deadlock when every slot runs such a notebook), while a notebook
  without inner tasks keeps its slot; the durations of the inner tasks come back with the outputs
  (``inner.json``) and go into the manifest.

A worker that dies mid-task is handled by Dask: the scheduler reschedules the task on another
worker (``distributed.scheduler.allowed-failures``); the result is the same because each run is
a pure function of what the task carries.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from iclcore.parallel import THREADS_RESOURCE

from .notebooks import NotebookError
from .worker_env import (
    CPU_FILE,
    INNER_FILE,
    MALLOC_TRIM_ENV,
    PROGRESS_ENV,
    PROGRESS_FILE,
    SCHEDULER_ENV,
    output_files,
    thread_env,
)

CONNECT_TIMEOUT = 8.0  # seconds before an unreachable scheduler is reported


class SchedulerError(NotebookError):
    """The Dask scheduler cannot be reached or started (one-line message; the CLI prints it as an error)."""


#: Address schemes of a Dask scheduler (``distributed.comm``); an address without one is ``tcp``.
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
#: The most workers of a ``local:N`` cluster, per core of this machine (each worker is a process).
LOCAL_WORKERS_PER_CORE = 4
_ADDRESS_RE = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[^\]]*\]|[^:/\s]+):(?P<port>[^/\s]*)/?"
)


def local_cluster_shape(scheduler: str, cores: int) -> tuple[int, int] | None:
    """``(N, C)`` of ``local:N`` (``C = 1``) or ``local:NxC`` (N workers of C threads each, which declare the
    worker resource ``threads=C`` so that inner tasks of several threads fit, see :mod:`iclcore.parallel`);
    None for another address. A :class:`SchedulerError` unless ``N, C >= 1`` and ``N * C <= 4 * cores``."""
    if not scheduler.startswith("local:"):
        return None
    n_text, _, c_text = scheduler.split(":", 1)[1].partition("x")
    try:
        n, c = int(n_text), int(c_text) if c_text else 1
        if n < 1 or c < 1:
            raise ValueError
    except ValueError:
        raise SchedulerError(
            f"--scheduler {scheduler}: expected local:N or local:NxC with N >= 1 workers of C >= 1 threads"
        ) from None
    bound = LOCAL_WORKERS_PER_CORE * max(1, cores)
    if n * c > bound:
        raise SchedulerError(
            f"--scheduler {scheduler}: {n * c} worker threads on {cores} core(s) is more than the bound of {bound} "
            f"({LOCAL_WORKERS_PER_CORE} per core); start a cluster of that size yourself and pass its address"
        )
    return n, c


def local_workers(scheduler: str, cores: int) -> int | None:
    """N of ``local:N`` or ``local:NxC`` (None for another address); see :func:`local_cluster_shape`."""
    shape = local_cluster_shape(scheduler, cores)
    return None if shape is None else shape[0]


def parse_address(scheduler: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a scheduler address ``[scheme://]host:port``; a one-line :class:`SchedulerError`
    naming the address and what is wrong with it otherwise (checked before Dask is imported)."""
    shown = scheduler if scheduler.strip() else repr(scheduler)
    m = _ADDRESS_RE.fullmatch(scheduler.strip())
    scheme = (m.group("scheme") if m else None) or "tcp"
    if m is None:
        raw_scheme = scheduler.split("://", 1)[0] if "://" in scheduler else ""
        if raw_scheme and raw_scheme.lower() not in SCHEMES:
            raise SchedulerError(
                f"--scheduler {shown}: unknown address scheme {raw_scheme!r}; use tcp://HOST:PORT ({', '.join(SCHEMES)}) "
                "or local:N"
            )
        raise SchedulerError(f"--scheduler {shown}: not an address; use tcp://HOST:PORT or local:N")
    if scheme.lower() not in SCHEMES:
        raise SchedulerError(
            f"--scheduler {shown}: unknown address scheme {scheme!r}; use tcp://HOST:PORT ({', '.join(SCHEMES)}) "
            "or local:N"
        )
    port = m.group("port")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SchedulerError(f"--scheduler {shown}: port {port!r} is not a number from 1 to 65535")
    return scheme.lower(), m.group("host").strip("[]"), int(port)


def check_scheduler(scheduler: str, cores: int) -> None:
    """A one-line :class:`SchedulerError` if ``scheduler`` is neither a valid ``local:N`` nor a parsable address."""
    if local_workers(scheduler, cores) is None:
        parse_address(scheduler)


def probe_scheduler(scheduler: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """A one-line :class:`SchedulerError` naming the address and the cause if no TCP connection to it opens
    within ``timeout`` seconds (name not resolved, connection refused, no route, timeout)."""
    scheme, host, port = parse_address(scheduler)
    if scheme in ("ucx", "inproc"):
        return  # not TCP: left to Dask
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror as exc:
        raise SchedulerError(f"--scheduler {scheduler}: cannot resolve the host {host!r} ({exc.strerror})") from None
    except TimeoutError:
        raise SchedulerError(
            f"--scheduler {scheduler}: no answer from {host}:{port} within {timeout:.0f} s (no scheduler there?)"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SchedulerError(f"--scheduler {scheduler}: cannot reach the Dask scheduler: {reason}") from None


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
        (tmp / "spec.json").write_text(json.dumps(spec))
        env = thread_env(payload["threads"], src)
        env[PROGRESS_ENV] = str(tmp / PROGRESS_FILE)
        if payload.get("scheduler"):
            env[SCHEDULER_ENV] = payload["scheduler"]
        seceded = False
        with open(tmp / "log.txt", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "iclbook._child", str(tmp / "spec.json")],
                env=env,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            relay = ProgressRelay(payload.get("progress"), tmp / PROGRESS_FILE)
            cpu = None
            while proc.returncode is None:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # reaps it with its CPU seconds
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    cpu = usage.ru_utime + usage.ru_stime  # the child and its reaped descendants (the kernel)
                else:
                    time.sleep(RELAY_INTERVAL)
                    relay.publish()
                    if payload.get("scheduler") and not seceded and _waits_on_tasks(tmp / PROGRESS_FILE):
                        seceded = _secede()
        if seceded:
            from distributed import rejoin

            rejoin()
        inner = tmp / INNER_FILE
        return {
            "rc": proc.returncode,
            "log": (tmp / "log.txt").read_bytes(),
            "files": {rel: (work / rel).read_bytes() for rel in output_files(work)},
            "inner": inner.read_bytes() if inner.is_file() else b"",
            "cpu": cpu,
        }


def _waits_on_tasks(path: Path) -> bool:
    """Whether the kernel's progress file shows inner tasks (``tasks`` counter, :func:`iclcore.parallel.map_configs`)."""
    try:
        return "tasks" in json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def _secede() -> bool:
    """Leave this Dask worker's thread pool while the kernel runs (its inner tasks may need the slot); False outside a task."""
    try:
        from distributed import secede

        secede()
    except (ImportError, ValueError, KeyError, AttributeError):
        return False
    return True


RELAY_INTERVAL = 0.5  # seconds between two looks at a running notebook's progress file


class ProgressRelay:
    """Worker side of the progress display: the notebook's progress file, published to the client.

    The notebook writes its counters to a file on the worker (:mod:`iclcore.progress`); when the
    file changes, its text is set on the Dask ``Variable`` named by the client, which the client
    copies into the run's private folder, where the runner's progress line reads it as for a local
    run. Without a name (or outside a worker) nothing is published.
    """

    def __init__(self, name: str | None, path: Path) -> None:
        self.path, self.last, self.variable = path, None, None
        if name:
            try:
                from distributed import Variable, get_client

                self.variable = Variable(name, client=get_client())
            except (ImportError, ValueError):
                self.variable = None

    def publish(self) -> None:
        if self.variable is None:
            return
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError:
            return
        if not text or text == self.last:
            return
        try:
            json.loads(text)
        except ValueError:  # caught mid-write: the next look gets the whole file
            return
        self.last = text
        self.variable.set(text)


def _copy_progress(variable: Any, seen: str | None, path: Path) -> str | None:
    """Client side of :class:`ProgressRelay`: write the worker's latest progress text to ``path``."""
    try:
        text = variable.get(timeout=0.05)
    except TimeoutError:  # nothing published yet
        return seen
    if isinstance(text, str) and text != seen:
        part = path.with_name(path.name + ".part")
        part.write_text(text, encoding="utf-8")
        part.replace(path)
        return text
    return seen


POLL_SECONDS = 0.1  # how often a waiting notebook checks for an interrupt (a tenth of the one-second budget)


class DaskLauncher:
    """Runs the child of :func:`iclbook.execution.execute` on a Dask cluster instead of locally."""

    def __init__(self, scheduler: str, root: Path) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SchedulerError("--scheduler needs dask and distributed: pip install -e '.[cluster]'") from None
        from .worker_env import available_cores

        self.root = root
        self.cluster = None
        shape = local_cluster_shape(scheduler, available_cores())
        if shape is not None:
            n, c = shape
            import dask

            # the workers run inner tasks in their own process: no nanny trim threshold there (MALLOC_TRIM_ENV),
            # neither from the config nor from this process's environment (an earlier nanny in this process,
            # e.g. another LocalCluster, writes it into os.environ); restored once the workers have started
            inherited = os.environ.pop(MALLOC_TRIM_ENV, None)
            try:
                with dask.config.set({f"distributed.nanny.pre-spawn-environ.{MALLOC_TRIM_ENV}": None}):
                    self.cluster = LocalCluster(  # no dashboard; its HTTP routes on a free loopback port, so that
                        n_workers=n,  # a port 8787 held by another cluster prints no warning
                        threads_per_worker=c,
                        resources={THREADS_RESOURCE: c} if "x" in scheduler else None,
                        processes=True,
                        dashboard_address=None,
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    )
            finally:
                if inherited is not None:
                    os.environ[MALLOC_TRIM_ENV] = inherited
            address = self.cluster.scheduler_address
        else:
            probe_scheduler(scheduler)  # one line in milliseconds for a refused or unresolvable address
            address = scheduler
        self.address = address
        try:
            self.client = Client(address, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False)
        except Exception as exc:  # noqa: BLE001  (Dask raises OSError, TimeoutError, ValueError, ...: one line each)
            if self.cluster is not None:
                self.cluster.close()
            raise SchedulerError(
                f"--scheduler {scheduler}: cannot connect to the Dask scheduler at {address} "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:200] or 'no detail'})"
            ) from None
        self.package = package_files(root)
        self.interrupts: Any = None  # the Interrupts of the runs, seen by close()

    def slots(self) -> int:
        """Worker threads in the cluster (at least 1): how many notebooks to keep in flight."""
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def __call__(self, name: str, spec: dict[str, Any], tmp: Path, work: Path, threads: int, interrupts: Any) -> int:
        """Submit, wait (polling for interrupts), write the returned files into ``work``; the child's exit code."""
        from dask.distributed import Variable

        key = f"icl-book-{name}-{uuid.uuid4().hex[:12]}"
        payload = {
            "name": name,
            "source": Path(spec["source"]).read_bytes(),
            "spec": {k: v for k, v in spec.items() if k not in ("source", "output", "cwd")},
            "package": self.package,
            "threads": threads,
            "progress": f"{key}-progress",
            "scheduler": self.address,
        }
        self.interrupts = interrupts
        progress, seen = Variable(payload["progress"], client=self.client), "{}"
        progress.set(seen)  # a value from the start: a get never waits (a timed-out get logs an error on the scheduler)
        future = self.client.submit(run_on_worker, payload, key=key, pure=False)
        polls = 0
        try:
            while True:
                if interrupts.stopping:
                    future.cancel()
                    raise InterruptedError(name)
                try:
                    result = future.result(timeout=POLL_SECONDS)
                    break
                except TimeoutError:
                    polls += 1
                    if polls % 5 == 0:  # the progress line every half second: one round trip to the scheduler
                        seen = _copy_progress(progress, seen, tmp / PROGRESS_FILE)
                    continue
                except Exception as exc:  # noqa: BLE001  (the task itself failed, e.g. too many worker deaths)
                    (tmp / "log.txt").write_text(f"Dask task failed: {type(exc).__name__}: {exc}\n")
                    return 1
        finally:
            try:
                progress.delete()
            except Exception:  # noqa: BLE001  (a closing client: nothing left to clean)
                pass
        (tmp / "log.txt").write_bytes(result["log"])
        if result.get("inner"):
            (tmp / INNER_FILE).write_bytes(result["inner"])
        if result.get("cpu") is not None:
            (tmp / CPU_FILE).write_text(f"{result['cpu']:.2f}")
        for rel, data in result["files"].items():
            path = work / rel
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                raise ValueError(f"{name}: the worker returned a file outside the output folder: {rel}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return int(result["rc"])

    def close(self) -> None:
        """Close the client and a ``local:N`` cluster. After an interrupt, quickly and quietly: the local
        worker processes (and the notebooks they run) are killed first, and Dask's warnings about them are not
        shown (the command's one line says what happened)."""
        interrupted = self.interrupts is not None and self.interrupts.stopping
        if not interrupted:
            try:
                self.client.close()
            finally:
                if self.cluster is not None:
                    self.cluster.close()
            return
        import logging

        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        if self.cluster is not None:
            for nanny in list(self.cluster.workers.values()):  # a nanny whose worker dies must not start another:
                nanny.close_gracefully()  # the cluster's close would wait for that start (seconds under load)
            _kill_local_workers()
        for close in (self.client.close, *([self.cluster.close] if self.cluster is not None else [])):
            try:
                close(timeout=2)
            except Exception:  # noqa: BLE001  (an interrupted command exits anyway; its one line is printed)
                pass


def _kill_local_workers() -> None:
    """Kill the worker processes of this process's ``LocalCluster`` with everything they started (the
    ``multiprocessing`` spawned children; the resource tracker is left to exit on its own)."""
    import psutil

    for child in psutil.Process().children():
        try:
            if "spawn_main" not in " ".join(child.cmdline()):
                continue
            for proc in [*child.children(recursive=True), child]:
                proc.kill()
        except psutil.Error:
            continue


__all__ = [
    "CONNECT_TIMEOUT",
    "DaskLauncher",
    "ProgressRelay",
    "SchedulerError",
    "check_scheduler",
    "local_cluster_shape",
    "local_workers",
    "package_files",
    "parse_address",
    "probe_scheduler",
    "run_on_worker",
]
