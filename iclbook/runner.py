"""Execution of notebooks: a content-addressed store of verified runs, copied into output folders.

Key
---
The cache key of a run (:func:`cache_key`) is a SHA-256 over the notebook
source, the resolved parameters (name, type and exact literal), the preset,
``requirements.lock`` and exactly the ``iclcore`` files the notebook imports,
transitively (:mod:`iclbook.imports`). The tooling (``iclbook``) is not part
of any key: editing the CLI re-executes nothing.

Store
-----
Every successful run is kept once in ``<root>/.icl-store/entries/<key>/``
(gitignored): the executed notebook, every file it wrote, and a manifest
``.icl-run.json`` listing each file with its SHA-256. A run

1. executes in a private temporary folder ``.icl-store/tmp/<name>-<pid>-*``
   (papermill in its own process group, kernel working directory inside it);
2. succeeds only if papermill exits 0, the executed notebook has no error
   output, and ``metrics.json`` follows :data:`METRICS_SCHEMA`;
3. then becomes the store entry with one ``rename``.

``book/generated/<name>/`` (or ``DIR/<name>/`` with ``--out``) is a copy of
the entry, written to a sibling temporary folder and swapped in, so stale
files never survive. A cache hit re-checks the entry's manifest (a missing or
changed file: one line naming it, then re-execution) and the output folder
(a missing, changed or unexpected file: one line naming it, then a fresh copy
from the store). Switching preset or parameters and back is a cache hit.

Locks (``filelock``): one per store entry (identical runs execute once; the
other waits and then hits the cache) and one per output folder (two runners
writing the same folder take turns; files are never interleaved).

Order: notebooks start longest expected run first (:func:`longest_first`; the time comes from the
store's newest run of the notebook, else from the committed hint ``notebooks/seconds.json``), so that
no worker idles at the end while another finishes a long run. Results are reported in book order.

Interrupts: :class:`Interrupts` ends every running papermill process group and
its kernel (which jupyter starts in a session of its own), removes the
temporary folders; nothing of an interrupted run is stored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
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

from .imports import dependency_files
from .notebooks import QUICK, Notebook, NotebookError

STAMP = ".icl-run.json"  # the manifest, in a store entry and in an output folder
STORE = ".icl-store"
KEY_VERSION = b"icl-book store 2"

#: What ``metrics.json`` must hold (checked before a run is stored).
METRICS_SCHEMA = (
    "a flat JSON object; keys are non-empty strings; values are finite numbers "
    "(int or float; no NaN or Infinity), strings or booleans (no null, list or object)"
)


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
    status: str  # "executed", "cached", "failed" or "interrupted"
    seconds: float = 0.0
    error: str = ""
    out_dir: Path | None = None
    note: str = ""


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
        return not self.failures and all(r.status != "interrupted" for r in self.results)


# --- parameters as exact Python literals --------------------------------------------------------


def python_literal(value: Any) -> str:
    """Python source that evaluates to exactly ``value`` (int of any size, float incl. nan/inf, bool, str, None)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**4000 else hex(value)  # hex literals have no digit limit
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    raise NotebookError(f"cannot pass a {type(value).__name__} as a parameter")


def _json_value(value: Any) -> Any:
    """``value`` for a JSON manifest (an int too long for ``json``'s decimal writer becomes its literal)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**4000:
        return python_literal(value)
    return value


def parameter_source(params: dict[str, Any]) -> str:
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


# --- key -----------------------------------------------------------------------------------------


def cache_key(request: RunRequest, root: Path) -> str:
    """SHA-256 over notebook source, typed parameters, preset, lock file and the ``iclcore`` files it imports."""
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    add("version", KEY_VERSION)
    source = request.notebook.path.read_bytes()
    add("notebook", source)
    typed = [[k, type(v).__name__, python_literal(v)] for k, v in sorted(request.params.items())]
    add("params", json.dumps(typed).encode())
    add("preset", request.preset.encode())
    lock = root / "requirements.lock"
    add("lock", lock.read_bytes() if lock.exists() else b"")
    package = root / "iclcore"
    deps = dependency_files(source.decode("utf-8", "replace"), package)
    add("whole-package", b"1" if deps.whole_package else b"0")
    for p in deps.files:
        add("iclcore/" + p.relative_to(package).as_posix(), p.read_bytes())
    return h.hexdigest()


# --- manifests and verification -----------------------------------------------------------------


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    out = []
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            raise OSError(f"{p.relative_to(folder).as_posix()} is a symbolic link")
        if p.is_file() and p.name != STAMP:
            out.append(p.relative_to(folder).as_posix())
    return out


def verify_folder(folder: Path, key: str, expected: dict[str, str] | None = None) -> str:
    """'' if ``folder`` holds exactly the files of its manifest, with their hashes, for ``key``; else the first problem.

    With ``expected`` (file -> SHA-256 of a store entry), the manifest must also list exactly those files.
    """
    stamp = folder / STAMP
    try:
        manifest = json.loads(stamp.read_text())
        files = manifest["files"]
    except FileNotFoundError:
        return f"{stamp.name} is missing"
    except (OSError, ValueError, KeyError, TypeError):
        return f"{stamp.name} is unreadable"
    if manifest.get("key") != key or (expected is not None and files != expected):
        return "it holds another run"
    for rel, digest in files.items():
        path = folder / rel
        if not path.is_file():
            return f"{rel} is missing"
        if sha256_file(path) != digest:
            return f"{rel} changed"
    try:
        extra = sorted(set(_files(folder)) - set(files))
    except OSError as exc:
        return str(exc)
    if extra:
        return f"{extra[0]} is not an output of this run"
    return ""


def check_metrics(path: Path) -> str:
    """'' if ``path`` (a metrics.json) follows :data:`METRICS_SCHEMA`; else what is wrong."""
    if not path.is_file():
        return "the notebook wrote no metrics.json (call iclcore.plotting.write_metrics)"

    def reject(token: str) -> None:
        raise ValueError(f"{token} is not a finite number")

    try:
        data = json.loads(path.read_text(), parse_constant=reject)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"metrics.json does not parse: {exc}"
    if not isinstance(data, dict):
        return "metrics.json is not a JSON object"
    for k, v in data.items():
        if not k:
            return "metrics.json has an empty key"
        if isinstance(v, (bool, str)):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            continue
        return f"metrics.json: {k!r} is {v!r}; allowed: {METRICS_SCHEMA}"
    return ""


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


def thread_env(threads: int, root: Path | None = None) -> dict[str, str]:
    """Environment for one worker: ``threads`` BLAS/OpenMP/torch threads, headless matplotlib, ``root`` first on the path."""
    env = dict(os.environ)
    for var in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    ):
        env[var] = str(threads)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONHASHSEED"] = "0"
    env.pop("ICL_FIGURE_FORMATS", None)  # a run's outputs always hold every figure format (PNG and PDF)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if root is not None:  # the kernel imports the iclcore whose files are in the key
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    return env


# --- interrupts ----------------------------------------------------------------------------------


def _kill_tree(proc: subprocess.Popen, grace: float = 3.0) -> None:
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


class Interrupts:
    """Running child processes of one ``icl-book`` call; :meth:`stop` ends them all."""

    def __init__(self) -> None:
        self.signum = 0
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()

    @property
    def stopping(self) -> bool:
        return self.signum != 0

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
        if first:
            for proc in procs:
                threading.Thread(target=_kill_tree, args=(proc,), daemon=True).start()

    def kill_all_now(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill_tree(proc, grace=0.5)


# --- store ---------------------------------------------------------------------------------------


def store_dir(root: Path) -> Path:
    return root / STORE


def _acquire(lock: Any, what: str, interrupts: Interrupts, say: Callable[[str], None]) -> bool:
    from filelock import Timeout

    try:
        lock.acquire(timeout=0)
        return True
    except Timeout:
        say(f"waiting for {what} (another icl-book run holds it)")
    while not interrupts.stopping:
        try:
            lock.acquire(timeout=0.5)
            return True
        except Timeout:
            continue
    return False


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def cleanup_stale_temp(root: Path) -> None:
    """Remove temporary folders of runs whose process no longer exists (e.g. after SIGKILL)."""
    tmp = store_dir(root) / "tmp"
    if not tmp.is_dir():
        return
    for d in tmp.iterdir():
        try:
            pid = int(d.name.rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _remove(d)
        except OSError:
            pass


def execute(
    request: RunRequest,
    root: Path,
    threads: int,
    key: str,
    interrupts: Interrupts | None = None,
    launcher: Callable[..., int] | None = None,
) -> RunResult:
    """Execute one notebook in a private folder; on success move it into the store as entry ``key``.

    Never raises for a failing notebook; a failed or interrupted run stores nothing.
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
            with open(log, "wb") as out:
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
                    return RunResult(name, "interrupted", 0.0, "", request.out_dir)
                try:
                    rc = proc.wait()
                finally:
                    interrupts.release(proc)
        seconds = time.monotonic() - start
        if interrupts.stopping:
            return RunResult(name, "interrupted", seconds, "", request.out_dir)
        if rc != 0:
            detail = failing_cell(executed)
            if not detail:
                tail = [ln for ln in log.read_text(errors="replace").strip().splitlines() if ln.strip()]
                detail = tail[-1] if tail else f"papermill exited with code {rc}"
            return RunResult(name, "failed", seconds, detail, request.out_dir)
        problem = failing_cell(executed) or check_metrics(work / "metrics.json")
        if problem:
            return RunResult(name, "failed", seconds, problem, request.out_dir)
        try:
            files = {rel: sha256_file(work / rel) for rel in _files(work)}
        except OSError as exc:
            return RunResult(name, "failed", seconds, f"cannot list the outputs: {exc}", request.out_dir)
        manifest = {
            "key": key,
            "notebook": name,
            "preset": request.preset,
            "params": {k: _json_value(v) for k, v in request.params.items()},
            "param_literals": spec["metadata"]["params"],
            "seconds": round(seconds, 2),
            "threads": threads,
            "files": files,
        }
        (work / STAMP).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        entry = store / "entries" / key
        if entry.exists():  # a damaged entry (we hold its lock): replace it
            entry.rename(tmp / "old")
        os.rename(work, entry)
        return RunResult(name, "executed", seconds, "", request.out_dir)
    finally:
        _remove(tmp)


def fill(entry: Path, out_dir: Path) -> None:
    """Make ``out_dir`` an exact copy of the store ``entry`` (copied aside, then swapped in)."""
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=parent))
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(new, 0o777 & ~mask)
        for src in sorted(entry.rglob("*")):
            dst = new / src.relative_to(entry)
            if src.is_dir():
                dst.mkdir(exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
        old = None
        if out_dir.is_symlink() or out_dir.is_file():
            raise NotADirectoryError(f"{out_dir} exists and is not a folder")
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=parent))
            os.rename(out_dir, old / "x")
        os.rename(new, out_dir)
        if old is not None:
            _remove(old)
    finally:
        if new.exists():
            _remove(new)


# --- progress ------------------------------------------------------------------------------------


PROGRESS_ENV = "ICL_PROGRESS_FILE"  # read by iclcore.progress.report_progress in the kernel
PROGRESS_FILE = "progress.json"


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
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and mtime > best:
            best = mtime
            text = ", ".join(
                f"{k} {v[0]}/{v[1]}" if isinstance(v, list) and len(v) == 2 else f"{k} {v}" for k, v in data.items()
            )
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


# --- driver --------------------------------------------------------------------------------------


def run_one(
    req: RunRequest,
    root: Path,
    key: str,
    threads: int,
    force: bool,
    interrupts: Interrupts,
    say: Callable[[str], None],
    launcher: Callable[..., int] | None = None,
) -> RunResult:
    """Serve ``req`` from the store (verified) or execute it, then fill its output folder from the store."""
    from filelock import FileLock

    name = req.notebook.name
    store = store_dir(root)
    (store / "locks").mkdir(parents=True, exist_ok=True)
    entry_lock = FileLock(str(store / "locks" / f"{key}.lock"))
    if not _acquire(entry_lock, f"the store entry of {name}", interrupts, say):
        return RunResult(name, "interrupted", 0.0, "", req.out_dir)
    try:
        entry = store / "entries" / key
        status, seconds, note = "cached", 0.0, ""
        need = force or not entry.exists()
        if not need:
            problem = verify_folder(entry, key)
            if problem:
                say(f"icl-book: {name}: stored output damaged ({problem}); re-executing")
                need = True
        if need:
            res = execute(req, root, threads, key, interrupts, launcher)
            if res.status != "executed":
                return res
            status, seconds = "executed", res.seconds
        expected = json.loads((entry / STAMP).read_text())["files"]
        out_problem = verify_folder(req.out_dir, key, expected) if req.out_dir.exists() else "missing"
        if out_problem:
            req.out_dir.parent.mkdir(parents=True, exist_ok=True)
            out_lock = FileLock(str(req.out_dir.parent / f".{name}.lock"))
            if not _acquire(out_lock, f"the output folder {req.out_dir}", interrupts, say):
                return RunResult(name, "interrupted", seconds, "", req.out_dir)
            try:
                if status == "cached" and out_problem not in {"missing", "it holds another run", f"{STAMP} is missing"}:
                    note = f"output folder: {out_problem}; restored from the store"
                    say(f"icl-book: {name}: {note}")
                fill(entry, req.out_dir)
            finally:
                out_lock.release()
        return RunResult(name, status, seconds, "", req.out_dir, note)
    except OSError as exc:
        return RunResult(name, "failed", 0.0, f"cannot write the outputs: {exc}", req.out_dir)
    finally:
        entry_lock.release()


def run_notebooks(
    requests: Sequence[RunRequest],
    root: Path,
    jobs: int | None = None,
    force: bool = False,
    cores: int | None = None,
    stream: Any = None,
    on_result: Callable[[RunResult], None] | None = None,
    interrupts: Interrupts | None = None,
    scheduler: str | None = None,
) -> RunSummary:
    """Run ``requests`` (served from the store unless ``force``) with ``jobs`` workers.

    Each worker gets ``max(1, cores // jobs)`` BLAS/torch threads so that
    parallel notebooks do not oversubscribe the machine. A request repeated
    (same notebook, same output folder) runs once.

    ``scheduler`` (a Dask scheduler address, or ``local:N`` for a local cluster of N worker
    processes) executes the notebooks on Dask workers (:mod:`iclbook.distributed`), one
    thread each, as many at a time as the cluster has worker threads unless ``jobs`` is given;
    verification and the store are the same as for a local run.
    """
    if jobs is not None and jobs < 1:
        raise NotebookError(f"-j/--jobs must be at least 1, got {jobs}")
    seen: set[tuple[str, Path]] = set()
    unique = []
    for req in requests:
        if (req.notebook.name, req.out_dir) not in seen:
            seen.add((req.notebook.name, req.out_dir))
            unique.append(req)
    requests = unique
    interrupts = interrupts or Interrupts()
    launcher = None
    if scheduler:
        from .distributed import DaskLauncher  # Dask is imported only on this path

        launcher = DaskLauncher(scheduler, root)
        jobs = max(1, min(jobs or launcher.slots(), len(requests) or 1))
        threads = 1
    else:
        cores = cores or os.cpu_count() or 1
        jobs = max(1, min(jobs or cores, len(requests) or 1))
        threads = max(1, cores // jobs)
    try:
        return _run_all(requests, root, jobs, threads, force, stream, on_result, interrupts, launcher)
    finally:
        if launcher is not None:
            launcher.close()


def _run_all(
    requests: Sequence[RunRequest],
    root: Path,
    jobs: int,
    threads: int,
    force: bool,
    stream: Any,
    on_result: Callable[[RunResult], None] | None,
    interrupts: Interrupts,
    launcher: Callable[..., int] | None,
) -> RunSummary:
    cleanup_stale_temp(root)
    keys = {req.notebook.name: cache_key(req, root) for req in requests}
    order = longest_first(requests, expected_seconds(root))
    summary = RunSummary()
    with Progress(len(requests), stream=stream, tmp_root=store_dir(root) / "tmp") as progress:

        def work(req: RunRequest) -> RunResult:
            if interrupts.stopping:
                return RunResult(req.notebook.name, "interrupted", 0.0, "", req.out_dir)
            progress.start(req.notebook.name)
            res = run_one(req, root, keys[req.notebook.name], threads, force, interrupts, progress.say, launcher)
            progress.finish(res)
            if on_result:
                on_result(res)
            return res

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            done = dict(zip(order, pool.map(work, [requests[i] for i in order])))
        summary.results.extend(done[i] for i in range(len(requests)))
    return summary


#: Committed hint for scheduling a fresh clone: seconds of each notebook's quick preset on one thread.
SECONDS_HINT = Path("notebooks") / "seconds.json"


def cpu_seconds(manifest: dict) -> float:
    """CPU seconds of a recorded run: its wall time times its threads (a manifest's ``seconds``, ``threads``)."""
    return float(manifest["seconds"]) * max(1, int(manifest.get("threads", 1)))


def expected_seconds(root: Path) -> dict[tuple[str, str], float]:
    """Expected execution time per ``(notebook, preset)``, for scheduling only.

    The newest run in the store wins; otherwise the committed hint ``notebooks/seconds.json``
    (``{"quick": {name: seconds}}``; a stale or missing hint only changes the order of execution).
    """
    seconds: dict[tuple[str, str], float] = {}
    try:
        hint = json.loads((root / SECONDS_HINT).read_text())
        for preset, table in hint.items():
            for name, sec in table.items():
                seconds[(str(name), str(preset))] = float(sec)
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    newest: dict[tuple[str, str], float] = {}
    for manifest in (store_dir(root) / "entries").glob(f"*/{STAMP}"):
        try:
            m = json.loads(manifest.read_text())
            when, k = manifest.stat().st_mtime, (str(m["notebook"]), str(m["preset"]))
            if when > newest.get(k, -1.0):
                newest[k], seconds[k] = when, cpu_seconds(m)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return seconds


def longest_first(requests: Sequence[RunRequest], seconds: dict[tuple[str, str], float]) -> list[int]:
    """Indices of ``requests``, longest expected run first (LPT scheduling: the last notebook to start
    is a short one, so no worker idles while another finishes a long run); unknown ones keep their order
    after the known ones."""
    known = [seconds.get((r.notebook.name, r.preset)) for r in requests]
    return sorted(range(len(requests)), key=lambda i: (known[i] is None, -(known[i] or 0.0), i))


def make_requests(
    notebooks: Sequence[Notebook],
    out_root: Path,
    preset: str = QUICK,
    overrides: dict[str, Any] | None = None,
) -> list[RunRequest]:
    """Resolve parameters for each notebook (a repeated notebook once).

    Every selected notebook must define ``preset`` and every override name;
    otherwise :class:`~iclbook.notebooks.NotebookError` names the problem.
    """
    unique = {nb.name: nb for nb in notebooks}
    return [RunRequest(nb, nb.resolve(preset, overrides), preset, out_root / nb.name) for nb in unique.values()]
