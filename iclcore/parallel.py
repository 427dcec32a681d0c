"""Independent work on several cores: a thread budget and one executor for a list of configurations.

``icl-book run`` gives each notebook it runs a number of BLAS/OpenMP/torch threads by setting
:data:`THREAD_VARIABLES` in the notebook's environment (:func:`thread_settings`, the one place
where they are written); a notebook reads its share back with :func:`thread_budget` and may
spend it on independent computations with :func:`map_configs`::

    results = map_configs(train_one, configs, workers=thread_budget(), cost=expected_seconds)

``map_configs`` maps a pure function over a list of configurations: in this process, one after
another, for ``workers <= 1``; otherwise in ``workers`` fresh (spawned) single-threaded
processes. Each result depends only on its configuration, so both give the same results (in the
order of ``configs``), bit for bit; more processes only shorten the wall time. Any
:class:`concurrent.futures.Executor` may be passed instead (``executor=``), for example a Dask
client's ``client.get_executor()``, so a cluster backend plugs in without changing callers.

This module imports only the standard library: the book tooling imports it at start-up.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Executor

__all__ = ["THREAD_VARIABLES", "map_configs", "thread_budget", "thread_settings"]

#: Environment variables that set the threads of BLAS, OpenMP (torch) and numexpr; the first is read back.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

C = TypeVar("C")
R = TypeVar("R")


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


def _single_threaded() -> None:
    """Initializer of a pool process: one BLAS/OpenMP thread for whatever it imports next."""
    os.environ.update(thread_settings(1))


@dataclass(frozen=True)
class _OneThread(Generic[C, R]):
    """``fn`` called with torch limited to one thread, if the call's module imported torch (picklable)."""

    fn: Callable[[C], R]

    def __call__(self, config: C) -> R:
        torch = sys.modules.get("torch")  # imported by fn's module, never by this one
        if torch is not None:
            torch.set_num_threads(1)
        return self.fn(config)


def map_configs(
    fn: Callable[[C], R],
    configs: Sequence[C],
    workers: int = 1,
    cost: Callable[[C], float] | None = None,
    executor: Executor | None = None,
) -> list[R]:
    """``[fn(c) for c in configs]``, computed on up to ``workers`` processes.

    Parameters
    ----------
    fn : callable
        A pure function of one configuration, defined at module level (it is pickled by name
        when ``workers > 1``); its result must be picklable.
    configs : sequence
        The configurations, ``(n,)``; each must be picklable when ``workers > 1``.
    workers : int
        ``1``: in this process, one after another, with its threads as they are. ``> 1``: in
        ``min(workers, n)`` spawned processes of one BLAS/OpenMP/torch thread each.
    cost : callable, optional
        Expected cost of a configuration; configurations are submitted most expensive first
        (ties keep their order), so that no process idles at the end while another finishes a long
        one. Only the order of submission changes, never the results or their order.
    executor : concurrent.futures.Executor, optional
        Run the calls there instead (e.g. a Dask client's executor); ``workers`` is then ignored.

    Returns
    -------
    list
        ``(n,)`` results in the order of ``configs``.
    """
    workers = _count(workers, "workers")
    configs = list(configs)
    order = list(range(len(configs)))
    if cost is not None:
        costs = [float(cost(c)) for c in configs]
        order.sort(key=lambda i: -costs[i])  # stable: equal costs keep the order of configs
    if executor is None and (workers == 1 or len(configs) <= 1):
        return [fn(c) for c in configs]
    if executor is not None:
        futures = {i: executor.submit(fn, configs[i]) for i in order}
        return [futures[i].result() for i in range(len(configs))]
    from concurrent.futures import ProcessPoolExecutor  # here: the tooling imports this module at start-up
    from multiprocessing import get_context

    with ProcessPoolExecutor(
        max_workers=min(workers, len(configs)), mp_context=get_context("spawn"), initializer=_single_threaded
    ) as pool:
        done = dict(zip(order, pool.map(_OneThread(fn), [configs[i] for i in order])))
    return [done[i] for i in range(len(configs))]
