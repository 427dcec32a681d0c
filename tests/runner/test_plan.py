"""``icl-book plan``: list scheduling of notebooks and their inner tasks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iclbook import cli
from iclbook.notebooks import NotebookError
from iclbook.plan import Task, load_tasks, simulate, tasks_from_manifest

FIXTURES = Path(__file__).parents[1] / "fixtures"

# notebook A: serial part 10 s, then three inner tasks of 6 s; B: 8 s; C: 3 s (worked out by hand below)
TASKS = [
    Task("A", "", 10, "t"),
    *(Task("A", f"m {i}", 6, "t") for i in (1, 2, 3)),
    Task("B", "", 8, "t"),
    Task("C", "", 3, "t"),
]


@pytest.mark.parametrize(
    ("workers", "wall"),
    [
        (1, 39.0),  # everything in a row
        (2, 22.0),  # A 0-10 | B 0-8, C 8-11; inner 10-16, 11-17, 16-22
        (4, 16.0),  # the critical path: A's serial part and one inner task
    ],
)
def test_list_schedule_by_hand(workers, wall):
    plan = simulate(TASKS, workers)
    assert plan.wall == wall
    assert (plan.critical, plan.critical_notebook, plan.total) == (16.0, "A", 39.0)
    assert plan.wall >= max(plan.critical, plan.total / workers)
    assert [t.seconds for t in plan.longest(2)] == [10, 8]


# notebook D: serial part 2 s, then a first map_configs call of tasks 5 and 1 s, then a second of 4 and 4 s;
# E: 6 s. The second batch waits for the whole first one (the notebook's code between the calls needs it).
BATCHED = [
    Task("D", "", 2, "t", 0),
    Task("D", "a 1", 5, "t", 1),
    Task("D", "a 2", 1, "t", 1),
    Task("D", "b 1", 4, "t", 2),
    Task("D", "b 2", 4, "t", 2),
    Task("E", "", 6, "t", 0),
]


@pytest.mark.parametrize(
    ("workers", "wall"),
    [
        (1, 22.0),  # everything in a row
        (2, 11.0),  # D 0-2, a1 2-7, b1 7-11 | E 0-6, a2 6-7, b2 7-11
        (3, 11.0),  # the critical path 2 + 5 + 4: a2 2-3 leaves its worker idle until batch b
    ],
)
def test_batches_of_one_notebook_run_in_order(workers, wall):
    plan = simulate(BATCHED, workers)
    assert (plan.critical, plan.critical_notebook, plan.total) == (11.0, "D", 22.0)
    assert plan.wall == wall
    one_batch = simulate([Task(t.notebook, t.label, t.seconds, t.source) for t in BATCHED], 4)
    assert one_batch.critical == 7.0 and one_batch.wall == 7.0  # 2 + max(5, 1, 4, 4): no barrier


@pytest.mark.parametrize("workers", [0, -3, True])
def test_bad_workers_are_refused(workers):
    with pytest.raises(NotebookError, match="^--workers:"):
        simulate(TASKS, workers)


def test_manifest_durations_are_cpu_seconds():
    m = {
        "notebook": "nb",
        "seconds": 50.0,
        "threads": 2,
        "cpu": 90.0,
        "inner": [{"label": "runs", "wall": 40.0, "seconds": [30.0, 30.0], "cpu": [25.0, 35.0], "where": "processes"}],
    }
    serial, *inner = tasks_from_manifest(m)
    assert serial.seconds == 30.0 and [t.seconds for t in inner] == [25.0, 35.0]
    assert [t.name for t in inner] == ["nb[runs 1]", "nb[runs 2]"]
    del m["cpu"]  # a Dask run: wall outside the calls, times the threads
    assert tasks_from_manifest(m)[0].seconds == 20.0


def test_cli_reads_the_store_else_the_hint_and_refuses_zero_workers(tmp_path, capsys):
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "demo_project", root)
    (root / "notebooks" / "seconds.json").write_text(
        json.dumps({"quick": {"demo": 7.0, "second": 100.0}, "inner": {"quick": {"second": [40.0, 40.0]}}})
    )
    entry = root / ".icl-store" / "entries" / "k1"
    entry.mkdir(parents=True)
    inner = [{"label": "m", "wall": 9.0, "seconds": [3.0, 6.0], "cpu": [3.0, 6.0], "where": "serial"}]
    (entry / ".icl-run.json").write_text(
        json.dumps(
            {
                "key": "1" * 64,
                "files": {},
                "notebook": "demo",
                "preset": "quick",
                "seconds": 12.0,
                "cpu": 12.0,
                "inner": inner,
            }
        )
    )
    tasks, missing = load_tasks(root, "quick")
    assert sorted((t.name, t.seconds, t.source) for t in tasks) == [
        ("demo", 3.0, "store"),
        ("demo[m 1]", 3.0, "store"),
        ("demo[m 2]", 6.0, "store"),
        ("second", 20.0, "hint"),
        ("second[inner 1]", 40.0, "hint"),
        ("second[inner 2]", 40.0, "hint"),
    ]
    assert missing == []
    assert cli.main(["--root", str(root), "plan", "--preset", "quick", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "predicted wall time: 1.0 min (60 s)" in out and "critical path: 1.0 min (60 s) (second" in out
    assert "notebooks/seconds.json (no quick run in the store)" in out and "1 notebook(s) from the store" in out
    assert cli.main(["--root", str(root), "plan", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["icl-book: error: --workers: expected a number of workers >= 1, got 0"]


def test_write_hint_puts_the_store_durations_into_the_committed_hint(tmp_path, capsys):
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "demo_project", root)
    hint_path = root / "notebooks" / "seconds.json"
    hint_path.write_text(json.dumps({"paper": {"demo": 7.0, "second": 100.0}, "inner": {"paper": {"demo": [5.0]}}}))
    entry = root / ".icl-store" / "entries" / "k1"
    entry.mkdir(parents=True)
    inner = [
        {"label": "m", "wall": 9.0, "seconds": [3.0, 6.0], "cpu": [3.0, 6.0], "where": "serial"},
        {"label": "n", "wall": 2.0, "seconds": [2.0], "cpu": [2.0], "where": "serial"},  # a second call
    ]
    (entry / ".icl-run.json").write_text(
        json.dumps(
            {
                "key": "1" * 64,
                "files": {},
                "notebook": "demo",
                "preset": "paper",
                "seconds": 14.0,
                "threads": 1,
                "cpu": 14.0,
                "inner": inner,
            }
        )
    )
    assert cli.main(["--root", str(root), "plan", "--write-hint", "--workers", "2"]) == 0
    assert "wrote the paper durations of 1 notebook(s)" in capsys.readouterr().out
    hint = json.loads(hint_path.read_text())
    assert hint["paper"] == {"demo": 14.0, "second": 100.0}  # 'second' has no run: its entry stays
    assert hint["inner"]["paper"]["demo"] == {"tasks": [3.0, 6.0, 2.0], "serial": 3.0, "batches": [2, 1]}
    assert set(hint["measured"]["paper"]) == {"demo"} and hint["measured"]["paper"]["demo"]["date"].endswith("Z")
    tasks, _ = load_tasks(root, "paper", ["demo"])
    (entry / ".icl-run.json").unlink()  # the hint alone now gives the same tasks
    assert [(t.seconds, t.batch) for t in load_tasks(root, "paper", ["demo"])[0]] == [
        (t.seconds, t.batch) for t in tasks
    ]
    assert [t.batch for t in tasks] == [0, 1, 1, 2]
    assert cli.main(["--root", str(root), "plan", "--write-hint", "--preset", "quick"]) == 2
    assert capsys.readouterr().err.strip() == "icl-book: error: plan --write-hint: no quick run in the store to write"


# notebook W: serial 2 s, then two inner tasks of 30 s (one thread) that declare 2 threads, measured 1.5x
# faster on 2 threads; notebook N: one 10 s task of one thread (worked out by hand below)
WIDE = [
    Task("W", "", 2, "t"),
    *(Task("W", f"g {i}", 30, "t", 1, 2, ((2, 1.5),)) for i in (1, 2)),
    Task("N", "", 10, "t"),
]


@pytest.mark.parametrize(
    ("workers", "per_worker", "wall", "critical"),
    [
        (1, 1, 72.0, 32.0),  # no worker has 2 threads: one thread each, 2 + 30 + 30 + 10 in a row
        (2, 1, 40.0, 32.0),  # W 0-2 | N 0-10; g1 2-32, g2 10-40
        (1, 2, 50.0, 22.0),  # W 0-2 beside N 0-10; g1 (2 threads, 20 s) waits for N: 10-30, g2 30-50
        (2, 2, 30.0, 22.0),  # W and N on worker 0 (the fullest it fits); g1 2-22 on worker 1, g2 10-30 on worker 0
    ],
)
def test_tasks_of_several_threads_by_hand(workers, per_worker, wall, critical):
    plan = simulate(WIDE, workers, per_worker)
    assert (plan.wall, plan.critical) == (wall, critical)
    assert plan.wall >= max(plan.critical, plan.total / (workers * per_worker))


def test_a_task_gets_its_speed_up_at_the_largest_measured_count_not_above_its_threads():
    t = Task("W", "g", 60, "t", 1, 8, ((2, 1.5), (4, 2.0)))
    assert (t.on_threads(1).seconds, t.on_threads(1).threads) == (60, 1)
    assert (t.on_threads(3).seconds, t.on_threads(3).threads) == (40, 3)
    assert (t.on_threads(16).seconds, t.on_threads(16).threads) == (30, 8)


def test_declared_threads_apply_only_when_they_match_the_inner_tasks():
    from iclbook.plan import with_declared_threads

    tasks = [Task("W", "", 2, "t"), Task("W", "g 1", 30, "t"), Task("W", "g 2", 30, "t")]
    wide = with_declared_threads(tasks, {"declared": [2, 1], "speedup": {"2": 1.5}})
    assert [t.threads for t in wide] == [1, 2, 1] and wide[1].speedup == ((2, 1.5),)
    assert with_declared_threads(tasks, {"declared": [2], "speedup": {}}) == tasks  # stale hint: ignored
    assert with_declared_threads(tasks, None) == tasks


@pytest.mark.parametrize(("option", "value"), [("--threads-per-worker", "0"), ("--workers", "-1")])
def test_plan_refuses_a_worker_shape_below_one(option, value, capsys):
    assert cli.main(["plan", option, value]) == 2
    assert f"{option}: expected a number of" in capsys.readouterr().err
