"""The Measurements page is built from the benchmarks' result files, and a bad file is named, not dropped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from iclbook.measurements import load_results, render_measurements

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _results import write_result  # noqa: E402


def test_a_written_result_is_rendered_with_its_machine_and_goal(tmp_path: Path) -> None:
    folder = tmp_path / "benchmarks" / "results"
    write_result(
        "gpt_step",
        {"speed-up": 1.3125, "steps": 12000, "met": True},
        title="GPT step",
        goals={"speed-up": ">= 1.25"},
        folder=folder,
    )
    page = render_measurements(tmp_path)
    assert "## GPT step" in page and "| speed-up | 1.312 | >= 1.25 |" in page and "| steps | 12,000 |  |" in page
    assert "| met | yes |" in page and "cores" in page and "commit `" in page


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "unreadable"),
        ("[1]", "not a JSON object"),
        ('{"title": "t"}', "missing fields"),
        (b"\xff\xfe", "unreadable"),
    ],
)
def test_a_bad_result_file_is_named_on_the_page(tmp_path: Path, text: str | bytes, reason: str) -> None:
    folder = tmp_path / "benchmarks" / "results"
    folder.mkdir(parents=True)
    (folder / "bad.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    ((_, record),) = load_results(tmp_path)
    assert isinstance(record, str) and "bad.json" in record and reason in record
    assert "bad.json" in render_measurements(tmp_path)


@pytest.mark.parametrize("values", [{"x": float("nan")}, {"x": [1, 2]}])
def test_write_result_refuses_a_value_the_page_cannot_show(tmp_path: Path, values: dict) -> None:
    with pytest.raises(ValueError, match="values\\['x'\\]"):
        write_result("b", values, title="t", folder=tmp_path)


def test_committed_results_all_parse() -> None:
    for _name, record in load_results(ROOT):
        assert isinstance(record, dict), record
        json.dumps(record)


def test_make_test_phases_are_read_from_its_log() -> None:
    from record_make_test import phases_from_log, pytest_counts

    log = "== venv: 46 s\n...\n== notebooks: 540 s\n== tests: 610 s\n== HTML build (in the background):\n== HTML build: 140 s\n= 1,396 passed, 2 skipped in 600.00s =\n"
    assert phases_from_log(log) == {"venv": 46, "notebooks": 540, "tests": 610, "HTML build": 140}
    assert pytest_counts(log) == {"passed": 1396, "failed": 0, "skipped": 2}
    with pytest.raises(ValueError, match="'== tests: N s'"):
        phases_from_log("== notebooks: 5 s\n")
