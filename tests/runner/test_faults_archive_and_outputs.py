"""Fault table, archives and output paths: what an import proves and how an imported run is marked; which
runs an export carries; what ``export`` and ``run --out`` refuse to overwrite.

Store entries are written without a kernel (:func:`runner_project.store_run`, under the key the runner
uses), so only the rows marked ``slow`` start one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from runner_project import call, make_project, one_line, rewrite_archive, store_run, store_snapshot

from iclbook import archive
from iclbook.archive import MANIFEST, _entry_hash, archive_hash, entry_origin, origin_note
from iclbook.report import render_report, report_rows
from iclbook.store import STAMP, store_dir

pytestmark = pytest.mark.fault

SWEEPS_TEXT = 'sized:\n  settings:\n    K:\n      values: [4, 8, 16]\n      why: "not stated."\n      paper: "000"\n'


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A git checkout of the throw-away project with quick runs of `second` and `sized` in its store."""
    root = make_project(tmp_path / "src", ["second", "sized", "types"])
    (root / "notebooks" / "sweeps.yml").write_text(SWEEPS_TEXT)
    (root / ".gitignore").write_text(".icl-store/\nbook/generated/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    store_run(root, "second")
    store_run(root, "sized")
    return root


def clone(src: Path, name: str = "dst") -> Path:
    dst = src.parent / name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".icl-store"))
    return dst


def export(src: Path, *args: str, name: str = "runs.tar") -> Path:
    path = src.parent / name
    rc, _, err = call(src, "export", str(path), *args)
    assert rc == 0, err
    return path


def edited_and_rehashed(path: Path, out: Path, value: int) -> None:
    """An archive whose `second` metrics were edited, with every hash the writer computes recomputed."""
    with tarfile.open(path) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())
    entry = next(e for e in manifest["entries"] if e["notebook"] == "second")
    metrics = json.dumps({"value": value}).encode()
    entry["files"]["metrics.json"] = hashlib.sha256(metrics).hexdigest()
    member = f"entries/{entry['key']}/"
    with tarfile.open(path) as tar:
        stamp = json.loads(tar.extractfile(member + STAMP).read())
    stamp["files"]["metrics.json"] = entry["files"]["metrics.json"]
    stamp_bytes = json.dumps(stamp).encode()
    entry["manifest_sha256"] = hashlib.sha256(stamp_bytes).hexdigest()
    entry["entry_sha256"] = _entry_hash(entry)
    manifest["archive_sha256"] = archive_hash(manifest)

    def change(name: str, data: bytes) -> bytes:
        return {
            MANIFEST: json.dumps(manifest).encode(),
            member + "metrics.json": metrics,
            member + STAMP: stamp_bytes,
        }.get(name, data)

    rewrite_archive(path, out, change)


# --- what an import proves, and how an imported run is marked --------------------------------------------------


def test_an_edited_and_rehashed_archive_is_imported_only_as_marked_foreign(src: Path) -> None:
    """Hashes written by the archive's writer cannot reveal an edit made before re-hashing: the entry is
    accepted (its key is this checkout's), and carries its origin so that it is never shown as computed here."""
    edited = src.parent / "edited.tar"
    edited_and_rehashed(export(src), edited, 999)
    dst = clone(src)
    rc, out, err = call(dst, "import", str(edited))
    assert rc == 0 and err == ""
    assert "2 imported" in out and "marked with their origin, never as computed here" in out
    assert f"file SHA-256 {hashlib.sha256(edited.read_bytes()).hexdigest()}, not checked" in out
    for entry in (store_dir(dst) / "entries").iterdir():
        origin = json.loads((entry / STAMP).read_text())["origin"]
        assert origin["archive_file"] == "edited.tar" and origin["sha256_checked"] is False
        assert origin["file_sha256"] == hashlib.sha256(edited.read_bytes()).hexdigest()


def test_run_says_when_it_serves_an_imported_entry(src: Path) -> None:
    dst = clone(src)
    call(dst, "import", str(export(src)))
    rc, out, err = call(dst, "run", "second")
    assert rc == 0 and "0 executed, 1 cached" in out
    assert "icl-book: second: served from the store: imported from archive " in err and "not computed here" in err
    stamp = json.loads((dst / "book" / "generated" / "second" / STAMP).read_text())
    assert stamp["origin"]["archive_file"] == "runs.tar"  # the output folder carries the origin too


def test_status_names_an_imported_entry(src: Path) -> None:
    dst = clone(src)
    call(dst, "import", str(export(src, "second")))
    rc, out, _ = call(dst, "status", "second", "sized")
    lines = out.splitlines()
    assert rc == 0 and re.match(r"^second +stored \(imported from archive [0-9a-f]{16}\)", lines[0]), lines[0]
    assert re.match(r"^sized +would execute \(no stored run\)", lines[1]), lines[1]


def test_a_local_run_is_served_without_an_import_note(src: Path) -> None:
    rc, out, err = call(src, "run", "second")
    assert rc == 0 and "1 cached" in out and "imported" not in err


def test_the_report_names_the_origin_of_an_imported_quick_run(src: Path) -> None:
    dst = clone(src)
    (dst / "book" / "reported").mkdir(parents=True)
    (dst / "book" / "reported" / "second.yml").write_text(
        "- notebook: second\n  metric: value\n  claim: 'v'\n  reported: 6\n  seed: '000'\n  section: '§1'\n"
        "  kind: abs\n  tolerance: 0.5\n  basis: predicted\n"
    )
    (src / "book" / "reported").mkdir(parents=True)
    shutil.copy(dst / "book" / "reported" / "second.yml", src / "book" / "reported")
    store_run(src, "second")  # the ledger is part of the key: a run under the new key
    call(dst, "import", str(export(src, "second")))
    assert call(dst, "run", "second")[0] == 0
    generated = dst / "book" / "generated"
    built = archive.built_origins(generated, ["second"])
    text = render_report(report_rows(dst, generated), built=built)
    assert "The first status and values come from a run imported from archive `runs.tar`" in text
    assert "not computed here" in text


def test_import_with_the_right_sha256_records_the_check(src: Path) -> None:
    path, dst = export(src), clone(src)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    rc, out, _ = call(dst, "import", str(path), "--sha256", digest.upper())
    assert rc == 0 and "checked against --sha256" in out
    key = next((store_dir(dst) / "entries").iterdir()).name
    origin = entry_origin(dst, key)
    assert origin is not None and origin["sha256_checked"] is True
    assert "its file digest checked on import" in origin_note(origin)


def test_import_with_another_sha256_is_refused_whole(src: Path) -> None:
    path, dst = export(src), clone(src)
    rc, out, err = call(dst, "import", str(path), "--sha256", "0" * 64)
    assert rc == 1 and out == ""
    one_line(
        err, r"refused: the file's SHA-256 is [0-9a-f]{16}\.\.\., not the expected 0000000000000000\.\.\. \(--sha256\)"
    )
    assert not any((store_dir(dst) / "entries").iterdir())


@pytest.mark.parametrize("digest", ["abc", "g" * 64, ""], ids=["short", "not-hex", "empty"])
def test_a_malformed_sha256_option_is_one_line(src: Path, digest: str) -> None:
    rc, _, err = call(clone(src), "import", str(export(src)), "--sha256", digest)
    assert rc == 1
    one_line(err, r"^icl-book: --sha256 .*: expected 64 hexadecimal digits")


def test_rehashed_parameters_that_do_not_give_the_key_are_refused(src: Path) -> None:
    """An entry whose recorded parameters were edited (and every hash recomputed) fails the key check."""
    path = export(src, "second")
    with tarfile.open(path) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())
    entry = manifest["entries"][0]
    member = f"entries/{entry['key']}/{STAMP}"
    with tarfile.open(path) as tar:
        stamp = json.loads(tar.extractfile(member).read())
    stamp["param_literals"]["k"] = "5"
    stamp_bytes = json.dumps(stamp).encode()
    entry["manifest_sha256"] = hashlib.sha256(stamp_bytes).hexdigest()
    entry["entry_sha256"] = _entry_hash(entry)
    manifest["archive_sha256"] = archive_hash(manifest)
    bad = src.parent / "bad.tar"
    rewrite_archive(
        path, bad, lambda n, d: json.dumps(manifest).encode() if n == MANIFEST else stamp_bytes if n == member else d
    )
    dst = clone(src)
    rc, out, err = call(dst, "import", str(bad))
    assert rc == 1 and "0 imported" in out and "1 refused" in out
    one_line(err, r"refused entry second \(preset quick, key [0-9a-f]{12}\): its key does not match this checkout")
    assert not any((store_dir(dst) / "entries").iterdir())


@pytest.mark.slow
def test_a_forced_local_run_replaces_the_imported_origin(src: Path) -> None:
    dst = clone(src)
    call(dst, "import", str(export(src, "second")))
    key = next((store_dir(dst) / "entries").iterdir()).name
    assert entry_origin(dst, key) is not None
    rc, out, err = call(dst, "run", "second", "--force")
    assert rc == 0 and "1 executed" in out, err
    assert entry_origin(dst, key) is None and "imported" not in err


# --- which runs an export carries --------------------------------------------------------------------------------


def test_a_run_with_p_values_exports_and_imports(src: Path) -> None:
    key = store_run(src, "sized", overrides={"K": "12", "eta": "0.25"})
    path = export(src, "sized", "-p", "K", "12", "-p", "eta", "0.25")
    dst = clone(src)
    rc, out, _ = call(dst, "import", str(path))
    assert rc == 0 and "1 imported" in out
    assert (store_dir(dst) / "entries" / key).is_dir()
    rc, out, _ = call(dst, "status", "sized", "-p", "K", "12", "-p", "eta", "0.25")
    assert rc == 0 and " stored" in out


def test_exact_literals_nan_inf_big_ints_and_strings_survive_the_round_trip(src: Path) -> None:
    values = {"g": "nan", "h": "inf", "big": "12345678901234567891", "s": "it's a b", "f": "1e-05"}
    key = store_run(src, "types", overrides=values)
    args = [a for k, v in values.items() for a in ("-p", k, v)]
    dst = clone(src)
    rc, out, err = call(dst, "import", str(export(src, "types", *args)))
    assert rc == 0 and "1 imported" in out, err
    assert (store_dir(dst) / "entries" / key).is_dir()


def test_sweep_points_export_and_import(src: Path) -> None:
    keys = [store_run(src, "sized", overrides={"K": k}) for k in ("4", "16")]  # with the preset K=8: 3 points
    path = export(src, "--sweep")
    with tarfile.open(path) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())
    assert len(manifest["entries"]) == 3 and manifest["preset"] == "quick"
    dst = clone(src)
    rc, out, _ = call(dst, "import", str(path))
    assert rc == 0 and "3 imported" in out
    assert all((store_dir(dst) / "entries" / k).is_dir() for k in keys)


def test_a_named_notebook_exports_only_its_sweep(src: Path) -> None:
    (src / "notebooks" / "sweeps.yml").write_text(
        SWEEPS_TEXT + 'types:\n  settings:\n    i:\n      values: [1, 2, 5]\n      why: "x"\n      paper: "001"\n'
    )
    store_run(src, "sized", overrides={"K": "4"})
    store_run(src, "types", overrides={"i": "5"})
    path = export(src, "sized", "--sweep")
    with tarfile.open(path) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())
    assert {e["notebook"] for e in manifest["entries"]} == {"sized"} and len(manifest["entries"]) == 2


def test_a_partial_sweep_export_names_what_it_leaves_out_in_one_line(src: Path) -> None:
    store_run(src, "sized", overrides={"K": "4"})
    rc, out, err = call(src, "export", str(src.parent / "s.tar"), "--sweep")
    assert rc == 0 and "exported 2 entries" in out
    one_line(err, r"^icl-book: export: 1 of the 3 sweep points have no verified stored run and are left out: sized$")


def test_export_sweep_with_p_values_is_refused(src: Path) -> None:
    rc, _, err = call(src, "export", str(src.parent / "s.tar"), "--sweep", "-p", "K", "4")
    assert rc == 2
    one_line(err, r"export --sweep: the sweep points are quick runs at their grid values; give no --preset or -p")


def test_an_empty_paper_export_is_one_line_and_writes_nothing(src: Path) -> None:
    path = src.parent / "paper.tar"
    rc, out, err = call(src, "export", str(path), "--preset", "paper")
    assert rc == 1 and out == ""
    one_line(
        err,
        r"^icl-book: export: the store holds none of the 2 runs of preset 'paper' for this checkout; run `icl-book run --preset paper` first$",
    )
    assert not path.exists() and not list(src.parent.glob(".paper.tar.*"))


def test_export_of_an_unknown_notebook_is_one_line(src: Path) -> None:
    rc, _, err = call(src, "export", str(src.parent / "x.tar"), "nope")
    assert rc == 2
    one_line(err, r"unknown notebook\(s\) \['nope'\]")


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_an_archive_gets_the_mode_of_a_new_file(src: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        path = export(src)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode


# --- archive members ---------------------------------------------------------------------------------------------


def test_a_member_over_its_bound_is_refused_before_it_is_read(src: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 100)
    rc, _, err = call(clone(src), "import", str(export(src)))
    assert rc == 1
    one_line(err, r"refused: entry \w+: \S+ is \d+ bytes, more than the bound 100")


def test_more_listed_members_than_the_bound_are_refused(src: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "MAX_MEMBERS", 3)
    rc, _, err = call(clone(src), "import", str(export(src)))
    assert rc == 1
    one_line(err, r"refused: 8 members listed, more than the bound 3")


def _with_extra(path: Path, out: Path, info: tarfile.TarInfo, data: bytes = b"") -> None:
    with tarfile.open(path) as tin, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tout:
        for m in tin:
            tout.addfile(m, tin.extractfile(m))
        tout.addfile(info, io.BytesIO(data))


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    if kind == tarfile.SYMTYPE:
        info.linkname = "/etc/passwd"
    return info


@pytest.mark.parametrize(
    ("extra", "data"),
    [
        (_member("entries/unlisted.txt", size=3), b"abc"),
        (_member("entries/link", tarfile.SYMTYPE), b""),
        (_member("entries/dev", tarfile.CHRTYPE), b""),
    ],
    ids=["an-unlisted-file", "a-symbolic-link", "a-device"],
)
def test_an_unlisted_member_is_refused_whole(src: Path, extra: tarfile.TarInfo, data: bytes) -> None:
    bad = src.parent / "bad.tar"
    _with_extra(export(src), bad, extra, data)
    dst = clone(src)
    rc, _, err = call(dst, "import", str(bad))
    assert rc == 1
    one_line(err, rf"refused: member {extra.name} is not listed in icl-archive\.json \(tampered\)")
    assert not any((store_dir(dst) / "entries").iterdir())


def test_a_repeated_member_is_refused(src: Path) -> None:
    path, bad = export(src), src.parent / "bad.tar"
    with tarfile.open(path) as tar:
        last = tar.getmembers()[-1]
        data = tar.extractfile(last).read()
    _with_extra(path, bad, last, data)
    rc, _, err = call(clone(src), "import", str(bad))
    assert rc == 1
    one_line(err, r"refused: member .* is not listed in icl-archive\.json \(tampered\)")


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"not an archive at all\n" * 40, r"refused: not a readable archive, or truncated"),
        (b"", r"refused: not a readable archive, or truncated"),
    ],
    ids=["random-bytes", "an-empty-file"],
)
def test_a_file_that_is_not_an_archive_is_one_line(src: Path, content: bytes, pattern: str) -> None:
    path = src.parent / "x.tar"
    path.write_bytes(content)
    rc, _, err = call(clone(src), "import", str(path))
    assert rc == 1
    one_line(err, pattern)


def test_a_truncated_gzip_archive_is_one_line(src: Path) -> None:
    path = export(src, name="runs.tar.gz")
    cut = src.parent / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    dst = clone(src)
    rc, _, err = call(dst, "import", str(cut))
    assert rc == 1
    one_line(err, r"refused: .*(truncated|missing)")
    assert not any((store_dir(dst) / "entries").iterdir()) and not any((store_dir(dst) / "tmp").iterdir())


@pytest.mark.parametrize("what", ["missing", "folder"])
def test_a_missing_archive_or_a_folder_is_one_line(src: Path, what: str) -> None:
    path = src.parent / "nothing.tar"
    if what == "folder":
        path.mkdir()
    rc, _, err = call(src, "import", str(path))
    assert rc == 1
    one_line(err, r"does not exist" if what == "missing" else r"refused: not a regular file")


# --- output paths: export ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "with-force"])
def test_export_never_overwrites_a_tracked_notebook(src: Path, force: list[str]) -> None:
    target = src / "notebooks" / "second.py"
    before = target.read_bytes()
    rc, out, err = call(src, "export", str(target), *force)
    assert rc == 2 and out == ""
    one_line(err, rf"^icl-book: error: export: {target} is a file tracked by git; refusing to overwrite it")
    assert target.read_bytes() == before


def test_export_never_overwrites_a_tracked_file_through_a_symbolic_link(src: Path) -> None:
    link = src.parent / "link.tar"
    link.symlink_to(src / "_toc.yml")
    before = (src / "_toc.yml").read_bytes()
    rc, _, err = call(src, "export", str(link), "--force")
    assert rc == 2
    one_line(err, r"is a file tracked by git; refusing to overwrite it")
    assert (src / "_toc.yml").read_bytes() == before and link.is_symlink()


def test_export_names_an_existing_file_and_replaces_it_only_with_force(src: Path) -> None:
    target = src.parent / "old.tar"
    target.write_bytes(b"precious")
    rc, _, err = call(src, "export", str(target))
    assert rc == 2
    one_line(
        err, rf"^icl-book: error: export: {target} exists; refusing to overwrite it \(give --force to replace it\)$"
    )
    assert target.read_bytes() == b"precious"
    rc, _, _ = call(src, "export", str(target), "--force")
    assert rc == 0 and tarfile.is_tarfile(target)


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "with-force"])
def test_export_never_writes_into_the_store(src: Path, force: list[str]) -> None:
    before = store_snapshot(src)
    target = store_dir(src) / "entries" / "x.tar"
    rc, _, err = call(src, "export", str(target), *force)
    assert rc == 2
    one_line(err, r"is inside the store .*; only icl-book's own code writes there")
    assert store_snapshot(src) == before


def test_export_onto_a_folder_is_refused(src: Path) -> None:
    rc, _, err = call(src, "export", str(src / "notebooks"), "--force")
    assert rc == 2
    one_line(err, r"notebooks is a folder; give a file name")


def test_an_untracked_file_in_the_checkout_is_overwritten_only_with_force(src: Path) -> None:
    scratch = src / "scratch.tar"
    scratch.write_bytes(b"x")
    assert call(src, "export", str(scratch))[0] == 2 and scratch.read_bytes() == b"x"
    assert call(src, "export", str(scratch), "--force")[0] == 0


# --- output paths: run --out -------------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "with-force"])
def test_run_out_never_replaces_a_folder_of_tracked_files(src: Path, force: list[str]) -> None:
    """`--out .` would make ./notebooks/ the output of a notebook called `notebooks`; here: a tracked folder."""
    (src / "work" / "second").mkdir(parents=True)
    (src / "work" / "second" / "keep.md").write_text("mine\n")
    git(src, "add", "work")
    git(src, "commit", "-q", "-m", "work")
    rc, _, err = call(src, "run", "second", "--out", str(src / "work"), *force)
    assert rc == 2
    one_line(err, r"work/second holds 1 file\(s\) tracked by git \(.*keep\.md\); refusing to replace it")
    assert (src / "work" / "second" / "keep.md").read_text() == "mine\n"


@pytest.mark.slow
def test_run_out_names_a_foreign_folder_and_replaces_it_only_with_force(src: Path) -> None:
    mine = src.parent / "elsewhere" / "second"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine\n")
    rc, _, err = call(src, "run", "second", "--out", str(mine.parent))
    assert rc == 2
    one_line(
        err, r"second holds files but no \.icl-run\.json \(not an icl-book output folder\); refusing to replace it"
    )
    assert (mine / "notes.txt").read_text() == "mine\n"
    rc, out, _ = call(src, "run", "second", "--out", str(mine.parent), "--force")
    assert rc == 0 and (mine / STAMP).is_file() and not (mine / "notes.txt").exists()


def test_run_out_refreshes_its_own_earlier_output_folder(src: Path) -> None:
    out = src.parent / "out"
    assert call(src, "run", "second", "--out", str(out))[0] == 0
    (out / "second" / "stale.txt").write_text("x")
    rc, out_text, err = call(src, "run", "second", "--out", str(out))
    assert rc == 0 and not (out / "second" / "stale.txt").exists(), err


def test_run_out_never_writes_into_the_store(src: Path) -> None:
    before = store_snapshot(src)
    rc, _, err = call(src, "run", "second", "--out", str(store_dir(src) / "entries"), "--force")
    assert rc == 2
    one_line(err, r"is inside the store .*; only icl-book's own code writes there")
    assert store_snapshot(src) == before


def test_an_empty_folder_is_a_fine_output_folder(src: Path) -> None:
    (src.parent / "empty" / "second").mkdir(parents=True)
    assert call(src, "run", "second", "--out", str(src.parent / "empty"))[0] == 0


# --- a damaged manifest in the output folder or the store -------------------------------------------------------


def test_a_damaged_manifest_in_the_output_folder_is_restored_from_the_store(src: Path) -> None:
    assert call(src, "run", "second")[0] == 0
    stamp = src / "book" / "generated" / "second" / STAMP
    good = stamp.read_bytes()
    stamp.write_text(json.dumps(dict(json.loads(good), files=5)))
    rc, out, err = call(src, "run", "second")
    assert rc == 0 and "1 cached" in out and "Traceback" not in err
    assert stamp.read_bytes() == good


def test_a_damaged_store_manifest_is_named_by_status(src: Path) -> None:
    entry = next(p.parent for p in (store_dir(src) / "entries").glob(f"*/{STAMP}") if '"second"' in p.read_text())
    stamp = json.loads((entry / STAMP).read_text())
    (entry / STAMP).write_text(json.dumps(dict(stamp, files=5), indent=1))
    rc, out, err = call(src, "status", "second")
    assert rc == 0 and err == ""
    assert "would execute (its manifest is damaged: .icl-run.json:" in out and "files: 5 is not of type 'object'" in out


@pytest.mark.slow
def test_a_damaged_store_manifest_is_re_executed_by_run(src: Path) -> None:
    entry = next(p.parent for p in (store_dir(src) / "entries").glob(f"*/{STAMP}") if '"second"' in p.read_text())
    (entry / STAMP).write_text(json.dumps(dict(json.loads((entry / STAMP).read_text()), files=5)))
    rc, out, err = call(src, "run", "second")
    assert rc == 0 and "1 executed" in out, err
    assert "second: stored output damaged (its manifest is damaged: .icl-run.json:" in err
    assert json.loads((entry / STAMP).read_text())["files"]["metrics.json"]
