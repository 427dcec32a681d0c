"""The runner's one-line progress display: done/total, running notebooks, their own counters.

A running notebook reports counters through :mod:`iclcore.progress` into the file
:data:`~iclcore.progress.PROGRESS_FILE` of its private folder ``<store>/tmp/<name>-<pid>-*/``
(a Dask run's counters are copied there by :mod:`iclbook.distributed`); :func:`notebook_progress`
reads the newest one, :class:`Progress` shows them.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from iclcore.progress import read_progress

from .runs import RunResult
from .worker_env import PROGRESS_FILE

__all__ = ["Progress", "notebook_progress"]


def notebook_progress(tmp_root: Path | None, name: str) -> str:
    """What a running notebook last reported (``"depth 4/8, step 1200/2000"``), or ``""``.

    Its progress file lives in the run's private folder ``<store>/tmp/<name>-<pid>-*/``; JSON
    ``{counter: value or [done, total]}`` written atomically by :mod:`iclcore.progress`.
    """
    if tmp_root is None:
        return ""
    best, text = -1.0, ""
    for path in tmp_root.glob(f"{name}-{os.getpid()}-*/{PROGRESS_FILE}"):
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        counters = read_progress(path)
        if counters and mtime > best:
            best, text = mtime, counters
    return text


class Progress:
    """A one-line progress display: done/total, running notebooks with elapsed time and their own counters."""

    def __init__(self, total: int, stream: Any = None, interval: float = 1.0, tmp_root: Path | None = None) -> None:
        self.tmp_root = tmp_root
        self.total = total
        self.stream = stream or sys.stderr
        self.interval = interval
        self.done = 0
        self.running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_plain = time.monotonic()  # a non-terminal stream gets a status line every 30 s
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Progress:
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
            items = list(self.running.items())
        parts = []
        for n, t0 in items:
            counters = notebook_progress(self.tmp_root, n)
            parts.append(f"{n} {now - t0:.0f}s" + (f", {counters}" if counters else ""))
        running = "; ".join(parts) if any(", " in p for p in parts) else ", ".join(parts)
        with self._lock:
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

    def say(self, message: str) -> None:
        prefix = "\r\033[K" if self._tty else ""
        with self._lock:
            self.stream.write(prefix + message + "\n")
            self.stream.flush()

    def start(self, name: str) -> None:
        with self._lock:
            self.running[name] = time.monotonic()

    def finish(self, result: RunResult) -> None:
        with self._lock:
            self.running.pop(result.name, None)
            self.done += 1
            done = self.done
        if result.status == "interrupted":
            return
        word = {"executed": "ran", "cached": "cached", "failed": "FAILED"}[result.status]
        msg = f"[{done}/{self.total}] {word:6s} {result.name}"
        if result.status != "cached":
            msg += f" ({result.seconds:.1f}s)"
        if result.error:
            msg += f": {result.error}"
        self.say(msg)
