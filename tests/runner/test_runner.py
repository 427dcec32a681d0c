"""The notebook runner: parameters, presets, failures, cache (``iclbook``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from iclbook import cli
from iclbook.notebooks import NotebookError, coerce, discover, read_notebook, toc_order
from iclbook.runs import RunRequest, make_requests
from iclbook.scheduling import expected_seconds, longest_first, preset_literals, timed_seconds
from iclbook.store import STAMP, cache_key, store_dir

ROOT = Path(__file__).resolve().parents[2]


def run_cli(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), *args])


# --- static reading of notebooks ------------------------------------------------------------


def test_read_parameters_and_presets(demo_project: Path) -> None:
    nb = read_notebook(demo_project / "notebooks" / "demo.py")
    assert nb.parameters == {"n": 50, "omega": 1.0, "label": "sine", "fail": False}
    assert nb.presets == {"paper": {"n": 500}}
    assert nb.resolve("paper")["n"] == 500
    assert nb.resolve("quick", {"omega": "2.5", "n": "7", "fail": "yes"}) == {
        "n": 7,
        "omega": 2.5,
        "label": "sine",
        "fail": True,
    }


def test_book_order_follows_toc(demo_project: Path) -> None:
    assert toc_order(demo_project / "_toc.yml") == ["second", "demo"]
    assert [nb.name for nb in discover(demo_project)] == ["second", "demo"]


def test_unknown_parameter_lists_parameters(demo_project: Path) -> None:
    nb = read_notebook(demo_project / "notebooks" / "demo.py")
    with pytest.raises(NotebookError, match=r"no parameter 'nn'.*n \(default 50\), omega"):
        nb.resolve("quick", {"nn": "3"})


def test_unknown_preset(demo_project: Path) -> None:
    nb = read_notebook(demo_project / "notebooks" / "second.py")
    with pytest.raises(NotebookError, match="no preset 'paper'"):
        nb.resolve("paper")


@pytest.mark.parametrize(
    "raw, default, expected",
    [("3", 1, 3), (" -3 ", 1, -3), ("0.5", 1.0, 0.5), ("false", True, False), ("x", "y", "x")],
)
def test_coerce(raw: str, default, expected) -> None:
    assert coerce(raw, default, "p") == expected
    assert type(coerce(raw, default, "p")) is type(expected)


@pytest.mark.parametrize("raw, default", [("2.5", 1), ("3e2", 1), ("abc", 1.0), ("maybe", True)])
def test_coerce_rejects(raw: str, default) -> None:
    with pytest.raises(NotebookError, match="parameter 'p'"):
        coerce(raw, default, "p")


@pytest.mark.parametrize(
    "cell, message",
    [
        ("n = 3\nm = n + 1\n", "not a literal"),
        ("n, m = 1, 2\n", "only `name = literal`"),
        ("n = {1: 2}\n", "must be an int, float, bool, str or None"),
        ("n = [1, [2]]\n", "lists are flat"),
    ],
)
def test_malformed_parameters_cell(tmp_path: Path, cell: str, message: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text('# %% tags=["parameters"]\n' + cell)
    with pytest.raises(NotebookError, match=message):
        read_notebook(path)


def test_preset_with_unknown_parameter(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text('# %% tags=["parameters"]\nn = 1\n\n# %% tags=["presets"]\nPRESETS = {"paper": {"m": 2}}\n')
    with pytest.raises(NotebookError, match=r"unknown parameters \['m'\]"):
        read_notebook(path)


# --- cache key ---------------------------------------------------------------------------------


def test_cache_key_covers_inputs(demo_project: Path) -> None:
    nb = read_notebook(demo_project / "notebooks" / "demo.py")
    out = demo_project / "book" / "generated" / "demo"
    base = cache_key(RunRequest(nb, nb.resolve(), "quick", out), demo_project)
    assert base == cache_key(RunRequest(nb, nb.resolve(), "quick", out), demo_project)
    assert base != cache_key(RunRequest(nb, nb.resolve("quick", {"n": "51"}), "quick", out), demo_project)
    assert base != cache_key(RunRequest(nb, nb.resolve(), "paper", out), demo_project)
    (demo_project / "iclcore" / "module.py").write_text("X = 2\n")
    changed_lib = cache_key(RunRequest(nb, nb.resolve(), "quick", out), demo_project)
    assert changed_lib != base
    (demo_project / "requirements.lock").write_text("numpy==1\n")
    assert cache_key(RunRequest(nb, nb.resolve(), "quick", out), demo_project) != changed_lib


# --- execution (starts real kernels: a few seconds each) -----------------------------------


@pytest.mark.slow
def test_run_cache_hit_and_miss(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(demo_project, "run", "-j", "2") == 0
    out = demo_project / "book" / "generated"
    metrics = json.loads((out / "demo" / "metrics.json").read_text())
    assert metrics["n"] == 50 and metrics["ok"] is True
    assert (out / "demo" / "demo_fig.png").exists() and (out / "demo" / "demo_fig.pdf").exists()
    assert json.loads((out / "second" / "metrics.json").read_text()) == {"k_squared": 9}
    capsys.readouterr()

    # nothing changed: nothing executes
    assert run_cli(demo_project, "run") == 0
    assert "0 executed, 2 cached" in capsys.readouterr().out

    # a change in iclcore/ re-executes every notebook: the demo notebooks import iclcore.plotting, which this
    # iclcore/ folder lacks, so (unresolved import) their keys cover the whole folder
    (demo_project / "iclcore" / "module.py").write_text("X = 3\n")
    assert run_cli(demo_project, "run") == 0
    assert "2 executed, 0 cached" in capsys.readouterr().out

    # a parameter override re-executes that notebook only, with the new value
    assert run_cli(demo_project, "run", "second", "-p", "k", "5") == 0
    assert "1 executed" in capsys.readouterr().out
    assert json.loads((out / "second" / "metrics.json").read_text()) == {"k_squared": 25}

    # --force re-executes despite a valid cache
    assert run_cli(demo_project, "run", "second", "-p", "k", "5", "--force") == 0
    assert "1 executed, 0 cached" in capsys.readouterr().out


@pytest.mark.slow
def test_failing_notebook_is_reported_and_others_run(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = demo_project / "elsewhere"
    code = run_cli(demo_project, "run", "-p", "fail", "true", "--out", str(out), "demo")
    captured = capsys.readouterr()
    assert code == 1
    assert "FAILED" in captured.err and "demo" in captured.err
    assert "RuntimeError: asked to fail" in captured.err
    assert not (out / "demo" / ".icl-run.json").exists()  # a failed run is never cached


@pytest.mark.slow
def test_failure_does_not_stop_other_notebooks(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (demo_project / "notebooks" / "broken.py").write_text(
        '# %% tags=["parameters"]\nx = 1\n\n# %%\nraise ValueError("broken on purpose")\n'
    )
    code = run_cli(demo_project, "run", "-j", "2", "second", "broken")
    captured = capsys.readouterr()
    assert code == 1
    assert "1 executed, 0 cached, 1 failed" in captured.out
    assert "broken: code cell" in captured.err and "ValueError: broken on purpose" in captured.err
    assert (demo_project / "book" / "generated" / "second" / "metrics.json").exists()


def test_cli_unknown_parameter_exit_code(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(demo_project, "run", "demo", "-p", "nope", "1") == 2
    err = capsys.readouterr().err
    assert "no parameter 'nope'" in err and "omega (default 1.0)" in err


def test_cli_unknown_notebook(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(demo_project, "run", "nonexistent") == 2
    assert "unknown notebook" in capsys.readouterr().err


def test_list_shows_parameters_and_presets(demo_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(demo_project, "list") == 0
    out = capsys.readouterr().out
    assert out.index("second") < out.index("demo") and "paper run" in out and "omega" in out
    assert run_cli(demo_project, "list", "demo") == 0
    out = capsys.readouterr().out
    assert "paper" in out and "500" in out and "omega" in out


def test_make_requests_requires_preset_everywhere(demo_project: Path) -> None:
    notebooks = discover(demo_project)
    with pytest.raises(NotebookError, match="no preset 'paper'"):
        make_requests(notebooks, demo_project / "out", "paper")


# --- the real project ----------------------------------------------------------------------


def test_every_project_notebook_is_well_formed() -> None:
    notebooks = discover(ROOT)
    assert notebooks, "the project has no notebooks"
    in_toc = set(toc_order(ROOT / "_toc.yml"))
    for nb in notebooks:
        assert nb.name in in_toc, f"notebook {nb.name} has no page in _toc.yml"
        assert "paper" in nb.presets, f"notebook {nb.name} has no 'paper' preset"


def test_longest_expected_run_starts_first(demo_project: Path) -> None:
    # LPT scheduling: the store's newest record of a notebook beats the committed hint; unknown ones go last
    reqs = make_requests(discover(demo_project), demo_project / "out")
    names = [r.notebook.name for r in reqs]
    assert longest_first(reqs, {}) == list(range(len(reqs)))  # nothing known: the book's order
    hint = demo_project / "notebooks" / "seconds.json"
    hint.write_text(json.dumps({"quick": {names[0]: 1.0, names[-1]: 9.0}}))
    assert expected_seconds(demo_project) == {(names[0], "quick"): 1.0, (names[-1], "quick"): 9.0}
    assert [names[i] for i in longest_first(reqs, expected_seconds(demo_project))][:2] == [names[-1], names[0]]
    entry = store_dir(demo_project) / "entries" / ("1" * 64)
    entry.mkdir(parents=True)
    exact = preset_literals(demo_project)[(names[0], "quick")]
    manifest = {"key": "1" * 64, "files": {}, "notebook": names[0], "preset": "quick", "seconds": 10.0, "threads": 2}
    (entry / STAMP).write_text(json.dumps(dict(manifest, param_literals=exact)))
    assert expected_seconds(demo_project)[(names[0], "quick")] == 20.0  # CPU seconds: wall time x threads
    assert [names[i] for i in longest_first(reqs, expected_seconds(demo_project))][0] == names[0]
    hint.write_text("not json")  # a broken hint only loses the order
    assert expected_seconds(demo_project) == {(names[0], "quick"): 20.0}


def test_store_time_only_from_runs_at_the_preset_parameters(demo_project: Path) -> None:
    # a sweep point is stored as a "quick" run at other parameters: its time must not stand for the preset's
    name = discover(demo_project)[0].name
    exact = preset_literals(demo_project)[(name, "quick")]
    other = dict(exact, **{next(iter(exact)): "123456"})
    entries = store_dir(demo_project) / "entries"
    for key, lits, sec in (("preset", exact, 3.0), ("point", other, 50.0)):
        (entries / key).mkdir(parents=True)
        stamp = entries / key / STAMP
        manifest = {"key": "1" * 64, "files": {}, "notebook": name, "preset": "quick", "seconds": sec}
        stamp.write_text(json.dumps(dict(manifest, threads=1, param_literals=lits)))
    os.utime(entries / "point" / STAMP, (2e9, 2e9))  # the sweep point is the newest record
    assert timed_seconds(demo_project)[(name, "quick")] == (3.0, "store")
    (entries / "preset" / STAMP).unlink()  # only off-preset runs left: the hint (none here) or nothing
    assert (name, "quick") not in timed_seconds(demo_project)


def test_nbval_copies_longest_run_first(tmp_path: Path) -> None:
    from iclbook.nbval_copies import copy_for_nbval

    gen = tmp_path / "generated"
    for name, seconds, threads in [("short", 2.0, 1), ("long", 30.0, 1), ("wide", 10.0, 4), ("nostamp", None, 1)]:
        (gen / name).mkdir(parents=True)
        (gen / name / f"{name}.ipynb").write_text("{}")
        if seconds is not None:
            (gen / name / STAMP).write_text(json.dumps({"seconds": seconds, "threads": threads}))
    (gen / "empty").mkdir()  # a folder without an executed notebook is not copied
    copies = copy_for_nbval(gen, tmp_path / "nbval")
    assert [c.parent.name for c in copies] == ["0_wide", "1_long", "2_short", "3_nostamp"]
    assert all(c.read_text() == "{}" for c in copies)
