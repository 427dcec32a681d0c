"""The reliability replay (``replay_reliability.py``) and its in-repository cases agree, without running it."""

from __future__ import annotations

import sys
from pathlib import Path

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
