"""The committed record: entries written atomically, verified against the digest file, and graded at this checkout."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner_project import make_project, run_icl  # noqa: E402

from iclbook import record as rec
from iclbook.notebooks import discover_all
from iclbook.runs import make_requests
from iclbook.store import add_entry, cache_key, hash_files, store_dir

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


def put_run(root: Path, name: str, preset: str, metrics: dict) -> Path:
    """A verified store entry for ``name`` at ``preset`` under the runner's key, without a kernel."""
    nb = next(n for n in discover_all(root)[0] if n.name == name)
    req = make_requests([nb], root / "book" / "generated", preset)[0]
    key = cache_key(req, root)
    work = store_dir(root) / "tmp" / f"w-{key}"
    work.mkdir(parents=True)
    (work / "metrics.json").write_text(json.dumps(metrics))
    (work / "fig.png").write_bytes(PNG)
    (work / "fig.pdf").write_bytes(b"%PDF-1.4")
    cell = {
        "cell_type": "code",
        "outputs": [{"output_type": "display_data", "data": {"image/png": base64.b64encode(PNG).decode()}}],
    }
    (work / f"{name}.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}}))
    manifest = {"key": key, "notebook": name, "preset": preset, "params": req.params, "files": hash_files(work)}
    manifest.update(seconds=12.5, cpu=20.0, threads=1)
    (store_dir(root) / "entries").mkdir(parents=True, exist_ok=True)
    add_entry(root, key, work, manifest, work.parent)
    return store_dir(root) / "entries" / key


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p", ["second", "types"])
    put_run(root, "second", "quick", {"k_squared": 9})
    entry = put_run(root, "second", "paper", {"k_squared": 16})
    rec.write_entry(root, "paper", "second", entry, quick_metrics={"k_squared": 9})
    return root


def test_a_written_entry_verifies_and_is_current(project: Path) -> None:
    folder = project / "record" / "paper" / "second"
    assert sorted(p.name for p in folder.iterdir()) == ["fig.png", "metrics.json", "record.json", "second.ipynb"]
    assert rec.verify_record(project) == []
    (state,), problems = rec.record_states(project)
    assert problems == [] and state.state == rec.CURRENT and state.seconds == 12.5


def test_the_executed_notebook_keeps_no_second_copy_of_a_figure(project: Path) -> None:
    nb = json.loads((project / "record" / "paper" / "second" / "second.ipynb").read_text())
    data = nb["cells"][0]["outputs"][0]["data"]
    assert "image/png" not in data and data["text/x-icl-record-figure"] == "fig.png"


def _forge(project: Path, *, digest_too: bool) -> None:
    folder = project / "record" / "paper" / "second"
    (folder / "metrics.json").write_text(json.dumps({"k_squared": 17}))
    manifest = json.loads((folder / "record.json").read_text())
    manifest["files"]["metrics.json"] = rec.sha256_file(folder / "metrics.json")
    (folder / "record.json").write_text(json.dumps(manifest))
    if digest_too:
        d = rec.read_digest(project)
        d["paper/second"] = rec.entry_hash(folder)
        rec._write_digest(project, d)


def test_an_entry_edited_with_its_hashes_recomputed_is_refused_naming_it(project: Path) -> None:
    _forge(project, digest_too=False)
    (line,) = rec.verify_record(project)
    assert line.startswith("paper/second:") and "digest.json" in line and "\n" not in line
    proc = run_icl(project, "record", "verify")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "paper/second" in proc.stderr


def test_a_forgery_passes_only_with_the_digest_file_changed_too(project: Path) -> None:
    """The digest file is the trust anchor: a forged entry needs a visible change to it (git shows it in review)."""
    before = (project / "record" / "digest.json").read_text()
    _forge(project, digest_too=True)
    assert rec.verify_record(project) == [] and (project / "record" / "digest.json").read_text() != before


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda f: (f / "record.json").write_text('{"format": "icl'), "unreadable"),
        (lambda f: (f / "metrics.json").unlink(), "missing from the entry"),
        (lambda f: (f / "extra.png").write_bytes(b"x"), "not listed in"),
        (lambda f: (f / "fig.png").write_bytes(b"y"), "was changed"),
        (lambda f: (f / "record.json").write_text("[]"), "not a record manifest"),
    ],
    ids=["truncated-manifest", "missing-file", "extra-file", "changed-figure", "manifest-not-object"],
)
def test_a_damaged_entry_is_one_line_naming_it(project: Path, damage, words: str) -> None:
    damage(project / "record" / "paper" / "second")
    (line,) = rec.verify_record(project)
    assert line.startswith("paper/second:") and words in line


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "unreadable"),
        ('{"format": "other", "entries": {}}', "format"),
        ('{"format": "icl-book record 1", "entries": {"paper/second": 5}}', "no SHA-256"),
    ],
    ids=["truncated", "unknown-format", "bad-hash"],
)
def test_a_damaged_digest_file_is_one_line(project: Path, text: str, words: str) -> None:
    (project / "record" / "digest.json").write_text(text)
    (line,) = rec.verify_record(project)
    assert "digest.json" in line and words in line
    proc = run_icl(project, "record", "status")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


def test_an_entry_the_digest_does_not_list_is_named(project: Path) -> None:
    (project / "record" / "paper" / "types").mkdir()
    (line,) = rec.verify_record(project)
    assert line.startswith("paper/types:") and "not listed" in line


def test_an_entry_whose_notebook_is_gone_is_named(project: Path) -> None:
    (project / "notebooks" / "second.py").unlink()
    (line,) = rec.verify_record(project)
    assert line.startswith("paper/second:") and "no longer exists" in line


def test_a_changed_notebook_is_carried_forward_while_quick_metrics_are_identical(project: Path) -> None:
    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text() + "\n# a comment changes the key, not the numbers\n")
    (state,), _ = rec.record_states(project)
    assert state.state == rec.STALE and "no quick run" in state.reason  # nothing to compare with yet
    put_run(project, "second", "quick", {"k_squared": 9})
    (state,), _ = rec.record_states(project)
    assert state.state == rec.CARRIED


def test_refresh_re_runs_a_carried_forward_entry_only_when_asked(project: Path) -> None:
    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text() + "\n# a comment changes the key, not the numbers\n")
    put_run(project, "second", "quick", {"k_squared": 9})
    proc = run_icl(project, "record", "refresh", "--only", "second")
    assert proc.returncode == 0 and "nothing to refresh" in proc.stdout, proc.stderr
    proc = run_icl(project, "record", "refresh", "--only", "second", "--include-carried")
    assert proc.returncode == 0 and "refreshing 1 entry: second" in proc.stdout, proc.stderr
    (state,), _ = rec.record_states(project)
    assert state.state == rec.CURRENT


def test_a_changed_notebook_whose_quick_metrics_moved_is_stale(project: Path) -> None:
    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text().replace("k * k", "k * k + 1"))
    put_run(project, "second", "quick", {"k_squared": 10})
    (state,), _ = rec.record_states(project)
    assert state.state == rec.STALE and "moved" in state.reason


def test_an_interrupted_write_leaves_the_previous_entry_and_digest(project: Path, monkeypatch) -> None:
    entry = put_run(project, "types", "paper", {"i": 4})
    before = (project / "record" / "digest.json").read_text()
    real = os.replace

    def interrupted(src, dst):
        if Path(dst).name == "types":
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(rec.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rec.write_entry(project, "paper", "types", entry, quick_metrics=None)
    assert (project / "record" / "digest.json").read_text() == before
    assert sorted(p.name for p in (project / "record" / "paper").iterdir()) == ["second"]
    assert rec.verify_record(project) == []


def test_a_damaged_run_is_not_recorded(project: Path) -> None:
    entry = put_run(project, "types", "paper", {"i": 4})
    (entry / "metrics.json").write_text("{}")
    with pytest.raises(rec.RecordError, match="types: the run to record is damaged"):
        rec.write_entry(project, "paper", "types", entry, quick_metrics=None)


def test_status_lists_every_entry_and_the_missing_ones(project: Path) -> None:
    proc = run_icl(project, "record", "status")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("paper/second") and "current" in line for line in lines)
    assert any(line.startswith("paper/types") and "missing" in line for line in lines)
    assert lines[-1] == "1 current, 0 carried forward, 0 stale, 0 refused"


def test_recorded_sweep_points_are_served_only_while_they_verify(project: Path) -> None:
    rec.write_sweep_record(project, "second", [((("k", 5),), "a" * 64, {"k_squared": 25})])
    assert rec.recorded_sweep_metrics(project) == {"a" * 64: {"k_squared": 25}}
    assert rec.verify_record(project) == []
    path = project / "record" / "sweeps" / "second" / "points.json"
    path.write_text(path.read_text().replace("25", "26"))
    assert rec.recorded_sweep_metrics(project) == {}
    (line,) = rec.verify_record(project)
    assert line.startswith("sweeps/second:") and "digest.json" in line


def test_the_repository_record_verifies() -> None:
    root = Path(__file__).resolve().parents[2]
    assert rec.verify_record(root) == []


def test_the_report_takes_current_and_carried_runs_and_leaves_stale_ones(project: Path) -> None:
    metrics, notes = rec.recorded_runs(project, "paper", skip=set())
    assert metrics == {"second": {"k_squared": 16}} and notes["second"].endswith(": current")
    assert "`record/paper/second`" in notes["second"] and "12 s" in notes["second"]
    assert rec.recorded_runs(project, "paper", skip={"second"}) == ({}, {})
    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text() + "\n# comment\n")
    put_run(project, "second", "quick", {"k_squared": 9})
    _, notes = rec.recorded_runs(project, "paper", skip=set())
    assert "carried forward (quick metrics identical" in notes["second"]
    path.write_text(path.read_text().replace("k * k", "k * k + 1"))
    put_run(project, "second", "quick", {"k_squared": 10})
    assert rec.recorded_runs(project, "paper", skip=set()) == ({}, {})


def test_carried_forward_ignores_wall_clock_timings_only() -> None:
    a = {"k_squared": 9, "runtime_s": 1.5, "seconds_fit": 2.0, "train_seconds": 3.0, "t_fit": 0.1}
    b = {"k_squared": 9, "runtime_s": 7.5, "seconds_fit": 1.0, "train_seconds": 4.0, "t_fit": 0.2}
    assert rec.metrics_digest(a) == rec.metrics_digest(b)
    assert rec.metrics_digest(a) != rec.metrics_digest({**a, "k_squared": 10})
    assert rec.result_metrics({"seconds_per_step_ratio": 1, "second_moment": 2}) == {"second_moment": 2}
    kept = {"w5_time_exponent_fit": 1, "noisy_rel_err_time_avg": 2, "cliff_B_time_se_over_tau_max": 3}
    assert rec.result_metrics({**kept, "time_total": 4, "train_time_s": 5}) == kept


def test_refresh_with_nothing_stale_runs_nothing(project: Path) -> None:
    proc = run_icl(project, "record", "refresh", "--only", "second")
    assert proc.returncode == 0 and "nothing to refresh" in proc.stdout, proc.stderr
    proc = run_icl(project, "record", "refresh", "--only", "nope")
    assert proc.returncode == 2 and "unknown notebook 'nope'" in proc.stderr


def test_the_repository_record_stays_within_its_size_bound() -> None:
    """The README promises a record of at most 25 MB (it travels with every clone)."""
    root = Path(__file__).resolve().parents[2] / "record"
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0
    assert size <= 25 * 2**20, f"record/ is {size / 2**20:.1f} MB"


def test_the_headline_says_where_the_paper_runs_come_from(project: Path) -> None:
    metrics, _ = rec.recorded_runs(project, "paper", skip=set())
    text = rec.record_sources(project, {}, metrics)
    assert (
        text
        == "Runs: 0 from this machine's store, 1 current and 0 carried forward from the committed record; 0 stale record entries not counted."
    )


def test_recorded_sweep_points_are_carried_forward_with_their_notebook_entry(project: Path) -> None:
    rec.write_sweep_record(project, "second", [((("k", 5),), "a" * 64, {"k_squared": 25})])
    assert rec.carried_sweep_points(project) == {"second": {(("k", 5),): {"k_squared": 25}}}  # entry current
    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text().replace("k * k", "k * k + 1"))
    put_run(project, "second", "quick", {"k_squared": 10})  # the quick numbers moved: the entry is stale
    assert rec.carried_sweep_points(project) == {}
    assert rec.frozen_settings([["warmups", [50, 200]], ["M", 64]]) == (("warmups", (50, 200)), ("M", 64))


def test_an_entry_names_the_commit_its_runs_were_made_from(project: Path) -> None:
    entry = store_dir(project) / "entries" / rec._current_key(project, _notebook(project, "second"), "paper")
    rec.write_entry(project, "paper", "second", entry, quick_metrics={"k_squared": 9}, commit="abc123")
    manifest = json.loads((project / "record" / "paper" / "second" / "record.json").read_text())
    assert manifest["commit"] == "abc123" and rec.verify_record(project) == []


def test_refresh_runs_the_recorded_quick_metrics_at_one_thread_per_notebook(project: Path, monkeypatch) -> None:
    """The quick pass of a refresh is re-executed (--force) at one thread per notebook, as `make test` runs the
    quick presets: a notebook's last bits depend on its thread count, and the entry is carried forward only
    while a later checkout's quick metrics equal the recorded ones exactly."""
    import argparse
    import subprocess

    calls: list[list[str]] = []

    real_run = subprocess.run

    def fake_run(cmd, **kw):
        if "iclbook.cli" not in cmd:
            return real_run(cmd, **kw)  # git
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1)  # stop after the first pass

    monkeypatch.setattr(rec.subprocess, "run", fake_run)
    args = argparse.Namespace(
        sweeps=False, only=["types"], preset="paper", jobs=2, scheduler="local:2", include_carried=False
    )
    assert rec.cmd_refresh(args, project) == 1
    (quick,) = calls
    assert quick[quick.index("--preset") + 1] == "quick" and "--scheduler" not in quick  # locally, as make test
    assert quick[quick.index("--threads") + 1] == "1" and "--force" in quick


def test_refresh_writes_the_notebooks_that_ran_when_another_fails(project: Path, monkeypatch, capsys) -> None:
    """A refresh of hours is not lost to one failing notebook: every notebook whose runs are in the store is
    written, the others are named, and the exit code is 1."""
    import argparse
    import subprocess

    path = project / "notebooks" / "second.py"
    path.write_text(path.read_text() + "\n# a comment changes the key, not the numbers\n")
    put_run(project, "second", "quick", {"k_squared": 9})  # second is carried forward, types missing
    put_run(project, "second", "paper", {"k_squared": 16})  # what the paper pass left in the store
    put_run(project, "types", "quick", {"repr_i": "3"})
    real_run = subprocess.run

    def fake_run(cmd, **kw):
        if "iclbook.cli" not in cmd:
            return real_run(cmd, **kw)  # git
        return subprocess.CompletedProcess(cmd, 0 if cmd[cmd.index("--preset") + 1] == "quick" else 1)

    monkeypatch.setattr(rec.subprocess, "run", fake_run)
    args = argparse.Namespace(
        sweeps=False, only=["second", "types"], preset="paper", jobs=2, scheduler=None, include_carried=True
    )
    assert rec.cmd_refresh(args, project) == 1
    out, err = capsys.readouterr()
    assert "wrote paper/second" in out and "not written (a run failed, see above): types" in err
    states = {s.notebook: s.state for s in rec.record_states(project)[0]}
    assert states == {"second": rec.CURRENT} and rec.verify_record(project) == []


def test_run_refuses_a_thread_count_below_one(project: Path) -> None:
    proc = run_icl(project, "run", "second", "--threads", "0")
    assert proc.returncode == 2 and proc.stderr.strip() == "icl-book: error: --threads must be at least 1, got 0", (
        proc.stderr
    )


def _notebook(root: Path, name: str):
    return next(n for n in discover_all(root)[0] if n.name == name)
