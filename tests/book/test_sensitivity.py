"""Bands that measure something (``iclbook.sensitivity``), on synthetic sweep points.

* A metric that is the same number at every stored point makes a robust band ``insensitive``.
* A metric that moves keeps its band; the settings that moved it are named.
* ``depends_on`` is checked against the sweep: a setting that moves the metric without being declared is named.
* The report counts an insensitive row apart from the robust ones, and the ledger field is checked.
"""

from __future__ import annotations

import pytest

from iclbook.ledger import Claim, ReportError, evaluate
from iclbook.robustness import robustness_section
from iclbook.sensitivity import INSENSITIVE, band_text, metric_sensitivity, with_sensitivity
from iclbook.sweep import Point, band


def _points(values: dict[tuple[tuple[str, float], ...], float]) -> list[tuple[Point, dict]]:
    """Sweep points ``changed -> value of metric m`` (SE 0.01 everywhere)."""
    return [(Point("nb", {}, changed), {"m": v, "m_se": 0.01}) for changed, v in values.items()]


GRID_FLAT = {(): 1.0, (("M", 64),): 1.0, (("M", 256),): 1.0, (("sigma", 0.2),): 1.0}
GRID_MOVES = {(): 1.0, (("M", 64),): 1.01, (("M", 256),): 0.99, (("sigma", 0.2),): 1.0}


def _claim(**kw) -> Claim:
    d = {"claim": "c", "reported": 1.0, "seed": "000", "section": "§1", "kind": "within_se", "notebook": "nb"}
    d.update({"metric": "m", "se": "m_se", "basis": "predicted", **kw})
    return Claim.from_dict(d, "x.yml")


def test_a_metric_identical_at_every_point_is_insensitive_not_robust() -> None:
    c, pts = _claim(), _points(GRID_FLAT)
    b = band(c, pts, evaluate)
    assert b.label == "robust"
    s = metric_sensitivity(["m"], pts)
    assert s.insensitive and s.moved == () and set(s.still) == {"M", "sigma"}
    relabelled = with_sensitivity(b, s)
    assert relabelled.label == INSENSITIVE and "same at all 4 stored settings" in band_text(relabelled)


def test_a_metric_that_moves_keeps_its_band_and_names_the_setting() -> None:
    c, pts = _claim(), _points(GRID_MOVES)
    s = metric_sensitivity(["m"], pts)
    assert not s.insensitive and s.moved == ("M",) and s.still == ("sigma",)
    assert with_sensitivity(band(c, pts, evaluate), s).label == "robust"


def test_rounding_level_differences_do_not_count_as_moving() -> None:
    pts = _points({(): 1.0, (("M", 64),): 1.0 + 1e-15, (("M", 256),): 1.0 - 1e-15})
    assert metric_sensitivity(["m"], pts).insensitive


def test_a_failed_point_or_a_single_point_proves_nothing() -> None:
    pts = _points({(): 1.0}) + [(Point("nb", {}, (("M", 64),)), "the run failed")]
    s = metric_sensitivity(["m"], pts)
    assert s.n == 1 and not s.insensitive


def test_declared_dependence() -> None:
    pts = _points(GRID_MOVES)
    declared_none = metric_sensitivity(["m"], pts, depends_on=[])
    assert not declared_none.insensitive and declared_none.undeclared == ("M",)
    assert metric_sensitivity(["m"], _points(GRID_FLAT), depends_on=[]).insensitive
    s = metric_sensitivity(["m"], pts, depends_on=["sigma"])
    assert s.undeclared == ("M",) and not s.insensitive
    b = with_sensitivity(band(_claim(), pts, evaluate), s)
    assert b.label == "robust" and "moves with M, not declared" in band_text(b)
    assert metric_sensitivity(["m"], pts, depends_on=["M"]).undeclared == ()


def test_a_predicate_row_is_insensitive_only_if_every_metric_it_reads_stays() -> None:
    pts = [
        (Point("nb", {}, ()), {"a": 1.0, "b": 2.0}),
        (Point("nb", {}, (("M", 64),)), {"a": 1.0, "b": 2.5}),
    ]
    assert not metric_sensitivity(["a", "b"], pts).insensitive
    assert metric_sensitivity(["a"], pts).insensitive


def test_the_robustness_section_counts_insensitive_rows_apart() -> None:
    rows = [
        evaluate(_claim(id="x-01"), {"m": 1.0, "m_se": 0.01}),
        evaluate(_claim(id="x-02"), {"m": 1.0, "m_se": 0.01}),
    ]
    flat = with_sensitivity(
        band(rows[0].claim, _points(GRID_FLAT), evaluate), metric_sensitivity(["m"], _points(GRID_FLAT))
    )
    moves = band(rows[1].claim, _points(GRID_MOVES), evaluate)
    text = "\n".join(robustness_section(rows, {id(rows[0]): flat, id(rows[1]): moves}, []))
    assert "1 robust · 0 fragile" in text and "1 insensitive" in text


def test_depends_on_is_checked_when_the_ledger_is_read() -> None:
    assert _claim(depends_on=["M"]).depends_on == ("M",)
    assert _claim(depends_on=[]).depends_on == ()
    with pytest.raises(ReportError, match="depends_on: 'M' is not of type 'array'"):
        _claim(depends_on="M")
    with pytest.raises(ReportError, match="swept bases"):
        _claim(depends_on=["M"], basis="theorem")
