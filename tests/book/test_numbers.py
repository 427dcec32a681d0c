"""The book's number style (iclbook.numbers) and that the generated report writes no Python-style number."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from iclbook.ledger import evaluate, load_claims, table_cell
from iclbook.numbers import (
    MINUS,
    NAMED_FORMATS,
    fmt_count,
    fmt_fixed,
    fmt_percent,
    fmt_power,
    fmt_sci,
    fmt_se,
    fmt_signed,
    fmt_value,
    format_spec,
)
from iclbook.report import render_paper_report, render_report, rule_powers
from iclbook.verdicts import ledger_verdicts

ROOT = Path(__file__).resolve().parents[2]

#: A number as Python writes it in an exponent form (``1.2e-05``, ``3e+12``, ``4E-7``).
PYTHON_EXPONENT = re.compile(r"\d(?:\.\d+)?[eE][-+]?\d+\b")
CODE_SPAN = re.compile(r"`[^`\n]*`")


@pytest.mark.parametrize(
    "x, text",
    [
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (0.1234, "0.123"),
        (-0.1234, "−0.123"),
        (1.5e-5, "1.5×10⁻⁵"),
        (-1.5e-5, "−1.5×10⁻⁵"),
        (1e-300, "1×10⁻³⁰⁰"),
        (6.02e23, "6.02×10²³"),
        (1234.5, "1.23×10³"),
        (999.9, "1×10³"),
        (0.0001, "0.0001"),
        (12, "12"),
        (-20000, "−20,000"),
        (math.nan, "NaN"),
        (math.inf, "∞"),
        (-math.inf, "−∞"),
    ],
)
def test_a_value_reads_with_three_significant_figures_in_the_book_style(x: float, text: str) -> None:
    assert fmt_value(x) == text


def test_more_figures_group_the_integer_part_from_five_digits() -> None:
    assert fmt_value(12345.678, 6) == "12,345.7"
    assert fmt_value(1234.5678, 6) == "1234.57"
    assert fmt_value(123456.7, 6) == "123,457"
    assert fmt_value(1234567.0, 6) == "1.23457×10⁶"


@pytest.mark.parametrize(
    "n, text",
    [(0, "0"), (7, "7"), (4096, "4096"), (9999, "9999"), (10000, "10,000"), (-123456, "−123,456"), (64.0, "64")],
)
def test_a_count_gets_separators_from_ten_thousand(n: int, text: str) -> None:
    assert fmt_count(n) == text


@pytest.mark.parametrize("bad", [0.5, math.nan, math.inf, "7", True])
def test_a_count_that_is_not_a_whole_number_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="count"):
        fmt_count(bad)


def test_a_signed_value_shows_plus_and_the_minus_sign_and_no_sign_when_it_rounds_to_zero() -> None:
    assert fmt_signed(0.0123) == "+0.0123"
    assert fmt_signed(-0.0123) == "−0.0123"
    assert fmt_signed(0.0) == "0"
    assert fmt_signed(math.inf) == "+∞"
    assert fmt_fixed(-1e-7, 3) == "0.000"
    assert fmt_fixed(-1e-7, 3, sign="+") == "0.000"
    assert fmt_percent(-1e-7, 2, sign="+") == "0.00%"
    assert fmt_percent(-0.9049, 2, sign="+") == "−90.49%"


def test_standard_errors_powers_percentages_and_scientific_notation() -> None:
    assert fmt_se(0.00286) == "0.0029"
    assert fmt_se(2.85969e-6) == "2.9×10⁻⁶"
    assert fmt_power(0.934) == "0.93"
    assert fmt_power(1.0) == "1.00"
    assert fmt_percent(0.1234) == "12.3%"
    assert fmt_percent(123.4, 0) == "12,340%"
    assert fmt_sci(1.2e-5, 3) == "1.20×10⁻⁵"
    assert fmt_sci(0.1631, 4) == "1.631×10⁻¹"
    assert fmt_sci(0.0, 2) == "0.0"
    assert fmt_sci(math.nan) == "NaN"


@pytest.mark.parametrize(
    "x, spec, text",
    [
        (-0.5, ".3f", "−0.500"),
        (12345.678, ".1f", "12,345.7"),
        (4.337e-18, ".2e", "4.34×10⁻¹⁸"),
        (2e-16, ".0e", "2×10⁻¹⁶"),
        (0.0, ".1e", "0.0"),
        (1140.0, ".3g", "1.14×10³"),
        (0.4567, ".1%", "45.7%"),
        (-0.0123, "+.2%", "−1.23%"),
        (0.0123, "+.3f", "+0.012"),
        (64, "d", "64"),
        (40960, ",", "40,960"),
        (12345.5, ",", "12,345.5"),
        (1e-5, ",", "1×10⁻⁵"),
        (7, "", "7"),
        (0.123456, "", "0.123"),
        (0.00286, "se", "0.0029"),
        (0.25, "percent", "25.0%"),
        (12000, "count", "12,000"),
    ],
)
def test_a_python_format_spec_keeps_its_precision_in_the_book_style(x: float, spec: str, text: str) -> None:
    assert format_spec(x, spec) == text


@pytest.mark.parametrize("spec", [">8", ".2x", ".3d", "10.3f", "value!"])
def test_an_unknown_format_spec_is_refused_with_the_accepted_ones(spec: str) -> None:
    with pytest.raises(ValueError, match="named format"):
        format_spec(0.5, spec)


def test_no_format_writes_a_python_exponent_or_a_hyphen_minus() -> None:
    values = [0.0, -1.5e-5, 2.5e-12, -6.02e23, 0.5, -3.0, 1234.5, 99999.0, -7, 10**7]
    specs = ["", ".3f", ".2e", ".3g", ".1%", "+.2%", *NAMED_FORMATS]
    for x in values:
        for spec in specs:
            try:
                text = format_spec(x, spec)
            except ValueError:
                assert spec == "count" and not float(x).is_integer()
                continue
            assert not PYTHON_EXPONENT.search(text) and "-" not in text, (x, spec, text)
            assert text.startswith(MINUS) == (x < 0 and text.strip("0.%") != ""), (x, spec, text)


def _synthetic_metrics(claims) -> dict[str, dict[str, float]]:
    """For every notebook of the ledger, each metric its rules read set to a tiny number (alternately negative),
    each standard error to a tiny positive one: every rule then writes its values in scientific notation."""
    metrics: dict[str, dict[str, float]] = {}
    for i, c in enumerate(claims):
        if not c.notebook:
            continue
        m = metrics.setdefault(c.notebook, {})
        for name in c.rule.names():
            m.setdefault(name, (-1) ** i * 1.234567e-5 * (1 + i % 5))
        for name in c.se:
            m.setdefault(name, 2.5e-7 * (1 + i % 3))
    return metrics


def _without_typed_text(page: str, claims) -> str:
    """``page`` without the ledger's typed text (claims, notes, alternatives, evidence) and code spans: what is
    left of numbers was written by the build."""
    typed = set()
    for c in claims:
        fields = [c.claim, c.section, c.note, c.basis_note, c.no_se, c.diagnosis_note]
        fields += [c.reported] if isinstance(c.reported, str) else []
        fields += [c.alternative.text] if c.alternative is not None else []
        fields += [e.describe() for e in c.evidence]
        for f in fields:
            if f:
                typed |= {table_cell(f), f.replace("\n", " ")}
    for text in sorted(typed, key=len, reverse=True):
        page = page.replace(text, "")
    return CODE_SPAN.sub("", page)


def test_the_generated_report_and_verdicts_write_no_python_style_exponent() -> None:
    """The report pages and the notebook pages' verdict tables, built from the real ledger on metrics tiny enough
    that every rule writes scientific notation: outside code spans and the ledger's typed text, no ``e-05``."""
    claims = load_claims(ROOT / "book" / "reported")
    metrics = _synthetic_metrics(claims)
    rows = [evaluate(c, metrics.get(c.notebook)) for c in claims]
    paper_metrics = {nb: {k: 3 * v for k, v in m.items()} for nb, m in metrics.items()}
    paper = [evaluate(r.claim, paper_metrics[r.claim.notebook]) if r.claim.notebook else None for r in rows]
    powers = {**rule_powers(rows, metrics), **rule_powers([p for p in paper if p is not None], paper_metrics)}
    pages = [render_report(rows, paper=paper, powers=powers)]
    pages += [render_paper_report(s, rows, paper=paper, powers=powers) for s in sorted({c.seed for c in claims})]
    for nb, m in metrics.items():
        table = ledger_verdicts(nb, m, root=ROOT)
        pages.append("\n".join(r["values"] for r in table.rows))
    computed = [r.reproduced for r in rows if isinstance(r.reproduced, float)]
    assert any(abs(x) < 1e-4 for x in computed), "the synthetic metrics must reach scientific notation"
    text = "\n".join(pages)
    assert "×10⁻" in text
    found = sorted({m.group() for m in PYTHON_EXPONENT.finditer(_without_typed_text(text, claims))})
    assert not found, f"Python-style exponents in the generated report: {found[:10]}"
