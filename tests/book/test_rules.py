"""The ledger's rule objects (``iclbook.ledger.Rule``): how they grade, how they read and what their digest covers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iclbook.ledger import Claim, evaluate
from iclbook.verdicts import ledger_verdicts


def _claim(kind: str, **fields) -> Claim:
    d = {"id": "nb-01", "notebook": "nb", "claim": "c", "reported": 2.0, "seed": "000", "section": "§1"}
    d.update({"kind": kind, "basis": "predicted", **fields})
    return Claim.from_dict(d, "nb.yml")


RULES = {
    "exact": ({"metric": "m"}, "exact", "value == 2"),
    "rel": ({"metric": "m", "tolerance": 0.1}, "rel (0.1)", "|value - 2| / |2| <= 0.1"),
    "abs": ({"metric": "m", "tolerance": 0.5}, "abs (0.5)", "|value - 2| <= 0.5"),
    "max": ({"metric": "m", "tolerance": 3.0}, "max (3)", "value <= 3"),
    "min": ({"metric": "m", "tolerance": 1.5}, "min (1.5)", "value >= 1.5"),
    "within_se": (
        {"metric": "m", "se": "m_se", "z": 2, "discretisation": 0.01},
        "within_se (\\|Δ\\| ≤ 2·SE + 0.01)",
        "|value - 2| <= 2 SE + 0.01",
    ),
    "predicate": (
        {"predicate": "m > 1 and m_se < 1", "reported": "m above one"},
        "predicate `m > 1 and m_se < 1`",
        "m > 1 and m_se < 1",
    ),
}


@pytest.mark.parametrize("kind", RULES)
def test_each_rule_describes_itself_in_the_report_and_as_a_formula(kind: str) -> None:
    fields, described, formula = RULES[kind]
    rule = _claim(kind, **fields).rule
    assert (rule.describe(), rule.formula()) == (described, formula)


@pytest.mark.parametrize("kind", ["exact", "rel", "abs", "max", "min", "within_se"])
def test_a_single_metric_rule_holds_exactly_on_its_acceptance_interval(kind: str) -> None:
    """The interval the power of a rule is computed on (``acceptance``) is the set of values the rule grades as holding."""
    claim = _claim(kind, **RULES[kind][0])
    se = {"m_se": 0.1}
    lo, hi = claim.rule.acceptance(se)
    bounds = [v for v in (lo, hi) if v is not None]
    grid = [x for x in np.linspace(0.5, 4.0, 351).tolist() if all(abs(x - b) > 1e-9 for b in bounds)]
    exact_bounds = bounds if kind in ("exact", "max", "min") else []  # the others' bounds are rounded
    for x in grid + exact_bounds:
        inside = (lo is None or x >= lo) and (hi is None or x <= hi)
        assert (evaluate(claim, {"m": x, **se}).status == "reproduced") is inside, (kind, x, lo, hi)


def test_the_digest_covers_the_fields_that_decide_and_nothing_else() -> None:
    base = _claim("rel", metric="m", tolerance=0.1)
    assert base.rule.digest == _claim("rel", metric="m", tolerance=0.1, note="other words", id="nb-02").rule.digest
    assert base.rule.digest == _claim("rel", metric="m", tolerance=0.1, basis="theorem").rule.digest
    changed = [
        _claim("rel", metric="m", tolerance=0.2),
        _claim("rel", metric="m2", tolerance=0.1),
        _claim("rel", metric="m", tolerance=0.1, reported=2.5),
        _claim("abs", metric="m", tolerance=0.1),
    ]
    assert len({base.rule.digest, *(c.rule.digest for c in changed)}) == 1 + len(changed)


def test_the_verdict_table_grades_with_the_rule_and_carries_its_digest(tmp_path: Path) -> None:
    (tmp_path / "book" / "reported").mkdir(parents=True)
    (tmp_path / "book" / "reported" / "nb.yml").write_text(
        "- {id: nb-01, notebook: nb, metric: m, claim: c, reported: 2.0, seed: '000', section: s, kind: abs,\n"
        "   tolerance: 0.5, basis: predicted}\n"
    )
    table = ledger_verdicts("nb", {"m": 2.4}, tmp_path)
    claim = _claim("abs", metric="m", tolerance=0.5)
    assert [(r["id"], r["status"], r["rule"], r["digest"]) for r in table.rows] == [
        ("nb-01", "reproduced", claim.rule.formula(), claim.rule.digest)
    ]
