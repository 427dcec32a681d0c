"""Progress of a long computation, for the runner's status line (no effect when nobody listens).

A notebook's training loop calls :func:`report_progress` with a few counters::

    report_progress(depth=(i + 1, len(depths)), step=(k, steps))

When the environment variable :data:`PROGRESS_ENV` names a file (``icl-book run`` sets it to a
path in the run's private folder, outside the verified outputs), the counters are written
there as JSON, atomically (temporary file + :func:`os.replace`), at most once every
``min_interval`` seconds; the runner shows them as ``dmft_softmax 412s, depth 4/8, step
1200/2000``. Without the variable the call returns at once (one dictionary lookup), so library
code and tests pay nothing.

Inner tasks (:func:`iclcore.parallel.map_configs`) also leave their durations beside the progress
file, in :data:`INNER_FILE` (:func:`record_inner_tasks`, one record per call, appended); the runner
copies them into the run's manifest (``"inner"``), where ``icl-book plan`` reads them.
"""

from __future__ import annotations

import json
import os
import time

__all__ = [
    "INNER_FILE",
    "PROGRESS_ENV",
    "PROGRESS_FILE",
    "format_progress",
    "read_inner_tasks",
    "read_progress",
    "record_inner_tasks",
    "report_progress",
]

#: Environment variable naming the progress file (set by the runner, read here, in the kernel).
PROGRESS_ENV = "ICL_PROGRESS_FILE"
#: Name of that file in a run's private folder (``icl-book`` reads it there for its progress line).
PROGRESS_FILE = "progress.json"
#: Name of the file of inner-task durations, beside the progress file (a JSON list of records).
INNER_FILE = "inner.json"


def _counter(name: str, value: object) -> object:
    if isinstance(value, tuple):
        if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ValueError(f"{name}: a counter is a number, a string or a pair (done, total), got {value!r}")
        return [value[0], value[1]]
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    raise ValueError(f"{name}: a counter is a number, a string or a pair (done, total), got {value!r}")


def report_progress(*, min_interval: float = 0.5, force: bool = False, **counters: object) -> bool:
    """Publish ``counters`` (name -> number, string or ``(done, total)``) to the progress file.

    Parameters
    ----------
    min_interval : float
        Seconds between two writes to the same file; calls in between return without writing
        (the last counters win at the next write). ``force=True`` writes regardless.
    **counters
        In display order, e.g. ``depth=(4, 8), step=(1200, 2000)``.

    Returns
    -------
    bool
        Whether the file was written (False when no progress file is set or the call was rate-limited).
    """
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return False
    if not force:
        try:  # rate limit from the file's own modification time (no state kept here)
            if time.time() - os.stat(path).st_mtime < min_interval:
                return False
        except OSError:
            pass
    payload = {name: _counter(name, value) for name, value in counters.items()}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        os.replace(tmp, path)
    except OSError:  # progress is advisory: never fail a computation over it
        return False
    return True


def format_progress(counters: dict) -> str:
    """``{"depth": [4, 8], "step": [1200, 2000]}`` -> ``"depth 4/8, step 1200/2000"``."""
    parts = []
    for name, value in counters.items():
        if isinstance(value, list) and len(value) == 2:
            parts.append(f"{name} {value[0]}/{value[1]}")
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts)


def read_progress(path: str | os.PathLike) -> str:
    """The formatted counters in the progress file at ``path``, or ``""`` if it is absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return ""
    return format_progress(data) if isinstance(data, dict) else ""


def record_inner_tasks(
    label: str, wall: float, seconds: list[float], *, cpu: list[float], where: str, threads: list[int] | None = None
) -> bool:
    """Append one ``map_configs`` call to :data:`INNER_FILE` beside the progress file (if one is set).

    ``label``: what the tasks are; ``wall``: seconds of the whole call in the caller; ``seconds``,
    ``cpu``: ``(n,)`` wall and thread-CPU seconds of each task where it ran; ``where``: ``"serial"``,
    ``"processes"``, ``"dask"`` or ``"executor"``; ``threads``: ``(n,)`` threads each task ran with, where
    more than one (omitted when every task had one). Returns whether the file was written.
    """
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return False
    inner = os.path.join(os.path.dirname(path), INNER_FILE)
    records = read_inner_tasks(inner)
    record: dict[str, object] = {
        "label": str(label),
        "wall": round(float(wall), 3),
        "seconds": [round(float(s), 3) for s in seconds],
        "cpu": [round(float(c), 3) for c in cpu],
        "where": str(where),
    }
    if threads is not None and any(t != 1 for t in threads):
        record["threads"] = [int(t) for t in threads]
    records.append(record)
    tmp = f"{inner}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(records, fh)
        os.replace(tmp, inner)
    except OSError:  # advisory, like the progress file
        return False
    return True


def read_inner_tasks(path: str | os.PathLike) -> list[dict]:
    """The records of :func:`record_inner_tasks` in the file at ``path`` (``[]`` if absent or unreadable)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []
