"""Independent work on several cores or a Dask cluster: a thread budget and one executor for a list of configurations.

``icl-book run`` gives each notebook it runs a number of BLAS/OpenMP/torch threads by setting
:data:`THREAD_VARIABLES` in the notebook's environment (:func:`thread_settings`, the one place
where they are written); a notebook reads its share back with :func:`thread_budget` and may
spend it on independent computations with :func:`map_configs`::

    results = map_configs(train_one, configs, workers=thread_budget(), cost=expected_seconds)

``map_configs`` maps a pure function over a list of configurations (its *inner tasks*), on the
first of these that applies:

1. ``executor=`` given: any :class:`concurrent.futures.Executor` runs the calls;
2. the environment variable :data:`SCHEDULER_ENV` names a Dask scheduler (``icl-book run
   --scheduler ADDRESS`` sets it in the notebook's kernel): each configuration is one Dask task of
   that cluster, submitted through ``distributed.get_client()`` when this code already runs inside
   a Dask task, else through a ``Client`` connected to the address (one per process). The worker
   checks that its ``iclcore`` has the same source files as the caller's (:func:`package_fingerprint`)
   before running the call, so a worker with another checkout fails loudly instead of computing
   something else. A worker lost mid-task is Dask's to retry (``distributed.scheduler.allowed-failures``);
3. ``workers > 1``: fresh (spawned) processes, ``workers`` threads in all: with tasks of one thread
   (the default) ``min(workers, n)`` processes of one BLAS/OpenMP/torch thread each;
4. otherwise: in this process, one after another.

Each result depends only on its configuration, so all four give the same results (in the order of
``configs``), bit for bit (tested on a ``LocalCluster``); they differ only in wall time.

Tasks with threads
------------------
A long task may declare that it uses several threads (``threads=`` an int, or a function of the
configuration: a torch training whose matrix products are large enough to share). It then runs with
``torch.set_num_threads(t)`` and, in a fresh process, ``t`` BLAS/OpenMP threads:

* in processes (path 3): each task gets ``t = min(threads(c), workers)`` threads, and the pool has
  ``max(1, workers // max t)`` processes, so the budget of ``workers`` threads is kept;
* on Dask (path 2), every task is submitted with the worker resource :data:`THREADS_RESOURCE`
  (``{"threads": t}``) when the cluster's workers declare it (``dask worker --nthreads C --resources
  threads=C``, or ``icl-book run --scheduler local:NxC``), so a worker of ``C`` threads never runs more
  than ``C`` threads' worth of tasks. A task of more than one thread on a cluster whose workers do not
  declare the resource, or whose largest worker has fewer, is refused before anything is submitted
  (one line naming the task and the resource): Dask would otherwise wait for it forever;
* in this process (path 4) and on an ``executor``, threads stay as the caller set them.

torch's thread count is one per process: on a Dask worker that runs tasks of different thread counts
at once, the last one started sets it for both. The thread count changes the order of floating-point
sums inside matrix products, so results computed with ``t > 1`` agree with the one-thread results to
float rounding, not bit for bit (:mod:`benchmarks.bench_task_threads` measures by how much).

Every call is timed where it runs (wall and thread CPU seconds); :func:`map_configs` publishes the
count of finished tasks to the runner's progress line (:func:`iclcore.progress.report_progress`,
``tasks 5/18``) and records the durations with :func:`iclcore.progress.record_inner_tasks`, from which
``icl-book`` writes them into the run's manifest (used by ``icl-book plan``).

This module imports only the standard library (and ``distributed`` only on path 2): the book
tooling imports it at start-up.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from iclcore.progress import PROGRESS_ENV, record_inner_tasks, report_progress

if TYPE_CHECKING:
    from concurrent.futures import Executor

__all__ = [
    "CONNECT_TIMEOUT",
    "SCHEDULER_ENV",
    "THREADS_RESOURCE",
    "THREAD_VARIABLES",
    "SchedulerUnreachable",
    "check_dask_threads",
    "map_configs",
    "package_fingerprint",
    "task_threads",
    "thread_budget",
    "thread_settings",
]

#: Environment variables that set the threads of BLAS, OpenMP (torch) and numexpr; the first is read back.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

#: Environment variable naming the Dask scheduler of the inner tasks (set by ``icl-book run --scheduler``).
SCHEDULER_ENV = "ICL_DASK_SCHEDULER"
CONNECT_TIMEOUT = 8.0  # seconds before an unreachable scheduler is reported
#: The Dask worker resource that counts a worker's threads; a task of ``t`` threads takes ``t`` of it.
THREADS_RESOURCE = "threads"

C = TypeVar("C")
R = TypeVar("R")


class SchedulerUnreachable(ConnectionError):
    """The Dask scheduler named by :data:`SCHEDULER_ENV` cannot be reached (one-line message)."""


def _count(value: object, name: str) -> int:
    """``value`` if it is an int >= 1 (booleans refused); else an error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return value


def thread_settings(threads: int) -> dict[str, str]:
    """The environment variables (name -> value) that give a process ``threads`` BLAS/OpenMP threads."""
    threads = _count(threads, "threads")
    return {var: str(threads) for var in THREAD_VARIABLES}


def thread_budget(default: int = 1) -> int:
    """Threads this process may use: ``OMP_NUM_THREADS`` (set per worker by ``icl-book run``), else ``default``."""
    try:
        return max(1, int(os.environ[THREAD_VARIABLES[0]]))
    except (KeyError, ValueError):
        return default


def _pool_process(threads: int = 1) -> None:
    """Initializer of a pool process: ``threads`` BLAS/OpenMP threads for whatever it imports next; no
    progress file (the parent reports the tasks; children writing the same file would overwrite each other)."""
    os.environ.update(thread_settings(threads))
    os.environ.pop(PROGRESS_ENV, None)


def task_threads(threads: int | Callable[[Any], int], configs: Sequence[Any], label: str = "") -> list[int]:
    """Threads declared by each configuration: ``threads`` itself, or ``threads(c)`` for each ``c``, each an
    int >= 1 (an error naming the task otherwise)."""
    if not callable(threads):
        t = _count(threads, "threads")
        return [t] * len(configs)
    return [_count(threads(c), f"threads of task {i} of {label or 'map_configs'}") for i, c in enumerate(configs)]


def check_dask_threads(declared: dict[str, float], wanted: list[int], label: str) -> bool:
    """Whether to submit with the :data:`THREADS_RESOURCE` resource, given each worker's declared amount
    (``declared``: worker -> threads, workers without the resource left out) and the tasks' threads.

    A one-line :class:`ValueError` naming the task and the resource if a task needs more than one thread
    and no worker declares enough."""
    need = max(wanted, default=1)
    if need > 1 and max(declared.values(), default=0) < need:
        i = wanted.index(need)
        has = (
            f"the largest worker declares {THREADS_RESOURCE}={max(declared.values()):g}"
            if declared
            else f"no worker declares the resource {THREADS_RESOURCE!r}"
        )
        raise ValueError(
            f"map_configs: task {i} of {label or 'map_configs'} needs {need} threads, but {has}: start the workers "
            f"with --nthreads C --resources {THREADS_RESOURCE}=C (C >= {need}), or icl-book run --scheduler local:NxC"
        )
    return bool(declared)


@lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """SHA-256 over the relative paths and bytes of every ``*.py`` of the ``iclcore`` this process imported."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class _Timed(Generic[C, R]):
    """``fn(config)`` timed where it runs; with ``one_thread``, torch set to the task's ``threads`` first
    (if ``fn``'s module imported torch: a pool process or a Dask worker, never the caller's own process).

    Returns ``(result, wall seconds, thread CPU seconds)``. With ``fingerprint``, first checks that
    this process's ``iclcore`` is the caller's (a Dask worker may hold another checkout).
    """

    fn: Callable[[C], R]
    fingerprint: str = ""
    one_thread: bool = True

    def __call__(self, config: C, threads: int = 1) -> tuple[R, float, float]:
        if self.fingerprint and package_fingerprint() != self.fingerprint:
            import socket

            raise RuntimeError(
                f"map_configs: the iclcore on worker {socket.gethostname()} pid {os.getpid()} differs from the "
                "notebook's (another checkout): install this project's iclcore on every Dask worker"
            )
        torch = sys.modules.get("torch")  # imported by fn's module, never by this one
        if torch is not None and self.one_thread:
            torch.set_num_threads(threads)
        wall, cpu = time.perf_counter(), time.thread_time()
        result = self.fn(config)
        return result, time.perf_counter() - wall, time.thread_time() - cpu


_CLIENTS: dict[str, Any] = {}


def _dask_client(address: str) -> Any:
    """The client of the current Dask task if there is one, else one ``Client`` per process to ``address``."""
    try:
        from distributed import Client, get_client
    except ImportError:
        raise SchedulerUnreachable(
            f"{SCHEDULER_ENV}={address}: the inner tasks need dask and distributed: pip install -e '.[cluster]'"
        ) from None
    try:
        return get_client()  # inside a Dask task (or a process that already holds a default client)
    except ValueError:
        pass
    client = _CLIENTS.get(address)
    if client is None or client.status not in ("running", "connecting", "newly-created"):
        try:
            client = Client(address, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise SchedulerUnreachable(
                f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT:.0f} s "
                f"(from {SCHEDULER_ENV}; {type(exc).__name__})"
            ) from None
        _CLIENTS[address] = client
    return client


def _declared_threads(client: Any) -> dict[str, float]:
    """Worker address -> its declared :data:`THREADS_RESOURCE` (workers without it left out)."""
    workers = client.scheduler_info().get("workers", {})
    return {
        address: float(w["resources"][THREADS_RESOURCE])
        for address, w in workers.items()
        if THREADS_RESOURCE in (w.get("resources") or {})
    }


def _on_dask(
    timed: _Timed,
    configs: list,
    order: list[int],
    costs: list[float] | None,
    label: str,
    address: str,
    threads: list[int],
):
    from distributed import as_completed

    client = _dask_client(address)
    with_resources = check_dask_threads(_declared_threads(client), threads, label)
    futures = {}
    for rank, i in enumerate(order):
        priority = 0 if costs is None else -rank  # Dask runs higher priorities first: most expensive first
        futures[i] = client.submit(
            timed,
            configs[i],
            threads[i],
            pure=False,
            priority=priority,
            key=f"{label or 'inner'}-{i}-{os.urandom(6).hex()}",
            resources={THREADS_RESOURCE: threads[i]} if with_resources else None,
        )
    index = {f.key: i for i, f in futures.items()}
    report_progress(tasks=(0, len(configs)), force=True)  # also tells icl-book's worker that the kernel now waits
    out: dict[int, Any] = {}
    for done, future in enumerate(as_completed(list(futures.values()), loop=client.loop), start=1):
        out[index[future.key]] = future.result()
        report_progress(tasks=(done, len(configs)), force=True)
    return out


def map_configs(
    fn: Callable[[C], R],
    configs: Sequence[C],
    workers: int = 1,
    *,
    cost: Callable[[C], float] | None = None,
    executor: Executor | None = None,
    label: str = "",
    threads: int | Callable[[C], int] = 1,
) -> list[R]:
    """``[fn(c) for c in configs]``, computed as independent tasks (see the module docstring for where).

    Parameters
    ----------
    fn : callable
        A pure function of one configuration, defined at module level (it is pickled by name
        when it runs elsewhere); its result must be picklable.
    configs : sequence
        The configurations, ``(n,)``; each must be picklable when the calls run elsewhere.
    workers : int
        Without a Dask scheduler or ``executor``: ``1`` runs the calls in this process, one after
        another, with its threads as they are; ``> 1`` in ``min(workers, n)`` spawned processes of one
        BLAS/OpenMP/torch thread each. Ignored on Dask (the cluster's workers decide).
    cost : callable, optional
        Expected cost of a configuration; configurations are submitted most expensive first
        (ties keep their order), so that no process idles at the end while another finishes a long
        one. Only the order of submission changes, never the results or their order.
    executor : concurrent.futures.Executor, optional
        Run the calls there instead; ``workers`` and the scheduler are then ignored.
    label : str
        Names the tasks in the recorded durations (``icl-book plan``) and the Dask keys.
    threads : int or callable, keyword-only
        Threads each task uses (an int, or a function of the configuration); see "Tasks with threads"
        in the module docstring. Default 1.

    Returns
    -------
    list
        ``(n,)`` results in the order of ``configs``.

    Raises
    ------
    SchedulerUnreachable
        :data:`SCHEDULER_ENV` is set but the scheduler does not answer within :data:`CONNECT_TIMEOUT` s.
    ValueError
        On Dask, a task needs more threads than any worker declares (see "Tasks with threads").
    """
    workers = _count(workers, "workers")
    configs = list(configs)
    n = len(configs)
    wanted = task_threads(threads, configs, label)
    order = list(range(n))
    costs = None
    if cost is not None:
        costs = [float(cost(c)) for c in configs]
        order.sort(key=lambda i: -costs[i])  # stable: equal costs keep the order of configs
    start = time.perf_counter()
    address = os.environ.get(SCHEDULER_ENV, "")
    where = "serial"
    if executor is not None:
        where = "executor"
        futures = {i: executor.submit(_Timed(fn, one_thread=False), configs[i]) for i in order}
        timed = {i: futures[i].result() for i in range(n)}
    elif address and n:
        where = "dask"
        timed = _on_dask(_Timed(fn, package_fingerprint()), configs, order, costs, label, address, wanted)
    elif workers == 1 or n <= 1:
        wanted = [0] * n  # threads as the caller set them
        timed = {}
        for i in range(n):
            report_progress(tasks=(i, n), force=True)
            timed[i] = _Timed(fn, one_thread=False)(configs[i])
    else:
        where = "processes"
        from concurrent.futures import ProcessPoolExecutor, as_completed  # lazily: the tooling imports this module
        from multiprocessing import get_context

        wanted = [min(t, workers) for t in wanted]
        widest = max(wanted)
        timed = {}
        with ProcessPoolExecutor(
            max_workers=min(max(1, workers // widest), n),
            mp_context=get_context("spawn"),
            initializer=_pool_process,
            initargs=(widest,),
        ) as pool:
            futures = {pool.submit(_Timed(fn), configs[i], wanted[i]): i for i in order}
            report_progress(tasks=(0, n), force=True)
            for done, future in enumerate(as_completed(futures), start=1):
                timed[futures[future]] = future.result()
                report_progress(tasks=(done, n), force=True)
    record_inner_tasks(
        label or getattr(fn, "__qualname__", "tasks"),
        wall=time.perf_counter() - start,
        seconds=[timed[i][1] for i in range(n)],
        cpu=[timed[i][2] for i in range(n)],
        where=where,
        threads=wanted if where in ("processes", "dask") else None,
    )
    return [timed[i][0] for i in range(n)]
