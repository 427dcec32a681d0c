"""The evidence behind a diagnosis (``iclbook.evidence``): schema, and what each diagnosis needs.

* A setting, finite-size, fixed, erratum or reading diagnosis without the references it needs is flagged.
* Every reference resolves: metric keys in the notebook's metrics, a test function, an errata heading, a row id.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iclbook.evidence import EvidenceError, errata_headings, evidence_problems, parse_evidence
from iclbook.ledger import Claim, ReportError

ROOT = Path(__file__).resolve().parents[2]


def _claim(diagnosis: str, evidence=None, row_id: str = "x-01") -> Claim:
    d = {
        "id": row_id,
        "claim": "c",
        "reported": 1.0,
        "seed": "000",
        "section": "§1",
        "kind": "abs",
        "tolerance": 0.1,
        "notebook": "nb",
        "metric": "m",
        "basis": "predicted",
    }
    if diagnosis:
        d.update(diagnosis=diagnosis, diagnosis_note="why")
    if evidence is not None:
        d["evidence"] = evidence
    return Claim.from_dict(d, "x.yml")


def _problems(c: Claim, metrics=None) -> list[str]:
    return evidence_problems(c, ROOT, metrics, {"x-01", "x-02"}, {"An entry"}, lambda ref: ref == "abc123")


@pytest.mark.parametrize("diagnosis", ["setting", "finite-size", "fixed", "erratum", "reading"])
def test_a_diagnosis_without_evidence_is_flagged(diagnosis: str) -> None:
    assert any("needs evidence" in p for p in _problems(_claim(diagnosis)))


def test_an_open_diagnosis_needs_nothing() -> None:
    assert _problems(_claim("open")) == []


SERIES = {"metrics": ["gap_D1", "gap_D2", "gap_D4"], "form": "power law in D (Wishart corrections in 1/D)"}


@pytest.mark.parametrize(
    "diagnosis, evidence",
    [
        ("finite-size", [SERIES]),
        ("setting", [{"sweep": {"M": 64}}]),
        ("setting", [{"metrics": ["gap_D1"]}]),
        ("fixed", [{"commit": "abc123"}, {"metrics": ["gap_D4"]}]),
        ("erratum", [{"test": "tests/book/test_evidence.py::test_an_open_diagnosis_needs_nothing"}]),
        ("reading", [{"errata": "An entry"}, {"row": "x-02"}]),
    ],
)
def test_the_evidence_each_diagnosis_needs(diagnosis: str, evidence: list) -> None:
    metrics = {"gap_D1": 0.4, "gap_D2": 0.2, "gap_D4": 0.1}
    assert _problems(_claim(diagnosis, evidence), metrics) == []


@pytest.mark.parametrize(
    "diagnosis, evidence, message",
    [
        ("finite-size", [{"metrics": ["gap_D1", "gap_D2"], "form": "1/N"}], "at least 3 metrics"),
        ("finite-size", [{"metrics": ["gap_D1", "gap_D2", "gap_D4"]}], "and its form"),
        ("finite-size", [{**SERIES, "metrics": ["gap_D1", "gap_D2", "nope"]}], "not in nb's metrics"),
        ("erratum", [{"test": "tests/book/test_evidence.py::test_missing"}], "does not exist"),
        ("reading", [{"errata": "No such entry"}, {"row": "x-02"}], "no errata entry"),
        ("reading", [{"errata": "An entry"}, {"row": "x-99"}], "no ledger row"),
        ("fixed", [{"commit": "deadbeef"}, {"metrics": ["gap_D1"]}], "no commit"),
        ("fixed", [{"metrics": ["gap_D1"]}], "needs evidence commit+metrics or commit+test"),
    ],
)
def test_unsupported_evidence_is_named(diagnosis: str, evidence: list, message: str) -> None:
    metrics = {"gap_D1": 0.4, "gap_D2": 0.2, "gap_D4": 0.1}
    assert any(message in p for p in _problems(_claim(diagnosis, evidence), metrics))


@pytest.mark.parametrize(
    "value, message",
    [
        ([], "non-empty list"),
        (["tests/x.py::t"], "is a mapping"),
        ([{"test": "t", "row": "x-02"}], "exactly one of"),
        ([{"row": "x-02", "form": "1/N"}], "'form' belongs to a metrics"),
        ([{"metrics": "gap_D1"}], "not well formed"),
    ],
)
def test_malformed_evidence_is_a_one_line_error(value, message) -> None:
    with pytest.raises(EvidenceError, match=message):
        parse_evidence(value, "row x")


def test_evidence_belongs_to_a_diagnosis() -> None:
    with pytest.raises(ReportError, match="evidence belongs to a diagnosis"):
        _claim("", [{"row": "x-02"}])


def test_the_errata_headings_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("## Chapter\n\n### An entry\n\ntext\n")
    assert errata_headings(tmp_path) == {"Chapter", "An entry"}


def test_a_trend_fit_recovers_a_known_intercept() -> None:
    from iclbook.evidence import fit_trend

    x = np.array([1 / 8, 1 / 32, 1 / 128])
    exact = fit_trend(0.02 + 0.5 * x, [1e-3] * 3, x, 0.02)
    assert exact.c == pytest.approx(0.02) and exact.a == pytest.approx(0.5) and exact.chi2 == pytest.approx(0, abs=1e-9)
    assert exact.reaches
    assert not fit_trend(0.02 + 0.5 * x, [1e-3] * 3, x, 0.0).reaches  # intercept 0.02 is 20 SE from the flow


def test_a_trend_fit_intercept_se_matches_its_spread_over_noisy_draws() -> None:
    from iclbook.evidence import fit_trend

    rng = np.random.default_rng(3)
    x, se = np.array([1 / 8, 1 / 32, 1 / 128]), np.array([4e-3, 1.5e-3, 6e-4])
    fits = [fit_trend(0.3 * x + rng.normal(0, se), se, x, 0.0) for _ in range(4000)]
    cs = np.array([f.c for f in fits])
    assert abs(cs.std() / fits[0].c_se - 1) < 0.05  # the stated SE of c is its spread (4000 draws: 1 % error)
    assert 0.99 < np.mean([f.reaches for f in fits]) < 1.0  # false failure near 0.27 %


TREND = {
    "values": ["b1", "b2", "b3"],
    "se": ["s1", "s2", "s3"],
    "x": ["16 / B", "4 / B", "1 / B"],
    "limit": 0,
    "form": "c + a/B",
}


def test_a_trend_reference_is_fitted_on_the_metrics() -> None:
    metrics = {"b1": 0.036, "b2": 0.011, "b3": 0.0022, "s1": 0.0046, "s2": 0.0015, "s3": 0.0006, "B": 128}
    c = _claim("finite-size", [{"trend": TREND}])
    assert _problems(c, metrics) == []
    biased = {**metrics, "b1": 0.066, "b2": 0.041, "b3": 0.0322}  # every point 0.03 higher: no flow limit
    assert any("extrapolates to" in p for p in _problems(c, biased))
    assert any("not in the notebook's metrics" in p for p in _problems(c, {"b1": 1.0}))


def test_a_malformed_trend_is_refused() -> None:
    with pytest.raises(EvidenceError, match="not well formed"):
        parse_evidence([{"trend": {**TREND, "x": ["1"]}}], "row x")


def test_the_report_says_which_diagnoses_lack_their_evidence() -> None:
    from iclbook.ledger import evaluate
    from iclbook.report import evidence_checks, render_report

    bare = evaluate(_claim("setting"), {"m": 5.0})
    backed = evaluate(_claim("setting", [{"metrics": ["m"]}], row_id="x-02"), {"m": 5.0})
    unsupported = evidence_checks(ROOT, [bare, backed], {"nb": {"m": 5.0}})
    assert list(unsupported) == [id(bare)]
    text = render_report([bare, backed], unsupported=unsupported)
    assert "**1 diagnosis(es) lack their evidence**" in text
    assert "**Evidence lacking:** diagnosis 'setting' needs evidence metrics or sweep" in text
    assert "*Evidence:* metrics `m`." in text


def test_a_diagnosis_whose_evidence_fails_at_the_paper_preset_counts_open_there() -> None:
    """The same row: its size series reaches the limit in the quick run and not in the paper run. The quick row is
    explained, the paper row counts open, and the note says what the paper run's evidence lacks."""
    from iclbook.ledger import evaluate
    from iclbook.report import evidence_checks, headline_table, outcome_counts, render_report

    c = _claim("finite-size", [{"trend": TREND}])
    reaches = {"m": 5.0, "b1": 0.036, "b2": 0.011, "b3": 0.0022, "s1": 0.0046, "s2": 0.0015, "s3": 0.0006, "B": 128}
    misses = {**reaches, "b1": 0.066, "b2": 0.041, "b3": 0.0322}  # every point 0.03 higher: no flow limit
    quick, paper = evaluate(c, reaches), evaluate(c, misses)
    assert quick.status == paper.status == "differs"
    unsupported = {**evidence_checks(ROOT, [quick], {"nb": reaches}), **evidence_checks(ROOT, [paper], {"nb": misses})}
    assert list(unsupported) == [id(paper)]
    assert outcome_counts([quick], lacking=set(unsupported))["explained"] == 1
    assert outcome_counts([paper], lacking=set(unsupported))["open"] == 1
    assert outcome_counts([paper])["explained"] == 1  # without the check it would count explained
    table = "\n".join(headline_table([quick], [paper], lacking=set(unsupported)))
    assert "| quick | 1 | 0 | 0 | 1 | 0 | 0 |" in table and "| paper, 1 rows | 1 | 0 | — | 0 | 1 | 0 |" in table
    text = render_report([quick], paper=[paper], unsupported=unsupported)
    assert "**Evidence lacking at the paper preset** (counted open there)" in text
