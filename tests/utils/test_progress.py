"""iclcore.progress: a no-op without the runner's variable, an atomic JSON file with it."""

from __future__ import annotations

import json
import os

import pytest

from iclcore.progress import PROGRESS_ENV, format_progress, read_progress, report_progress


def test_without_the_variable_nothing_is_written(monkeypatch, tmp_path):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert report_progress(step=(1, 10)) is False
    assert list(tmp_path.iterdir()) == []


def test_counters_are_written_atomically_and_formatted(monkeypatch, tmp_path):
    path = tmp_path / "progress.json"
    monkeypatch.setenv(PROGRESS_ENV, str(path))
    assert report_progress(depth=(4, 8), step=(1200, 2000), phase="train")
    assert json.loads(path.read_text()) == {"depth": [4, 8], "step": [1200, 2000], "phase": "train"}
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]  # no temporary file left behind
    assert read_progress(path) == "depth 4/8, step 1200/2000, phase train"
    # rate limit: a second call right away is skipped, unless forced
    assert report_progress(step=(1201, 2000)) is False
    assert report_progress(step=(1201, 2000), force=True)
    assert read_progress(path) == "step 1201/2000"


def test_bad_counters_and_unreadable_files(monkeypatch, tmp_path):
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "p.json"))
    with pytest.raises(ValueError, match="step"):
        report_progress(step=(1, 2, 3))
    with pytest.raises(ValueError, match="flag"):
        report_progress(flag=True)
    assert read_progress(tmp_path / "absent.json") == ""
    (tmp_path / "bad.json").write_text("{not json")
    assert read_progress(tmp_path / "bad.json") == ""
    assert format_progress({"L": 3}) == "L 3"


def test_an_unwritable_path_never_fails_the_computation(monkeypatch, tmp_path):
    monkeypatch.setenv(PROGRESS_ENV, os.path.join(tmp_path, "no", "such", "dir", "p.json"))
    assert report_progress(step=(1, 2)) is False


def test_training_loops_report_their_step(monkeypatch, tmp_path):
    import torch

    from iclcore.models.attention import SoftmaxAttention, sample_iso_contexts, train

    path = tmp_path / "progress.json"
    monkeypatch.setenv(PROGRESS_ENV, str(path))
    model = SoftmaxAttention(4, 8, 2, torch.Generator().manual_seed(0))
    sampler = lambda g: sample_iso_contexts(4, 8, 2, D=4, gen=g, dtype=torch.float32)  # noqa: E731
    train(
        model, sampler, 3, lr=1e-3, gen=torch.Generator().manual_seed(1), optimizer="adam", progress={"model": (2, 8)}
    )
    # The first call writes; later ones only if 0.5 s have passed (a loaded machine), so any step may show.
    assert read_progress(path) in {f"model 2/8, step {k}/3" for k in range(4)}


def test_runner_status_line_shows_the_notebook_counters(monkeypatch, tmp_path):
    """The runner's kernel env points the file into the run's private folder; the status line reads it."""
    import io

    from iclbook.progress import Progress
    from iclbook.worker_env import PROGRESS_ENV as RUNNER_ENV
    from iclbook.worker_env import PROGRESS_FILE

    assert RUNNER_ENV is PROGRESS_ENV  # one definition, in iclcore.progress
    run_dir = tmp_path / f"dmft_softmax-{os.getpid()}-abc"
    run_dir.mkdir()
    monkeypatch.setenv(PROGRESS_ENV, str(run_dir / PROGRESS_FILE))
    report_progress(depth=(4, 8), step=(1200, 2000))
    progress = Progress(3, stream=io.StringIO(), tmp_root=tmp_path)
    progress.start("dmft_softmax")
    progress.start("mp_spectrum")
    line = progress._line()
    assert line.startswith("[0/3] running: dmft_softmax 0s, depth 4/8, step 1200/2000; mp_spectrum 0s")
    assert "out" not in [p.name for p in run_dir.iterdir()]  # the file sits beside the outputs folder, not in it
