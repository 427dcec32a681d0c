"""The content-addressed store of verified runs: keys, manifests, verification, locks, copies.

Key
---
The cache key of a run (:func:`cache_key`) is a SHA-256 over the notebook
source, the resolved parameters (name, type and exact literal), the preset,
``requirements.lock`` and exactly the ``iclcore`` files the notebook imports,
transitively (:mod:`iclbook.imports`). The tooling (``iclbook``) is not part
of any key: editing the CLI re-executes nothing. The import graph is read from
the store's cache of import scans (``.icl-store/import-scans.json``, by SHA-256
of each module's text, :func:`import_scans`), so a cached rebuild parses only
the modules that changed; the key reads and hashes every file as before.

Store
-----
Every successful run is kept once in ``<root>/.icl-store/entries/<key>/``
(gitignored): the executed notebook, every file it wrote, and a manifest
``.icl-run.json`` listing each file with its SHA-256 (:func:`add_entry`; the run
itself is :func:`iclbook.execution.execute`). ``book/generated/<name>/`` (or
``DIR/<name>/`` with ``--out``) is a copy of the entry (:func:`fill`), written
to a sibling temporary folder and swapped in, so stale files never survive.
:func:`verify_folder` checks an entry or an output folder against its manifest.
A failed run stores nothing; its executed notebook (with the traceback) is kept in
``<root>/.icl-store/failed/<name>-<UTC time>.ipynb``, the newest :data:`KEEP_FAILED` per notebook
(:func:`keep_failed`), outside ``entries/``. :func:`os_reason` words a filesystem error for the
CLI's one-line messages (``icl-book: <path>: <reason>``).

Locks (``filelock``, :func:`acquire`): one per store entry (identical runs
execute once; the other waits and then hits the cache) and one per output
folder (two runners writing the same folder take turns).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .imports import ScanCache, dependency_files
from .loaders import RUN_MANIFEST, InputFileError, load_file
from .notebooks import NotebookError, python_literal
from .runs import RunRequest
from .worker_env import STAMP, output_files

__all__ = [
    "KEY_VERSION",
    "STAMP",
    "STORE",
    "acquire",
    "add_entry",
    "OutputPathError",
    "cache_key",
    "check_metrics",
    "check_new_file",
    "check_output_folder",
    "cleanup_stale_temp",
    "fill",
    "hash_files",
    "import_scans",
    "json_value",
    "keep_failed",
    "os_reason",
    "read_manifest",
    "remove_tree",
    "sha256_file",
    "store_dir",
    "verify_folder",
]

STORE = ".icl-store"
#: Executed notebooks of failed runs (with their tracebacks), outside ``entries/``: never a store entry.
FAILED = "failed"
#: How many failed executed notebooks are kept per notebook (the newest).
KEEP_FAILED = 3
KEY_VERSION = b"icl-book store 2"

#: Plain words for the filesystem errors a run can meet (:func:`os_reason`).
_REASONS = {
    errno.ENOENT: "does not exist (or a parent folder is missing)",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "is a folder, expected a file",
    errno.EEXIST: "already exists (a file or a broken symbolic link is in the way)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.ELOOP: "too many levels of symbolic links (a symbolic link loop?)",
    errno.ENAMETOOLONG: "file name too long",
}


def os_reason(exc: OSError) -> str:
    """A short plain reason for ``exc`` (without its path): ``"permission denied"``, ``"no space left on the device"``."""
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    return exc.strerror or str(exc) or type(exc).__name__


def store_dir(root: Path) -> Path:
    """The store of the project at ``root``."""
    return root / STORE


def import_scans(root: Path) -> ScanCache:
    """The store's cache of ``iclcore`` import scans, by source content (:class:`iclbook.imports.ScanCache`)."""
    return ScanCache.load(store_dir(root) / "import-scans.json")


# --- key -----------------------------------------------------------------------------------------


def cache_key(request: RunRequest, root: Path, scans: ScanCache | None = None) -> str:
    """SHA-256 over notebook source, typed parameters, preset, lock file and the ``iclcore`` files it imports.

    The ledger is not part of the key: verdicts are graded when the book is built, from the stored
    ``metrics.json`` (:mod:`iclbook.verdicts`), so editing a rule re-executes nothing.

    ``scans`` (:func:`import_scans`) spares parsing unchanged ``iclcore`` modules again; the key is the same.
    """
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
    deps = dependency_files(source.decode("utf-8", "replace"), package, scans)
    add("whole-package", b"1" if deps.whole_package else b"0")
    for p in deps.files:
        add("iclcore/" + p.relative_to(package).as_posix(), p.read_bytes())
    return h.hexdigest()


# --- manifests and verification -----------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def hash_files(folder: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every output file in ``folder`` (an OSError if it cannot be listed)."""
    return {rel: sha256_file(folder / rel) for rel in output_files(folder)}


def json_value(value: Any) -> Any:
    """``value`` for a JSON manifest (an int too long for ``json``'s decimal writer becomes its literal)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**4000:
        return python_literal(value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return value


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest ``.icl-run.json`` of the entry or output ``folder``, read through the loader
    (:data:`iclbook.loaders.RUN_MANIFEST`: bounded, schema-checked); an :class:`~iclbook.loaders.InputFileError`
    naming the file and line if it is damaged, an :class:`OSError` if it cannot be read."""
    return load_file(folder / STAMP, RUN_MANIFEST)


def verify_folder(folder: Path, key: str, expected: dict[str, str] | None = None) -> str:
    """'' if ``folder`` holds exactly the files of its manifest, with their hashes, for ``key``; else the first problem.

    With ``expected`` (file -> SHA-256 of a store entry), the manifest must also list exactly those files.
    """
    stamp = folder / STAMP
    try:
        manifest = load_file(stamp, RUN_MANIFEST, STAMP)
        files = manifest["files"]
    except FileNotFoundError:
        return f"{stamp.name} is missing"
    except InputFileError as exc:
        return f"its manifest is damaged: {exc}"
    except OSError as exc:
        return f"{stamp.name} is unreadable ({os_reason(exc)})"
    if manifest.get("key") != key or (expected is not None and files != expected):
        return "it holds another run"
    for rel, digest in files.items():
        path = folder / rel
        if not path.is_file():
            return f"{rel} is missing"
        if sha256_file(path) != digest:
            return f"{rel} changed"
    try:
        extra = sorted(set(output_files(folder)) - set(files))
    except OSError as exc:
        return str(exc)
    if extra:
        return f"{extra[0]} is not an output of this run"
    return ""


def check_metrics(path: Path) -> str:
    """'' if ``path`` (a metrics.json) follows :data:`iclcore.plotting.METRICS_CONTRACT`; else what is wrong."""
    from iclcore.plotting import metrics_problem  # the contract lives with write_metrics, which writes the file

    if not path.is_file():
        return "the notebook wrote no metrics.json (call iclcore.plotting.write_metrics)"

    def reject(token: str) -> None:
        raise ValueError(f"{token} is not a finite number")

    try:
        data = json.loads(path.read_text(), parse_constant=reject)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"metrics.json does not parse: {exc}"
    problem = metrics_problem(data)
    return f"metrics.json: {problem}" if problem else ""


# --- entries, copies, locks ---------------------------------------------------------------------


def add_entry(root: Path, key: str, work: Path, manifest: dict[str, Any], aside: Path) -> Path:
    """Write ``manifest`` into ``work`` and make ``work`` the store entry ``key`` (one rename).

    A damaged entry already there (the caller holds its lock) is first moved into ``aside``.
    """
    (work / STAMP).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    entry = store_dir(root) / "entries" / key
    if entry.exists():
        entry.rename(aside / "old")
    os.rename(work, entry)
    return entry


def keep_failed(root: Path, name: str, executed: Path, log: Path | None = None, keep: int = KEEP_FAILED) -> Path | None:
    """Copy a failed run's executed notebook to ``<store>/failed/<name>-<UTC time>.ipynb``; its path.

    ``log`` (the run's output: the child's and the kernel's stderr, where a kernel that died at start says
    why) is copied beside it as ``<name>-<UTC time>.log``. Written to a temporary name and renamed (never
    half-written); only the newest ``keep`` of ``name`` are kept (their logs with them). None if there is no
    executed notebook or it cannot be copied.
    """
    import time

    if not executed.is_file():
        return None
    folder = store_dir(root) / FAILED
    now = time.time_ns()  # one reading: the name sorts by time (seconds, then nanoseconds)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9)) + f"-{now % 10**9:09d}"
    target = folder / f"{name}-{stamp}.ipynb"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        copies = [(executed, target)]
        if log is not None and log.is_file():
            copies.append((log, target.with_suffix(".log")))
        for source, destination in copies:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}-", suffix=".part", dir=folder)
            os.close(fd)
            try:
                shutil.copyfile(source, tmp)
                os.replace(tmp, destination)
            finally:
                Path(tmp).unlink(missing_ok=True)
        runs = sorted(p for p in folder.glob(f"{name}-*.ipynb") if p.name[len(name) + 1 : len(name) + 2].isdigit())
        for old in runs[:-keep]:
            old.unlink(missing_ok=True)
            old.with_suffix(".log").unlink(missing_ok=True)
    except OSError:
        return None
    return target


def remove_tree(path: Path) -> None:
    """Remove the folder ``path`` and everything in it (no error if it is gone)."""
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
            remove_tree(d)
        except OSError:
            pass


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
        try:
            os.rename(new, out_dir)
        except OSError:
            if old is not None:  # put the previous folder back: never leave out_dir missing or half-written
                os.rename(old / "x", out_dir)
                remove_tree(old)
            raise
        if old is not None:
            remove_tree(old)
    finally:
        if new.exists():
            remove_tree(new)


# --- output paths ---------------------------------------------------------------------------------


class OutputPathError(NotebookError):
    """A path a command would write is refused: it would overwrite something it does not own (one line)."""


def _tracked(path: Path) -> list[str]:
    """The files under ``path`` (itself, or a folder's) that git tracks in the repository holding it; [] outside git."""
    import subprocess

    folder = path if path.is_dir() else path.parent
    if not folder.is_dir():
        return []
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "--", str(path)],
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [p for p in out.stdout.decode(errors="replace").split("\0") if p] if out.returncode == 0 else []


def _inside_store(path: Path, root: Path) -> bool:
    store = store_dir(root)
    return path.resolve().is_relative_to(store.resolve()) or path.absolute().is_relative_to(store.absolute())


def check_new_file(path: Path, root: Path, force: bool, command: str) -> None:
    """Refuse (an :class:`OutputPathError` naming ``path``) to write the file ``path`` over what ``command`` does
    not own: a file tracked by git and a path inside the store always, a folder always, any other existing
    file unless ``force``."""
    if _inside_store(path, root):
        raise OutputPathError(
            f"{command}: {path} is inside the store {store_dir(root)}; only icl-book's own code writes there"
        )
    if path.is_dir():
        raise OutputPathError(f"{command}: {path} is a folder; give a file name")
    tracked = _tracked(path) or (_tracked(path.resolve()) if path.is_symlink() else [])
    if tracked:
        raise OutputPathError(
            f"{command}: {path} is a file tracked by git; refusing to overwrite it (choose another path)"
        )
    if (path.exists() or path.is_symlink()) and not force:
        raise OutputPathError(f"{command}: {path} exists; refusing to overwrite it (give --force to replace it)")


def check_output_folder(folder: Path, root: Path, force: bool, command: str) -> None:
    """Refuse (an :class:`OutputPathError` naming ``folder``) to replace the output folder ``folder`` when it
    is inside the store or holds files tracked by git (always), or when it holds files but is not an
    output folder of icl-book (no ``.icl-run.json``) unless ``force``: :func:`fill` swaps the whole folder."""
    if _inside_store(folder, root):
        raise OutputPathError(
            f"{command}: {folder} is inside the store {store_dir(root)}; only icl-book's own code writes there"
        )
    if not folder.is_dir():
        return
    tracked = _tracked(folder)
    if tracked:
        raise OutputPathError(
            f"{command}: {folder} holds {len(tracked)} file(s) tracked by git ({tracked[0]}); refusing to replace it"
        )
    if not force and not (folder / STAMP).is_file() and any(folder.iterdir()):
        raise OutputPathError(
            f"{command}: {folder} holds files but no {STAMP} (not an icl-book output folder); refusing to replace "
            "it (give --force to replace it)"
        )


def acquire(lock: Any, what: str, stopping: Callable[[], bool], say: Callable[[str], None]) -> bool:
    """Take the ``filelock`` ``lock``, saying once that we wait for ``what``; False if ``stopping()`` first."""
    from filelock import Timeout

    try:
        lock.acquire(timeout=0)
        return True
    except Timeout:
        say(f"waiting for {what} (another icl-book run holds it)")
    while not stopping():
        try:
            lock.acquire(timeout=0.5)
            return True
        except Timeout:
            continue
    return False
