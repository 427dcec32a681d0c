"""The runner's contract under bad input and faults: exact parameter types, no stale or damaged output served
from the cache, signals end papermill and the kernel, runs into one folder take turns, one-line errors for an
unusable ``--out``, ``--root`` or ``-j``, repeated names run once, sizes checked before a kernel starts. Runs
use the small notebooks of ``runner_project`` (a kernel start each, no computation; those tests are ``slow``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from runner_project import alive, icl_cmd, icl_env, make_project, run_icl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture(scope="module")
def typed_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the `types` notebook with values that a YAML reading would turn into strings (``1e-5``, ``nan``)."""
    root = make_project(tmp_path_factory.mktemp("typed") / "project", ["types"])
    proc = run_icl(
        root,
        "run",
        "types",
        "-p",
        "f",
        "1e-5",
        "-p",
        "g",
        "nan",
        "-p",
        "h",
        "1e300",
        "-p",
        "big",
        "12345678901234567891",
        "-p",
        "s",
        "1e-5",
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "book" / "generated" / "types" / "metrics.json").read_text())


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.slow
def test_exponent_nan_inf_floats_reach_the_kernel_as_floats(typed_run: dict) -> None:
    assert typed_run["type_f"] == "float" and typed_run["repr_f"] == "1e-05"
    assert typed_run["type_g"] == "float" and typed_run["repr_g"] == "nan"
    assert typed_run["type_h"] == "float" and typed_run["repr_h"] == "1e+300"
    assert typed_run["type_s"] == "str" and typed_run["repr_s"] == "'1e-5'"  # a str parameter stays a str


@pytest.mark.slow
def test_missing_or_corrupt_outputs_are_never_served_as_cached(project: Path) -> None:
    assert run_icl(project, "run", "second").returncode == 0
    folder = project / "book" / "generated" / "second"
    good_metrics = (folder / "metrics.json").read_bytes()
    good_figure = (folder / "figure.txt").read_bytes()
    (folder / "figure.txt").unlink()
    proc = run_icl(project, "run", "second")
    assert proc.returncode == 0
    assert "figure.txt" in proc.stderr  # one line naming the file
    assert (folder / "figure.txt").read_bytes() == good_figure
    (folder / "metrics.json").write_text('{"k_squared": ')  # truncated
    assert run_icl(project, "run", "second").returncode == 0
    assert (folder / "metrics.json").read_bytes() == good_metrics
    (folder / "metrics.json").write_text('{"other": 1}\n')  # valid JSON, wrong content
    assert run_icl(project, "run", "second").returncode == 0
    assert (folder / "metrics.json").read_bytes() == good_metrics


def _descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _wait_started(root: Path, proc: subprocess.Popen, timeout: float = 180) -> None:
    """Wait for the notebook's ``started`` marker; on failure say what the runner printed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if list(root.rglob("started")):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate(timeout=30)
    raise AssertionError(f"the notebook never started (runner exit {proc.returncode}):\n{err[-3000:]}\n{out[-1000:]}")


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.slow
def test_a_signal_ends_papermill_and_the_kernel(project: Path, sig: signal.Signals, code: int) -> None:
    proc = subprocess.Popen(
        icl_cmd(project, "run", "slow", "-p", "seconds", "6"),
        env=icl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=project,
    )
    try:
        _wait_started(project, proc)
        children = _descendants(proc.pid)
        assert any("ipykernel" in " ".join(c.cmdline()) for c in children), "no kernel found"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 5
    while alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(children)
    for p in left:  # do not leave the machine busy if the test fails
        p.kill()
    assert not left, f"child processes remain: {[' '.join(p.cmdline())[:80] for p in left]}"
    assert proc.returncode == code
    assert "Traceback" not in err and len([ln for ln in err.splitlines() if ln.startswith("icl-book")]) == 1, err
    assert not list(project.rglob("started")), "the run's temporary folder was left behind"
    assert not (project / "book" / "generated" / "slow").exists()
    # a killed run never becomes a cache hit: the next run executes
    again = run_icl(project, "run", "slow", "-p", "seconds", "6", release=True)  # same key, no sleep
    assert again.returncode == 0 and "1 executed, 0 cached" in again.stdout, again.stdout + again.stderr
    assert json.loads((project / "book" / "generated" / "slow" / "metrics.json").read_text()) == {"slept": 6.0}


@pytest.mark.slow
def test_runs_into_one_output_folder_take_turns(project: Path) -> None:
    from filelock import FileLock

    out = project / "shared"
    out.mkdir()
    lock = FileLock(str(out / ".second.lock"))
    with lock:
        proc = subprocess.Popen(
            icl_cmd(project, "run", "second", "-p", "k", "12", "--out", str(out)),
            env=icl_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
            cwd=project,
        )
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
            and proc.poll() is None
            and not list((project / ".icl-store" / "entries").glob("*"))
        ):
            time.sleep(0.2)
        time.sleep(1.0)
        assert proc.poll() is None, "the runner did not wait for the folder's lock"
        assert not (out / "second").exists(), "the runner wrote into a locked output folder"
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "waiting for the output folder" in err
    assert json.loads((out / "second" / "metrics.json").read_text()) == {"k_squared": 144}


@pytest.mark.slow
def test_a_stale_metrics_file_does_not_count(project: Path) -> None:
    out = project / "book" / "generated" / "nometrics"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text('{"k": 1}\n')  # left over from an older run
    proc = run_icl(project, "run", "nometrics")
    assert proc.returncode == 1
    assert "wrote no metrics.json" in proc.stderr
    assert not (out / ".icl-run.json").exists()


@pytest.mark.parametrize("out", ["/proc/x", "FILE"])
def test_unusable_out_is_a_one_line_error(project: Path, out: str) -> None:
    if out == "FILE":
        out = str(project / "a_file")
        Path(out).write_text("x")
    proc = run_icl(project, "run", "second", "--out", out)
    assert proc.returncode == 2
    _no_traceback(proc)
    assert "--out" in proc.stderr


@pytest.mark.slow
def test_large_integers_are_exact(typed_run: dict) -> None:
    assert typed_run["type_big"] == "int"
    assert typed_run["repr_big"] == "12345678901234567891"


def test_missing_root_is_a_one_line_error(tmp_path: Path) -> None:
    proc = run_icl(tmp_path / "nonexistent", "run")
    assert proc.returncode == 2
    _no_traceback(proc)
    assert "--root" in proc.stderr


@pytest.mark.slow
def test_a_repeated_name_runs_once(project: Path) -> None:
    proc = run_icl(project, "run", "second", "second", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert "1 executed, 0 cached" in proc.stdout
    assert proc.stderr.count("] ran") == 1


def test_size_out_of_declared_range_is_refused_before_a_kernel_starts(project: Path) -> None:
    proc = run_icl(project, "run", "sized", "-p", "K", "1000000000")
    assert proc.returncode == 2
    _no_traceback(proc)
    assert "'K'" in proc.stderr and "[1, 4096]" in proc.stderr
    assert not (project / ".icl-store" / "entries").exists()


@pytest.mark.parametrize("jobs", ["-1", "0"])
def test_jobs_below_one_is_a_usage_error(project: Path, jobs: str) -> None:
    proc = run_icl(project, "run", "second", "-j", jobs)
    assert proc.returncode == 2
    _no_traceback(proc)
    assert "-j" in proc.stderr
