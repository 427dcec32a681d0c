"""A failed run keeps its executed notebook and names the failing line; no loopback is one line before any
kernel; a filesystem problem anywhere is one line naming the path; ``icl-book list`` shows run times and
their source. Integer spelling is in ``test_runner_store.py``."""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

import pytest

from iclbook import cli, execution, scheduling, store
from iclbook.execution import failing_cell, failing_line, kernel_hint, loopback_problem
from iclbook.store import FAILED, keep_failed, store_dir

BROKEN = '# %% tags=["parameters"]\nx = 1\n\n# %%\na = 1\nb = 2\nraise ValueError("line three")\nc = 4\n'


def run_cli(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), *args])


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- a failed run keeps its executed notebook and names the failing line ------------------------------


def test_failing_line_follows_the_traceback() -> None:
    source = "a = 1\nb = 2\nraise ValueError('x')\n"
    ipython8 = [
        "\x1b[0;31mValueError\x1b[0m  Traceback",
        "Cell \x1b[0;32mIn[3], line 3\x1b[0m\n      1 a = 1\n----> 3 raise",
    ]
    assert failing_line(source, ipython8) == "raise ValueError('x')"
    assert failing_line(source, ["\x1b[0;32m----> 2\x1b[0;31m b = 2\x1b[0m"]) == "b = 2"  # older IPython
    assert failing_line(source, []) == "a = 1"  # no usable traceback: the cell's first line


@pytest.mark.slow
def test_failed_run_keeps_the_executed_notebook(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (demo_project / "notebooks" / "broken.py").write_text(BROKEN)
    assert run_cli(demo_project, "run", "broken") == 1
    err = capsys.readouterr().err
    assert 'raise ValueError("line three")' in err and "ValueError: line three" in err
    kept = sorted((store_dir(demo_project) / FAILED).glob("broken-*.ipynb"))
    assert len(kept) == 1 and str(kept[0]) in err
    assert "line three" in failing_cell(kept[0])  # the traceback is in the kept notebook
    assert not list((store_dir(demo_project) / "entries").iterdir())  # never a store entry


def test_keep_failed_keeps_the_newest_few(tmp_path: Path) -> None:
    executed = tmp_path / "x.ipynb"
    executed.write_text("{}")
    paths = [keep_failed(tmp_path, "nb", executed, keep=2) for _ in range(4)]
    keep_failed(tmp_path, "nb_other", executed, keep=2)  # another notebook whose name starts alike
    left = sorted(p.name for p in (store_dir(tmp_path) / FAILED).iterdir())
    assert left == sorted(
        [paths[2].name, paths[3].name] + [p.name for p in (store_dir(tmp_path) / FAILED).glob("nb_other-*")]
    )
    assert keep_failed(tmp_path, "nb", tmp_path / "missing.ipynb") is None


def test_keep_failed_keeps_the_log_beside_the_notebook_and_prunes_it_with_it(tmp_path: Path) -> None:
    executed, log = tmp_path / "x.ipynb", tmp_path / "log.txt"
    executed.write_text("{}")
    log.write_text("zmq.error.ZMQError: Address already in use\n")
    paths = [keep_failed(tmp_path, "nb", executed, log=log, keep=2) for _ in range(3)]
    left = sorted(p.name for p in (store_dir(tmp_path) / FAILED).iterdir())
    assert left == sorted(n for p in paths[1:] for n in (p.name, p.with_suffix(".log").name))
    assert paths[2].with_suffix(".log").read_text() == log.read_text()


# --- loopback --------------------------------------------------------------------------------------


def test_loopback_check_is_fast_and_passes_here() -> None:
    assert loopback_problem() == ""


def test_no_loopback_is_one_line_before_any_kernel(demo_project: Path, monkeypatch, capsys) -> None:
    def unreachable(*args, **kw):
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    assert loopback_problem() == "[Errno 101] Network is unreachable"
    assert run_cli(demo_project, "run", "second") == 2
    line = one_line(capsys.readouterr().err)
    assert "loopback TCP" in line and "127.0.0.1 is not reachable here" in line and "unreachable" in line
    assert not (store_dir(demo_project) / "entries").exists() or not list(
        (store_dir(demo_project) / "entries").iterdir()
    )


def test_kernel_timeouts_get_the_loopback_hint_only_when_loopback_fails() -> None:
    down = lambda: "[Errno 101] Network is unreachable"  # noqa: E731
    assert "127.0.0.1" in kernel_hint("RuntimeError: Kernel didn't respond in 60 seconds", down)
    assert "127.0.0.1" in kernel_hint("DeadKernelError: Kernel died", down)
    assert kernel_hint("ValueError: x", down) == "ValueError: x"
    # loopback works: a dead kernel is not blamed on the network
    assert kernel_hint("DeadKernelError: Kernel died", lambda: "") == "DeadKernelError: Kernel died"


# --- filesystem problems are one line naming the path, exit 2 ---------------------------------


def test_a_file_where_the_out_folder_should_be(demo_project: Path, capsys) -> None:
    blocker = demo_project / "blocker"
    blocker.write_text("x")
    for out in (blocker, blocker / "sub"):
        assert run_cli(demo_project, "run", "second", "--out", str(out)) == 2
        line = one_line(capsys.readouterr().err)
        assert line.startswith("icl-book: --out ") and str(blocker) in line


def test_a_symlink_loop_as_out(demo_project: Path, capsys) -> None:
    (demo_project / "loop_a").symlink_to(demo_project / "loop_b")
    (demo_project / "loop_b").symlink_to(demo_project / "loop_a")
    assert run_cli(demo_project, "run", "second", "--out", str(demo_project / "loop_a" / "x")) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("icl-book: --out ") and "loop_" in line


@pytest.mark.parametrize(
    "code, words",
    [
        (errno.EACCES, "permission denied"),
        (errno.ENOSPC, "no space left"),
        (errno.ENAMETOOLONG, "file name too long"),
        (errno.EROFS, "read-only"),
    ],
)
def test_an_unwritable_out_folder(demo_project: Path, monkeypatch, capsys, code: int, words: str) -> None:
    out = demo_project / "out"

    def refuse(*args, dir=None, **kw):  # noqa: A002 - tempfile's own keyword
        raise OSError(code, os.strerror(code), str(dir))

    monkeypatch.setattr(cli.tempfile, "TemporaryFile", refuse)
    assert run_cli(demo_project, "run", "second", "--out", str(out)) == 2
    line = one_line(capsys.readouterr().err)
    assert line == f"icl-book: --out {out}: {words}" or (str(out) in line and words in line), line


def test_a_file_where_the_store_should_be(demo_project: Path, capsys) -> None:
    (demo_project / store.STORE).write_text("not a folder")
    assert run_cli(demo_project, "run", "second") == 2
    line = one_line(capsys.readouterr().err)
    assert line == f"icl-book: store {demo_project / store.STORE}: exists and is not a folder"


def test_an_os_error_anywhere_is_one_line_naming_the_path(demo_project: Path, monkeypatch, capsys) -> None:
    def full(*args, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", "/some/where/log.txt")

    monkeypatch.setattr(cli, "run_notebooks", full)
    assert run_cli(demo_project, "run", "second") == 2
    assert one_line(capsys.readouterr().err) == "icl-book: /some/where/log.txt: no space left on the device"


def test_clean_that_cannot_remove_names_the_path(demo_project: Path, monkeypatch, capsys) -> None:
    (demo_project / "_build").mkdir()

    def refuse(path, *args, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(cli.shutil, "rmtree", refuse)
    assert run_cli(demo_project, "clean") == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(
        f"icl-book: {demo_project / '_build'}: permission denied (moved to {demo_project}/.icl-trash-"
    )


def test_fill_puts_the_previous_folder_back_when_the_swap_fails(tmp_path: Path, monkeypatch) -> None:
    entry, out = tmp_path / "entry", tmp_path / "out"
    entry.mkdir()
    (entry / "new.txt").write_text("new")
    out.mkdir()
    (out / "old.txt").write_text("old")
    real = os.rename

    def rename(src, dst):
        if Path(dst) == out and ".new-" in str(src):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(store.os, "rename", rename)
    with pytest.raises(OSError):
        store.fill(entry, out)
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]  # nothing half-written, nothing lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry", "out"]


# --- run times in `icl-book list` -------------------------------------------------------------


def test_list_shows_quick_and_paper_times_with_their_source(demo_project: Path, capsys) -> None:
    (demo_project / "notebooks" / "seconds.json").write_text(json.dumps({"paper": {"demo": 12.3}}))
    entry = store_dir(demo_project) / "entries" / ("a" * 64)
    entry.mkdir(parents=True)
    exact = scheduling.preset_literals(demo_project)[("demo", "quick")]  # a run at the preset's own parameters
    manifest = {"key": "a" * 64, "notebook": "demo", "preset": "quick", "files": {}, "seconds": 2.0, "threads": 2}
    (entry / store.STAMP).write_text(json.dumps(dict(manifest, param_literals=exact)))
    assert run_cli(demo_project, "list") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:5] == ["notebook", "quick", "run", "paper", "run"]
    demo = next(line for line in out if line.startswith("demo "))
    assert demo.split()[1:7] == ["~4.0", "s", "(store)", "~12", "s", "(hint)"]
    assert next(line for line in out if line.startswith("second ")).split()[1:3] == ["—", "-"]  # no time; no paper
    assert run_cli(demo_project, "list", "demo") == 0
    times = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("run time"))
    assert times.split()[2:] == ["~4.0", "s", "(store)", "~12", "s", "(hint)"]


def test_describe_seconds() -> None:
    assert scheduling.describe_seconds(None) == "—"
    assert scheduling.describe_seconds((3.71, "store")) == "~3.7 s (store)"
    assert scheduling.describe_seconds((10931.0, "hint")) == "~182 min (hint)"


def test_execution_hint_names_the_loopback() -> None:
    assert "loopback TCP" in execution.LOOPBACK_HINT
