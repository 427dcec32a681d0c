"""Fault table, input files: every file ``icl-book`` reads, malformed each way, is refused in one line naming the
file and its line (a damaged store manifest: named as damage of that entry), and the store is left unchanged.

Kinds and the command that reads each one (:mod:`iclbook.loaders`): ``notebooks/sweeps.yml`` (``sweep``), a
ledger file ``book/reported/*.yml`` (``verdicts``: it grades a run on the ledger's rules), an entry's
``.icl-run.json`` (``status``), an archive's ``icl-archive.json`` (``import``) and the hint
``notebooks/seconds.json`` (``plan``). No kernel starts: every command here stops before one would.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from runner_project import call, make_project, one_line, store_run, store_snapshot

from iclbook import loaders
from iclbook.ledger import LEDGER_FILE
from iclbook.store import STAMP, store_dir

pytestmark = pytest.mark.fault

SWEEPS_TEXT = 'sized:\n  settings:\n    K:\n      values: [4, 8, 16]\n      why: "not stated."\n      paper: "000"\n'
LEDGER_TEXT = (
    "- notebook: second\n  metric: k_squared\n  claim: 'k squared'\n  reported: 9\n  seed: '000'\n"
    "  section: '§1'\n  kind: abs\n  tolerance: 0.5\n  basis: predicted\n"
)
ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throw-away project with a sweep declaration, a ledger, a hint and stored runs of two notebooks."""
    root = make_project(tmp_path / "p", ["second", "sized"])
    (root / "notebooks" / "sweeps.yml").write_text(SWEEPS_TEXT)
    (root / "book" / "reported").mkdir(parents=True)
    (root / "book" / "reported" / "second.yml").write_text(LEDGER_TEXT)
    (root / "notebooks" / "seconds.json").write_text(json.dumps({"quick": {"second": 3.0, "sized": 2.0}}, indent=1))
    store_run(root, "second")
    store_run(root, "sized")
    return root


# --- the five kinds: where each lives and the command that reads it ---------------------------------------------


@dataclass(frozen=True)
class Kind:
    name: str
    syntax: str
    place: Callable[[Path, bytes], Path]  # write the bytes where the command reads them; the path
    check: Callable[[Path, Path, str], None]  # (project, path, expected message pattern): the command's answer


def _sweeps_place(root: Path, data: bytes) -> Path:
    path = root / "notebooks" / "sweeps.yml"
    path.write_bytes(data)
    return path


def _sweeps_check(root: Path, path: Path, pattern: str) -> None:
    rc, _, err = call(root, "sweep", "sized")
    assert rc == 2
    one_line(err, r"^icl-book: error: notebooks/sweeps\.yml" + pattern)


def _ledger_place(root: Path, data: bytes) -> Path:
    path = root / "book" / "reported" / "second.yml"
    path.write_bytes(data)
    return path


def _ledger_check(root: Path, path: Path, pattern: str) -> None:
    rc, out, err = call(root, "verdicts", "second")
    assert rc == 2 and out == ""
    one_line(err, r"^icl-book verdicts: error: The ledger could not be read: book/reported/second\.yml" + pattern)


def _hint_place(root: Path, data: bytes) -> Path:
    path = root / "notebooks" / "seconds.json"
    path.write_bytes(data)
    return path


def _hint_check(root: Path, path: Path, pattern: str) -> None:
    rc, out, err = call(root, "plan", "--preset", "quick")
    assert rc == 2
    one_line(err, r"^icl-book: error: notebooks/seconds\.json" + pattern)


def _entry_of(root: Path, name: str) -> Path:
    return next(p.parent for p in (store_dir(root) / "entries").glob(f"*/{STAMP}") if f'"{name}"' in p.read_text())


def _manifest_place(root: Path, data: bytes) -> Path:
    path = _entry_of(root, "second") / STAMP
    path.unlink()
    path.write_bytes(data)
    return path


def _manifest_check(root: Path, path: Path, pattern: str) -> None:
    """A damaged manifest distrusts its own entry only: status names it, the other notebook stays stored."""
    rc, out, err = call(root, "status", "second", "sized")
    assert rc == 0 and err.strip() == "", err
    lines = out.splitlines()
    assert re.search(r"^second +would execute \(its manifest is damaged: \.icl-run\.json" + pattern, lines[0]), lines[0]
    assert re.match(r"^sized +stored", lines[1]), lines[1]


def _archive_place(root: Path, data: bytes) -> Path:
    path = root.parent / "bad.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("icl-archive.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def _archive_check(root: Path, path: Path, pattern: str) -> None:
    rc, out, err = call(root, "import", str(path))
    assert rc == 1 and out == ""
    one_line(err, rf"^icl-book: import {re.escape(str(path))}: refused: icl-archive\.json" + pattern)


SWEEPS = Kind("sweeps", "yaml", _sweeps_place, _sweeps_check)
LEDGER = Kind("ledger", "yaml", _ledger_place, _ledger_check)
HINT = Kind("hint", "json", _hint_place, _hint_check)
MANIFEST = Kind("manifest", "json", _manifest_place, _manifest_check)
ARCHIVE = Kind("archive", "json", _archive_place, _archive_check)
BOUND = {
    "sweeps": loaders.SWEEPS.max_bytes,
    "ledger": LEDGER_FILE.max_bytes,
    "hint": loaders.SECONDS_HINT.max_bytes,
    "manifest": loaders.RUN_MANIFEST.max_bytes,
    "archive": loaders.ARCHIVE_MANIFEST.max_bytes,
}
KIND_NAME = {
    "sweeps": "sweep declaration",
    "ledger": "ledger file",
    "hint": "timing hint",
    "manifest": "run manifest",
    "archive": "archive manifest",
}

# --- the faults: (row id, kind, bytes, expected message after the file name) -------------------------------------

DEEP_YAML = b"a: " + b"[" * 40 + b"]" * 40 + b"\n"
DEEP_JSON = b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}"
GOOD_MANIFEST = {"key": "a" * 64, "notebook": "second", "preset": "quick", "files": {}, "seconds": 1.0}
GOOD_ARCHIVE = {"format": "icl-book archive 1", "preset": "quick", "entries": [], "archive_sha256": "b" * 64}


def _json_lines(obj: object) -> bytes:
    return json.dumps(obj, indent=1).encode()


ROWS: list[tuple[str, Kind, bytes, str]] = [
    # sweeps.yml
    ("sweeps-truncated-inside-a-list", SWEEPS, SWEEPS_TEXT[: SWEEPS_TEXT.index("16")].encode(), r":\d: not valid YAML"),
    ("sweeps-latin1-byte-is-not-utf8", SWEEPS, SWEEPS_TEXT.replace("not stated", "caf\xe9").encode("latin-1"),
     r":5: not valid UTF-8 \(byte 0xe9"),
    ("sweeps-invalid-utf8-on-line-one", SWEEPS, b"\xff\xfe" + SWEEPS_TEXT.encode(), r":1: not valid UTF-8 \(byte 0xff"),
    ("sweeps-nested-forty-deep", SWEEPS, DEEP_YAML, r":1: nested deeper than 12 levels"),
    ("sweeps-alias-bomb", SWEEPS, ALIAS_BOMB.encode(), r":\d: more than 8 YAML aliases"),
    ("sweeps-top-level-list", SWEEPS, b"- sized\n", r":1: \['sized'\] is not of type 'object', 'null'"),
    ("sweeps-setting-is-a-number", SWEEPS, b"sized:\n  settings:\n    K: 5\n", r":3: sized\.settings\.K: 5 is not of type 'object'"),
    ("sweeps-settings-missing", SWEEPS, b"sized:\n  figure: x\n", r":2: sized: 'settings' is a required property"),
    ("sweeps-tab-indentation", SWEEPS, b"sized:\n\tsettings: {}\n", r":2: not valid YAML"),
    # ledger
    ("ledger-truncated-in-a-quoted-string", LEDGER, LEDGER_TEXT[: LEDGER_TEXT.index("'k squared") + 3].encode(),
     r":\d+: not valid YAML"),
    ("ledger-non-utf8-on-line-four", LEDGER, LEDGER_TEXT.replace("seed", "s\xe9ed").encode("latin-1"),
     r":5: not valid UTF-8 \(byte 0xe9 at column 4\)"),
    ("ledger-nested-forty-deep", LEDGER, b"- claim: " + b"[" * 40 + b"]" * 40 + b"\n", r":1: nested deeper than 12"),
    ("ledger-alias-bomb", LEDGER, b"- claim: x\n  seed: '000'\n  section: s\n  kind: abs\n  reported:\n"
     + b"".join(f"    - &a{i} [1]\n".encode() for i in range(3)) + b"    - [" + b", ".join([b"*a0"] * 9) + b"]\n",
     r":\d+: more than 8 YAML aliases"),
    ("ledger-a-mapping-not-a-list", LEDGER, b"notebook: second\nclaim: x\n", r":1: .* is not of type 'array', 'null'"),
    ("ledger-row-without-claim", LEDGER, LEDGER_TEXT.replace("  claim: 'k squared'\n", "").encode(),
     r":1: \[0\]: 'claim' is a required property"),
    ("ledger-tolerance-is-text", LEDGER, LEDGER_TEXT.replace("tolerance: 0.5", "tolerance: half").encode(),
     r":8: \[0\]\.tolerance: 'half' is not of type 'number'"),
    ("ledger-duplicate-document", LEDGER, LEDGER_TEXT.encode() + b"---\n" + LEDGER_TEXT.encode(),
     r":\d+: not valid YAML"),
    # notebooks/seconds.json
    ("hint-truncated", HINT, b'{"quick": {"second": 3.', r":1: not valid JSON"),
    ("hint-empty", HINT, b"", r":1: not valid JSON \(Expecting value"),
    ("hint-non-utf8", HINT, b'{\n "quick": {\n  "s\xe9cond": 3.0}}', r":3: not valid UTF-8"),
    ("hint-nested-forty-deep", HINT, DEEP_JSON, r": nested deeper than 12 levels"),
    ("hint-time-is-text", HINT, _json_lines({"quick": {"second": "fast"}}), r":3: quick\.second: 'fast' is not of type 'number'"),
    ("hint-negative-time", HINT, _json_lines({"quick": {"second": -1}}), r":3: quick\.second: -1 is less than the minimum of 0"),
    ("hint-top-level-list", HINT, b"[1, 2]", r":1: \[1, 2\] is not of type 'object'"),
    # a store entry's .icl-run.json
    ("manifest-files-is-a-number", MANIFEST, _json_lines(dict(GOOD_MANIFEST, files=5)), r":\d+: files: 5 is not of type 'object'"),
    ("manifest-key-not-a-sha256", MANIFEST, _json_lines(dict(GOOD_MANIFEST, key="k1")), r":2: key: 'k1' does not match"),
    ("manifest-file-hash-not-hex", MANIFEST, _json_lines(dict(GOOD_MANIFEST, files={"a.png": "zz"})),
     r":\d+: files\.a\.png: 'zz' does not match"),
    ("manifest-without-notebook", MANIFEST, _json_lines({k: v for k, v in GOOD_MANIFEST.items() if k != "notebook"}),
     r":1: 'notebook' is a required property"),
    ("manifest-truncated", MANIFEST, _json_lines(GOOD_MANIFEST)[:30], r":\d+: not valid JSON"),
    ("manifest-empty", MANIFEST, b"", r":1: not valid JSON"),
    ("manifest-non-utf8", MANIFEST, _json_lines(dict(GOOD_MANIFEST, preset="qu\udcffick"))
     .replace(b"\\udcff", b"\xff"), r":\d+: not valid UTF-8"),
    ("manifest-nested-forty-deep", MANIFEST, DEEP_JSON, r": nested deeper than 24 levels"),
    # an archive's icl-archive.json
    ("archive-manifest-truncated", ARCHIVE, _json_lines(GOOD_ARCHIVE)[:25], r":\d+: not valid JSON"),
    ("archive-manifest-empty", ARCHIVE, b"", r":1: not valid JSON"),
    ("archive-manifest-non-utf8", ARCHIVE, b'{"format": "\xff"}', r":1: not valid UTF-8"),
    ("archive-manifest-nested-forty-deep", ARCHIVE, DEEP_JSON, r": nested deeper than 24 levels"),
    ("archive-manifest-entries-is-a-number", ARCHIVE, _json_lines(dict(GOOD_ARCHIVE, entries=5)),
     r":\d+: entries: 5 is not of type 'array'"),
    ("archive-manifest-without-hash", ARCHIVE, _json_lines({k: v for k, v in GOOD_ARCHIVE.items() if k != "archive_sha256"}),
     r":1: 'archive_sha256' is a required property"),
    ("archive-entry-key-not-a-store-key", ARCHIVE, _json_lines(dict(GOOD_ARCHIVE, entries=[{
        "notebook": "second", "key": "../x", "source_sha256": "c" * 64, "manifest_sha256": "c" * 64,
        "files": {}, "entry_sha256": "c" * 64}])), r":\d+: entries\[0\]\.key: '\.\./x' does not match"),
    ("archive-entry-notebook-with-a-slash", ARCHIVE, _json_lines(dict(GOOD_ARCHIVE, entries=[{
        "notebook": "../second", "key": "c" * 64, "source_sha256": "c" * 64, "manifest_sha256": "c" * 64,
        "files": {}, "entry_sha256": "c" * 64}])), r":\d+: entries\[0\]\.notebook: '\.\./second' does not match"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "data", "pattern"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_malformed_input_file_is_one_line_naming_it_and_the_store_is_unchanged(
    project: Path, kind: Kind, data: bytes, pattern: str
) -> None:
    path = kind.place(project, data)
    before = store_snapshot(project)
    kind.check(project, path, pattern)
    assert store_snapshot(project) == before


KINDS = [SWEEPS, LEDGER, HINT, MANIFEST]


@pytest.mark.parametrize("kind", [*KINDS, ARCHIVE], ids=lambda k: f"{k.name}-larger-than-its-bound")
def test_a_file_larger_than_its_bound_is_refused_unread(project: Path, kind: Kind) -> None:
    """One byte over the kind's bound (JSON: leading blanks, still valid JSON; YAML: a comment)."""
    bound = BOUND[kind.name]
    if kind is ARCHIVE:  # the member's declared size is checked before anything of it is read
        path = project.parent / "huge.tar"
        with tarfile.open(path, "w") as tar:
            info = tarfile.TarInfo("icl-archive.json")
            info.size = bound + 1
            tar.addfile(info, io.BytesIO(b" " * (bound + 1)))
        rc, _, err = call(project, "import", str(path))
        assert rc == 1
        one_line(err, rf"refused: icl-archive\.json is larger than {bound} bytes")
        return
    pad = b"#" * bound + b"\n" if kind.syntax == "yaml" else b" " * bound + b"{}"
    path = kind.place(project, pad)
    before = store_snapshot(project)
    kind.check(project, path, rf": larger than {bound} bytes, the bound for a {KIND_NAME[kind.name]}")
    assert store_snapshot(project) == before


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k.name}-is-a-fifo")
def test_a_fifo_in_place_of_an_input_file_is_refused_without_blocking(project: Path, kind: Kind) -> None:
    path = kind.place(project, b"")
    path.unlink()
    os.mkfifo(path)
    kind.check(project, path, rf": not a regular file \(a {KIND_NAME[kind.name]} must be one\)")


def test_an_archive_that_is_a_fifo_is_refused_without_blocking(project: Path) -> None:
    path = project.parent / "fifo.tar"
    os.mkfifo(path)
    rc, _, err = call(project, "import", str(path))
    assert rc == 1
    one_line(err, r"refused: not a regular file")


def test_a_folder_named_like_a_ledger_file_is_refused(project: Path) -> None:
    (project / "book" / "reported" / "extra.yml").mkdir()
    rc, _, err = call(project, "verdicts", "second")
    assert rc == 2
    one_line(
        err, r"^icl-book verdicts: error: The ledger could not be read: book/reported/extra\.yml: not a regular file"
    )


def test_a_broken_ledger_is_one_line_in_the_report_too(project: Path) -> None:
    from iclbook.ledger import ReportError
    from iclbook.report import report_rows

    (project / "book" / "reported" / "second.yml").write_bytes(b"- claim: [unclosed\n")
    with pytest.raises(ReportError, match=r"^book/reported/second\.yml:2: not valid YAML") as info:
        report_rows(project, project / "book" / "generated")
    assert "\n" not in str(info.value)


def test_a_broken_ledger_never_rekeys_the_stored_runs(project: Path) -> None:
    """The key never reads the ledger: a broken ledger leaves every stored run a hit (verdicts are graded at build)."""
    path = project / "book" / "reported" / "second.yml"
    assert call(project, "status", "second", "sized")[1].count(" stored") == 2
    path.write_text(LEDGER_TEXT + "- [")
    assert call(project, "status", "second", "sized")[1].count(" stored") == 2
    path.write_text(LEDGER_TEXT)
    assert call(project, "status", "second", "sized")[1].count(" stored") == 2


def test_a_damaged_manifest_is_left_out_of_an_export_by_name(project: Path) -> None:
    (_entry_of(project, "second") / STAMP).write_text(json.dumps(dict(GOOD_MANIFEST, files=5)))
    rc, out, err = call(project, "export", str(project.parent / "a.tar"))
    assert rc == 0, err
    one_line(
        err,
        r"^icl-book: export: 1 of the 2 runs of preset 'quick' have no verified stored run and are left out: second$",
    )
    assert "exported 1 entry" in out


def test_a_damaged_manifest_does_not_stop_plan_or_list(project: Path) -> None:
    (_entry_of(project, "second") / STAMP).write_text('{"files": 5')
    assert call(project, "plan", "--preset", "quick")[0] == 0
    rc, out, err = call(project, "list")
    assert rc == 0 and err == "" and "second" in out


def test_a_malformed_hint_does_not_stop_a_run_or_list(project: Path) -> None:
    """The hint only orders the work: `list` and `status` go on without it (plan, which reports it, refuses)."""
    (project / "notebooks" / "seconds.json").write_text('{"quick": ')
    rc, out, err = call(project, "status", "second")
    assert rc == 0 and err == "" and " stored" in out
    assert call(project, "list")[0] == 0


def test_yaml_anchors_within_the_bound_are_read(project: Path) -> None:
    text = "sized:\n  settings:\n    K:\n      values: &v [4, 8, 16]\n      why: 'x'\n      paper: '000'\n"
    assert loaders.parse_bytes(text.encode(), loaders.SWEEPS, "s.yml")["sized"]["settings"]["K"]["values"] == [4, 8, 16]
    bomb = ALIAS_BOMB.encode()
    with pytest.raises(loaders.InputFileError, match=r"more than 8 YAML aliases"):
        loaders.parse_bytes(bomb, loaders.SWEEPS, "s.yml")


def test_the_repository_files_follow_their_schemas() -> None:
    """Every committed input file of the book loads: the schemas describe the files the project has."""
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "book" / "reported").glob("*.yml")):
        assert isinstance(loaders.load_file(path, LEDGER_FILE), list)
    assert loaders.load_file(root / "notebooks" / "sweeps.yml", loaders.SWEEPS)
    assert loaders.load_file(root / "notebooks" / "seconds.json", loaders.SECONDS_HINT)["quick"]


def test_a_fifo_or_malformed_hint_only_loses_the_order_of_the_nbval_copies(project: Path) -> None:
    from iclbook.nbval_copies import costs

    generated = project / "book" / "generated"
    (generated / "second").mkdir(parents=True)
    (generated / "second" / "second.ipynb").write_text("{}")
    hint = project / "notebooks" / "seconds.json"
    assert costs(project, generated) == {"second": 3.0}
    hint.write_text('{"quick": {"second": "slow"}}')
    assert costs(project, generated) == {"second": 0.0}
    hint.unlink()
    os.mkfifo(hint)
    assert costs(project, generated) == {"second": 0.0}


@pytest.mark.fault
def test_a_yaml_key_with_a_control_character_is_named_escaped_on_one_line(tmp_path: Path) -> None:
    """Found by the fuzz test: a sweeps.yml key "\\r" broke the schema message over two lines."""
    from iclbook.loaders import SWEEPS as SWEEPS_KIND
    from iclbook.loaders import InputFileError, load_file

    path = tmp_path / "sweeps.yml"
    path.write_text('"\\r":\n')
    with pytest.raises(InputFileError) as info:
        load_file(path, SWEEPS_KIND, "notebooks/sweeps.yml")
    assert str(info.value).splitlines() == [str(info.value)] and "'\\r'" in str(info.value)
