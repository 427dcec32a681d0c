"""The ledger field ``spread`` (iclbook.spread): whether a row's standard error includes the run-to-run spread.

The rows whose verdict rests on one training run or one Monte Carlo draw must say so; a rule restated on
independent runs must read metrics the notebook writes, and the report shows its verdict beside the rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclbook.ledger import Claim, ReportError, evaluate, load_claims, load_metrics
from iclbook.report import render_paper_report

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = load_claims(ROOT / "book" / "reported")
GENERATED = ROOT / "book" / "generated"
QUICK_RULE_METRICS = Path(__file__).parent / "fixtures" / "quick_rule_metrics.json"

#: Predicted rows whose standard error is computed within one run (batch means along one SGD trajectory, the
#: spread over the evaluation prompts of one trained model) or whose verdict is exact on one random draw.
SINGLE_RUN_ROWS = (
    "dmft_width-12",
    "dmft_width-16",
    "dmft_width-19",
    "dmft_width-20",
    "mp_softmax-14",
    "encdec-25",
)

BASE = {
    "id": "x-01",
    "claim": "c",
    "reported": 0.0,
    "seed": "000",
    "section": "1",
    "kind": "predicate",
    "predicate": "bias <= 3 * bias_se",
    "stochastic": True,
    "se": "bias_se",
    "basis": "predicted",
    "notebook": "nb",
}


def _claim(spread: dict) -> Claim:
    return Claim.from_dict({**BASE, "spread": spread}, "x.yml")


def _quick_metrics(notebook: str) -> dict:
    built = load_metrics(GENERATED, notebook)
    return built if built is not None else json.loads(QUICK_RULE_METRICS.read_text()).get(notebook, {})


@pytest.mark.parametrize("row", SINGLE_RUN_ROWS)
def test_single_run_rows_state_their_spread(row: str) -> None:
    c = next(c for c in CLAIMS if c.id == row)
    assert c.spread is not None, f"{c.label}: one run, but no `spread` says whether its error covers the spread"
    assert c.spread.source != "seeds", f"{c.label}: one run cannot have an SE over seeds"


def test_every_stochastic_predicted_row_states_its_spread() -> None:
    """A predicted row graded with a standard error says whether that error includes the run-to-run spread."""
    bad = [c.label for c in CLAIMS if c.basis == "predicted" and c.stochastic and c.spread is None]
    assert not bad, f"predicted rows with a standard error but no `spread`: {bad}"


@pytest.mark.parametrize("row", [c.id for c in CLAIMS if c.spread is not None])
def test_every_spread_reads_metrics_the_notebook_writes(row: str) -> None:
    """The row's standard error and the rule on independent runs name keys of the stored quick metrics, and that
    rule gives a verdict there."""
    c = next(c for c in CLAIMS if c.id == row)
    metrics = _quick_metrics(c.notebook)
    lacking = [k for k in (*c.se, *c.spread.names()) if k not in metrics]
    assert not lacking, f"{c.label}: spread names metrics the quick build lacks: {lacking}"
    if c.spread.runs_rule:
        assert c.spread.runs_verdict(metrics) is not None, f"{c.label}: the rule on independent runs gives no verdict"


@pytest.mark.parametrize(
    ("source", "phrase"),
    [
        ("seeds", "SE over 4 independent runs"),
        ("separate-runs", "one run; the SE adds the run-to-run SD of 4 separate runs"),
    ],
)
def test_a_spread_over_runs_needs_the_number_of_runs(source: str, phrase: str) -> None:
    with pytest.raises(ReportError, match="names n"):
        _claim({"source": source, "reason": "r"})
    assert _claim({"source": source, "reason": "r", "n": 4}).spread.phrase() == phrase


def test_the_verdict_at_other_seeds_is_shown_beside_the_rule() -> None:
    c = _claim({"source": "single-run", "reason": "r", "checked": "holds at 1 of 4 seeds (quick)"})
    assert c.spread.phrase() == "one run; its error leaves out the run-to-run spread; holds at 1 of 4 seeds (quick)"


def test_one_run_takes_no_number_of_seeds() -> None:
    with pytest.raises(ReportError, match="n belongs to a spread from seeds or separate runs"):
        _claim({"source": "within-run", "reason": "r", "n": 4})


@pytest.mark.parametrize(
    ("spread", "match"),
    [
        ({"source": "several", "reason": "r"}, "spread.source"),
        ({"source": "single-run"}, "'reason' is a required property"),
        ({"source": "single-run", "reason": " "}, "spread.reason"),
        ({"source": "seeds", "reason": "r", "n": 1}, "integer >= 2"),
        ({"source": "single-run", "reason": "r", "runs": {"rule": "a < b", "n": 4}}, "'at' is a required"),
        ({"source": "single-run", "reason": "r", "runs": {"rule": "import os", "n": 4, "at": "x"}}, "runs.rule"),
        ({"source": "single-run", "reason": "r", "runs": {"rule": "a < b", "n": 4, "at": "x", "z": 1}}, "z"),
    ],
)
def test_a_malformed_spread_is_refused_naming_the_field(spread: dict, match: str) -> None:
    with pytest.raises(ReportError, match=match):
        _claim(spread)


def test_an_absent_row_has_no_spread() -> None:
    row = {"claim": "c", "reported": "r", "seed": "000", "section": "1", "kind": "absent", "basis": "absent"}
    with pytest.raises(ReportError, match="no standard error to have a spread"):
        Claim.from_dict({**row, "basis_note": "later", "spread": {"source": "single-run", "reason": "r"}}, "x.yml")


RUNS = {"rule": "abs(bias_runs) <= 3 * bias_runs_se", "n": 4, "at": "N = 16"}


@pytest.mark.parametrize(
    ("metrics", "held"),
    [
        ({"bias_runs": 0.01, "bias_runs_se": 0.005}, True),
        ({"bias_runs": -0.02, "bias_runs_se": 0.005}, False),
        ({"bias_runs": 0.01}, None),
    ],
)
def test_the_rule_on_independent_runs_is_graded_beside_the_rows_own(metrics: dict, held: bool | None) -> None:
    c = _claim({"source": "single-run", "reason": "batch means", "runs": RUNS})
    row = evaluate(c, {"bias": 0.05, "bias_se": 0.01, **metrics})
    assert row.status == "differs"
    assert row.runs_held is held


def test_the_report_shows_the_spread_beside_the_rule_and_its_reason_in_the_notes() -> None:
    c = _claim({"source": "single-run", "reason": "Batch means within one run.", "runs": RUNS})
    row = evaluate(c, {"bias": 0.05, "bias_se": 0.01, "bias_runs": 0.01, "bias_runs_se": 0.005})
    page = render_paper_report("000", [row])
    line = next(x for x in page.splitlines() if x.startswith("| x-01 |"))
    assert line.rstrip(" |").endswith(
        "; *one run; its error leaves out the run-to-run spread* (over 4 runs at N = 16: holds)"
    ), line
    assert "*Spread:* one run; its error leaves out the run-to-run spread. Batch means within one run." in page


def test_the_report_counts_the_rows_by_where_their_error_gets_the_spread() -> None:
    from iclbook.report import render_report

    rows = [
        evaluate(_claim({"source": "single-run", "reason": "one run"}), {"bias": 0.01, "bias_se": 0.01}),
        evaluate(_claim({"source": "seeds", "reason": "four runs", "n": 4}), {"bias": 0.01, "bias_se": 0.01}),
        evaluate(Claim.from_dict({**BASE, "id": "x-02"}, "x.yml"), {"bias": 0.01, "bias_se": 0.01}),
    ]
    page = render_report(rows, details=False)
    assert "Run-to-run spread: 2 rows say where their standard error gets the spread" in page
    assert "1 have a standard error over independent runs; 0 rest on one run and add" in page
    assert "1 rest on one run whose error leaves that spread out" in page


def test_the_paper_preset_cell_shows_the_verdict_on_independent_runs_there() -> None:
    c = _claim({"source": "single-run", "reason": "Batch means within one run.", "runs": RUNS})
    quick = evaluate(c, {"bias": 0.05, "bias_se": 0.01, "bias_runs": 0.01, "bias_runs_se": 0.005})
    paper = evaluate(c, {"bias": 0.05, "bias_se": 0.01, "bias_runs": 0.05, "bias_runs_se": 0.005})
    page = render_paper_report("000", [quick], paper=[paper])
    line = next(x for x in page.splitlines() if x.startswith("| x-01 |"))
    cells = [x.strip() for x in line.split("|")]
    assert any(x.startswith("✗ differs") and x.endswith("(over 4 runs at N = 16: fails)") for x in cells), cells
