"""``iclcore.parallel``: the thread budget and the executor of independent configurations."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from iclcore.parallel import THREAD_VARIABLES, map_configs, thread_budget, thread_settings


def square_and_threads(x: int) -> tuple[int, str | None]:
    import os

    return x * x, os.environ.get("OMP_NUM_THREADS")


def test_sequential_and_pooled_results_agree_in_input_order():
    configs = [3, 1, 4, 1, 5]
    seq = map_configs(square_and_threads, configs, 1)
    pooled = map_configs(square_and_threads, configs, 2, cost=lambda c: c)  # longest first
    assert [r[0] for r in seq] == [r[0] for r in pooled] == [9, 1, 16, 1, 25]
    assert {r[1] for r in pooled} == {"1"}  # single-threaded processes


def test_any_executor_can_run_the_calls():
    with ThreadPoolExecutor(2) as ex:
        assert [r[0] for r in map_configs(square_and_threads, [2, 3], executor=ex)] == [4, 9]


def test_thread_budget_and_settings(monkeypatch):
    assert thread_settings(3) == {v: "3" for v in THREAD_VARIABLES}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert thread_budget() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "x")
    assert thread_budget(2) == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert thread_budget() == 1 and thread_budget(4) == 4


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_bad_workers_are_refused_naming_the_parameter(workers):
    with pytest.raises((TypeError, ValueError), match="^workers:"):
        map_configs(square_and_threads, [1], workers)
    with pytest.raises((TypeError, ValueError), match="^threads:"):
        thread_settings(workers)


def test_parallel_imports_only_the_standard_library():
    code = "import sys, iclcore.parallel; print(sorted(m for m in ('numpy', 'torch', 'scipy') if m in sys.modules))"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    )


def pid_and_threads(x: int) -> tuple[int, int, str | None]:
    import os

    return x, os.getpid(), os.environ.get("OMP_NUM_THREADS")


def test_tasks_of_two_threads_share_the_budget_in_processes_of_two_threads():
    out = map_configs(pid_and_threads, [1, 2, 3, 4], 4, threads=2)
    assert [r[0] for r in out] == [1, 2, 3, 4]
    assert {r[2] for r in out} == {"2"}  # each process sized for its tasks' threads
    assert len({r[1] for r in out}) <= 2  # 4 threads of budget / 2 threads per task


def test_a_task_gets_no_more_threads_than_the_budget():
    out = map_configs(pid_and_threads, [1, 2], 2, threads=lambda c: 8)
    assert {r[2] for r in out} == {"2"} and len({r[1] for r in out}) == 1


@pytest.mark.parametrize(
    ("threads", "message"),
    [(0, "threads"), (True, "threads"), (lambda c: 0, "threads of task 0 of squares"), (lambda c: "2", "task 0")],
)
def test_bad_task_threads_are_refused_naming_the_task(threads, message):
    with pytest.raises((TypeError, ValueError), match=message):
        map_configs(square_and_threads, [1, 2], 2, label="squares", threads=threads)


def test_dask_resources_are_used_when_declared_and_refused_when_short():
    from iclcore.parallel import check_dask_threads

    assert check_dask_threads({}, [1, 1], "t") is False  # today's clusters: no resource, one-thread tasks
    assert check_dask_threads({"w1": 4.0}, [1, 4], "t") is True
    with pytest.raises(
        ValueError, match=r"task 1 of gpt needs 4 threads, but no worker declares the resource 'threads'"
    ):
        check_dask_threads({}, [1, 4], "gpt")
    with pytest.raises(ValueError, match=r"needs 4 threads, but the largest worker declares threads=2"):
        check_dask_threads({"w1": 2.0, "w2": 1.0}, [4], "gpt")


def test_local_cluster_shapes_and_their_bounds():
    from iclbook.distributed import SchedulerError, local_cluster_shape, local_workers

    assert local_cluster_shape("local:3", 2) == (3, 1) and local_cluster_shape("local:2x4", 2) == (2, 4)
    assert local_cluster_shape("tcp://h:1", 2) is None and local_workers("local:2x4", 2) == 2
    for bad in ("local:0x2", "local:2x0", "local:2xa", "local:x2", "local:3x3"):  # 9 threads > 4 per core x 2
        with pytest.raises(SchedulerError, match="--scheduler local:"):
            local_cluster_shape(bad, 2)
