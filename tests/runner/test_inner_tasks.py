"""Inner tasks of a notebook (``iclcore.parallel.map_configs``) on a Dask cluster: same bits as locally.

The independent trainings inside a notebook are tasks of the executor that runs
the notebook. Checked here: ``map_configs`` on a ``LocalCluster`` (reached through the scheduler
address in ``ICL_DASK_SCHEDULER``, as a notebook's kernel reaches it under ``icl-book run
--scheduler``) returns pickles byte-identical to the local run, for ``gd_probe``'s model function
``dmft_softmax``'s and ``flexformer_decoder``'s at tiny sizes; the durations and the progress line; a worker killed
mid-task (Dask retries the task); an unreachable scheduler (one line); and (slow) a whole notebook
under ``icl-book run --scheduler local:2`` whose metrics equal the local run's byte for byte while
its manifest shows its inner tasks ran on Dask.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from iclcore import parallel  # noqa: E402
from iclcore.gd.depth_probe import ProbeSweep, _probe_run  # noqa: E402
from iclcore.models.attention import SoftmaxRun, softmax_run  # noqa: E402
from iclcore.parallel import SCHEDULER_ENV, SchedulerUnreachable, map_configs  # noqa: E402
from iclcore.progress import INNER_FILE, PROGRESS_ENV, read_inner_tasks, read_progress  # noqa: E402

TINY_PROBE = ProbeSweep(lsa_steps=3, gpt_steps=3, gpt_width=8, gpt_heads=2, n_probe=8, n_rich=4, m_rich=3, n_boot=4)
TINY_SOFTMAX = [SoftmaxRun(4, 8, 4, 8, L, mlp, 4, 1e-3, 3, 6, 0) for mlp in (False, True) for L in (1, 2)]


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two single-thread workers in this process (fast to start)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_gd_probe_and_softmax_models_on_a_local_cluster_are_byte_identical(cluster, monkeypatch, tmp_path):
    probe = [(TINY_PROBE, k, 10, s) for k in ("lsa", "gpt") for s in (0, 1)]
    local = [pickle.dumps(replace(r, cpu=0.0)) for r in map_configs(_probe_run, probe)]  # cpu: its own CPU time
    local_sm = [pickle.dumps(r) for r in map_configs(softmax_run, TINY_SOFTMAX)]
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.json"))
    remote = map_configs(_probe_run, probe, cost=lambda c: c[1] == "gpt", label="probe")
    remote = [pickle.dumps(replace(r, cpu=0.0)) for r in remote]
    remote_sm = [pickle.dumps(r) for r in map_configs(softmax_run, TINY_SOFTMAX, label="softmax")]
    assert remote == local and remote_sm == local_sm
    records = read_inner_tasks(tmp_path / INNER_FILE)
    assert [(r["label"], r["where"], len(r["seconds"]), len(r["cpu"])) for r in records] == [
        ("probe", "dask", 4, 4),
        ("softmax", "dask", 4, 4),
    ]
    assert all(s > 0 for r in records for s in r["seconds"])
    assert read_progress(tmp_path / "progress.json") == "tasks 4/4"


def arrays(results: list) -> list[bytes]:
    """The bytes of every array in ``softmax_run`` results (the loss curve and the held-out errors)."""
    return [a.tobytes() for pair in results for a in pair]


def flexformer_jobs() -> list:
    import torch

    from iclcore.lsq.tasks import TaskConfig
    from iclcore.models.flexformer import Flexformer, FlexformerConfig, PreconditionerJob, prompt_sampler

    cfg = TaskConfig(K=4, M=8, r=2, sigma=0.0, lam=0.0, cond=2.0, target="ridge")
    return [
        PreconditionerJob(
            Flexformer(FlexformerConfig(K=4, rank=2, n_heads=h, d_k=2), torch.Generator().manual_seed(0)),
            prompt_sampler(cfg),
            3,
            4,
            8,
            1e-3,
            1,
        )
        for h in (0, 1)
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_flexformer_trainings_on_a_local_cluster_are_byte_identical(cluster, monkeypatch):
    from iclcore.models.flexformer import train_preconditioner_job

    def bits(out):
        return [p.detach().numpy().tobytes() for model, _ in out for p in model.parameters()] + [
            res.loss.tobytes() for _, res in out
        ]

    local = bits(map_configs(train_preconditioner_job, flexformer_jobs()))
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    assert bits(map_configs(train_preconditioner_job, flexformer_jobs())) == local


def test_serial_calls_record_their_tasks_and_progress(monkeypatch, tmp_path):
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.json"))
    map_configs(softmax_run, TINY_SOFTMAX[:2], label="serial")
    (record,) = read_inner_tasks(tmp_path / INNER_FILE)
    assert (record["label"], record["where"], len(record["seconds"])) == ("serial", "serial", 2)
    # each time is stored rounded to 1 ms: the sum of n rounded times may exceed the rounded wall by n/2 ms + 0.5 ms
    rounding = 0.0005 * (len(record["seconds"]) + 1)
    assert record["wall"] + rounding >= sum(record["seconds"]) > 0


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_local_processes_give_the_serial_bits(monkeypatch, tmp_path):
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.json"))
    serial = map_configs(softmax_run, TINY_SOFTMAX[:2])
    pooled = map_configs(softmax_run, TINY_SOFTMAX[:2], workers=2, label="pool")
    assert arrays(serial) == arrays(pooled)
    assert read_inner_tasks(tmp_path / INNER_FILE)[-1]["where"] == "processes"
    assert read_progress(tmp_path / "progress.json") == "tasks 2/2"


def test_unreachable_scheduler_is_one_line(monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://127.0.0.1:9")
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 2.0)
    t = time.monotonic()
    with pytest.raises(SchedulerUnreachable) as err:
        map_configs(abs, [-1, 2])
    assert time.monotonic() - t < 8
    msg = str(err.value)
    assert "\n" not in msg and "tcp://127.0.0.1:9" in msg and SCHEDULER_ENV in msg


def die_once(marker: str) -> int:
    """Kill the worker process on the first call (the marker file does not exist yet), else return 42."""
    if not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return 42


@pytest.mark.slow
def test_a_worker_lost_mid_task_is_retried_by_dask(monkeypatch, tmp_path):
    import cloudpickle
    from distributed import LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import the tests
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        monkeypatch.setenv(SCHEDULER_ENV, c.scheduler_address)
        assert map_configs(die_once, [str(tmp_path / "marker")]) == [42]
    assert (tmp_path / "marker").read_text() == "died"


INNER = """# %% [markdown]
# # Inner tasks

# %% tags=["parameters"]
steps = 3

# %%
import json
import os
from iclcore.models.attention import SoftmaxRun, softmax_run
from iclcore.parallel import map_configs

runs = [SoftmaxRun(4, 8, 4, 8, L, mlp, 4, 1e-3, steps, 6, 0) for mlp in (False, True) for L in (1, 2)]
out = map_configs(softmax_run, runs, 2, label="softmax models")
metrics = {f"loss_{i}_{k}": float(v) for i, (loss, err) in enumerate(out) for k, v in enumerate([*loss, *err])}
json.dump(metrics, open("metrics.json", "w"))
trim = "MALLOC_TRIM_THRESHOLD_"  # a Dask nanny's setting: neither the kernel nor a task process may inherit it
json.dump({"kernel": os.environ.get(trim), "tasks": map_configs(os.getenv, [trim, trim], 2)}, open("env.json", "w"))
"""


@pytest.mark.slow
def test_a_notebook_inner_tasks_on_dask_give_the_local_metrics(tmp_path, monkeypatch):
    from iclbook import cli

    fixtures = Path(__file__).parents[1] / "fixtures" / "demo_project"
    roots = {}
    for name in ("local", "remote"):
        roots[name] = tmp_path / name
        shutil.copytree(fixtures, roots[name])
        (roots[name] / "notebooks" / "inner.py").write_text(INNER)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # as an earlier nanny in this process leaves it
    assert cli.main(["--root", str(roots["local"]), "run", "inner", "--out", str(tmp_path / "a"), "-j", "1"]) == 0
    args = ["--root", str(roots["remote"]), "run", "inner", "--out", str(tmp_path / "b"), "--scheduler", "local:2"]
    assert cli.main(args) == 0
    a, b = tmp_path / "a" / "inner", tmp_path / "b" / "inner"
    assert (a / "metrics.json").read_bytes() == (b / "metrics.json").read_bytes()
    where = {k: json.loads((d / ".icl-run.json").read_text())["inner"] for k, d in (("a", a), ("b", b))}
    assert [(r["where"], len(r["seconds"])) for r in where["a"]] == [("processes", 4), ("processes", 2)]
    assert [(r["where"], len(r["seconds"])) for r in where["b"]] == [("dask", 4), ("dask", 2)]
    # glibc's default allocator everywhere: a fixed trim threshold slows numpy-heavy notebooks (worker_env)
    for d in (a, b):
        assert json.loads((d / "env.json").read_text()) == {"kernel": None, "tasks": [None, None]}


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")  # its in-process tasks set torch's (process-wide) threads: restored
def test_tasks_of_several_threads_run_on_workers_that_declare_the_resource(cluster, monkeypatch, tmp_path):
    from distributed import LocalCluster

    from iclcore.parallel import THREADS_RESOURCE

    probe = [(TINY_PROBE, "gpt", 10, s) for s in (0, 1)]
    local = [len(r.records) for r in map_configs(_probe_run, probe)]
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)  # workers without the resource: refused at once
    with pytest.raises(ValueError, match="task 0 of probe needs 2 threads, but no worker declares the resource"):
        map_configs(_probe_run, probe, label="probe", threads=2)
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None, resources={THREADS_RESOURCE: 2}
    ) as wide:
        monkeypatch.setenv(SCHEDULER_ENV, wide.scheduler_address)
        monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.json"))
        runs = map_configs(_probe_run, probe, label="probe", threads=2)
    assert [len(r.records) for r in runs] == local
    (record,) = read_inner_tasks(tmp_path / INNER_FILE)
    assert (record["where"], record["threads"]) == ("dask", [2, 2])
