"""The figure style module: saving figures and metrics (``iclcore.plotting``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from iclcore.plotting import (  # noqa: E402
    FORMATS_ENV,
    figure_formats,
    finish_figure,
    metrics_problem,
    save_figure,
    use_style,
    write_metrics,
)


def test_save_figure_writes_png_and_pdf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORMATS_ENV, raising=False)  # `make test` sets it for nbval's re-execution
    use_style()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    paths = save_figure(fig, "line", tmp_path)
    plt.close(fig)
    assert [p.name for p in paths] == ["line.png", "line.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("name", ["", "a b", "../x", "fig.png"])
def test_save_figure_rejects_bad_names(tmp_path: Path, name: str) -> None:
    fig = plt.figure()
    with pytest.raises(ValueError, match="name"):
        save_figure(fig, name, tmp_path)
    plt.close(fig)


def test_write_metrics_converts_numpy(tmp_path: Path) -> None:
    assert (
        write_metrics(
            {"a": np.float64(0.5), "b": np.int64(3), "c": np.bool_(True), "d": np.array(2.0), "e": np.str_("cpu")},
            tmp_path,
        )
        is None
    )
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"a": 0.5, "b": 3, "c": True, "d": 2.0, "e": "cpu"}


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (math.nan, ValueError, "finite"),
        (np.float64(math.inf), ValueError, "finite"),
        ("x" * 201, ValueError, "string of 201 characters: at most 200"),
        ([1.0], TypeError, "numbers, booleans or short strings"),
        (None, TypeError, "numbers, booleans or short strings"),
    ],
)
def test_write_metrics_rejects(tmp_path: Path, bad, error, message: str) -> None:
    with pytest.raises(error, match=message):
        write_metrics({"key": bad}, tmp_path)
    assert not (tmp_path / "metrics.json").exists()


def test_write_metrics_rejects_an_empty_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        write_metrics({"": 1.0}, tmp_path)


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"a": 1, "b": 0.5, "c": True, "d": "x" * 200}, ""),
        ({"a": "x" * 201}, "metrics['a'] is a string of 201 characters"),
        ({"a": None}, "metrics['a'] has type NoneType"),
        ({"a": math.inf}, "metrics['a'] is inf"),
        ([1.0], "not a JSON object"),
    ],
)
def test_metrics_problem(data, problem: str) -> None:
    assert (metrics_problem(data) == "") is (problem == "")
    assert problem in metrics_problem(data)


def test_figure_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    monkeypatch.setenv(FORMATS_ENV, "png")
    assert [p.name for p in save_figure(fig, "only_png", tmp_path)] == ["only_png.png"]
    assert not (tmp_path / "only_png.pdf").exists()
    assert [p.suffix for p in save_figure(fig, "both", tmp_path, formats="pdf, png")] == [".png", ".pdf"]
    monkeypatch.delenv(FORMATS_ENV)
    assert figure_formats() == ("png", "pdf")
    with pytest.raises(ValueError, match=FORMATS_ENV):
        figure_formats("svg")
    plt.close(fig)


def test_finish_figure_puts_a_legend_on_every_axes_and_saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORMATS_ENV, raising=False)
    use_style()
    fig, axes = plt.subplots(1, 2)
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [0, i], label=f"line {i}")
    assert finish_figure(fig, "two", legend_fontsize=7, directory=tmp_path) is None
    assert [ax.get_legend().get_texts()[0].get_fontsize() for ax in axes] == [7.0, 7.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.pdf", "two.png"]
    plt.close(fig)
