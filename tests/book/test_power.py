"""The power of a ledger rule against its stated alternative (``iclbook.power``).

* The analytic power of an interval rule is the normal tail mass outside the interval; for a ``within_se``
  rule it is ``Phi(-(z SE + d - delta)/SE) + Phi(-(z SE + d + delta)/SE)``.
* The simulated power of a predicate agrees with the analytic power of the same rule within 4 Monte Carlo
  standard errors (seeded).
* Malformed alternatives are one-line errors naming the field.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from iclbook.ledger import Claim, ReportError
from iclbook.power import Alternative, AlternativeError, interval_power, rule_power, simulated_power


def _claim(**kw) -> Claim:
    d = {"claim": "c", "reported": 1.0, "seed": "002", "section": "§1", "kind": "within_se", "notebook": "nb"}
    d.update(kw, basis=kw.get("basis", "predicted"))
    return Claim.from_dict(d, "test.yml")


@pytest.mark.parametrize("delta, se, z, d", [(0.1, 0.03, 3.0, 0.0), (0.05, 0.02, 3.0, 0.01), (0.3, 0.2, 2.0, 0.0)])
def test_within_se_power_is_the_two_tailed_normal_formula(delta, se, z, d) -> None:
    half = z * se + d
    formula = norm.cdf(-(half - delta) / se) + norm.cdf(-(half + delta) / se)
    assert interval_power(1.0 + delta, se, 1.0 - half, 1.0 + half) == pytest.approx(formula, abs=1e-12)


def test_deterministic_power_is_zero_or_one() -> None:
    assert interval_power(1.2, 0.0, 0.9, 1.1) == 1.0
    assert interval_power(1.05, 0.0, 0.9, 1.1) == 0.0
    assert interval_power(2.0, 0.0, None, 1.5) == 1.0


def test_power_grows_with_the_alternative_and_falls_with_the_error() -> None:
    powers = [interval_power(1 + delta, 0.05, 0.85, 1.15) for delta in (0.0, 0.1, 0.2, 0.3)]
    assert powers == sorted(powers) and powers[0] < 0.01 and powers[-1] > 0.97
    assert interval_power(1.2, 0.01, 0.85, 1.15) > interval_power(1.2, 0.1, 0.85, 1.15)


@pytest.mark.parametrize("delta", [0.05, 0.1, 0.2])
def test_simulated_power_matches_the_analytic_power_of_the_same_rule(delta) -> None:
    metrics = {"x": 1.0, "x_se": 0.04}
    analytic = rule_power(_claim(metric="x", se="x_se"), Alternative("off", shift=delta), metrics)
    as_predicate = _claim(kind="predicate", predicate="abs(x - 1.0) <= 3 * x_se", se="x_se", stochastic=True)
    sim = rule_power(as_predicate, Alternative("off", metric="x", shift=delta), metrics, np.random.default_rng(7))
    assert analytic.method == "analytic" and sim.method == "simulation"
    assert abs(sim.power - analytic.power) <= 4 * sim.mc_error + 1e-9
    assert sim.mc_error <= 0.5 / math.sqrt(100_000) + 1e-12


def test_simulated_power_of_a_one_sided_rule_at_its_boundary() -> None:
    # "x - 3 se > 0.5" against x = 0.5 exactly: fails unless x > 0.5 + 3 se, i.e. with probability Phi(3).
    p, err = simulated_power("x - 3 * x_se > 0.5", "x", 0.5, 0.1, {"x_se": 0.1}, np.random.default_rng(1))
    assert abs(p - norm.cdf(3)) <= 4 * max(err, 1e-3)


def test_a_shift_is_tried_on_both_sides_and_the_weaker_side_counts() -> None:
    # A rule that only bounds the value from above has no power against a shift downwards.
    c = _claim(kind="max", tolerance=1.05, metric="x", reported=1.0)
    p = rule_power(c, Alternative("off by 0.1", shift=0.1, se=0.01), {"x": 1.0})
    assert p.means == (1.1, 0.9) and p.power == pytest.approx(0.0, abs=1e-12)


def test_rel_and_value_alternatives() -> None:
    c = _claim(kind="rel", tolerance=0.01, metric="x", reported=2.0)
    p = rule_power(c, Alternative("3 % off", rel=0.03, se=0.0), {"x": 2.0})
    assert p.means == (2.06, 1.94) and p.power == 1.0 and p.method == "deterministic"
    c = _claim(metric="x", se="x_se", reported=-1.0)
    p = rule_power(c, Alternative("slope -0.9", value=-0.9), {"x": -1.0, "x_se": 0.02})
    # |x + 1| <= 3 SE = 0.06 against x ~ N(-0.9, 0.02): fails unless x < -0.94, i.e. with probability Phi(2).
    assert p.means == (-0.9,) and p.power == pytest.approx(norm.cdf(2) + norm.cdf(-8), abs=1e-12)


def test_expressions_for_null_se_and_value() -> None:
    c = _claim(kind="predicate", predicate="abs(a - b) <= 3 * s", se="s", stochastic=True)
    alt = Alternative("off by 10 %", metric="a", center="b", rel=0.1, se="s")
    assert alt.names() == ["a", "b", "s"]
    p = rule_power(c, alt, {"a": 1.0, "b": 1.0, "s": 0.01})
    assert p.power > 0.999


@pytest.mark.parametrize(
    "d, message",
    [
        ({"shift": 0.1}, "needs a text"),
        ({"text": "t", "shift": 0.1, "rel": 0.1}, "at most one of"),
        ({"text": "t", "shift": 0}, "non-zero"),
        ({"text": "t", "shift": 0.1, "se": -1}, ">= 0"),
        ({"text": "t", "shift": 0.1, "colour": 1}, "unknown fields"),
        ({"text": "t", "value": "__import__('os')"}, "not allowed"),
        ("off by 0.1", "must be a mapping"),
    ],
)
def test_malformed_alternatives_are_one_line_errors(d, message) -> None:
    with pytest.raises(AlternativeError, match=message):
        Alternative.from_dict(d, "row x")


def test_ledger_row_reads_its_alternative() -> None:
    c = _claim(metric="x", se="x_se", alternative={"text": "off by 0.1", "shift": 0.1})
    assert c.alternative == Alternative("off by 0.1", shift=0.1)
    with pytest.raises(ReportError, match="at most one of"):
        _claim(metric="x", se="x_se", alternative={"text": "t", "value": 1, "shift": 1})


def test_an_alternative_in_words_only_has_no_power() -> None:
    c = _claim(metric="x", se="x_se", alternative={"text": "a 2 % bias of the estimate"})
    with pytest.raises(AlternativeError, match="words only"):
        rule_power(c, c.alternative, {"x": 1.0, "x_se": 0.1})


def test_missing_metric_or_null_is_named() -> None:
    c = _claim(kind="predicate", predicate="y > 0", no_se="n/a", reported="text")
    with pytest.raises(AlternativeError, match="center"):
        rule_power(c, Alternative("t", metric="y", shift=1.0, se=0.0), {"y": 1.0})
    with pytest.raises(AlternativeError, match="no numeric metric"):
        rule_power(c, Alternative("t", metric="y", value=1.0, se="y_se"), {"y": 1.0})


def test_the_mp_ratio_alternative_of_the_ks_row_is_the_ks_distance_it_states() -> None:
    """mp_softmax-04 states its alternative as a KS distance: that of MP(1.05 gamma) from MP(gamma) at gamma = 1/4
    (the least sensitive of the notebook's four ratios), for the continuous part the notebook compares."""
    from pathlib import Path

    from iclbook.ledger import load_claims
    from iclcore.spectra.mp import mp_atom, mp_cdf, mp_edges

    def continuous_cdf(x, g):
        a = mp_atom(g)
        return (mp_cdf(x, g) - a) / (1 - a)

    def ks(g, h):
        lo, hi = min(mp_edges(g)[0], mp_edges(h)[0]), max(mp_edges(g)[1], mp_edges(h)[1])
        x = np.linspace(lo, hi, 4001)
        return float(np.max(np.abs(continuous_cdf(x, g) - continuous_cdf(x, h))))

    distances = {g: min(ks(g, 1.05 * g), ks(g, 0.95 * g)) for g in (0.25, 0.5, 1.0, 2.0)}
    assert min(distances, key=distances.get) == 0.25
    row = next(
        c for c in load_claims(Path(__file__).resolve().parents[2] / "book" / "reported") if c.id == "mp_softmax-04"
    )
    assert row.alternative.value == pytest.approx(distances[0.25], abs=2e-4)
