"""``icl-book export`` / ``import`` (:mod:`iclbook.archive`): a verified archive of store entries.

The store entries are written directly (:func:`iclbook.store.add_entry` under the key the runner would
use), so no kernel starts and the whole file runs in about a second.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from runner_project import make_project, rewrite_archive, store_run

from iclbook import cli
from iclbook.archive import MANIFEST, ArchiveError, entry_origin, export_archive, import_archive, origin_note
from iclbook.report import paper_metrics
from iclbook.store import STAMP, store_dir, verify_folder

NAMES = ["second", "types"]


def _entry_bytes(root: Path, key: str) -> dict[str, bytes]:
    folder = store_dir(root) / "entries" / key
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A project with paper runs of two notebooks in its store, exported; (project, archive, name -> key)."""
    src = make_project(tmp_path / "src", NAMES)
    keys = {n: store_run(src, n, "paper") for n in NAMES}
    store_run(src, "second", "quick")  # another preset: never in a paper archive
    archive = tmp_path / "paper.tar"
    export_archive(src, "paper", archive, say=lambda s: None)
    return src, archive, keys


def _clone(tmp_path: Path, src: Path, name: str = "dst") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".icl-store"))
    return dst


def test_round_trip_gives_identical_entries_and_records_the_origin(exported, tmp_path: Path) -> None:
    src, archive, keys = exported
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names[0] == MANIFEST
    first = names.index(f"entries/{keys['second']}/{STAMP}")
    assert names[first : first + 4] == [  # the manifest first, then the files sorted
        f"entries/{keys['second']}/{n}" for n in (STAMP, "figures/fig.png", "metrics.json", "second.ipynb")
    ]
    dst = _clone(tmp_path, src)
    res = import_archive(dst, archive, say=lambda s: None)
    assert sorted(res.imported) == NAMES and not res.refused
    for key in keys.values():
        got, sent = _entry_bytes(dst, key), _entry_bytes(src, key)
        assert {k: v for k, v in got.items() if k != STAMP} == {k: v for k, v in sent.items() if k != STAMP}
        stamp = json.loads(got[STAMP])  # the manifest is the exported one plus its origin
        assert {k: v for k, v in stamp.items() if k != "origin"} == json.loads(sent[STAMP])
        assert verify_folder(store_dir(dst) / "entries" / key, key) == ""
        origin = entry_origin(dst, key)
        assert origin == stamp["origin"] and origin["archive_sha256"] == res.archive_sha256
        assert (
            origin["archive_file"] == archive.name
            and origin["file_sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
        )
        assert origin["sha256_checked"] is False
        assert f"`{res.archive_sha256[:16]}` (its file digest not checked on import), not computed here" in origin_note(
            origin
        )
    assert len(list((store_dir(dst) / "entries").iterdir())) == 2  # nothing else entered
    # the report's paper column now reads these runs, and the second import finds them stored
    assert set(paper_metrics(dst, dst / "book" / "generated", NAMES)) == set(NAMES)
    again = import_archive(dst, archive, say=lambda s: None)
    assert sorted(again.present) == NAMES and not again.imported
    # re-exporting the imported entries carries the original computation's origin, not the new machine's
    re_archive = tmp_path / "again.tar.gz"
    manifest = export_archive(dst, "paper", re_archive, say=lambda s: None)
    with tarfile.open(archive) as tar:
        original = json.loads(tar.extractfile(MANIFEST).read())
    assert [e["computed"] for e in manifest["entries"]] == [e["computed"] for e in original["entries"]]


@pytest.mark.parametrize("member", ["metrics.json", "figures/fig.png", STAMP])
def test_a_tampered_member_is_refused_naming_the_entry(exported, tmp_path: Path, member: str) -> None:
    src, archive, keys = exported
    bad = tmp_path / "bad.tar"
    target = f"entries/{keys['types']}/{member}"
    rewrite_archive(archive, bad, lambda n, d: d[:-2] + b"00" if n == target else d)
    dst = _clone(tmp_path, src)
    with pytest.raises(ArchiveError, match=rf"refused: entry types: {member}.*tampered"):
        import_archive(dst, bad, say=lambda s: None)
    assert not any((store_dir(dst) / "entries").iterdir())  # not even the untouched entry


def test_a_rehashed_listing_is_refused(exported, tmp_path: Path) -> None:
    """Changing a file and its hash in the listing breaks the entry and archive hashes."""
    src, archive, keys = exported

    def change(name: str, data: bytes) -> bytes:
        if name == MANIFEST:
            m = json.loads(data)
            m["entries"][0]["files"]["metrics.json"] = "0" * 64
            return json.dumps(m).encode()
        return data

    bad = tmp_path / "bad.tar"
    rewrite_archive(archive, bad, change)
    with pytest.raises(ArchiveError, match="does not match its archive_sha256"):
        import_archive(_clone(tmp_path, src), bad, say=lambda s: None)


@pytest.mark.parametrize("fraction", [0.3, 0.7, 0.97])
def test_a_truncated_file_is_refused(exported, tmp_path: Path, fraction: float) -> None:
    src, archive, _ = exported
    with tarfile.open(archive) as tar:
        end = max(m.offset_data + m.size for m in tar.getmembers())  # after it: only the zero padding
    cut = tmp_path / "cut.tar"
    cut.write_bytes(archive.read_bytes()[: int(end * fraction)])
    dst = _clone(tmp_path, src)
    with pytest.raises(ArchiveError, match=r"refused: .*(truncated|missing)") as info:
        import_archive(dst, cut, say=lambda s: None)
    assert "\n" not in str(info.value)
    assert not any((store_dir(dst) / "entries").iterdir())
    assert not any((store_dir(dst) / "tmp").iterdir())  # the private folder is gone too


def test_an_entry_of_another_checkout_is_refused_and_the_current_one_imported(exported, tmp_path: Path) -> None:
    src, archive, keys = exported
    dst = _clone(tmp_path, src)
    nb = dst / "notebooks" / "types.py"
    nb.write_text(nb.read_text().replace("i = 3", "i = 5"))  # the notebook changed since the export
    said: list[str] = []
    res = import_archive(dst, archive, say=said.append)
    assert res.imported == ["second"]
    assert len(res.refused) == 1 and len(said) == 1
    assert "refused entry types" in said[0] and "key does not match this checkout" in said[0]
    assert "source differs" in said[0]
    assert not (store_dir(dst) / "entries" / keys["types"]).exists()
    # a changed lock file: every entry is stale, none enters
    other = _clone(tmp_path, src, "other")
    (other / "requirements.lock").write_text("numpy==1\n")
    res = import_archive(other, archive, say=lambda s: None)
    assert not res.imported and len(res.refused) == 2 and "requirements.lock differs" in res.refused[0]
    assert not any((store_dir(other) / "entries").iterdir())


def test_cli_unknown_preset_empty_store_and_exit_codes(exported, tmp_path: Path, capsys) -> None:
    src, archive, _ = exported
    assert cli.main(["--root", str(src), "export", "--preset", "bogus", str(tmp_path / "x.tar")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "icl-book: error: unknown preset 'bogus'; the notebooks define: paper, quick"
    empty = _clone(tmp_path, src, "empty")
    assert cli.main(["--root", str(empty), "export", "--preset", "paper", str(tmp_path / "y.tar")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the store holds none of the 2 runs of preset 'paper' for this checkout" in err
    assert not (tmp_path / "y.tar").exists()
    assert cli.main(["--root", str(empty), "import", str(archive)]) == 0
    assert "2 imported, 0 already stored, 0 refused" in capsys.readouterr().out
    assert cli.main(["--root", str(empty), "import", str(tmp_path / "none.tar")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_the_report_names_the_origin_of_an_imported_paper_run(tmp_path: Path) -> None:
    """Export a paper run of the demo project, import it into a copy: the paper column says where it came from."""
    from iclbook.report import paper_rows, render_report, report_rows

    src = tmp_path / "src"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "demo_project", src)
    (src / "book" / "reported").mkdir(parents=True)
    (src / "book" / "reported" / "demo.yml").write_text(
        "- notebook: demo\n  metric: value\n  claim: 'a value'\n  reported: 4\n  seed: '000'\n  section: '§1'\n"
        "  kind: abs\n  tolerance: 0.5\n  basis: predicted\n  note: 'a test row'\n"
    )
    store_run(src, "demo", "paper")  # metrics.json: value = len("demo") = 4
    archive = tmp_path / "paper.tar.gz"
    manifest = export_archive(src, "paper", archive, say=lambda s: None)
    dst = _clone(tmp_path, src)
    generated = dst / "book" / "generated"
    (generated / "demo").mkdir(parents=True)
    (generated / "demo" / "metrics.json").write_text(json.dumps({"value": 3}))
    rows = report_rows(dst, generated)
    assert paper_metrics(dst, generated, ["demo"]) == {}
    import_archive(dst, archive, say=lambda s: None)
    keys: dict[str, str] = {}
    paper = paper_rows(rows, paper_metrics(dst, generated, ["demo"], keys))
    assert [p.status for p in paper] == ["reproduced"] and [r.status for r in rows] == ["differs"]
    origin = entry_origin(dst, keys["demo"])
    assert origin is not None
    text = render_report(rows, paper=paper, origins={"demo": origin_note(origin)})
    assert (
        f"imported from archive `paper.tar.gz` `{manifest['archive_sha256'][:16]}` (its file digest not checked on "
        "import), not computed here; computed at commit `unknown`"
    ) in text
    assert manifest["entries"][0]["computed"]["machine"]["host"] in text
    assert entry_origin(src, keys["demo"]) is None  # the exporting store's own run has no import record


def test_a_path_outside_the_entry_is_refused_even_with_consistent_hashes(exported, tmp_path: Path) -> None:
    """Hashes are no signature: a rewritten listing whose hashes all agree must still never write outside the entry."""
    from iclbook.archive import _entry_hash, archive_hash

    src, archive, keys = exported
    evil = b"evil\n"
    digest = hashlib.sha256(evil).hexdigest()
    with tarfile.open(archive) as tar:
        m = json.loads(tar.extractfile(MANIFEST).read())
    e = m["entries"][0]
    e["files"]["../../../escaped.txt"] = digest
    e["entry_sha256"] = _entry_hash(e)
    m["archive_sha256"] = archive_hash(m)
    bad = tmp_path / "bad.tar"
    with tarfile.open(archive) as tin, tarfile.open(bad, "w", format=tarfile.PAX_FORMAT) as tout:
        for member in tin:
            data = json.dumps(m).encode() if member.name == MANIFEST else tin.extractfile(member).read()
            member.size = len(data)
            tout.addfile(member, io.BytesIO(data))
        info = tarfile.TarInfo(f"entries/{e['key']}/../../../escaped.txt")
        info.size = len(evil)
        tout.addfile(info, io.BytesIO(evil))
    dst = _clone(tmp_path, src)
    with pytest.raises(ArchiveError, match=r"entry \w+: '\.\./\.\./\.\./escaped\.txt' is not a path inside an entry"):
        import_archive(dst, bad, say=lambda s: None)
    assert not list(tmp_path.rglob("escaped.txt"))


def test_machine_records_name_the_nvidia_gpus_the_driver_lists(tmp_path):
    from iclbook.archive import nvidia_gpus

    for bus, model in (("0000:01:00.0", "NVIDIA H200"), ("0000:02:00.0", "NVIDIA H100 80GB HBM3")):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 0\n")
    assert nvidia_gpus(tmp_path) == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    assert nvidia_gpus(tmp_path / "absent") == []
