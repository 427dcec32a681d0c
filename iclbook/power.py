"""The power of a ledger rule against its stated alternative.

A `predicted` row of the ledger (``book/reported/*.yml``) is a reproduction only if its rule could fail: it
must reject the plausible alternative that would change the paper's conclusion ("exponent off by 0.1",
"ratio off by 3 %", "slope -0.9 instead of -1"). Each such row declares that alternative in its
``alternative`` field:

``metric``
    the statistic the alternative moves (default: the row's metric);
``shift`` / ``rel`` / ``value``
    the alternative's mean of that statistic: ``center ± shift``, ``center·(1 ± rel)`` (both signs; the power is
    the smaller of the two) or ``value`` (one point);
``center``
    the statistic's value under the paper's claim (default: the row's numeric ``reported`` value);
``se``
    its standard error under the row's error model: a metric key, a number (``0``: a deterministic
    computation, error below the rule's resolution) or an expression over metrics (default: the row's
    first ``se`` key);
``text``
    the alternative in words (alone, without a mean: an alternative whose power the ledger's error model
    cannot compute; such a row is not `predicted`).

``center``, ``value`` and ``se`` may be numbers, metric keys or expressions over metrics in the predicate
language of :func:`iclbook.predicates.parse_predicate`.

Error model: the statistic is normal, ``X ~ N(mu, se)`` with ``mu`` the alternative's mean, every other metric
at its computed value. The power is ``P(the rule fails)``:

* kinds ``within_se``, ``abs``, ``rel``, ``max``, ``min`` accept an interval ``[lo, hi]`` of ``X``, so
  ``power = Phi((lo - mu)/se) + Phi((mu - hi)/se)`` (:func:`interval_power`); for ``within_se``
  ``[lo, hi] = r ± (z SE + d)``, so against ``mu = r + delta`` the power is
  ``Phi(-(z SE + d - delta)/SE) + Phi(-(z SE + d + delta)/SE)``;
* kind ``predicate``: by simulation, the predicate evaluated on ``n`` draws of ``X``
  (:func:`simulated_power`; Monte Carlo error ``sqrt(p (1 - p) / n)``);
* ``se = 0``: the rule evaluated at ``mu`` (power 1 if it rejects the alternative, else 0).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from .numbers import fmt_fixed, fmt_power, fmt_se, fmt_value
from .predicates import ReportError, Semantics, evaluate_tree, parse_predicate

__all__ = [
    "POWER_MIN",
    "Alternative",
    "Power",
    "interval_power",
    "rule_metric_names",
    "rule_power",
    "simulated_power",
]

#: The smallest power a `predicted` rule may have against its stated alternative.
POWER_MIN = 0.8
#: Draws of the statistic for a predicate rule (Monte Carlo error at most 0.5 / sqrt(N_DRAWS) = 0.0016).
N_DRAWS = 100_000
_MEANS = ("shift", "rel", "value")
_FIELDS = ("text", "metric", "center", "se", *_MEANS)


class AlternativeError(ValueError):
    """A malformed ``alternative`` field."""


def _check_alternative(d: dict[str, Any], where: str) -> None:
    """The checks of :meth:`Alternative.from_dict`: known fields, a text, at most one mean, well-formed values."""
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        raise AlternativeError(f"{where}: alternative has unknown fields {unknown}; allowed: {list(_FIELDS)}")
    if not str(d.get("text") or "").strip():
        raise AlternativeError(f"{where}: alternative needs a text (the alternative in words)")
    given = [k for k in _MEANS if d.get(k) is not None]
    if len(given) > 1:
        raise AlternativeError(f"{where}: alternative takes at most one of {_MEANS}, got {given}")
    for k in ("shift", "rel"):
        if k in given and not (_is_number(d[k]) and d[k] != 0):
            raise AlternativeError(f"{where}: alternative {k} must be a non-zero number")
    for k in ("center", "se", "value"):
        v = d.get(k)
        if v is not None and not (_is_number(v) or (isinstance(v, str) and v.strip())):
            raise AlternativeError(f"{where}: alternative {k} must be a number, a metric key or an expression")
        if isinstance(v, str):
            _parse(v, f"{where}: alternative {k}")
    if _is_number(d.get("se")) and d["se"] < 0:
        raise AlternativeError(f"{where}: alternative se must be >= 0")


@dataclass(frozen=True)
class Alternative:
    """The alternative a rule must reject: the statistic ``metric`` with mean ``center ± shift``,
    ``center (1 ± rel)`` or ``value`` and standard error ``se`` (numbers, metric keys or expressions)."""

    text: str
    metric: str = ""
    center: float | str | None = None
    se: float | str | None = None
    shift: float | None = None
    rel: float | None = None
    value: float | str | None = None

    @classmethod
    def from_dict(cls, d: Any, where: str = "alternative") -> Alternative:
        """Check and read an ``alternative`` mapping; a malformed one is an :class:`AlternativeError` naming ``where``."""
        if not isinstance(d, dict):
            raise AlternativeError(f"{where}: alternative must be a mapping with text and one of {_MEANS}")
        _check_alternative(d, where)
        return cls(
            text=str(d["text"]).strip(),
            metric=str(d.get("metric") or ""),
            center=d.get("center"),
            se=d.get("se"),
            shift=None if d.get("shift") is None else float(d["shift"]),
            rel=None if d.get("rel") is None else float(d["rel"]),
            value=d.get("value"),
        )

    def names(self) -> list[str]:
        """The metric keys the alternative reads (its statistic and those in ``center``, ``se``, ``value``)."""
        out = [self.metric] if self.metric else []
        for v in (self.center, self.se, self.value):
            if isinstance(v, str):
                out += _names(_parse(v, "alternative"))
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Power:
    """A rule's power against its alternative: ``power`` (the smaller over the alternative's means),
    ``means`` tried, ``se`` used, ``method`` (``analytic``, ``simulation`` or ``deterministic``) and
    ``mc_error`` (the Monte Carlo standard error of a simulated power, else 0)."""

    power: float
    means: tuple[float, ...]
    se: float
    method: str
    mc_error: float = 0.0

    def describe(self) -> str:
        """``"0.93 (analytic, SE 0.012)"``."""
        extra = f", ±{fmt_fixed(self.mc_error, 3)}" if self.mc_error else ""
        return f"{fmt_power(self.power)} ({self.method}{extra}; SE {fmt_se(self.se)})"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _parse(expr: str, where: str) -> ast.Expression:
    try:
        return parse_predicate(expr, where)
    except ReportError as exc:
        raise AlternativeError(str(exc)) from None


def _names(tree: ast.AST) -> list[str]:
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called]


# --------------------------------------------------------------------------- the predicate language, elementwise
def _fold(op: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """``min``/``max`` of a predicate over arrays: ``op`` folded over the arguments (or over one list)."""

    def fold(*args: Any) -> Any:
        items = args[0] if len(args) == 1 else args
        out = items[0]
        for x in items[1:]:
            out = op(out, x)
        return out

    return fold


def _reduce(op: Callable[..., Any]) -> Callable[..., Any]:
    """``all``/``any`` of a predicate over arrays: ``op`` over the broadcast boolean arguments."""

    def reduce(*args: Any) -> Any:
        items = args[0] if len(args) == 1 else args
        return op(np.broadcast_arrays(*[np.asarray(x, dtype=bool) for x in items]), axis=0)

    return reduce


def _elementwise(logical: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def join(thunks: Any) -> Any:
        parts = [np.asarray(t(), dtype=bool) for t in thunks]
        out = parts[0]
        for p in parts[1:]:
            out = logical(out, p)
        return out

    return join


#: The predicate language on numpy arrays, elementwise (arrays broadcast against scalars): every operand is
#: evaluated, ``and``/``or``/``not`` are logical array operations.
ELEMENTWISE = Semantics(
    binops={ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power},
    cmpops={
        ast.Lt: np.less,
        ast.LtE: np.less_equal,
        ast.Gt: np.greater,
        ast.GtE: np.greater_equal,
        ast.Eq: np.equal,
        ast.NotEq: np.not_equal,
    },
    conjoin=_elementwise(np.logical_and),
    disjoin=_elementwise(np.logical_or),
    negate=np.logical_not,
    calls={
        "abs": np.abs,
        "min": _fold(np.minimum),
        "max": _fold(np.maximum),
        "all": _reduce(np.all),
        "any": _reduce(np.any),
    },
)


def _vec_eval(tree: ast.AST, env: dict[str, Any]) -> Any:
    """Evaluate a whitelisted predicate tree elementwise (:data:`ELEMENTWISE`)."""
    try:
        return evaluate_tree(tree, env, ELEMENTWISE)
    except ReportError as exc:
        raise AlternativeError(str(exc)) from None


def _value(spec: float | str | None, metrics: dict[str, Any], what: str) -> float:
    """A number, a metric key or an expression over ``metrics``, as a float."""
    if _is_number(spec):
        return float(spec)
    if not isinstance(spec, str):
        raise AlternativeError(f"alternative {what} is not given")
    tree = _parse(spec, f"alternative {what}")
    missing = [n for n in _names(tree) if not _is_number(metrics.get(n))]
    if missing:
        raise AlternativeError(f"alternative {what}: no numeric metric {missing}")
    with np.errstate(all="ignore"):
        x = _vec_eval(tree, {k: metrics[k] for k in _names(tree)})
    x = float(x)
    if not math.isfinite(x):
        raise AlternativeError(f"alternative {what} = {spec!r} is not finite")
    return x


# --------------------------------------------------------------------------- power
def interval_power(mu: float, se: float, lo: float | None, hi: float | None) -> float:
    """``P(X < lo or X > hi)`` for ``X ~ N(mu, se)`` (``None``: unbounded): the power of a rule that accepts
    ``[lo, hi]``. With ``se = 0`` it is 1 if ``mu`` lies outside the interval, else 0."""
    if se == 0:
        return float((lo is not None and mu < lo) or (hi is not None and mu > hi))
    below = norm.cdf((lo - mu) / se) if lo is not None else 0.0
    above = norm.sf((hi - mu) / se) if hi is not None else 0.0
    return float(below + above)


def simulated_power(
    predicate: str,
    metric: str,
    mu: float,
    se: float,
    metrics: dict[str, Any],
    rng: np.random.Generator,
    n: int = N_DRAWS,
) -> tuple[float, float]:
    """``(power, Monte Carlo SE)``: the fraction of ``n`` draws ``X ~ N(mu, se)`` of ``metric`` at which
    ``predicate`` (the rule, other metrics at their values in ``metrics``) is false."""
    tree = _parse(predicate, "predicate")
    env = {k: metrics.get(k) for k in _names(tree)}
    env[metric] = rng.normal(mu, se, size=n) if se > 0 else np.full(1, mu)
    lacking = [k for k, v in env.items() if v is None]
    if lacking:
        raise AlternativeError(f"predicate {predicate!r}: no metric {lacking}")
    with np.errstate(all="ignore"):
        holds = np.broadcast_to(np.asarray(_vec_eval(tree, env), dtype=bool), env[metric].shape)
    p = float(1.0 - holds.mean())
    return p, math.sqrt(p * (1 - p) / holds.size) if se > 0 else 0.0


def rule_metric_names(claim: Any) -> list[str]:
    """The metric keys that ``claim``'s rule, its alternative and the rule on independent runs of its ``spread``
    read (what a stored copy of the metrics must keep for the power and the spread to be recomputed)."""
    names = claim.rule.names() + list(claim.se) + (claim.alternative.names() if claim.alternative is not None else [])
    names += claim.spread.names() if getattr(claim, "spread", None) is not None else []
    return list(dict.fromkeys(n for n in names if n))


def rule_power(claim: Any, alt: Alternative, metrics: dict[str, Any], rng: np.random.Generator | None = None) -> Power:
    """The power of ``claim``'s rule (a :class:`iclbook.ledger.Claim`) against ``alt`` at ``metrics``.

    Analytic for single-metric kinds, simulated (``rng``, default seeded 0) for predicates; the smaller power
    over the alternative's means (both signs of a ``shift`` or ``rel``). An :class:`AlternativeError` names
    what is missing (a metric, a center)."""
    if alt.shift is None and alt.rel is None and alt.value is None:
        raise AlternativeError("the alternative is stated in words only (no shift, rel or value): no power")
    metric = alt.metric or claim.metric
    if not metric:
        raise AlternativeError("alternative: a predicate row's alternative names its metric")
    se_spec = alt.se if alt.se is not None else (claim.se[0] if claim.se else None)
    if se_spec is None:
        raise AlternativeError("alternative: no standard error (give alternative.se or the row's se)")
    se = _value(se_spec, metrics, "se")
    if se < 0:
        raise AlternativeError(f"alternative se = {fmt_value(se, 6)} is negative")
    if alt.value is not None:
        means: tuple[float, ...] = (_value(alt.value, metrics, "value"),)
    else:
        null = alt.center if alt.center is not None else claim.reported
        if not (_is_number(null) or isinstance(null, str)):
            raise AlternativeError("alternative: the claim has no numeric value; give alternative.center")
        c = _value(null, metrics, "center")
        means = (c + alt.shift, c - alt.shift) if alt.shift is not None else (c * (1 + alt.rel), c * (1 - alt.rel))
    if claim.kind == "predicate":
        rng = rng if rng is not None else np.random.default_rng(0)
        sims = [simulated_power(claim.predicate, metric, mu, se, metrics, rng) for mu in means]
        p, err = min(sims)
        return Power(p, means, se, "deterministic" if se == 0 else "simulation", err)
    if metric != claim.metric:
        raise AlternativeError(f"alternative metric {metric!r} is not the rule's metric {claim.metric!r}")
    interval = claim.rule.acceptance(metrics)
    if interval is None:
        raise AlternativeError(f"kind {claim.kind!r} has no acceptance interval at these metrics")
    lo, hi = interval
    p = min(interval_power(mu, se, lo, hi) for mu in means)
    return Power(p, means, se, "deterministic" if se == 0 else "analytic")
