"""Compatibility façade: the runner's public names, from the modules that define them.

The runner is in parts, imported in one direction (each imports only those before it):

* :mod:`iclbook.worker_env`: a worker's environment (threads, progress file) and output files;
* :mod:`iclbook.runs`: :class:`RunRequest`, :class:`RunResult`, :class:`RunSummary`, :func:`make_requests`;
* :mod:`iclbook.store`: keys, manifests, verification, locks, copies into output folders;
* :mod:`iclbook.execution`: one run in a private folder (child process or Dask launcher), interrupts;
* :mod:`iclbook.progress`: the progress line;
* :mod:`iclbook.scheduling`: local workers or Dask, longest first, cache hits (:func:`run_notebooks`);
* :mod:`iclbook.distributed`: the Dask launcher (imports only :mod:`iclbook.worker_env`).

New code imports from those modules; this one only keeps older imports working.
"""

from __future__ import annotations

from .execution import Interrupts, execute, failing_cell, parameter_source, parameter_table
from .notebooks import python_literal
from .progress import Progress, notebook_progress
from .runs import RunRequest, RunResult, RunSummary, make_requests
from .scheduling import SECONDS_HINT, cpu_seconds, expected_seconds, longest_first, run_notebooks, run_one
from .store import (
    KEY_VERSION,
    METRICS_SCHEMA,
    STAMP,
    STORE,
    cache_key,
    check_metrics,
    cleanup_stale_temp,
    fill,
    sha256_file,
    store_dir,
    verify_folder,
)
from .worker_env import PROGRESS_ENV, PROGRESS_FILE, thread_env

__all__ = [
    "KEY_VERSION",
    "METRICS_SCHEMA",
    "PROGRESS_ENV",
    "PROGRESS_FILE",
    "SECONDS_HINT",
    "STAMP",
    "STORE",
    "Interrupts",
    "Progress",
    "RunRequest",
    "RunResult",
    "RunSummary",
    "cache_key",
    "check_metrics",
    "cleanup_stale_temp",
    "cpu_seconds",
    "execute",
    "expected_seconds",
    "failing_cell",
    "fill",
    "longest_first",
    "make_requests",
    "notebook_progress",
    "parameter_source",
    "parameter_table",
    "python_literal",
    "run_notebooks",
    "run_one",
    "sha256_file",
    "store_dir",
    "thread_env",
    "verify_folder",
]
