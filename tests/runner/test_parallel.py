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
