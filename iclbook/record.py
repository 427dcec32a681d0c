"""The committed record: verified paper-size runs, kept in git so that every clone's book can show them.

A paper build costs CPU-hours, and its runs live in the store of the machine that made them
(``.icl-store/``, gitignored). The record is the part of that work the repository keeps: for each
notebook, the run of one preset (``record/<preset>/<notebook>/``): its ``metrics.json``, its PNG
figures, the executed notebook with the image data replaced by the name of the PNG file that holds
the same figure (so no image is stored twice), and ``record.json``: the run's key, the commit, date,
machine, CPU and wall seconds it took, the SHA-256 of every file, and the digest of the quick-preset
metrics of the same checkout (what "carried forward" compares).

Trust: ``record/digest.json`` lists one SHA-256 per entry, over its files. :func:`verify_record`
recomputes every entry from its files and refuses, in one line naming the entry, any entry whose
files do not give the hash the digest file lists. An entry edited outside ``icl-book record``, even with
the hashes inside its ``record.json`` recomputed, is therefore refused unless ``digest.json`` was
edited with it, and a change to ``digest.json`` is a visible line in review: git history is the trust
anchor, not a hash the editor could recompute.

State of an entry at this checkout (:func:`entry_state`):

``current``
    its key is the key ``icl-book run NAME --preset P`` would use now;
``carried forward``
    its key differs, but the quick-preset metrics of this checkout are identical to the quick metrics
    recorded with it (the change did not move any number the notebook computes at the quick size); the
    files that changed since its commit are named;
``stale``
    anything else (including "no quick run of this checkout to compare with"); shown greyed out and not
    counted in the report's headline.

The command line: ``icl-book record status`` (one table), ``icl-book record verify`` (every file),
``icl-book record refresh [--preset P] [--only NAME ...] [-j N] [--scheduler ADDRESS] [--include-carried]``
(runs exactly the stale entries, or with ``--include-carried`` every entry that is not current, through
``icl-book run`` and writes them, each one atomically, with its digest).
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .archive import _git, machine_record
from .notebooks import QUICK, Notebook, NotebookError, discover_all
from .numbers import fmt_fixed
from .runs import RunRequest, make_requests
from .store import STAMP, cache_key, import_scans, sha256_file, store_dir, verify_folder

__all__ = [
    "CARRIED",
    "CURRENT",
    "DIGEST",
    "RECORD",
    "STALE",
    "EntryState",
    "RecordError",
    "TIMING_METRIC",
    "add_command",
    "carried_sweep_points",
    "frozen_settings",
    "entry_hash",
    "entry_state",
    "metrics_digest",
    "read_digest",
    "record_sources",
    "recorded_runs",
    "result_metrics",
    "recorded_sweep_metrics",
    "state_note",
    "record_entry",
    "record_states",
    "verify_record",
    "write_entry",
    "write_sweep_record",
]

RECORD = "record"
DIGEST = "digest.json"
ENTRY_MANIFEST = "record.json"
SWEEPS = "sweeps"
SWEEP_POINTS = "points.json"
FORMAT = "icl-book record 1"
CURRENT, CARRIED, STALE = "current", "carried forward", "stale"
#: Bounds on what the record accepts: one file, one entry's manifest, the digest file.
MAX_FILE_BYTES = 8 << 20
MAX_JSON_BYTES = 1 << 20
#: What a record entry keeps of a run: the metrics, the figures as PNG, the executed notebook.
KEPT_SUFFIXES = (".png", ".json", ".ipynb")


class RecordError(Exception):
    """A record file that cannot be used; the message is one line naming the entry and what to do."""


@dataclass(frozen=True)
class EntryState:
    """The state of one record entry at this checkout."""

    preset: str
    notebook: str
    state: str  # CURRENT, CARRIED or STALE
    reason: str
    commit: str
    date: str
    machine: str
    seconds: float
    changed: tuple[str, ...] = ()


# --- hashing --------------------------------------------------------------------------------------


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


#: Wall-clock timings a notebook writes beside its results (``runtime_s``, ``seconds_*``, ``train_seconds``,
#: ``t_fit``, ``time_total``, ``train_time_s``; not model times such as ``w5_time_exponent_fit``): they differ between any two runs, so "identical quick metrics" leaves them out.
TIMING_METRIC = re.compile(r"(^|_)(runtime|seconds|secs|wall)(_|$)|^runtime|^t_[a-z0-9_]+$|^time_total$|_time_s$")


def result_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` without its wall-clock timings (:data:`TIMING_METRIC`)."""
    return {k: v for k, v in metrics.items() if not TIMING_METRIC.search(k)}


def metrics_digest(metrics: dict[str, Any]) -> str:
    """SHA-256 of a run's results (timings left out) in canonical JSON: equal digests, identical results."""
    return hashlib.sha256(_canonical(result_metrics(metrics))).hexdigest()


def entry_hash(folder: Path) -> str:
    """SHA-256 over the sorted ``(name, SHA-256)`` of every file of a record entry, ``record.json`` included."""
    lines = [f"{p.name}\0{sha256_file(p)}\n" for p in sorted(folder.iterdir()) if p.is_file()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _entry_id(preset: str, notebook: str) -> str:
    return f"{preset}/{notebook}"


def _read_json(path: Path, what: str) -> Any:
    """JSON from ``path`` with a size bound; a :class:`RecordError` naming ``what`` otherwise."""
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise RecordError(f"{what}: {path.name} is larger than {MAX_JSON_BYTES} bytes")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{what}: {path.name} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"{what}: {path.name} is unreadable ({type(exc).__name__})") from None


def read_digest(root: Path) -> dict[str, str]:
    """Entry id (``preset/notebook``) -> SHA-256, from ``record/digest.json`` (empty if there is no record)."""
    path = root / RECORD / DIGEST
    if not path.exists():
        return {}
    data = _read_json(path, f"{RECORD}/{DIGEST}")
    entries = data.get("entries") if isinstance(data, dict) else None
    if data.get("format") != FORMAT or not isinstance(entries, dict):
        raise RecordError(f"{RECORD}/{DIGEST}: not a record digest of format {FORMAT!r}; restore it with git")
    bad = [k for k, v in entries.items() if not (isinstance(v, str) and len(v) == 64)]
    if bad:
        raise RecordError(f"{RECORD}/{DIGEST}: entry {bad[0]} has no SHA-256; restore the file with git")
    return dict(entries)


def _write_digest(root: Path, entries: dict[str, str]) -> None:
    path = root / RECORD / DIGEST
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps({"format": FORMAT, "entries": dict(sorted(entries.items()))}, indent=2) + "\n")
    os.replace(tmp, path)


# --- writing an entry -----------------------------------------------------------------------------


def _strip_images(notebook: dict[str, Any], figures: dict[str, str]) -> dict[str, Any]:
    """The executed notebook with every PNG output that equals a kept figure replaced by that file's name.

    ``figures`` maps the SHA-256 of a PNG's bytes to its file name. An image output with no such file
    keeps its data (it is the only copy).
    """
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []) or []:
            data = out.get("data") or {}
            png = data.get("image/png")
            if not isinstance(png, str):
                continue
            try:
                digest = hashlib.sha256(base64.b64decode(png)).hexdigest()
            except ValueError:
                continue
            if digest in figures:
                data.pop("image/png")
                data.setdefault("text/plain", f"[figure: {figures[digest]}]")
                data["text/x-icl-record-figure"] = figures[digest]
    return notebook


def _stored_at(stamp: Path) -> str:
    """When the run was stored (its manifest's modification time), as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return _dt.datetime.fromtimestamp(stamp.stat().st_mtime, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_entry(
    root: Path,
    preset: str,
    notebook: str,
    run_folder: Path,
    *,
    quick_metrics: dict[str, Any] | None,
    commit: str | None = None,
) -> str:
    """Copy a verified run (a store entry or an output folder) into ``record/<preset>/<notebook>/``.

    ``commit`` is the commit the run was made from (default: ``HEAD`` now); ``quick_metrics`` the metrics of
    the quick run of the same code at one thread per notebook, whose digest decides whether the entry is
    carried forward at a later checkout.

    The entry is assembled in a temporary folder beside the record and renamed into place, and the
    digest file is rewritten after it; an interruption leaves the previous entry and digest as they were
    (or, between the two renames, an entry the digest does not list, which :func:`verify_record` names).
    Returns the entry's hash.
    """
    stamp = _read_json(run_folder / STAMP, f"run {run_folder}")
    problem = verify_folder(run_folder, str(stamp.get("key")))
    if problem:
        raise RecordError(f"{_entry_id(preset, notebook)}: the run to record is damaged ({problem})")
    if stamp.get("preset") != preset or stamp.get("notebook") != notebook:
        raise RecordError(
            f"{_entry_id(preset, notebook)}: the run is of {stamp.get('notebook')} at {stamp.get('preset')}"
        )
    folder = root / RECORD / preset
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{notebook}.", dir=folder))
    try:
        figures: dict[str, str] = {}
        for rel in sorted(stamp["files"]):
            src = run_folder / rel
            if "/" in rel or src.suffix not in KEPT_SUFFIXES:
                continue  # PDFs are regenerated from the same code; the record keeps PNGs
            if src.stat().st_size > MAX_FILE_BYTES:
                raise RecordError(f"{_entry_id(preset, notebook)}: {rel} is larger than {MAX_FILE_BYTES} bytes")
            if src.suffix == ".png":
                figures[sha256_file(src)] = rel
            if src.suffix != ".ipynb":
                shutil.copyfile(src, tmp / rel)
        executed = run_folder / f"{notebook}.ipynb"
        nb = _strip_images(json.loads(executed.read_text(encoding="utf-8")), figures)
        (tmp / executed.name).write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n")
        manifest = {
            "format": FORMAT,
            "notebook": notebook,
            "preset": preset,
            "key": stamp["key"],
            "params": stamp.get("params", {}),
            "commit": commit or _git(root, "rev-parse", "HEAD") or "unknown",
            "date": _stored_at(run_folder / STAMP),
            "machine": machine_record(),
            "seconds": stamp.get("seconds"),
            "cpu_seconds": stamp.get("cpu"),
            "quick_metrics_sha256": metrics_digest(quick_metrics) if quick_metrics is not None else None,
            "files": {p.name: sha256_file(p) for p in sorted(tmp.iterdir())},
        }
        (tmp / ENTRY_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o755)
        final = folder / notebook
        old = folder / f".{notebook}.old"
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    digest = read_digest(root)
    digest[_entry_id(preset, notebook)] = entry_hash(final)
    _write_digest(root, digest)
    return digest[_entry_id(preset, notebook)]


def write_sweep_record(
    root: Path, notebook: str, points: list[tuple[tuple[tuple[str, Any], ...], str, dict[str, Any]]]
) -> str:
    """Write the metrics of a notebook's sweep points, ``(changed settings, key, metrics)`` each, into
    ``record/sweeps/<notebook>/points.json`` (atomically) and its hash into the digest file; return the hash.

    A point is used by the report only while its key is the key of that point at the checkout (the store
    decides nothing here: a recorded point stands for a run the reader's store does not hold).
    """
    folder = root / RECORD / SWEEPS / notebook
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "format": FORMAT,
        "notebook": notebook,
        "commit": _git(root, "rev-parse", "HEAD") or "unknown",
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_record(),
        "points": [{"changed": [list(c) for c in changed], "key": key, "metrics": m} for changed, key, m in points],
    }
    tmp = folder / ".points.json.part"
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, folder / SWEEP_POINTS)
    digest = read_digest(root)
    digest[_entry_id(SWEEPS, notebook)] = entry_hash(folder)
    _write_digest(root, digest)
    return digest[_entry_id(SWEEPS, notebook)]


def recorded_sweep_metrics(root: Path) -> dict[str, dict[str, Any]]:
    """Key -> metrics of every recorded sweep point whose entry verifies (refused entries are left out;
    ``icl-book record verify`` names them)."""
    try:
        digest = read_digest(root)
    except RecordError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for eid in digest:
        preset, notebook = eid.split("/", 1)
        if preset != SWEEPS:
            continue
        try:
            data = _verified_sweep(root, notebook, digest)
        except RecordError:
            continue
        out.update({p["key"]: p["metrics"] for p in data["points"]})
    return out


def frozen_settings(changed: Any) -> tuple[tuple[str, Any], ...]:
    """Changed settings ``[(name, value), ...]`` as a hashable tuple (list values as tuples)."""
    return tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in changed)


def carried_sweep_points(root: Path) -> dict[str, dict[tuple[tuple[str, Any], ...], dict[str, Any]]]:
    """Notebook -> (changed settings -> metrics) of the recorded sweep points of every notebook whose
    paper-preset entry is current or carried forward at this checkout (its quick metrics are identical to
    those recorded with it: the change since did not move a number the notebook computes at the preset).
    These stand for points whose key has changed, under the same rule as the notebook's own entry."""
    try:
        digest = read_digest(root)
        states, _ = record_states(root)
    except RecordError:
        return {}
    fresh = {s.notebook for s in states if s.state in (CURRENT, CARRIED)}
    out: dict[str, dict[tuple[tuple[str, Any], ...], dict[str, Any]]] = {}
    for eid in digest:
        preset, notebook = eid.split("/", 1)
        if preset != SWEEPS or notebook not in fresh:
            continue
        try:
            data = _verified_sweep(root, notebook, digest)
        except RecordError:
            continue
        out[notebook] = {frozen_settings(p["changed"]): p["metrics"] for p in data["points"]}
    return out


def _verified_sweep(root: Path, notebook: str, digest: dict[str, str]) -> dict[str, Any]:
    eid = _entry_id(SWEEPS, notebook)
    folder = root / RECORD / SWEEPS / notebook
    if eid not in digest:
        raise RecordError(
            f"{eid}: not listed in {RECORD}/{DIGEST} (written outside icl-book record?); remove it or refresh it"
        )
    if not (folder / SWEEP_POINTS).is_file():
        raise RecordError(f"{eid}: listed in {RECORD}/{DIGEST} but missing; restore it with git or refresh it")
    if entry_hash(folder) != digest[eid]:
        raise RecordError(
            f"{eid}: its files do not give the hash in {RECORD}/{DIGEST} (edited outside icl-book record); "
            "restore it with git or refresh it"
        )
    data = _read_json(folder / SWEEP_POINTS, eid)
    points = data.get("points") if isinstance(data, dict) else None
    if not isinstance(points, list) or not all(
        isinstance(p, dict) and isinstance(p.get("key"), str) and isinstance(p.get("metrics"), dict) for p in points
    ):
        raise RecordError(f"{eid}: {SWEEP_POINTS} is not a list of points with key and metrics; restore it with git")
    return data


# --- reading and verifying ------------------------------------------------------------------------


def record_entry(root: Path, preset: str, notebook: str, digest: dict[str, str] | None = None) -> dict[str, Any]:
    """The verified manifest of one entry; a :class:`RecordError` naming the entry if any check fails."""
    eid = _entry_id(preset, notebook)
    folder = root / RECORD / preset / notebook
    digest = read_digest(root) if digest is None else digest
    if eid not in digest:
        raise RecordError(
            f"{eid}: not listed in {RECORD}/{DIGEST} (written outside icl-book record?); remove it or refresh it"
        )
    if not folder.is_dir():
        raise RecordError(f"{eid}: listed in {RECORD}/{DIGEST} but missing; restore it with git or refresh it")
    manifest = _read_json(folder / ENTRY_MANIFEST, eid)
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), dict)
    ):
        raise RecordError(f"{eid}: {ENTRY_MANIFEST} is not a record manifest; restore it with git")
    present = {p.name for p in folder.iterdir() if p.is_file()} - {ENTRY_MANIFEST}
    if present != set(manifest["files"]):
        odd = sorted(present ^ set(manifest["files"]))
        raise RecordError(f"{eid}: {odd[0]} is {'not listed in' if odd[0] in present else 'missing from'} the entry")
    for name, sha in manifest["files"].items():
        if sha256_file(folder / name) != sha:
            raise RecordError(f"{eid}: {name} was changed; restore it with git or refresh the entry")
    if entry_hash(folder) != digest[eid]:
        raise RecordError(
            f"{eid}: its files do not give the hash in {RECORD}/{DIGEST} (edited outside icl-book record); "
            "restore it with git or refresh it"
        )
    return manifest


def verify_record(root: Path) -> list[str]:
    """One line per problem of the whole record (empty: every file verified)."""
    try:
        digest = read_digest(root)
    except RecordError as exc:
        return [str(exc)]
    problems = []
    base = root / RECORD
    seen = set()
    if base.is_dir():
        for preset_dir in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for entry in sorted(p for p in preset_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
                seen.add(_entry_id(preset_dir.name, entry.name))
    known, _ = discover_all(root)
    names = {nb.name for nb in known}
    for eid in sorted(seen | set(digest)):
        preset, notebook = eid.split("/", 1)
        try:
            if preset == SWEEPS:
                _verified_sweep(root, notebook, digest)
            else:
                record_entry(root, preset, notebook, digest)
        except RecordError as exc:
            problems.append(str(exc))
            continue
        if notebook not in names:
            problems.append(
                f"{eid}: notebooks/{notebook}.py no longer exists; remove the entry (git rm -r {RECORD}/{eid})"
            )
    return problems


# --- state at this checkout -----------------------------------------------------------------------


def _current_key(root: Path, nb: Notebook, preset: str) -> str:
    return cache_key(make_requests([nb], root / "book" / "generated", preset)[0], root, import_scans(root))


def _quick_metrics(root: Path, nb: Notebook) -> dict[str, Any] | None:
    """The quick-preset metrics of this checkout: from the store entry of the current quick key, if any."""
    key = _current_key(root, nb, QUICK)
    for folder in (store_dir(root) / "entries" / key, root / "book" / "generated" / nb.name):
        if (folder / STAMP).is_file() and verify_folder(folder, key) == "":
            try:
                return json.loads((folder / "metrics.json").read_text())
            except (OSError, ValueError):
                return None
    return None


def _dependency_paths(nb: Notebook) -> list[str]:
    return [f"notebooks/{nb.path.name}", "iclcore", "requirements.lock"]


def entry_state(root: Path, nb: Notebook, manifest: dict[str, Any]) -> EntryState:
    """Whether a verified entry is current, carried forward or stale at this checkout (see the module doc)."""
    preset = manifest["preset"]
    m = manifest.get("machine") or {}
    common = {
        "preset": preset,
        "notebook": nb.name,
        "commit": str(manifest.get("commit", "unknown")),
        "date": str(manifest.get("date", "")),
        "machine": f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores",
        "seconds": float(manifest.get("seconds") or 0.0),
    }
    try:
        key = _current_key(root, nb, preset)
    except NotebookError as exc:
        return EntryState(state=STALE, reason=f"the notebook no longer has this preset ({exc})", **common)
    if manifest.get("key") == key:
        return EntryState(state=CURRENT, reason="its key is this checkout's", **common)
    changed = tuple(
        line
        for line in _git(root, "diff", "--name-only", common["commit"], "--", *_dependency_paths(nb)).splitlines()
        if line
    )
    quick = _quick_metrics(root, nb)
    recorded = manifest.get("quick_metrics_sha256")
    if quick is None:
        return EntryState(
            state=STALE,
            reason="no quick run of this checkout to compare with (run icl-book run NAME)",
            changed=changed,
            **common,
        )
    if recorded and metrics_digest(quick) == recorded:
        return EntryState(
            state=CARRIED, reason="quick metrics identical to those recorded with it", changed=changed, **common
        )
    return EntryState(state=STALE, reason="its key differs and the quick metrics moved", changed=changed, **common)


def record_states(root: Path) -> tuple[list[EntryState], list[str]]:
    """The state of every verified entry, and one line per entry that failed verification."""
    notebooks, _ = discover_all(root)
    by_name = {nb.name: nb for nb in notebooks}
    states, problems = [], []
    try:
        digest = read_digest(root)
    except RecordError as exc:
        return [], [str(exc)]
    for eid in sorted(digest):
        preset, name = eid.split("/", 1)
        if preset == SWEEPS:
            continue  # sweep points have no state of their own: each is used while its key is current
        try:
            manifest = record_entry(root, preset, name, digest)
        except RecordError as exc:
            problems.append(str(exc))
            continue
        if name not in by_name:
            problems.append(f"{eid}: notebooks/{name}.py no longer exists; remove the entry (git rm -r {RECORD}/{eid})")
            continue
        states.append(entry_state(root, by_name[name], manifest))
    return states, problems


def state_note(state: EntryState) -> str:
    """One sentence for the report and the chapter banners: where a recorded run came from and its state."""
    text = (
        f"from the committed record (`{RECORD}/{state.preset}/{state.notebook}`), computed at commit "
        f"`{state.commit[:12]}` on {state.date} on {state.machine} in {fmt_fixed(state.seconds, 0)} s: {state.state}"
    )
    if state.state != CURRENT:
        text += f" ({state.reason}"
        text += f"; changed since: {', '.join(f'`{c}`' for c in state.changed[:6])}" if state.changed else ""
        text += f" and {len(state.changed) - 6} more" if len(state.changed) > 6 else ""
        text += ")"
    return text


def recorded_runs(root: Path, preset: str, skip: set[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Metrics and a note per notebook for the record's ``preset`` entries that are current or carried
    forward (stale ones are left out: the report does not count them), except the notebooks in ``skip``."""
    metrics: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    states, _ = record_states(root)
    for s in states:
        if s.preset != preset or s.notebook in skip or s.state == STALE:
            continue
        try:
            m = json.loads((root / RECORD / preset / s.notebook / "metrics.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict):
            metrics[s.notebook], notes[s.notebook] = m, state_note(s)
    return metrics, notes


def record_sources(root: Path, stored: dict[str, Any], recorded: dict[str, Any], preset: str = "paper") -> str:
    """One sentence for the report's headline: where its ``preset`` runs come from (this machine's store, the
    record's current and carried-forward entries) and how many record entries are stale and left out."""
    states = [s for s in record_states(root)[0] if s.preset == preset]
    used = [s for s in states if s.notebook in recorded]
    n_current = sum(s.state == CURRENT for s in used)
    n_carried = sum(s.state == CARRIED for s in used)
    n_stale = sum(s.state == STALE for s in states)
    return (
        f"Runs: {len(stored)} from this machine's store, {n_current} current and {n_carried} carried forward "
        f"from the committed record; {n_stale} stale record entr{'y' if n_stale == 1 else 'ies'} not counted."
    )


# --- command line ---------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace, root: Path) -> int:
    states, problems = record_states(root)
    notebooks, _ = discover_all(root)
    have = {(s.preset, s.notebook) for s in states}
    print(f"{'entry':<28} {'state':<16} {'commit':<12} {'date':<21} {'seconds':>8}  reason")
    for s in states:
        print(
            f"{s.preset + '/' + s.notebook:<28} {s.state:<16} {s.commit[:12]:<12} {s.date:<21} {s.seconds:>8.0f}  {s.reason}"
        )
    for nb in notebooks:
        if args.preset in nb.presets and (args.preset, nb.name) not in have:
            print(
                f"{args.preset + '/' + nb.name:<28} {'missing':<16} {'':<12} {'':<21} {'':>8}  no entry in the record"
            )
    for line in problems:
        print(f"icl-book record: {line}", file=sys.stderr)
    counts = {k: sum(s.state == k for s in states) for k in (CURRENT, CARRIED, STALE)}
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + f", {len(problems)} refused")
    return 1 if problems else 0


def cmd_verify(args: argparse.Namespace, root: Path) -> int:
    problems = verify_record(root)
    for line in problems:
        print(f"icl-book record: {line}", file=sys.stderr)
    n = len(read_digest(root)) if not problems else 0
    if not problems:
        print(f"icl-book record: {n} entries verified")
    return 1 if problems else 0


def _refresh_sweeps(args: argparse.Namespace, root: Path) -> int:
    """Run every declared sweep (cached points are hits) and record the metrics of each point that ran."""
    from .sweep import load_plans, stored_points

    base = [sys.executable, "-m", "iclbook.cli", "--root", str(root), "sweep"]
    names = args.only or ["--all"]
    extra = ["-j", str(args.jobs)] + (["--scheduler", args.scheduler] if args.scheduler else [])
    proc = subprocess.run([*base, *names, *extra], stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        return proc.returncode
    notebooks, _ = discover_all(root)
    scans = import_scans(root)
    for name, plan in load_plans(root, notebooks).items():
        if args.only and name not in args.only:
            continue
        points = []
        for point, metrics in stored_points(root, plan, scans):
            if isinstance(metrics, dict):
                key = cache_key(RunRequest(plan.notebook, point.params, QUICK, root), root, scans)
                points.append((point.changed, key, metrics))
        h = write_sweep_record(root, name, points)
        print(f"icl-book record: wrote {SWEEPS}/{name}: {len(points)} point(s) ({h[:12]})")
    return 0


def cmd_refresh(args: argparse.Namespace, root: Path) -> int:
    if args.sweeps:
        return _refresh_sweeps(args, root)
    notebooks, _ = discover_all(root)
    by_name = {nb.name: nb for nb in notebooks}
    unknown = [n for n in args.only if n not in by_name]
    if unknown:
        print(f"icl-book record: unknown notebook {unknown[0]!r}", file=sys.stderr)
        return 2
    states, _ = record_states(root)
    kept = (CURRENT,) if args.include_carried else (CURRENT, CARRIED)
    fresh = {s.notebook for s in states if s.preset == args.preset and s.state in kept}
    wanted = [
        nb.name
        for nb in notebooks
        if args.preset in nb.presets and (not args.only or nb.name in args.only) and nb.name not in fresh
    ]
    if not wanted:
        print(f"icl-book record: nothing to refresh at the {args.preset} preset")
        return 0
    print(f"icl-book record: refreshing {len(wanted)} entr{'y' if len(wanted) == 1 else 'ies'}: {', '.join(wanted)}")
    commit = _git(root, "rev-parse", "HEAD") or "unknown"  # the code the runs are made from
    base = [sys.executable, "-m", "iclbook.cli", "--root", str(root), "run"]
    extra = ["-j", str(args.jobs)] + (["--scheduler", args.scheduler] if args.scheduler else [])
    # the quick run whose metrics are recorded with the entry runs one thread per notebook, as `make test` and
    # `make book` run them (a notebook's last bits depend on its thread count): else a later checkout's quick
    # metrics could never equal them, and the entry would not be carried forward. It runs here, never on the
    # --scheduler, as `make test` does: a task's numpy sums can depend on where its arrays sit in memory, and
    # on Dask pde_galerkin's quick metrics differ from a local run's in the 15th digit (measured)
    quick = subprocess.run(
        [*base, *wanted, "--preset", QUICK, "-j", str(args.jobs), "--threads", "1", "--force"],
        stdin=subprocess.DEVNULL,
    )
    if quick.returncode != 0:  # a failed or interrupted quick pass writes nothing (it is the short one)
        return quick.returncode
    paper = subprocess.run([*base, *wanted, "--preset", args.preset, *extra], stdin=subprocess.DEVNULL)
    if paper.returncode in (130, 143):
        return paper.returncode
    # every notebook whose two runs are in the store is written, even if another failed: a refresh of
    # hours is not lost to one failing notebook (the failures are named, and the exit code says so)
    missing = []
    for name in wanted:
        nb = by_name[name]
        entry = store_dir(root) / "entries" / _current_key(root, nb, args.preset)
        quick_metrics = _quick_metrics(root, nb)
        if not (entry / STAMP).is_file() or quick_metrics is None:
            missing.append(name)
            continue
        h = write_entry(root, args.preset, name, entry, quick_metrics=quick_metrics, commit=commit)
        print(f"icl-book record: wrote {args.preset}/{name} ({h[:12]})")
    if missing:
        print(
            f"icl-book record: not written (a run failed, see above): {', '.join(missing)}; "
            "run the same command again to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def _one_line(cmd: Any) -> Any:
    """``cmd`` with a :class:`RecordError` turned into one line on stderr and exit code 2."""

    def wrapped(args: argparse.Namespace, root: Path) -> int:
        try:
            return cmd(args, root)
        except RecordError as exc:
            print(f"icl-book record: {exc}", file=sys.stderr)
            return 2

    return wrapped


def add_command(sub: Any) -> None:
    """Register ``icl-book record status|verify|refresh``."""
    rec = sub.add_parser("record", help="the committed record of paper-size runs (status, verify, refresh)")
    rsub = rec.add_subparsers(dest="record_command", required=True)
    st = rsub.add_parser("status", help="every record entry's state at this checkout, in one table")
    st.add_argument("--preset", default="paper")
    st.set_defaults(func=_one_line(cmd_status))
    rsub.add_parser("verify", help="check every file of the record against record/digest.json").set_defaults(
        func=_one_line(cmd_verify)
    )
    rf = rsub.add_parser("refresh", help="run exactly the stale or missing entries and write them into the record")
    rf.add_argument("--preset", default="paper")
    rf.add_argument("--only", nargs="+", default=[], metavar="NAME")
    rf.add_argument("-j", "--jobs", type=int, default=1)
    rf.add_argument("--scheduler", default=None, metavar="ADDRESS", help="execute on Dask (as for `run`)")
    rf.add_argument("--sweeps", action="store_true", help="record the metrics of every sweep point instead")
    rf.add_argument(
        "--include-carried",
        action="store_true",
        help="also re-run the entries that are carried forward, so that the whole record becomes current",
    )
    rf.set_defaults(func=_one_line(cmd_refresh))
