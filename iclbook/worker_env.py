"""What a notebook's worker process sees and leaves behind, shared by the local runner and Dask workers.

* :func:`thread_env`: its environment (its share of BLAS/OpenMP/torch threads, written by
  :func:`iclcore.parallel.thread_settings`, which the notebook reads back with
  :func:`iclcore.parallel.thread_budget`; headless matplotlib; the project first on the path);
* :data:`PROGRESS_ENV`, :data:`PROGRESS_FILE`: where it reports progress, and :data:`INNER_FILE`
  beside it, where its inner tasks leave their durations (:func:`read_inner_tasks`; defined once,
  in :mod:`iclcore.progress`, which the kernel writes through);
* :data:`SCHEDULER_ENV`: the Dask scheduler of its inner tasks (:func:`iclcore.parallel.map_configs`),
  set only for a notebook run on Dask;
* :func:`output_files`: the files it wrote (everything but the manifest :data:`STAMP`).

This module imports only the standard library and ``iclcore``'s dependency-free ``parallel`` and
``progress`` modules, and nothing of ``iclbook``: it is the bottom of the runner's imports.
"""

from __future__ import annotations

import os
from pathlib import Path

from iclcore.parallel import SCHEDULER_ENV, thread_settings
from iclcore.progress import INNER_FILE, PROGRESS_ENV, PROGRESS_FILE, read_inner_tasks

__all__ = [
    "available_cores",
    "CPU_FILE",
    "INNER_FILE",
    "PROGRESS_ENV",
    "PROGRESS_FILE",
    "SCHEDULER_ENV",
    "STAMP",
    "output_files",
    "read_inner_tasks",
    "thread_env",
]

CPU_FILE = "cpu.txt"  # in a run's private folder: CPU seconds of the child and its reaped descendants
STAMP = ".icl-run.json"  # the manifest, in a store entry and in an output folder; never an output


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity (``taskset``, a container's cpuset) where the
    platform reports one, else ``os.cpu_count()``; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


#: Set by a Dask nanny (``distributed.nanny.pre-spawn-environ``, 65536 bytes) in its worker and in the
#: process that starts it. A fixed trim threshold also fixes glibc's mmap threshold at 128 KiB, so every
#: larger numpy temporary is a fresh mmap whose pages the kernel zeroes, which costs the numpy-heavy
#: notebooks (``dmft_iso``, ``dmft_width``) much system CPU time. A kernel never inherits it.
MALLOC_TRIM_ENV = "MALLOC_TRIM_THRESHOLD_"


def thread_env(threads: int, root: Path | None = None) -> dict[str, str]:
    """Environment for one worker: ``threads`` BLAS/OpenMP/torch threads, headless matplotlib, ``root`` first on the path."""
    env = dict(os.environ)
    env.update(thread_settings(threads))
    env["MPLBACKEND"] = "Agg"
    env["PYTHONHASHSEED"] = "0"
    env.pop("ICL_FIGURE_FORMATS", None)  # a run's outputs always hold every figure format (PNG and PDF)
    env.pop(MALLOC_TRIM_ENV, None)  # glibc's default allocator in every kernel, whichever executor starts it
    env.pop(SCHEDULER_ENV, None)  # inner tasks go to Dask only when the notebook itself runs there
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if root is not None:  # the kernel imports the iclcore whose files are in the key
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    return env


def output_files(folder: Path) -> list[str]:
    """Relative POSIX paths of the files under ``folder`` but the manifest, sorted; a symbolic link is an OSError."""
    out = []
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            raise OSError(f"{p.relative_to(folder).as_posix()} is a symbolic link")
        if p.is_file() and p.name != STAMP:
            out.append(p.relative_to(folder).as_posix())
    return out
