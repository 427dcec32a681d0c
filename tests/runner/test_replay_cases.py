"""The reliability replay (``replay_reliability.py``) and its in-repository cases agree, without running it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import replay_reliability as replay  # noqa: E402


def test_every_review_row_is_replayed_or_says_why_not() -> None:
    cases = replay.load_cases()
    assert replay.CASES.resolve().is_relative_to(HERE.parents[1])  # the cases are data of this repository
    assert len(cases) == 62 and {"c01", "c41", "F1", "F20", "c42", "c49"} <= set(cases)
    assert replay.coverage_problems(cases) == []
    assert replay.review_verdict(cases, "F1/F2/F5") == "defect D3, acceptable"
    assert replay.review_verdict(cases, "c45/c46") == "defect I2"


@pytest.mark.slow
def test_the_fault_table_replays_with_no_defect(capsys) -> None:
    """Every replayed row of the fault table is ``ok`` (about 2 minutes, mostly waiting on kernel starts).

    The summary line (rows, defects, time, rows not replayed and why) is printed to the terminal.
    """
    proc = subprocess.run(
        [sys.executable, str(HERE / "replay_reliability.py")], capture_output=True, text=True, timeout=1200
    )
    summary = [line for line in proc.stdout.splitlines() if line.startswith("replay:")]
    with capsys.disabled():
        print("\n" + (summary[-1] if summary else "replay: no summary line"))
    defects = [line for line in proc.stdout.splitlines() if " DEFECT " in f" {line} "]
    assert proc.returncode == 0 and summary and " 0 defect(s)" in summary[-1], (
        "\n".join(defects) or proc.stdout[-3000:] + proc.stderr[-2000:]
    )
