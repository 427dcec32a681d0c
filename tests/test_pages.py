"""Generated pages: the reproduction report's comparison rules, errata, API (``iclbook.pages``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from iclbook.pages import Claim, ReportError, compare, load_claims, render_errata, render_report
from iclbook.sphinx_metrics import format_metric


DROP = object()


def claim(kind: str, reported, tolerance=None) -> Claim:
    d = {"notebook": "nb", "metric": "m", "claim": "c", "reported": reported, "seed": "000",
         "section": "§1", "kind": kind}
    if tolerance is not None:
        d["tolerance"] = tolerance
    return Claim.from_dict(d, "test.yml")


@pytest.mark.parametrize(
    "kind, reported, tol, value, status",
    [
        ("rel", 0.576, 0.01, 0.5790, "reproduced"),   # 0.52 % off
        ("rel", 0.576, 0.01, 0.5900, "differs"),      # 2.4 % off
        ("abs", 1.0, 1e-3, 1.0009, "reproduced"),
        ("abs", 1.0, 1e-3, 1.0011, "differs"),
        ("exact", 3, None, 3, "reproduced"),
        ("exact", 3, None, 3.0000001, "differs"),
        ("max", 4.337e-18, 1e-12, 3e-16, "reproduced"),
        ("max", 4.337e-18, 1e-12, 2e-12, "differs"),
        ("min", 0.9, 0.95, 0.97, "reproduced"),
        ("min", 0.9, 0.95, 0.94, "differs"),
        ("qualitative", "zero violations", None, True, "reproduced"),
        ("qualitative", "zero violations", None, False, "differs"),
    ],
)
def test_compare_rules(kind, reported, tol, value, status) -> None:
    assert compare(claim(kind, reported, tol), value).status == status


def test_missing_value_is_missing() -> None:
    assert compare(claim("rel", 1.0, 0.1), None).status == "missing"


def test_qualitative_needs_boolean_metric() -> None:
    row = compare(claim("qualitative", "holds"), 1.0)
    assert row.status == "differs" and "boolean" in row.difference


def test_relative_difference_is_signed_percentage() -> None:
    assert compare(claim("rel", 2.0, 0.5), 2.5).difference == "+25.00%"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": "approx"}, "kind 'approx'"),
        ({"kind": "rel", "tolerance": None}, "numeric tolerance"),
        ({"kind": "rel", "tolerance": 0.1, "reported": "big"}, "numeric reported"),
        ({"colour": "red"}, "unknown fields"),
        ({"metric": DROP}, "missing fields"),
    ],
)
def test_malformed_claims(change, message) -> None:
    d = {"notebook": "nb", "metric": "m", "claim": "c", "reported": 1.0, "seed": "000", "section": "§1", "kind": "max",
         "tolerance": 1.0}
    d.update(change)
    d = {k: v for k, v in d.items() if v is not DROP}
    with pytest.raises(ReportError, match=message):
        Claim.from_dict(d, "x.yml")


def test_load_claims_and_render(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(
        "- {notebook: nb, metric: m, claim: 'a | b', reported: 2.0, seed: '000', section: '§1', kind: rel, tolerance: 0.1}\n"
    )
    claims = load_claims(tmp_path)
    text = render_report([compare(claims[0], 2.1), compare(claims[0], None)])
    assert "1 reproduced, 0 differ, 1 missing" in text
    assert "a \\| b" in text  # table cells are escaped


def test_load_claims_rejects_non_list(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("notebook: nb\n")
    with pytest.raises(ReportError, match="YAML list"):
        load_claims(tmp_path)


def test_errata_in_book_order(tmp_path: Path) -> None:
    for stem in ("zeta", "alpha", "mid"):
        (tmp_path / f"{stem}.md").write_text(f"## {stem}\n")
    text = render_errata(tmp_path, ["mid", "zeta"])
    assert text.index("## mid") < text.index("## zeta") < text.index("## alpha")


@pytest.mark.parametrize(
    "value, spec, text",
    [(True, "", "yes"), (False, "", "no"), (7, "", "7"), (0.123456, "", "0.1235"), (4.337e-18, ".2e", "4.34e-18")],
)
def test_format_metric(value, spec, text) -> None:
    assert format_metric(value, spec) == text


def test_report_tolerance_is_finite() -> None:
    with pytest.raises(ReportError):
        claim("abs", 1.0, math.inf)
