"""A verified archive of store entries: ``icl-book export FILE [NAMES] [--preset P] [-p NAME VALUE] [--sweep]``
and ``icl-book import FILE [--sha256 HEX]``.

Why
---
A paper-preset build costs CPU-hours; its store entries live on the machine that ran it. An archive
carries them to another checkout (a reader's clone, the machine that publishes the book) so that the
report's paper column can be shown there without executing anything. The runs of a preset, of ``-p``
values (``-p NAME VALUE``) or of the declared sweeps (``--sweep``) can be carried alike.

Format (:data:`FORMAT`)
-----------------------
One tar file (gzip-compressed when ``FILE`` ends in ``.gz`` or ``.tgz``; the gzip header carries no
time), members in a fixed order: first :data:`MANIFEST` (``icl-archive.json``), then for each entry,
in book order (a sweep's points in grid order), ``entries/<key>/.icl-run.json`` followed by the entry's files sorted by path. Every
member has mode 0644, owner 0 and time 0. The top-level manifest holds

* ``preset``, the exporting checkout's ``commit`` (``git rev-parse HEAD``, ``dirty`` if its tracked
  files differ from it), ``lock_sha256`` (SHA-256 of ``requirements.lock``), ``exported`` (UTC) and
  ``machine`` (host, architecture, CPU model, cores);
* ``entries``: per entry its ``notebook``, ``key``, ``source_sha256`` (the notebook's source),
  ``manifest_sha256`` (its ``.icl-run.json``), ``files`` (path -> SHA-256), ``entry_sha256`` (SHA-256
  of the canonical JSON of those fields) and ``computed`` (commit, date, machine of the run: the date
  of the entry's manifest, this machine and commit; or, for an entry that was itself imported, the
  origin recorded at its import);
* ``archive_sha256``: SHA-256 of the canonical JSON (sorted keys, no spaces) of everything above.

What an archive proves, and what it does not
-------------------------------------------
Every hash in an archive is computed by whoever wrote it. The hashes therefore detect a damaged,
truncated or partly edited file, but not an archive that was edited and then re-hashed: such an archive
is indistinguishable from an honest one, and is accepted if its keys are this checkout's. So an import
never claims more than it knows:

* every imported entry is marked with its origin (archive file name, the file's SHA-256, the
  manifest's ``archive_sha256``, the commit, date and machine its writer states) in the entry's own
  manifest (``"origin"`` in ``.icl-run.json``); ``icl-book run`` says so when it serves such an entry,
  and the report names the origin beside the quick and the paper column: an imported run is never shown
  as computed here. A later local run under the same key (``--force``) writes a manifest without it;
* trust comes from outside the file: ``icl-book import FILE --sha256 HEX`` refuses any file whose
  SHA-256 is not ``HEX``, a digest its maker publishes over a channel the reader trusts (a signed
  release note, a digest list committed in git). Without it the origin is recorded as unchecked.

Import (:func:`import_archive`)
-------------------------------
Nothing unverified ever enters the store. The file (a regular file only, at most
:data:`MAX_MEMBERS` members of at most :data:`MAX_MEMBER_BYTES` bytes each) is read once, as a
stream, into a private folder ``.icl-store/tmp/import-<pid>-*``; then

1. integrity: the manifest (:data:`iclbook.loaders.ARCHIVE_MANIFEST`) parses and follows its schema,
   its ``archive_sha256`` and every ``entry_sha256`` recompute; every member is listed and matches its
   SHA-256; every listed file is present (a truncated file misses some); each extracted entry passes
   :func:`iclbook.store.verify_folder` and :func:`iclbook.store.check_metrics`; with ``--sha256`` the
   file's own digest matches. Any failure refuses the whole file, in one line naming the entry and the
   member (:class:`ArchiveError`); nothing is moved into the store;
2. currency: each entry's key must equal the key that ``icl-book run`` computes in *this* checkout
   for the notebook, preset and parameters its manifest records (:func:`iclbook.store.cache_key`:
   source, parameters, lock file, imported ``iclcore`` files, ledger rules): a preset run, a run with
   ``-p`` values and a sweep point alike. An entry that does not (a stale archive, another commit) is
   refused in one line naming it and saying what differs; the current entries are imported;
3. each accepted entry gets its ``"origin"`` and is moved in under its store lock with one
   ``rename``, as a run is (:func:`iclbook.store.add_entry`).

Export (:func:`export_archive`) writes only a new file: an existing one is named and refused unless
``--force``, a file tracked by git and a path inside the store always (:func:`iclbook.store.check_new_file`);
the archive gets the usual mode of a new file (0666 less the umask).
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import platform
import stat
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from .loaders import ARCHIVE_MANIFEST, InputFileError, parse_bytes
from .notebooks import QUICK, Notebook, NotebookError, discover_all
from .runs import RunRequest, make_requests
from .store import (
    STAMP,
    acquire,
    cache_key,
    check_metrics,
    check_new_file,
    import_scans,
    os_reason,
    read_manifest,
    remove_tree,
    sha256_file,
    store_dir,
    verify_folder,
)

__all__ = [
    "FORMAT",
    "MANIFEST",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "ArchiveError",
    "ImportResult",
    "add_command",
    "archive_hash",
    "built_origins",
    "entry_origin",
    "export_archive",
    "import_archive",
    "machine_record",
    "origin_note",
    "utc_timestamp",
]

FORMAT = "icl-book archive 1"
MANIFEST = "icl-archive.json"
#: The most members an archive may hold, and the largest member (bytes): bounds checked before reading.
MAX_MEMBERS = 200_000
MAX_MEMBER_BYTES = 4 << 30
_ENTRY_FIELDS = ("notebook", "key", "source_sha256", "manifest_sha256", "files")


class ArchiveError(Exception):
    """An archive that cannot be written or is refused: one line, printed as ``icl-book: <message>``."""


@dataclass
class ImportResult:
    """What :func:`import_archive` did: entries moved in, already stored, and refused (one line each)."""

    archive_sha256: str = ""
    file_sha256: str = ""
    imported: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


# --- hashing and provenance ---------------------------------------------------------------------


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def archive_hash(manifest: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``manifest`` without its ``archive_sha256`` field."""
    return _sha(_canonical({k: v for k, v in manifest.items() if k != "archive_sha256"}))


def _entry_hash(entry: dict[str, Any]) -> str:
    return _sha(_canonical({k: entry.get(k) for k in _ENTRY_FIELDS}))


def _git(root: Path, *args: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _commit(root: Path) -> tuple[str, bool]:
    """The checkout's commit ('unknown' outside git) and whether its tracked files differ from it."""
    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    dirty = commit != "unknown" and bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    return commit, dirty


def machine_record() -> dict[str, Any]:
    """This machine: host name, architecture, CPU model (from ``/proc/cpuinfo`` where there is one), cores."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    record = {"host": platform.node(), "arch": platform.machine(), "cpu": cpu, "cores": os.cpu_count() or 0}
    gpus = nvidia_gpus()
    if gpus:
        record["gpus"] = gpus
    return record


def nvidia_gpus(proc: Path = Path("/proc/driver/nvidia/gpus")) -> list[str]:
    """Model names of this machine's NVIDIA GPUs, read from the driver's ``/proc`` files (no torch import;
    an empty list where there is no NVIDIA driver)."""
    models = []
    try:
        for info in sorted(proc.glob("*/information")):
            for line in info.read_text(errors="replace").splitlines():
                if line.startswith("Model:"):
                    models.append(line.split(":", 1)[1].strip())
    except OSError:
        return models
    return models


def utc_timestamp(seconds: float) -> str:
    """``seconds`` since the epoch as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC)."""
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _lock_sha(root: Path) -> str:
    lock = root / "requirements.lock"
    return sha256_file(lock) if lock.is_file() else _sha(b"")


def _origin_of(manifest: dict[str, Any]) -> dict[str, Any] | None:
    origin = manifest.get("origin")
    return origin if isinstance(origin, dict) else None


def entry_origin(root: Path, key: str) -> dict[str, Any] | None:
    """The origin of the imported store entry ``key`` (its manifest's ``"origin"``), or None: a run computed
    here, or an entry whose manifest cannot be read."""
    try:
        return _origin_of(read_manifest(store_dir(root) / "entries" / key))
    except (OSError, InputFileError):
        return None


def built_origins(generated: Path, notebooks: list[str]) -> dict[str, str]:
    """Notebook -> :func:`origin_note` for each output folder ``generated/<nb>/`` copied from an imported run."""
    out = {}
    for nb in notebooks:
        try:
            origin = _origin_of(read_manifest(generated / nb))
        except (OSError, InputFileError):
            continue
        if origin is not None:
            out[nb] = origin_note(origin)
    return out


def origin_note(origin: dict[str, Any]) -> str:
    """One sentence for the report: where an imported run came from (archive, commit, date, machine), and
    whether the archive's file digest was checked against one given on import (``--sha256``)."""
    c = origin.get("computed") or {}
    m = c.get("machine") or {}
    commit = str(c.get("commit", "unknown"))[:12] + (" (with uncommitted changes)" if c.get("dirty") else "")
    where = ", ".join(str(x) for x in (m.get("host"), m.get("cpu"), f"{m.get('cores')} cores") if x)
    named = f" `{origin['archive_file']}`" if origin.get("archive_file") else ""
    checked = (
        "its file digest checked on import" if origin.get("sha256_checked") else "its file digest not checked on import"
    )
    return (
        f"imported from archive{named} `{str(origin.get('archive_sha256', ''))[:16]}` ({checked}), not computed "
        f"here; computed at commit `{commit}` on {c.get('date', 'an unknown date')} on {where or 'an unknown machine'}"
    )


# --- the keys of this checkout ------------------------------------------------------------------


def _presets(notebooks: list[Notebook]) -> list[str]:
    return sorted({QUICK, *(p for nb in notebooks for p in nb.presets)})


def _requests(
    root: Path, notebooks: list[Notebook], names: set[str], preset: str, overrides: dict[str, str] | None, sweep: bool
) -> list[RunRequest]:
    """The runs an export selects among ``notebooks`` (those in ``names``): each at ``preset`` (with
    ``overrides``), or every point of their declared sweeps (``sweep``; :mod:`iclbook.sweep`)."""
    out = root / "book" / "generated"
    if not sweep:
        chosen = [nb for nb in notebooks if nb.name in names and (preset == QUICK or preset in nb.presets)]
        return make_requests(chosen, out, preset, overrides) if chosen else []
    from .sweep import expand, load_plans

    plans = load_plans(root, notebooks)  # the declaration is checked against every notebook
    return [
        RunRequest(plan.notebook, p.params, QUICK, out / plan.notebook.name)
        for plan in plans.values()
        if plan.notebook.name in names
        for p in expand(plan.notebook, plan.grid)
    ]


def _literal_value(text: str) -> Any:
    """The value of a parameter literal written by :func:`iclbook.notebooks.python_literal` (its exact
    inverse: numbers, strings, bools, None, ``float("nan")``, ``float("inf")``, lists and tuples of them)."""

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "float"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in ("nan", "inf")
        ):
            return float(node.args[0].value)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [value(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        raise NotebookError(f"{text[:60]!r} is not a parameter literal")

    try:
        return value(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise NotebookError(f"{text[:60]!r} is not a parameter literal") from None


def _key_here(root: Path, nb: Notebook, stamp: dict[str, Any], scans: Any) -> str:
    """The key ``icl-book run`` computes in this checkout for the notebook, preset and exact parameters that
    the run's manifest ``stamp`` records (its ``param_literals``); a :class:`NotebookError` if they are not
    valid here."""
    literals = stamp.get("param_literals")
    if not isinstance(literals, dict):
        raise NotebookError("its manifest records no parameters")
    params = nb.resolve(str(stamp["preset"]), {str(k): _literal_value(str(v)) for k, v in literals.items()})
    return cache_key(RunRequest(nb, params, str(stamp["preset"]), root / "book" / "generated"), root, scans)


# --- export --------------------------------------------------------------------------------------


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _open_write(path: Path, raw: BinaryIO) -> tuple[tarfile.TarFile, gzip.GzipFile | None]:
    if path.name.endswith((".gz", ".tgz")):
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
        return tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT), gz
    return tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT), None


def export_archive(
    root: Path,
    preset: str,
    path: Path,
    say: Callable[[str], None] = print,
    names: list[str] | None = None,
    overrides: dict[str, str] | None = None,
    sweep: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Write the verified store entries of this checkout's runs into the archive ``path``.

    The runs: each notebook (``names``, default all) at ``preset`` with the ``-p`` ``overrides``, or with
    ``sweep`` every point of the notebooks' declared sweeps. Runs without a verified entry are named in
    one line and left out; none at all is an :class:`ArchiveError` (one line). An unknown preset is a
    :class:`~iclbook.notebooks.NotebookError`; a path that is not a new file an
    :class:`~iclbook.notebooks.NotebookError` naming it (:func:`iclbook.store.check_new_file`; ``force``
    replaces an untracked file). The file is written beside ``path`` and renamed into place, with the
    mode of a new file (0666 less the umask). Returns the top-level manifest.
    """
    check_new_file(path, root, force, "export")
    notebooks = discover_all(root)[0]
    if preset not in _presets(notebooks):
        raise NotebookError(f"unknown preset {preset!r}; the notebooks define: {', '.join(_presets(notebooks))}")
    if names:
        unknown = sorted(set(names) - {nb.name for nb in notebooks})
        if unknown:
            raise NotebookError(f"unknown notebook(s) {unknown}; available: {', '.join(nb.name for nb in notebooks)}")
    scans = import_scans(root)
    requests = _requests(root, notebooks, set(names or [nb.name for nb in notebooks]), preset, overrides, sweep)
    entries_dir = store_dir(root) / "entries"
    commit, dirty = _commit(root)
    machine = machine_record()
    entries, missing, seen = [], [], set()
    what = "sweep points" if sweep else f"runs of preset {preset!r}" + (" with those -p values" if overrides else "")
    for req in requests:
        key = cache_key(req, root, scans)
        if key in seen:
            continue
        seen.add(key)
        name, folder = req.notebook.name, entries_dir / key
        if not folder.is_dir() or verify_folder(folder, key):
            missing.append(name)
            continue
        stamp = read_manifest(folder)
        origin = _origin_of(stamp)
        computed = (
            origin["computed"]
            if origin and isinstance(origin.get("computed"), dict)
            else {
                "commit": commit,
                "dirty": dirty,
                "date": utc_timestamp((folder / STAMP).stat().st_mtime),
                "machine": machine,
            }
        )
        entry = {
            "notebook": name,
            "key": key,
            "source_sha256": sha256_file(req.notebook.path),
            "manifest_sha256": sha256_file(folder / STAMP),
            "files": dict(sorted(stamp["files"].items())),
            "computed": computed,
        }
        entry["entry_sha256"] = _entry_hash(entry)
        entries.append(entry)
    if not entries:
        hint = "icl-book sweep" if sweep else f"icl-book run --preset {preset}"
        raise ArchiveError(
            f"export: the store holds none of the {len(seen)} {what} for this checkout; run `{hint}` first"
        )
    if missing:
        shown = ", ".join(sorted(set(missing))[:8]) + (", ..." if len(set(missing)) > 8 else "")
        say(
            f"icl-book: export: {len(missing)} of the {len(seen)} {what} have no verified stored run and are left out: {shown}"
        )
    manifest = {
        "format": FORMAT,
        "preset": QUICK if sweep else preset,
        "commit": commit,
        "dirty": dirty,
        "lock_sha256": _lock_sha(root),
        "exported": utc_timestamp(_dt.datetime.now(_dt.UTC).timestamp()),
        "machine": machine,
        "entries": entries,
    }
    manifest["archive_sha256"] = archive_hash(manifest)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp makes 0600; an archive is meant to be shared
        with os.fdopen(fd, "wb") as raw:
            tar, gz = _open_write(path, raw)
            try:
                data = json.dumps(manifest, indent=1, sort_keys=True).encode() + b"\n"
                tar.addfile(_tarinfo(MANIFEST, len(data)), io.BytesIO(data))
                for e in entries:
                    folder = entries_dir / e["key"]
                    for rel, digest in [(STAMP, e["manifest_sha256"]), *e["files"].items()]:
                        data = (folder / rel).read_bytes()
                        if _sha(data) != digest:
                            raise ArchiveError(f"export: entry {e['notebook']}: {rel} changed while being exported")
                        tar.addfile(_tarinfo(f"entries/{e['key']}/{rel}", len(data)), io.BytesIO(data))
            finally:
                tar.close()
                if gz is not None:
                    gz.close()
        os.replace(part, path)
    finally:
        Path(part).unlink(missing_ok=True)
    return manifest


# --- import --------------------------------------------------------------------------------------


class _HashingReader(io.RawIOBase):
    """A read-only stream over ``raw`` that hashes every byte read (the archive file's own SHA-256)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.sha = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        self.sha.update(data)
        buffer[: len(data)] = data
        return len(data)

    def drain(self) -> str:
        """Read to the end; the hex SHA-256 of the whole file."""
        while chunk := self.raw.read(1 << 20):
            self.sha.update(chunk)
        return self.sha.hexdigest()


def _read_manifest(tar: tarfile.TarFile, where: str) -> dict[str, Any]:
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise ArchiveError(f"{where}: refused: not an icl-book archive (its first member is not {MANIFEST})")
    if first.size > ARCHIVE_MANIFEST.max_bytes:
        raise ArchiveError(f"{where}: refused: {MANIFEST} is larger than {ARCHIVE_MANIFEST.max_bytes} bytes")
    try:
        manifest = parse_bytes(tar.extractfile(first).read(), ARCHIVE_MANIFEST, MANIFEST)  # type: ignore[union-attr]
    except InputFileError as exc:
        raise ArchiveError(f"{where}: refused: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise ArchiveError(f"{where}: refused: {MANIFEST} is not of format {FORMAT!r}")
    entries = manifest["entries"]
    if manifest.get("archive_sha256") != archive_hash(manifest):
        raise ArchiveError(f"{where}: refused: {MANIFEST} does not match its archive_sha256 (tampered)")
    for e in entries:
        if e.get("entry_sha256") != _entry_hash(e):
            raise ArchiveError(
                f"{where}: refused: entry {e.get('notebook')}: its listing does not match its entry_sha256"
            )
        for rel in e["files"]:
            parts = PurePosixPath(rel).parts
            if (
                not parts
                or rel.startswith("/")
                or "\\" in rel
                or {".", "..", STAMP} & set(parts)
                or rel != "/".join(parts)
            ):
                raise ArchiveError(
                    f"{where}: refused: entry {e.get('notebook')}: {rel!r} is not a path inside an entry"
                )
    count = sum(1 + len(e["files"]) for e in entries)
    if count > MAX_MEMBERS:
        raise ArchiveError(f"{where}: refused: {count} members listed, more than the bound {MAX_MEMBERS}")
    return manifest


def _extract(tar: tarfile.TarFile, manifest: dict[str, Any], tmp: Path, where: str) -> None:
    """Stream every member into ``tmp/<key>/``, checking each against the listing; an :class:`ArchiveError` otherwise."""
    expected: dict[str, tuple[str, str]] = {}  # member -> (notebook, sha256)
    for e in manifest["entries"]:
        expected[f"entries/{e['key']}/{STAMP}"] = (e["notebook"], e["manifest_sha256"])
        for rel, digest in e["files"].items():
            expected[f"entries/{e['key']}/{rel}"] = (e["notebook"], digest)
    seen: set[str] = set()
    at = f"after {MANIFEST}"  # where the stream broke, for the message
    try:
        while (member := tar.next()) is not None:  # after the manifest, which _read_manifest took
            at = (
                f"in entry {expected[member.name][0]}, {member.name.split('/', 2)[2]}"
                if member.name in expected
                else at
            )
            if member.name not in expected or member.name in seen or not member.isfile():
                raise ArchiveError(f"{where}: refused: member {member.name} is not listed in {MANIFEST} (tampered)")
            notebook, digest = expected[member.name]
            if member.size > MAX_MEMBER_BYTES:
                raise ArchiveError(
                    f"{where}: refused: entry {notebook}: {member.name.split('/', 2)[2]} is {member.size} bytes, "
                    f"more than the bound {MAX_MEMBER_BYTES}"
                )
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            if len(data) != member.size:
                raise EOFError
            if _sha(data) != digest:
                rel = member.name.split("/", 2)[2]
                raise ArchiveError(f"{where}: refused: entry {notebook}: {rel} does not match its SHA-256 (tampered)")
            target = tmp / member.name.split("/", 1)[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            seen.add(member.name)
            at = f"after {member.name.split('/', 2)[2]} of entry {notebook}"
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"{where}: refused: truncated or damaged {at} ({exc or 'unexpected end'})") from None
    lost = [m for m in expected if m not in seen]
    if lost:
        notebook = expected[lost[0]][0]
        raise ArchiveError(
            f"{where}: refused: entry {notebook}: {lost[0].split('/', 2)[2]} is missing "
            f"({len(lost)} listed member(s) absent: truncated?)"
        )


def _stale_reason(entry: dict[str, Any], manifest: dict[str, Any], root: Path, by_name: dict[str, Notebook]) -> str:
    nb = by_name.get(entry["notebook"])
    if nb is None:
        return "this checkout has no such notebook"
    if sha256_file(nb.path) != entry.get("source_sha256"):
        return "the notebook's source differs"
    if manifest.get("lock_sha256") != _lock_sha(root):
        return "requirements.lock differs"
    return "the iclcore files it imports or its ledger rules differ"


def _read_archive(path: Path, tmp: Path, where: str) -> tuple[dict[str, Any], str]:
    """Verify and extract the archive file ``path`` into ``tmp``; its manifest and the file's SHA-256."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ArchiveError(f"{path}: {os_reason(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ArchiveError(f"{where}: refused: not a regular file (an archive written by `icl-book export`)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as raw:
            reader = _HashingReader(raw)
            with tarfile.open(fileobj=io.BufferedReader(reader), mode="r|*") as tar:
                manifest = _read_manifest(tar, where)
                _extract(tar, manifest, tmp, where)
            return manifest, reader.drain()
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"{where}: refused: not a readable archive, or truncated ({exc})") from None
    except OSError as exc:
        raise ArchiveError(f"{exc.filename or path}: {os_reason(exc)}") from None
    finally:
        os.close(fd)


def import_archive(
    root: Path, path: Path, say: Callable[[str], None] = print, sha256: str | None = None
) -> ImportResult:
    """Verify the archive ``path`` and move its current entries into the store of ``root`` (see the module doc).

    Raises :class:`ArchiveError` (nothing imported) for an unreadable, truncated or tampered file, or one
    whose SHA-256 is not ``sha256`` (when given); an entry whose key is not this checkout's is refused
    (listed in ``refused``), the others imported, each marked with its origin.
    """
    from filelock import FileLock

    where = f"import {path}"
    if sha256 is not None and (len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256.lower())):
        raise ArchiveError(f"--sha256 {sha256!r}: expected 64 hexadecimal digits (the archive file's SHA-256)")
    store = store_dir(root)
    for sub in ("tmp", "entries", "locks"):
        (store / sub).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"import-{os.getpid()}-", dir=store / "tmp"))
    result = ImportResult()
    try:
        manifest, result.file_sha256 = _read_archive(path, tmp, where)
        if sha256 is not None and result.file_sha256 != sha256.lower():
            raise ArchiveError(
                f"{where}: refused: the file's SHA-256 is {result.file_sha256[:16]}..., not the expected "
                f"{sha256.lower()[:16]}... (--sha256)"
            )
        result.archive_sha256 = manifest["archive_sha256"]
        preset = manifest.get("preset")
        stamps: dict[str, dict[str, Any]] = {}
        for e in manifest["entries"]:  # integrity of every entry before anything moves
            folder = tmp / e["key"]
            problem = verify_folder(folder, e["key"], e["files"]) or check_metrics(folder / "metrics.json")
            if not problem:
                stamps[e["key"]] = read_manifest(folder)
                if stamps[e["key"]]["notebook"] != e["notebook"] or stamps[e["key"]]["preset"] != preset:
                    problem = "its manifest names another notebook or preset"
            if problem:
                raise ArchiveError(f"{where}: refused: entry {e['notebook']}: {problem}")
        notebooks = discover_all(root)[0]
        by_name = {nb.name: nb for nb in notebooks}
        scans = import_scans(root)
        for e in manifest["entries"]:
            name, key, stamp = e["notebook"], e["key"], stamps[e["key"]]
            try:
                here = _key_here(root, by_name[name], stamp, scans) if name in by_name else ""
            except NotebookError:
                here = ""
            if here != key:
                line = (
                    f"{where}: refused entry {name} (preset {preset}, key {key[:12]}): its key does not match this "
                    f"checkout ({_stale_reason(e, manifest, root, by_name)}; archive from commit {str(manifest.get('commit'))[:12]})"
                )
                say(f"icl-book: {line}")
                result.refused.append(line)
                continue
            stamp["origin"] = {
                "archive_file": path.name,
                "file_sha256": result.file_sha256,
                "sha256_checked": sha256 is not None,
                "archive_sha256": manifest["archive_sha256"],
                "archive_commit": manifest.get("commit"),
                "exported": manifest.get("exported"),
                "exported_on": manifest.get("machine"),
                "computed": e.get("computed", {}),
                "imported": utc_timestamp(_dt.datetime.now(_dt.UTC).timestamp()),
            }
            (tmp / key / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
            lock = FileLock(str(store / "locks" / f"{key}.lock"))
            acquire(lock, f"the store entry of {name}", lambda: False, say)
            try:
                entry = store / "entries" / key
                if entry.exists() and not verify_folder(entry, key):
                    result.present.append(name)
                    continue
                if entry.exists():  # a damaged entry: aside, then replaced by the verified one
                    entry.rename(tmp / f"old-{key}")
                os.rename(tmp / key, entry)
                result.imported.append(name)
            finally:
                lock.release()
    finally:
        remove_tree(tmp)
    return result


# --- the CLI -------------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace, root: Path) -> int:
    path = Path(args.file).expanduser().absolute()
    overrides = {k: v for k, v in (args.param or [])}
    if args.sweep and (overrides or args.preset != QUICK):
        raise NotebookError(
            "export --sweep: the sweep points are quick runs at their grid values; give no --preset or -p"
        )
    try:
        manifest = export_archive(
            root,
            args.preset,
            path,
            say=lambda s: print(s, file=sys.stderr),
            names=args.names,
            overrides=overrides,
            sweep=args.sweep,
            force=args.force,
        )
    except ArchiveError as exc:
        print(f"icl-book: {exc}", file=sys.stderr)
        return 1
    n = len(manifest["entries"])
    print(
        f"icl-book: exported {n} entr{'y' if n == 1 else 'ies'} of preset {manifest['preset']!r} "
        f"(commit {manifest['commit'][:12]}{', dirty' if manifest['dirty'] else ''}) to {path}; "
        f"archive {manifest['archive_sha256'][:16]}, file SHA-256 {sha256_file(path)}, {path.stat().st_size / 1e6:.1f} MB"
    )
    return 0


def cmd_import(args: argparse.Namespace, root: Path) -> int:
    path = Path(args.file).expanduser().absolute()
    try:
        res = import_archive(root, path, say=lambda s: print(s, file=sys.stderr), sha256=args.sha256)
    except ArchiveError as exc:
        print(f"icl-book: {exc}", file=sys.stderr)
        return 1
    checked = "checked against --sha256" if args.sha256 else "not checked: give --sha256 HEX to check it"
    print(
        f"icl-book: archive {res.archive_sha256[:16]}: {len(res.imported)} imported, {len(res.present)} already "
        f"stored, {len(res.refused)} refused; imported runs are marked with their origin, never as computed here "
        f"(file SHA-256 {res.file_sha256}, {checked})"
    )
    return 1 if res.refused else 0


def add_command(sub: Any) -> None:
    """Add ``export`` and ``import`` to the ``icl-book`` subcommands ``sub``."""
    ex = sub.add_parser("export", help="write the store's runs for this checkout into one verified archive")
    ex.add_argument("file", metavar="FILE", help="the archive to write (.tar, or .tar.gz / .tgz); a new file")
    ex.add_argument("names", nargs="*", metavar="NAME", help="notebooks whose runs to export (default: all)")
    ex.add_argument("--preset", default=QUICK, help=f"the preset whose runs to export (default: {QUICK}; also: paper)")
    ex.add_argument(
        "-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="the runs made with this -p value"
    )
    ex.add_argument("--sweep", action="store_true", help="the stored points of the notebooks' sweeps (sweeps.yml)")
    ex.add_argument("--force", action="store_true", help="replace FILE if it exists (never a file tracked by git)")
    ex.set_defaults(func=cmd_export)
    im = sub.add_parser("import", help="verify an archive and add its runs that match this checkout to the store")
    im.add_argument("file", metavar="FILE", help="an archive written by `icl-book export`")
    im.add_argument(
        "--sha256", metavar="HEX", help="refuse the file unless its SHA-256 is HEX (a digest published by its maker)"
    )
    im.set_defaults(func=cmd_import)
