"""Dask execution (``icl-book run --scheduler``) against a real scheduler and two worker processes on localhost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from iclbook import cli  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures"
DASK = str(Path(sys.executable).with_name("dask"))
SLOW = """# %% [markdown]
# # Slow notebook

# %% tags=["parameters"]
seconds = 1.0

# %%
import json, time
time.sleep(seconds)
json.dump({"slept": seconds}, open("metrics.json", "w"))
"""


def project(tmp: Path, name: str) -> Path:
    root = tmp / name
    shutil.copytree(FIXTURES / "demo_project", root)
    (root / "notebooks" / "slow.py").write_text(SLOW)
    return root


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def without_timings(nb_bytes: bytes) -> dict:
    """The executed notebook minus what differs between two local runs too: papermill's wall-clock
    fields (start/end times, durations), its temporary input/output paths and the random cell ids
    of the py:percent conversion."""
    nb = json.loads(nb_bytes)

    def strip(d):
        if isinstance(d, dict):
            return {
                k: strip(v)
                for k, v in d.items()
                if k not in ("start_time", "end_time", "duration", "execution", "id", "input_path", "output_path")
            }
        if isinstance(d, list):
            return [strip(x) for x in d]
        return d

    return strip(nb)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` + two ``dask worker`` processes (one thread each); yields (address, worker procs)."""
    d = tmp_path_factory.mktemp("dask")
    sched_file = d / "scheduler.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [DASK, "scheduler", "--scheduler-file", str(sched_file), "--no-dashboard", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    ]
    deadline = time.monotonic() + 60
    while not sched_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    workers = [
        subprocess.Popen(
            [
                DASK,
                "worker",
                address,
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--no-dashboard",
                "--local-directory",
                str(d / f"w{i}"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        for i in range(2)
    ]
    procs += workers
    from dask.distributed import Client

    with Client(address, timeout="30s") as c:
        c.wait_for_workers(2, timeout=60)
    try:
        yield address, workers
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


@pytest.mark.slow
def test_three_notebooks_identical_to_a_local_run(cluster, tmp_path):
    address, _ = cluster
    local, remote = project(tmp_path, "local"), project(tmp_path, "remote")
    names = ["demo", "second", "slow"]
    assert cli.main(["--root", str(local), "run", *names, "--out", str(tmp_path / "a"), "-j", "1"]) == 0
    assert cli.main(["--root", str(remote), "run", *names, "--out", str(tmp_path / "b"), "--scheduler", address]) == 0
    for name in names:
        a, b = files(tmp_path / "a" / name), files(tmp_path / "b" / name)
        assert sorted(a) == sorted(b)
        for rel in a:
            if rel.endswith(".ipynb"):
                assert without_timings(a[rel]) == without_timings(b[rel]), rel
            elif rel != ".icl-run.json":
                assert a[rel] == b[rel], f"{name}/{rel}"
        sa, sb = json.loads(a[".icl-run.json"]), json.loads(b[".icl-run.json"])
        assert sa["key"] == sb["key"] and sa["files"].keys() == sb["files"].keys()
    # the Dask run went into the store: a local rerun of the remote project is a cache hit
    assert cli.main(["--root", str(remote), "run", "second", "--out", str(tmp_path / "c")]) == 0
    assert files(tmp_path / "c" / "second")["metrics.json"] == files(tmp_path / "a" / "second")["metrics.json"]


@pytest.mark.slow
def test_a_killed_worker_is_retried_on_the_other(cluster, tmp_path):
    address, workers = cluster
    root = project(tmp_path, "kill")
    import threading

    from dask.distributed import Client

    result = {}

    def run():
        result["rc"] = cli.main(
            [
                "--root",
                str(root),
                "run",
                "slow",
                "-p",
                "seconds",
                "6.0",
                "--out",
                str(tmp_path / "o"),
                "--scheduler",
                address,
            ]
        )

    t = threading.Thread(target=run)
    t.start()
    # find the worker that holds the task, then kill its process group mid-task
    with Client(address, timeout="10s") as c:
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:
            busy = c.processing()
            for addr, keys in busy.items():
                if any(str(k).startswith("icl-book-slow") for k in keys):
                    victim = c.run(os.getpid, workers=[addr])[addr]
            time.sleep(0.2)
        assert victim is not None, "the task never started"
        time.sleep(1.0)
        os.kill(victim, signal.SIGKILL)
    t.join(180)
    assert result.get("rc") == 0
    assert json.loads((tmp_path / "o" / "slow" / "metrics.json").read_text()) == {"slept": 6.0}


@pytest.mark.slow
def test_unreachable_scheduler_is_a_one_line_error_within_10_s(tmp_path, capsys):
    root = project(tmp_path, "unreachable")
    t = time.monotonic()
    rc = cli.main(
        ["--root", str(root), "run", "second", "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9"]
    )
    elapsed = time.monotonic() - t
    err = capsys.readouterr().err.strip()
    assert rc != 0 and elapsed < 10
    assert err.count("\n") == 0 and err.startswith(
        "icl-book: error: --scheduler tcp://127.0.0.1:9: cannot reach the Dask scheduler: Connection refused"
    )


@pytest.mark.slow
def test_a_failing_notebook_is_reported_as_locally(cluster, tmp_path, capsys):
    address, _ = cluster
    local, remote = project(tmp_path, "fl"), project(tmp_path, "fr")
    assert cli.main(["--root", str(local), "run", "demo", "-p", "fail", "true", "--out", str(tmp_path / "a")]) == 1
    err_local = capsys.readouterr().err
    assert (
        cli.main(
            [
                "--root",
                str(remote),
                "run",
                "demo",
                "-p",
                "fail",
                "true",
                "--out",
                str(tmp_path / "b"),
                "--scheduler",
                address,
            ]
        )
        == 1
    )
    err_remote = capsys.readouterr().err
    kept = "; executed notebook kept in "

    def summary(err: str) -> list[str]:
        return [ln for ln in err.splitlines() if ln.startswith("  demo:")]

    line, remote_line = summary(err_local), summary(err_remote)
    assert line and "RuntimeError: asked to fail" in line[0]
    # The same report, each run keeping its executed notebook in its own project's store.
    assert remote_line and line[0].split(kept)[0] == remote_line[0].split(kept)[0]
    assert str(local / ".icl-store" / "failed") in line[0] and str(remote / ".icl-store" / "failed") in remote_line[0]
    assert not (tmp_path / "b" / "demo").exists() or not (tmp_path / "b" / "demo" / "metrics.json").exists()


def test_the_default_runner_does_not_import_dask():
    code = (
        "import sys, iclbook.cli, iclbook.scheduling, iclbook.distributed, iclbook.report; "
        "sys.exit(any(m == 'dask' or m.startswith(('dask.', 'distributed')) for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


PROGRESS = """# %% [markdown]
# # Progress

# %% tags=["parameters"]
steps = 3

# %%
import json, os, time
for k in range(1, steps + 1):
    with open(os.environ["ICL_PROGRESS_FILE"], "w") as f:
        json.dump({"step": [k, steps]}, f)
    time.sleep(1.5)
json.dump({"steps": steps}, open("metrics.json", "w"))
"""


@pytest.mark.slow
def test_progress_of_a_remote_notebook_reaches_the_client(cluster, tmp_path):
    # the worker relays the notebook's progress file; the client writes it where the progress line reads it
    from iclbook.progress import notebook_progress
    from iclbook.store import store_dir

    address, _ = cluster
    root = project(tmp_path, "progress")
    (root / "notebooks" / "progress.py").write_text(PROGRESS)
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            text = notebook_progress(store_dir(root) / "tmp", "progress")
            if text and text not in seen:
                seen.append(text)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        args = ["--root", str(root), "run", "progress", "--out", str(tmp_path / "o"), "--scheduler", address]
        assert cli.main(args) == 0
    finally:
        stop.set()
        watcher.join()
    assert len(seen) >= 2 and set(seen) <= {"step 1/3", "step 2/3", "step 3/3"}, seen


def test_the_worker_config_unsets_the_nanny_trim_threshold():
    """``iclbook/dask.yaml`` (README: ``DASK_CONFIG`` for hand-started workers) removes the nanny's
    ``MALLOC_TRIM_THRESHOLD_`` and keeps its one-thread BLAS settings."""
    import copy

    import dask
    import distributed  # noqa: F401  (its defaults into dask.config.config)
    import yaml

    path = Path(__file__).parents[2] / "iclbook" / "dask.yaml"
    merged = dask.config.update(copy.deepcopy(dask.config.config), yaml.safe_load(path.read_text()))
    environ = merged["distributed"]["nanny"]["pre-spawn-environ"]
    assert environ["MALLOC_TRIM_THRESHOLD_"] is None and environ["OMP_NUM_THREADS"] == 1
