"""Execution of one notebook: its child process in a private temporary folder, checks, and interrupts.

A run (:func:`execute`)

1. executes in a private temporary folder ``.icl-store/tmp/<name>-<pid>-*``
   (``python -m iclbook._child``: papermill in its own process group, kernel
   working directory inside it), or on a Dask worker through a launcher
   (:class:`iclbook.distributed.DaskLauncher`);
2. succeeds only if the child exits 0, the executed notebook has no error
   output (:func:`failing_cell`), and ``metrics.json`` follows
   :data:`iclcore.plotting.METRICS_CONTRACT`;
3. then becomes the store entry with one ``rename`` (:func:`iclbook.store.add_entry`); its manifest
   also records the durations of the notebook's inner tasks (:func:`iclcore.parallel.map_configs`)
   under ``"inner"``, for ``icl-book plan``; a failed run
   stores nothing, but its executed notebook is kept in ``.icl-store/failed/`` and the error names it,
   with the source line the traceback points to (:func:`failing_cell`, :func:`failing_line`).

Papermill talks to the kernel over loopback TCP: :func:`loopback_problem` checks it before kernels
start (:func:`iclbook.scheduling.check_loopback`), and :func:`kernel_hint` adds the reason to a
"kernel didn't respond" or "kernel died" failure.

Interrupts: :class:`Interrupts` ends every running child's process group and
its kernel (which jupyter starts in a session of its own); the temporary
folders are removed and nothing of an interrupted run is stored. Installed as the
SIGINT/SIGTERM handler of the command line (:meth:`Interrupts.handler`), it also raises
:class:`Interrupted` in the main thread, so that any command stops at once, whatever it is
waiting for (a FIFO, a parse, a lock, its worker threads); a step of several writes that must not be
cut in two runs inside :meth:`Interrupts.held`, where the exception waits for the step's end.
Every write that others read (store entries, output folders, archives, the hint) is a temporary
file or folder renamed into place, so what an interrupt leaves is either the old or the new version.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .notebooks import QUICK, python_literal
from .runs import RunRequest, RunResult
from .store import add_entry, check_metrics, hash_files, json_value, keep_failed, remove_tree, store_dir
from .worker_env import CPU_FILE, INNER_FILE, PROGRESS_ENV, PROGRESS_FILE, read_inner_tasks, thread_env

__all__ = [
    "LOOPBACK_HINT",
    "Interrupted",
    "Interrupts",
    "execute",
    "failing_cell",
    "failing_line",
    "kernel_hint",
    "loopback_problem",
    "parameter_source",
    "parameter_table",
]


# --- parameters as exact Python literals --------------------------------------------------------


def parameter_source(params: dict[str, Any]) -> str:
    """The injected cell: one ``name = literal`` line per parameter, values exact (:func:`python_literal`)."""
    lines = ["# Parameters of this run (injected by icl-book)"]
    lines += [f"{k} = {python_literal(v)}" for k, v in params.items()]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "`" + python_literal(value).replace("|", "\\|").replace("`", "'") + "`"


def parameter_table(request: RunRequest) -> str:
    """Markdown table: name, value of this run, quick default, value of each preset."""
    nb = request.notebook
    presets = sorted(nb.presets)
    head = ["parameter", "value", f"{QUICK} (default)", *presets]
    changed = [
        k for k, v in request.params.items() if python_literal(v) != python_literal(nb.resolve(request.preset)[k])
    ]
    lines = [
        f"**Parameters of this run** (preset `{request.preset}`"
        + (f"; changed on the command line: {', '.join(f'`{k}`' for k in changed)}" if changed else "")
        + ")",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for k, v in request.params.items():
        row = [f"`{k}`", _cell(v), _cell(nb.parameters[k])]
        row += [_cell(nb.presets[p].get(k, nb.parameters[k])) for p in presets]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_LINE_RE = re.compile(r"Cell In\[\d+\], line (\d+)")
_ARROW_RE = re.compile(r"^-+>\s*(\d+)\s?(.*)$")


def failing_line(cell_source: str, traceback: list[str]) -> str:
    """The source line of the cell that ``traceback`` (IPython's, ANSI-coloured) points to, else its first line."""
    lines = cell_source.strip("\n").splitlines()
    text = _ANSI_RE.sub("", "\n".join(traceback))
    where = _CELL_LINE_RE.search(text)
    if where and 1 <= int(where.group(1)) <= len(lines):
        return lines[int(where.group(1)) - 1].strip()
    for line in text.splitlines():
        arrow = _ARROW_RE.match(line.strip())
        if arrow and 1 <= int(arrow.group(1)) <= len(lines):
            return lines[int(arrow.group(1)) - 1].strip()
    return next((ln.strip() for ln in lines if ln.strip()), "")


def failing_cell(executed: Path) -> str:
    """Describe the first error output in an executed notebook ('' if none): cell, failing line, error."""
    try:
        nb = json.loads(executed.read_text())
    except (OSError, json.JSONDecodeError):
        return ""
    code_cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    for index, cell in enumerate(code_cells, start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                line = failing_line("".join(cell.get("source", "")), out.get("traceback") or [])
                return f"code cell {index}, `{line[:120]}`: {out.get('ename')}: {out.get('evalue')}"
    return ""


#: Added to a failure whose papermill error says the kernel did not respond or died.
LOOPBACK_HINT = (
    "the Jupyter kernel talks to papermill over loopback TCP; check that 127.0.0.1 is reachable "
    "(a network namespace without 'lo' up makes every kernel time out)"
)


def loopback_problem(timeout: float = 0.05) -> str:
    """'' if a TCP socket can bind, listen and connect on 127.0.0.1 (well under 50 ms); else why not.

    Papermill talks to its Jupyter kernel over loopback TCP: without it (a network namespace whose
    ``lo`` is down) every kernel start times out after a minute instead of failing at once.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.settimeout(timeout)
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            with socket.create_connection(server.getsockname()[:2], timeout=timeout):
                conn, _ = server.accept()
                conn.close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return ""


def kernel_hint(detail: str, problem: Callable[[], str] = loopback_problem) -> str:
    """``detail`` with :data:`LOOPBACK_HINT` and the reason added when it says the kernel didn't respond or
    died *and* loopback TCP fails now (``problem()`` non-empty); a kernel that died for another reason is
    never blamed on the network."""
    low = detail.lower()
    if any(s in low for s in ("kernel didn't respond", "kernel died", "deadkernel", "kernel did not respond")):
        reason = problem()
        if reason:
            return f"{detail} (hint: {LOOPBACK_HINT}; here: {reason})"
    return detail


def child_end(rc: int) -> str:
    """How the runner's child ended, from its exit code (negative: the signal that killed it)."""
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"papermill was killed by {name}"
    return f"papermill exited with code {rc}"


# --- interrupts ----------------------------------------------------------------------------------


def _kill_tree(proc: subprocess.Popen, grace: float = 0.4) -> None:  # noqa: C901 (every psutil or os call may race a process that has just exited, and each handles that where it occurs)
    """End ``proc`` (a session leader), its process group, and every descendant's process group (the kernel's)."""
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    own = os.getpgrp()
    groups = set()
    for pid in [proc.pid, *(k.pid for k in kids)]:
        try:
            groups.add(os.getpgid(pid))
        except OSError:
            pass
    groups.discard(own)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        for k in kids:
            try:
                k.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + grace
        alive = [p for p in kids if p.is_running()]
        while time.monotonic() < deadline and (proc.poll() is None or alive):
            time.sleep(0.05)
            alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if proc.poll() is not None and not alive:
            break
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


class Interrupted(BaseException):
    """Raised in the main thread by :meth:`Interrupts.handler`: the command ends with exit code ``128 + signum``.

    A ``BaseException``, like ``KeyboardInterrupt``, so that no ``except Exception`` on the way swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Interrupts:
    """Running child processes of one ``icl-book`` call; :meth:`stop` ends them all."""

    def __init__(self) -> None:
        self.signum = 0
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self._killers: list[threading.Thread] = []
        self._held = 0  # depth of held() sections of the main thread
        self._raised = False
        self._stopped = threading.Event()  # set by stop(): wakes the watcher of installed() at once

    @property
    def stopping(self) -> bool:
        return self.signum != 0

    def is_stopping(self) -> bool:
        """:attr:`stopping` as a callable (for :func:`iclbook.store.acquire`)."""
        return self.stopping

    def popen(self, cmd: list[str], **kw: Any) -> subprocess.Popen:
        with self._lock:
            if self.stopping:
                raise InterruptedError
            proc = subprocess.Popen(cmd, start_new_session=True, **kw)
            self._procs.add(proc)
            return proc

    def release(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    def stop(self, signum: int) -> None:
        """Mark the call as interrupted and end every running notebook (in threads: safe from a signal handler)."""
        with self._lock:
            first = not self.stopping
            self.signum = self.signum or signum
            procs = list(self._procs)
        self._stopped.set()
        if first:
            for proc in procs:
                killer = threading.Thread(target=_kill_tree, args=(proc,), daemon=True)
                killer.start()
                self._killers.append(killer)

    def handler(self, signum: int, frame: Any = None) -> None:
        """The SIGINT/SIGTERM handler (Python runs it in the main thread): :meth:`stop`, then raise
        :class:`Interrupted` there, unless inside :meth:`held` (raised at its end) or raised already
        (a second signal while the first unwinds only ends the children again)."""
        self.stop(signum)
        if not self._held and not self._raised:
            self._raised = True
            raise Interrupted(self.signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A step of the main thread that a signal must not cut in two (several writes that belong together):
        a signal inside it raises :class:`Interrupted` when it ends. In another thread (never interrupted)
        it does nothing."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
        if not self._held and self.stopping and not self._raised and self._handling():
            self._raised = True
            raise Interrupted(self.signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """:meth:`handler` as the SIGINT and SIGTERM handler while the block runs (main thread only; the
        previous handlers are restored after).

        Python runs a handler between two bytecodes of the main thread; a signal that arrives just before the
        main thread enters a blocking call (a read of a FIFO) would wait for the call to end. So the signal
        also wakes a watcher thread (``signal.set_wakeup_fd``), which sends it to the main thread again
        (``pthread_kill``: the call fails with EINTR and the handler runs) until the handler has seen it.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        signums = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handler) for sig in signums}
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        old_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        watcher = threading.Thread(target=self._resend, args=(read_end, signums), daemon=True)
        watcher.start()
        try:
            yield
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(write_end)  # the watcher's read ends
            watcher.join(timeout=1.0)
            os.close(read_end)

    def _resend(self, read_end: int, signums: tuple[int, ...], patience: float = 0.25) -> None:
        """Watcher thread of :meth:`installed`: each signal the handler has not seen within ``patience``
        seconds is sent to the main thread again."""
        main = threading.main_thread().ident
        while data := os.read(read_end, 64):
            for signum in (b for b in data if b in signums):
                for _ in range(40):
                    if self._stopped.wait(patience):
                        break
                    signal.pthread_kill(main, signum)

    def _handling(self) -> bool:
        """Whether :meth:`handler` is this process's SIGINT handler (else a stop is polled, not raised)."""
        current = signal.getsignal(signal.SIGINT)
        return getattr(current, "__self__", None) is self

    def finish(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` seconds) for the children ended by :meth:`stop` to be gone."""
        deadline = time.monotonic() + timeout
        for killer in list(self._killers):
            killer.join(max(0.0, deadline - time.monotonic()))

    def kill_all_now(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill_tree(proc, grace=0.5)


# --- one run -------------------------------------------------------------------------------------


def _run_child_here(tmp: Path, root: Path, threads: int, interrupts: Interrupts) -> int | None:
    """Run ``python -m iclbook._child tmp/spec.json`` locally, log in ``tmp/log.txt``; its exit code (None: interrupted)."""
    with open(tmp / "log.txt", "wb") as out:
        try:
            env = thread_env(threads, root)
            env[PROGRESS_ENV] = str(tmp / PROGRESS_FILE)  # beside, not inside, the verified outputs
            proc = interrupts.popen(
                [sys.executable, "-m", "iclbook._child", str(tmp / "spec.json")],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=tmp,
            )
        except InterruptedError:
            return None
        try:
            return _wait_cpu(proc, tmp)
        finally:
            interrupts.release(proc)


def _wait_cpu(proc: subprocess.Popen, tmp: Path) -> int:
    """Wait for ``proc``; write the CPU seconds (user + system) of it and its reaped descendants
    (papermill, the kernel, the kernel's process pool) to ``tmp/cpu.txt``; its exit code."""
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:  # reaped meanwhile (an interrupt polled it): no CPU time
        return proc.wait()
    proc.returncode = os.waitstatus_to_exitcode(status)
    (tmp / CPU_FILE).write_text(f"{usage.ru_utime + usage.ru_stime:.2f}")
    return proc.returncode


def _failed(request: RunRequest, root: Path, executed: Path, seconds: float, detail: str) -> RunResult:
    """A failed result; the executed notebook (with its traceback) and the run's log are kept by
    :func:`iclbook.store.keep_failed`."""
    kept = keep_failed(root, request.notebook.name, executed, log=executed.parent.parent / "log.txt")
    if kept is not None:
        detail += f"; executed notebook kept in {kept}"
        if kept.with_suffix(".log").is_file():
            detail += f", its log in {kept.with_suffix('.log').name}"
    return RunResult(request.notebook.name, "failed", seconds, detail, request.out_dir)


def execute(  # noqa: C901 (one run from launch to stored entry; each failure (interrupt, timeout, failing cell, bad metrics) is handled where it occurs)
    request: RunRequest,
    root: Path,
    threads: int,
    key: str,
    interrupts: Interrupts | None = None,
    launcher: Callable[..., int] | None = None,
) -> RunResult:
    """Execute one notebook in a private folder; on success move it into the store as entry ``key``.

    Never raises for a failing notebook; a failed or interrupted run stores nothing (the executed notebook
    of a failed run is kept aside, :func:`iclbook.store.keep_failed`, and its path is in the error).
    ``launcher(name, spec, tmp, work, threads, interrupts) -> exit code`` runs the child
    elsewhere (:class:`iclbook.distributed.DaskLauncher`) and writes its output files into
    ``work`` and its log into ``tmp/log.txt``; everything after (checks, manifest, store) is the same.
    """
    interrupts = interrupts or Interrupts()
    start = time.monotonic()
    name = request.notebook.name
    store = store_dir(root)
    (store / "tmp").mkdir(parents=True, exist_ok=True)
    (store / "entries").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}-{os.getpid()}-", dir=store / "tmp"))
    try:
        work = tmp / "out"
        work.mkdir()
        executed = work / f"{name}.ipynb"
        spec = {
            "source": str(request.notebook.path.resolve()),
            "output": str(executed),
            "cwd": str(work),
            "parameter_source": parameter_source(request.params),
            "table": parameter_table(request),
            "metadata": {
                "key": key,
                "notebook": name,
                "preset": request.preset,
                "params": {k: python_literal(v) for k, v in request.params.items()},
            },
        }
        (tmp / "spec.json").write_text(json.dumps(spec))
        log = tmp / "log.txt"
        if launcher is not None:
            try:
                rc = launcher(name, spec, tmp, work, threads, interrupts)
            except InterruptedError:
                return RunResult(name, "interrupted", time.monotonic() - start, "", request.out_dir)
            if not log.exists():
                log.write_text("")
        else:
            rc = _run_child_here(tmp, root, threads, interrupts)
            if rc is None:
                return RunResult(name, "interrupted", 0.0, "", request.out_dir)
        seconds = time.monotonic() - start
        if interrupts.stopping:
            return RunResult(name, "interrupted", seconds, "", request.out_dir)
        if rc != 0:
            detail = failing_cell(executed)
            if not detail:
                tail = [ln for ln in log.read_text(errors="replace").strip().splitlines() if ln.strip()]
                detail = kernel_hint(tail[-1]) if tail and rc > 0 else child_end(rc)
                if tail and rc < 0:
                    detail += f"; its last words: {tail[-1][:200]}"
            return _failed(request, root, executed, seconds, detail)
        problem = failing_cell(executed) or check_metrics(work / "metrics.json")
        if problem:
            return _failed(request, root, executed, seconds, problem)
        try:
            files = hash_files(work)
        except OSError as exc:
            return RunResult(name, "failed", seconds, f"cannot list the outputs: {exc}", request.out_dir)
        manifest = {
            "key": key,
            "notebook": name,
            "preset": request.preset,
            "params": {k: json_value(v) for k, v in request.params.items()},
            "param_literals": spec["metadata"]["params"],
            "seconds": round(seconds, 2),
            "threads": threads,
            "files": files,
        }
        inner = read_inner_tasks(tmp / INNER_FILE)  # durations of its map_configs tasks (icl-book plan)
        if inner:
            manifest["inner"] = inner
        try:  # CPU seconds of the whole run (local runs only; icl-book plan)
            manifest["cpu"] = float((tmp / CPU_FILE).read_text())
        except (OSError, ValueError):
            pass
        add_entry(root, key, work, manifest, tmp)
        return RunResult(name, "executed", seconds, "", request.out_dir)
    finally:
        remove_tree(tmp)
