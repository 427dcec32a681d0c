"""SIGINT and SIGTERM end every ``icl-book`` command mid-work within a second, exit 130/143 with one line,
and leave nothing half-written: the store and the output folders are as before (or, for ``clean``, the folder
is gone as a whole).

The slow inputs: a notebook source that is a FIFO nobody writes (every command that reads the notebooks blocks
on it), an archive that is a FIFO (``import``), a grid of millions of points being made (``sweep`` with a raised
``--max-points``), a large output folder being removed (``clean``), a running notebook (``run``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_project import make_fault_project, store_snapshot
from runner_project import HEADER, NOTEBOOKS, icl_cmd, icl_env, popen_icl

from iclbook.store import store_dir

SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]
WITHIN = 1.0  # seconds from the signal to the exit


start = popen_icl  # icl-book in a subprocess with text pipes, to be signalled


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_fault_project(tmp_path / "p")


def wait_for(ready, proc: subprocess.Popen, what: str, timeout: float = 60.0):
    """Poll ``ready()`` until it returns something truthy; fail (saying ``what``) if the command ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ready()
        if got:
            return got
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (exit {proc.returncode}) before {what}: {err[-2000:]}")
        time.sleep(0.005)
    proc.kill()
    pytest.fail(f"timed out waiting for {what}")


def interrupt(proc: subprocess.Popen, sig: signal.Signals) -> tuple[float, str]:
    """Send ``sig``; the seconds until the command exited and its stderr. Asserts the exit code and the one line."""
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    seconds = time.monotonic() - t0
    assert proc.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"icl-book: interrupted by {sig.name}"), err
    return seconds, err


def reader_waits(fifo: Path):
    """A write end of ``fifo`` once a reader has opened it (the command is blocked reading), else None."""

    def ready():
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return None

    return ready


FIFO_COMMANDS = [
    ("list", ("list",)),
    ("status", ("status",)),
    ("plan", ("plan", "--preset", "quick")),
    ("build", ("build",)),
    ("run", ("run",)),
    ("sweep", ("sweep", "sized")),
    ("export", ("export", "{tmp}/out.tar")),
    ("record-status", ("record", "status")),
    ("record-verify", ("record", "verify")),
    ("record-refresh", ("record", "refresh", "--preset", "quick")),
]


@pytest.mark.fault
@pytest.mark.parametrize("sig", SIGNALS)
@pytest.mark.parametrize(("args"), [c[1] for c in FIFO_COMMANDS], ids=[c[0] for c in FIFO_COMMANDS])
def test_a_command_blocked_reading_a_notebook_stops_at_once(project, tmp_path, args, sig) -> None:
    fifo = project / "notebooks" / "zz_blocked.py"
    os.mkfifo(fifo)
    before = store_snapshot(project)
    args = tuple(a.format(tmp=tmp_path) for a in args)
    proc = start(project, *args)
    fd = wait_for(reader_waits(fifo), proc, "the notebook FIFO was opened")
    try:
        seconds, _ = interrupt(proc, sig)
    finally:
        os.close(fd)
    assert seconds < WITHIN, f"{seconds:.2f} s"
    assert store_snapshot(project) == before
    assert not (project / "book" / "generated").exists() and not (project / "_build").exists()
    assert not list(tmp_path.glob("*.tar*")) and not list(tmp_path.glob(".out.tar*"))
    assert not (project / "record").exists()


@pytest.mark.fault
def test_an_import_of_a_fifo_never_blocks(project, tmp_path) -> None:
    """A FIFO given to ``import`` is refused before anything is read from it (so there is nothing to interrupt)."""
    fifo = tmp_path / "archive.tar"
    os.mkfifo(fifo)
    before = store_snapshot(project)
    proc = start(project, "import", str(fifo))
    try:
        proc.wait(timeout=WITHIN * 20)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "not a regular file" in proc.stderr.read()
    assert store_snapshot(project) == before


@pytest.mark.fault
@pytest.mark.parametrize("sig", SIGNALS)
def test_a_sweep_making_millions_of_points_stops_at_once(project, sig) -> None:
    import psutil

    k = str(list(range(1, 4097)))
    eta = str([round(i / 1001, 6) for i in range(1, 1001)])
    proc = start(project, "sweep", "sized", "--full", "-p", "K", k, "-p", "eta", eta, "--max-points", "10000000")
    ps = psutil.Process(proc.pid)
    wait_for(lambda: ps.cpu_times().user > 1.0, proc, "the grid was being made")
    seconds, _ = interrupt(proc, sig)
    assert seconds < WITHIN, f"{seconds:.2f} s"
    entries = store_dir(project) / "entries"
    assert not entries.exists() or not list(entries.iterdir())


@pytest.mark.fault
@pytest.mark.parametrize("sig", SIGNALS)
def test_clean_interrupted_removes_a_folder_whole_or_not_at_all(project, sig) -> None:
    generated = project / "book" / "generated"
    generated.mkdir(parents=True)
    source = generated / "source.txt"
    source.write_text("x")
    for d in range(100):  # 30,000 names (hard links: quick to make), about a second to remove
        folder = generated / f"nb{d:03d}"
        folder.mkdir()
        for f in range(300):
            os.link(source, folder / f"f{f}")
    proc = start(project, "clean")
    wait_for(lambda: not generated.exists(), proc, "book/generated was moved aside")
    seconds, _ = interrupt(proc, sig)
    assert seconds < WITHIN, f"{seconds:.2f} s"
    assert not generated.exists() and (project / "book").is_dir()
    again = subprocess.run(icl_cmd(project, "clean"), env=icl_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and not list(project.glob(".icl-trash-*")), "the next clean removes what was left"


def _cmdline(proc) -> str:
    import psutil

    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def _descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_a_running_notebook_stops_within_a_second_and_nothing_is_stored(tmp_path, sig) -> None:
    import psutil

    root = tmp_path / "p"
    (root / "notebooks").mkdir(parents=True)
    (root / "iclcore").mkdir()
    (root / "requirements.lock").write_text("numpy==0\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: book/generated/slow/slow\n")
    (root / "notebooks" / "slow.py").write_text(HEADER + NOTEBOOKS["slow"])
    proc = start(root, "run", "slow", "-p", "seconds", "60")
    wait_for(lambda: list(root.rglob("started")), proc, "the notebook started", timeout=180)
    children = _descendants(proc.pid)
    seconds, _ = interrupt(proc, sig)
    assert seconds < WITHIN, f"{seconds:.2f} s"
    alive = [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for p in alive:
        p.kill()
    assert not alive, "the kernel or papermill outlived the command"
    assert not list((store_dir(root) / "entries").iterdir())
    assert not list((store_dir(root) / "tmp").iterdir()), "the run's temporary folder was left behind"
    assert not (root / "book" / "generated" / "slow").exists()


def test_a_signal_inside_a_held_step_is_raised_when_the_step_ends() -> None:
    """In this process: the handler raises at once outside held(), and only after the step inside it."""
    from iclbook.execution import Interrupted, Interrupts

    interrupts = Interrupts()
    steps = []
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted) as raised, interrupts.installed():
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here, and must not raise
            steps.append("both writes")
        steps.append("after the step")  # never reached
    assert steps == ["both writes"] and raised.value.signum == signal.SIGTERM
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before  # handlers restored
    interrupts = Interrupts()
    with pytest.raises(Interrupted), interrupts.installed():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)  # interrupted long before the end
        pytest.fail("the signal was not raised")


@pytest.mark.fault
@pytest.mark.slow
def test_a_notebook_running_on_a_local_dask_cluster_stops_within_a_second(tmp_path) -> None:
    import psutil

    pytest.importorskip("distributed")
    root = tmp_path / "p"
    (root / "notebooks").mkdir(parents=True)
    (root / "iclcore").mkdir()
    (root / "requirements.lock").write_text("numpy==0\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: book/generated/slow/slow\n")
    (root / "notebooks" / "slow.py").write_text(HEADER + NOTEBOOKS["slow"])
    proc = start(root, "run", "slow", "-p", "seconds", "60", "--scheduler", "local:1")

    def kernel_runs():
        kids = _descendants(proc.pid)
        return kids if any("ipykernel" in _cmdline(k) for k in kids) else None

    wait_for(kernel_runs, proc, "the notebook's kernel started on the worker", timeout=180)
    time.sleep(0.5)
    children = _descendants(proc.pid)
    seconds, _ = interrupt(proc, signal.SIGINT)
    assert seconds < WITHIN, f"{seconds:.2f} s"
    time.sleep(1.0)
    alive = [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    alive = [p for p in alive if "resource_tracker" not in _cmdline(p)]
    for p in alive:
        p.kill()
    assert not alive, "a worker, papermill or the kernel outlived the command"
    assert not list((store_dir(root) / "entries").iterdir())
