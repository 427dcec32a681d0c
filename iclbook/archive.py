"""A verified archive of store entries: ``icl-book export --preset P FILE`` and ``icl-book import FILE``.

Why
---
A paper-preset build costs CPU-hours; its store entries live on the machine that ran it. An archive
carries them to another checkout (a reader's clone, the machine that publishes the book) so that the
report's paper column can be shown there without executing anything, and without trusting the file.

Format (:data:`FORMAT`)
-----------------------
One tar file (gzip-compressed when ``FILE`` ends in ``.gz`` or ``.tgz``; the gzip header carries no
time), members in a fixed order: first :data:`MANIFEST` (``icl-archive.json``), then for each entry,
in book order, ``entries/<key>/.icl-run.json`` followed by the entry's files sorted by path. Every
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

Import (:func:`import_archive`)
-------------------------------
Nothing unverified ever enters the store. The file is read once, as a stream, into a private folder
``.icl-store/tmp/import-<pid>-*``; then

1. integrity: the manifest parses and its ``archive_sha256`` and every ``entry_sha256`` recompute;
   every member is listed and matches its SHA-256; every listed file is present (a truncated file
   misses some); each extracted entry passes :func:`iclbook.store.verify_folder` and
   :func:`iclbook.store.check_metrics`. Any failure refuses the whole file, in one line naming the
   entry and the member (:class:`ArchiveError`); nothing is moved into the store;
2. currency: each entry's key must equal the key that ``icl-book run <notebook> --preset <preset>``
   computes in *this* checkout (:func:`iclbook.store.cache_key`: source, parameters, lock file,
   imported ``iclcore`` files, ledger rules). An entry that does not (a stale archive, another
   commit) is refused in one line naming it and saying what differs; the current entries are
   imported;
3. each accepted entry is moved in under its store lock with one ``rename``, as a run is
   (:func:`iclbook.store.add_entry`), and its origin (archive hash, commit, date, machine) is written to
   ``.icl-store/origins/<key>.json`` together with the SHA-256 of the entry's manifest, so that a
   later local run under the same key (``--force``) is never credited to the archive
   (:func:`entry_origin`).

The report (:mod:`iclbook.pages`) names the origin of every imported paper-preset run
(:func:`origin_note`).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from .notebooks import QUICK, Notebook, NotebookError, discover_all
from .runs import make_requests
from .store import (
    STAMP,
    acquire,
    cache_key,
    check_metrics,
    import_scans,
    os_reason,
    remove_tree,
    sha256_file,
    store_dir,
    verify_folder,
)

__all__ = [
    "FORMAT",
    "MANIFEST",
    "ArchiveError",
    "ImportResult",
    "add_commands",
    "archive_hash",
    "entry_origin",
    "export_archive",
    "import_archive",
    "machine_record",
    "origin_note",
    "utc_timestamp",
]

FORMAT = "icl-book archive 1"
MANIFEST = "icl-archive.json"
ORIGINS = "origins"
_ENTRY_FIELDS = ("notebook", "key", "source_sha256", "manifest_sha256", "files")


class ArchiveError(Exception):
    """An archive that cannot be written or is refused: one line, printed as ``icl-book: <message>``."""


@dataclass
class ImportResult:
    """What :func:`import_archive` did: entries moved in, already stored, and refused (one line each)."""

    archive_sha256: str = ""
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
    return {"host": platform.node(), "arch": platform.machine(), "cpu": cpu, "cores": os.cpu_count() or 0}


def utc_timestamp(seconds: float) -> str:
    """``seconds`` since the epoch as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC)."""
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _lock_sha(root: Path) -> str:
    lock = root / "requirements.lock"
    return sha256_file(lock) if lock.is_file() else _sha(b"")


def entry_origin(root: Path, key: str) -> dict[str, Any] | None:
    """The recorded origin of the imported store entry ``key``, or None (a local run, or a record that
    no longer describes the entry: its manifest's SHA-256 differs)."""
    try:
        origin = json.loads((store_dir(root) / ORIGINS / f"{key}.json").read_text())
        stamp = store_dir(root) / "entries" / key / STAMP
        if not isinstance(origin, dict) or origin.get("manifest_sha256") != sha256_file(stamp):
            return None
    except (OSError, ValueError):
        return None
    return origin


def origin_note(origin: dict[str, Any]) -> str:
    """One sentence for the report: where an imported run came from (commit, date, machine, archive hash)."""
    c = origin.get("computed", {})
    m = c.get("machine", {})
    commit = str(c.get("commit", "unknown"))[:12] + (" (with uncommitted changes)" if c.get("dirty") else "")
    where = ", ".join(str(x) for x in (m.get("host"), m.get("cpu"), f"{m.get('cores')} cores") if x)
    return (
        f"imported from archive `{str(origin.get('archive_sha256', ''))[:16]}`; computed at commit `{commit}` "
        f"on {c.get('date', 'an unknown date')} on {where or 'an unknown machine'}"
    )


# --- the keys of this checkout ------------------------------------------------------------------


def _presets(notebooks: list[Notebook]) -> list[str]:
    return sorted({QUICK, *(p for nb in notebooks for p in nb.presets)})


def _current_keys(root: Path, notebooks: list[Notebook], preset: str) -> dict[str, str]:
    """Notebook name -> the key ``icl-book run <name> --preset <preset>`` uses in this checkout (those defining it)."""
    scans = import_scans(root)
    keys = {}
    for nb in notebooks:
        if preset != QUICK and preset not in nb.presets:
            continue
        keys[nb.name] = cache_key(make_requests([nb], root / "book" / "generated", preset)[0], root, scans)
    return keys


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


def export_archive(root: Path, preset: str, path: Path, say=print) -> dict[str, Any]:
    """Write the verified store entries of ``preset`` under this checkout's keys into the archive ``path``.

    Notebooks without a verified entry are named and left out; none at all is an :class:`ArchiveError`.
    An unknown preset is a :class:`~iclbook.notebooks.NotebookError`. The file is written beside
    ``path`` and renamed into place. Returns the top-level manifest.
    """
    notebooks = discover_all(root)[0]
    if preset not in _presets(notebooks):
        raise NotebookError(f"unknown preset {preset!r}; the notebooks define: {', '.join(_presets(notebooks))}")
    keys = _current_keys(root, notebooks, preset)
    entries_dir = store_dir(root) / "entries"
    commit, dirty = _commit(root)
    machine = machine_record()
    entries, missing = [], []
    by_name = {nb.name: nb for nb in notebooks}
    for name, key in keys.items():
        folder = entries_dir / key
        problem = verify_folder(folder, key) if folder.is_dir() else "no stored run"
        if problem:
            missing.append(f"{name} ({problem})")
            continue
        stamp = folder / STAMP
        files = json.loads(stamp.read_text())["files"]
        origin = entry_origin(root, key)
        computed = (
            origin["computed"]
            if origin and isinstance(origin.get("computed"), dict)
            else {"commit": commit, "dirty": dirty, "date": utc_timestamp(stamp.stat().st_mtime), "machine": machine}
        )
        entry = {
            "notebook": name,
            "key": key,
            "source_sha256": sha256_file(by_name[name].path),
            "manifest_sha256": sha256_file(stamp),
            "files": dict(sorted(files.items())),
            "computed": computed,
        }
        entry["entry_sha256"] = _entry_hash(entry)
        entries.append(entry)
    if missing:
        say(
            f"icl-book: export: {len(missing)} notebook(s) of preset {preset!r} have no verified stored run and are left out:"
        )
        for m in missing:
            say(f"  {m}")
    if not entries:
        raise ArchiveError(
            f"export: no stored run of preset {preset!r} for this checkout; run `icl-book run --preset {preset}` first"
        )
    manifest = {
        "format": FORMAT,
        "preset": preset,
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


def _read_manifest(tar: tarfile.TarFile, where: str) -> dict[str, Any]:
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise ArchiveError(f"{where}: refused: not an icl-book archive (its first member is not {MANIFEST})")
    try:
        manifest = json.loads(tar.extractfile(first).read())  # type: ignore[union-attr]
    except ValueError:
        raise ArchiveError(f"{where}: refused: {MANIFEST} does not parse (truncated or tampered)") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"{where}: refused: {MANIFEST} is not of format {FORMAT!r}")
    entries = manifest.get("entries")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("files"), dict) and isinstance(e.get("key"), str) for e in entries
    ):
        raise ArchiveError(f"{where}: refused: {MANIFEST} has no valid entry list")
    if manifest.get("archive_sha256") != archive_hash(manifest):
        raise ArchiveError(f"{where}: refused: {MANIFEST} does not match its archive_sha256 (tampered)")
    for e in entries:
        if e.get("entry_sha256") != _entry_hash(e):
            raise ArchiveError(
                f"{where}: refused: entry {e.get('notebook')}: its listing does not match its entry_sha256"
            )
        if not all(c in "0123456789abcdef" for c in e["key"]) or len(e["key"]) != 64:
            raise ArchiveError(f"{where}: refused: entry {e.get('notebook')}: {e['key']!r} is not a store key")
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


def import_archive(root: Path, path: Path, say=print) -> ImportResult:
    """Verify the archive ``path`` and move its current entries into the store of ``root`` (see the module doc).

    Raises :class:`ArchiveError` (nothing imported) for an unreadable, truncated or tampered file;
    an entry whose key is not this checkout's is refused (listed in ``refused``), the others imported.
    """
    from filelock import FileLock

    where = f"import {path}"
    store = store_dir(root)
    (store / "tmp").mkdir(parents=True, exist_ok=True)
    (store / "entries").mkdir(parents=True, exist_ok=True)
    (store / "locks").mkdir(parents=True, exist_ok=True)
    (store / ORIGINS).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"import-{os.getpid()}-", dir=store / "tmp"))
    result = ImportResult()
    try:
        try:
            with tarfile.open(path, mode="r:*") as tar:
                manifest = _read_manifest(tar, where)
                _extract(tar, manifest, tmp, where)
        except FileNotFoundError:
            raise ArchiveError(f"{path}: {os_reason(FileNotFoundError(2, ''))}") from None
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ArchiveError(f"{where}: refused: not a readable archive, or truncated ({exc})") from None
        except OSError as exc:
            raise ArchiveError(f"{exc.filename or path}: {os_reason(exc)}") from None
        result.archive_sha256 = manifest["archive_sha256"]
        preset = manifest.get("preset")
        for e in manifest["entries"]:  # integrity of every entry before anything moves
            folder = tmp / e["key"]
            problem = verify_folder(folder, e["key"], e["files"]) or check_metrics(folder / "metrics.json")
            if not problem:
                stamp = json.loads((folder / STAMP).read_text())
                if stamp.get("notebook") != e["notebook"] or stamp.get("preset") != preset:
                    problem = "its manifest names another notebook or preset"
            if problem:
                raise ArchiveError(f"{where}: refused: entry {e['notebook']}: {problem}")
        notebooks = discover_all(root)[0]
        by_name = {nb.name: nb for nb in notebooks}
        try:
            keys = _current_keys(root, notebooks, str(preset)) if preset in _presets(notebooks) else {}
        except NotebookError as exc:
            raise ArchiveError(f"{where}: {exc}") from None
        for e in manifest["entries"]:
            name, key = e["notebook"], e["key"]
            if keys.get(name) != key:
                line = (
                    f"{where}: refused entry {name} (preset {preset}, key {key[:12]}): its key does not match this "
                    f"checkout ({_stale_reason(e, manifest, root, by_name)}; archive from commit {str(manifest.get('commit'))[:12]})"
                )
                say(f"icl-book: {line}")
                result.refused.append(line)
                continue
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
                origin = {
                    "archive_sha256": manifest["archive_sha256"],
                    "archive_commit": manifest.get("commit"),
                    "exported": manifest.get("exported"),
                    "exported_on": manifest.get("machine"),
                    "computed": e.get("computed", {}),
                    "manifest_sha256": e["manifest_sha256"],
                }
                fd, part = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=store / ORIGINS)
                with os.fdopen(fd, "w") as f:
                    f.write(json.dumps(origin, indent=1, sort_keys=True) + "\n")
                os.replace(part, store / ORIGINS / f"{key}.json")
                result.imported.append(name)
            finally:
                lock.release()
    finally:
        remove_tree(tmp)
    return result


# --- the CLI -------------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace, root: Path) -> int:
    path = Path(args.file).expanduser().resolve()
    try:
        manifest = export_archive(root, args.preset, path)
    except ArchiveError as exc:
        print(f"icl-book: {exc}", file=sys.stderr)
        return 1
    n = len(manifest["entries"])
    print(
        f"icl-book: exported {n} entr{'y' if n == 1 else 'ies'} of preset {args.preset!r} "
        f"(commit {manifest['commit'][:12]}{', dirty' if manifest['dirty'] else ''}) to {path}; "
        f"archive {manifest['archive_sha256'][:16]}, file {sha256_file(path)[:16]}, {path.stat().st_size / 1e6:.1f} MB"
    )
    return 0


def cmd_import(args: argparse.Namespace, root: Path) -> int:
    path = Path(args.file).expanduser().resolve()
    try:
        res = import_archive(root, path, say=lambda s: print(s, file=sys.stderr))
    except ArchiveError as exc:
        print(f"icl-book: {exc}", file=sys.stderr)
        return 1
    print(
        f"icl-book: archive {res.archive_sha256[:16]}: {len(res.imported)} imported, "
        f"{len(res.present)} already stored, {len(res.refused)} refused"
    )
    return 1 if res.refused else 0


def add_commands(sub: Any) -> None:
    """Add ``export`` and ``import`` to the ``icl-book`` subcommands ``sub``."""
    ex = sub.add_parser("export", help="write the store's runs of a preset for this checkout into one verified archive")
    ex.add_argument("file", metavar="FILE", help="the archive to write (.tar, or .tar.gz / .tgz)")
    ex.add_argument("--preset", default=QUICK, help=f"the preset whose runs to export (default: {QUICK}; also: paper)")
    ex.set_defaults(func=cmd_export)
    im = sub.add_parser("import", help="verify an archive and add its runs that match this checkout to the store")
    im.add_argument("file", metavar="FILE", help="an archive written by `icl-book export`")
    im.set_defaults(func=cmd_import)
