"""The ledger of reported claims (``book/reported/*.yml``): its schema, its rows and the rules that grade them.

Each row states a claim of a paper, the value the paper reports and the rule that decides, from the numbers a
notebook computed (its ``metrics.json``), whether the book reproduces it. This module is the one place that
says what a row may hold and what its rule means:

* :data:`LEDGER_FILE`: the JSON Schema of a ledger file (Draft 2020-12, checked by :mod:`iclbook.loaders`),
  the single source of the field rules: the fields, their types and values, and which fields go with which
  kind and basis. Each conditional rule carries a ``description``, the message a row that breaks it gets.
* :class:`Claim`: one row, built from a row the schema accepted (:meth:`Claim.from_row`) after the checks a
  schema cannot express: finite numbers, the predicate's whitelist, the alternative, the evidence and the
  spread (whether the row's standard error includes the run-to-run spread, :mod:`iclbook.spread`).
* :class:`Rule` (one subclass per kind): grades a row on a notebook's metrics (:meth:`Rule.grade`), describes
  itself in the report's words (:meth:`Rule.describe`) and as a formula (:meth:`Rule.formula`), gives the
  interval of values it accepts (:meth:`Rule.acceptance`) and a digest of what it decides on
  (:attr:`Rule.digest`). The report (:mod:`iclbook.report`), the notebook pages (:mod:`iclbook.verdicts`),
  the sweep bands and the power of a rule (:mod:`iclbook.power`) all grade through it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from .loaders import FileKind, InputFileError, check_schema, load_file
from .numbers import fmt_count, fmt_fixed, fmt_percent, fmt_se, fmt_signed, fmt_value
from .predicates import ReportError, evaluate_predicate, parse_predicate, predicate_names
from .spread import COUNTED as SPREAD_COUNTED
from .spread import SOURCES as SPREAD_SOURCES
from .spread import spread_of

__all__ = [
    "ALTERNATIVE_REQUIRED",
    "BASES",
    "DIAGNOSES",
    "FAIL_LABEL",
    "KINDS",
    "LEDGER_FILE",
    "LEDGER_ROW",
    "NOTE_REQUIRED",
    "PASS_LABEL",
    "ROW_ID",
    "SEEDS",
    "STATUSES",
    "SWEPT_BASES",
    "UNCOMPUTED",
    "Claim",
    "Grade",
    "ReportError",
    "Row",
    "Rule",
    "compare",
    "evaluate",
    "format_value",
    "is_finite_number",
    "load_claims",
    "load_metrics",
    "rule_of",
    "status_label",
    "table_cell",
]

KINDS = ("exact", "rel", "abs", "max", "min", "within_se", "predicate", "absent")
BASES = (
    "predicted",
    "underpowered",
    "calibrated",
    "construction",
    "theorem",
    "erratum",
    "other-model",
    "absent",
    "out-of-scope",
)
#: Bases of rows that no notebook computes (kind ``absent``): not reproduced yet, or impossible offline.
UNCOMPUTED = ("absent", "out-of-scope")
#: Why a rule that could disagree does not reproduce (every "differs" is explained).
#: ``reading``: the row grades a reading of the paper that the errata does not adopt; the adopted reading is
#: graded by its own row (named in the evidence).
DIAGNOSES = ("fixed", "erratum", "finite-size", "setting", "reading", "open")
#: A row id: the ledger file's stem, a dash, a number never reused (``decoder-07``).
ROW_ID = r"^[a-z][a-z0-9_]*-[0-9]{2,3}$"
NOTE_REQUIRED = ("underpowered", "calibrated", "other-model", "erratum", "absent", "out-of-scope")
#: Bases whose rows must state the alternative their rule rejects (iclbook.power): a rule that cannot fail
#: is no reproduction, and an underpowered row shows how weak its rule is.
ALTERNATIVE_REQUIRED = ("predicted", "underpowered")
SEEDS = ("000", "001", "002", "003", "004")
#: Bases whose rows get a robustness band from the sweeps; they may declare ``depends_on``.
SWEPT_BASES = ("predicted", "underpowered", "calibrated")
STATUSES = ("reproduced", "differs", "missing", "absent")

# --------------------------------------------------------------------------- schema
_TOLERANCE_KINDS = ("rel", "abs", "max", "min")
_METRIC_KINDS = ("exact", "rel", "abs", "max", "min", "within_se")
_NUMERIC_REPORTED_KINDS = ("rel", "abs", "exact", "within_se")
_TEXT = {"type": "string", "pattern": r"\S"}
_DOMAIN = {"kind": KINDS, "basis": BASES}
_KEY = {"type": "string", "minLength": 1}


_RUNS = {"type": "integer", "minimum": 2, "description": "a number of independent runs is an integer >= 2"}
#: The ledger field ``spread`` (:mod:`iclbook.spread`): where the row's standard error gets the run-to-run spread.
_SPREAD: dict[str, Any] = {
    "type": "object",
    "required": ["source", "reason"],
    "additionalProperties": False,
    "properties": {
        "source": {"enum": list(SPREAD_SOURCES)},
        "reason": _TEXT,
        "n": _RUNS,
        "checked": _TEXT,
        "runs": {
            "type": "object",
            "required": ["rule", "n", "at"],
            "additionalProperties": False,
            "properties": {"rule": _TEXT, "n": _RUNS, "at": _TEXT},
        },
    },
    "allOf": [
        {
            "description": "a spread from seeds or separate runs names n, the number of independent runs behind the "
            "standard error",
            "if": {"properties": {"source": {"enum": list(SPREAD_COUNTED)}}},
            "then": {"required": ["n"]},
        },
        {
            "description": "n belongs to a spread from seeds or separate runs (a one-run row counts its independent "
            "runs in runs.n)",
            "if": {"properties": {"source": {"enum": [s for s in SPREAD_SOURCES if s not in SPREAD_COUNTED]}}},
            "then": {"properties": {"n": False}},
        },
    ],
}


def _when(field: str, values: Any, then: dict[str, Any], description: str) -> dict[str, Any]:
    """A conditional rule: rows whose ``field`` is one of ``values`` (a tuple; else equal to it) follow ``then``."""
    test = {"enum": list(values)} if isinstance(values, tuple) else {"const": values}
    return {"description": description, "if": {"required": [field], "properties": {field: test}}, "then": then}


def _unless(field: str, values: Any, then: dict[str, Any], description: str) -> dict[str, Any]:
    """A conditional rule for the rows whose ``field`` (``kind`` or ``basis``) is a valid value other than
    ``values``: a row with an unknown kind or basis gets only that error."""
    values = values if isinstance(values, tuple) else (values,)
    return _when(field, tuple(v for v in _DOMAIN[field] if v not in values), then, description)


def _forbid(*fields: str) -> dict[str, Any]:
    return {"properties": dict.fromkeys(fields, False)}


LEDGER_ROW: dict[str, Any] = {
    "type": "object",
    "required": ["claim", "reported", "seed", "section", "kind", "basis"],
    "additionalProperties": False,
    "properties": {
        "id": {
            "type": "string",
            "pattern": ROW_ID,
            "description": "an id is the file's stem, a dash and a number of 2 or 3 digits (for example decoder-07)",
        },
        "claim": {"type": "string"},
        "reported": {"type": ["number", "string"]},
        "seed": {"enum": list(SEEDS)},
        "section": {"type": ["string", "number"]},
        "kind": {"enum": list(KINDS)},
        "basis": {"enum": list(BASES)},
        "basis_note": {"type": "string"},
        "note": {"type": "string"},
        "notebook": _KEY,
        "metric": _KEY,
        "predicate": _TEXT,
        "tolerance": {"type": "number"},
        "se": {"anyOf": [_KEY, {"type": "array", "items": _KEY, "minItems": 1}]},
        "z": {"type": "number", "exclusiveMinimum": 0, "description": "z must be a positive number"},
        "discretisation": {"type": "number", "minimum": 0, "description": "discretisation must be a number >= 0"},
        "stochastic": {"type": "boolean"},
        "no_se": _TEXT,
        "diagnosis": {"enum": list(DIAGNOSES)},
        "diagnosis_note": _TEXT,
        "alternative": {"type": "object"},
        "depends_on": {"type": "array", "items": _KEY},
        "evidence": {"type": "array"},
        "spread": _SPREAD,
    },
    "allOf": [
        _when(
            "kind",
            "absent",
            {"properties": {"basis": {"enum": list(UNCOMPUTED)}}},
            "kind 'absent' and basis 'absent' or 'out-of-scope' go together",
        ),
        _unless(
            "kind",
            "absent",
            {"properties": {"basis": {"not": {"enum": list(UNCOMPUTED)}}}},
            "kind 'absent' and basis 'absent' or 'out-of-scope' go together",
        ),
        _when(
            "basis",
            NOTE_REQUIRED,
            {"required": ["basis_note"], "properties": {"basis_note": _TEXT}},
            f"basis {', '.join(NOTE_REQUIRED)} needs a basis_note (which setting, which erratum, why the model "
            "differs, or the chapter that will cover it)",
        ),
        {
            "description": "diagnosis and diagnosis_note (its evidence) go together",
            "dependentRequired": {"diagnosis": ["diagnosis_note"], "diagnosis_note": ["diagnosis"]},
        },
        {"description": "evidence belongs to a diagnosis", "dependentRequired": {"evidence": ["diagnosis"]}},
        _when("kind", "absent", _forbid("diagnosis"), "an absent row has no verdict to diagnose"),
        _when("kind", "absent", _forbid("alternative"), "an absent row has no rule to have power"),
        _when("kind", "absent", _forbid("spread"), "an absent row has no standard error to have a spread"),
        _unless("kind", "absent", {"required": ["notebook"]}, "every kind but 'absent' needs a notebook"),
        _when("kind", _METRIC_KINDS, {"required": ["metric"]}, f"kinds {', '.join(_METRIC_KINDS)} need a metric"),
        _unless(
            "kind",
            _METRIC_KINDS,
            _forbid("metric"),
            "kinds predicate and absent take no metric (a predicate names its metrics)",
        ),
        _when(
            "kind",
            _TOLERANCE_KINDS,
            {"required": ["tolerance"]},
            f"kinds {', '.join(_TOLERANCE_KINDS)} need a numeric tolerance",
        ),
        _when("kind", "exact", {"properties": {"tolerance": {"const": 0}}}, "kind exact takes no tolerance but 0"),
        _unless(
            "kind",
            (*_TOLERANCE_KINDS, "exact"),
            _forbid("tolerance"),
            f"only kinds {', '.join(_TOLERANCE_KINDS)} take a tolerance",
        ),
        _when(
            "kind",
            _NUMERIC_REPORTED_KINDS,
            {"properties": {"reported": {"type": "number"}}},
            f"kinds {', '.join(_NUMERIC_REPORTED_KINDS)} need a numeric reported value",
        ),
        _when("kind", "predicate", {"required": ["predicate"]}, "kind predicate needs a predicate"),
        _unless("kind", "predicate", _forbid("predicate"), "only kind predicate takes a predicate"),
        _when(
            "kind",
            "within_se",
            {
                "required": ["se"],
                "properties": {
                    "se": {"anyOf": [{"type": "string"}, {"type": "array", "maxItems": 1}]},
                    "stochastic": {"const": True},
                    "no_se": False,
                },
            },
            "kind within_se is stochastic and needs exactly one se key (the metric of its standard error)",
        ),
        _unless("kind", "within_se", _forbid("z", "discretisation"), "z and discretisation belong to kind within_se"),
        _when(
            "stochastic",
            True,
            {"required": ["se"], "properties": {"no_se": False}},
            "a stochastic row needs se (the metrics key(s) of its standard error) and no no_se",
        ),
        _unless(
            "basis",
            SWEPT_BASES,
            _forbid("depends_on"),
            f"depends_on belongs to the swept bases {', '.join(SWEPT_BASES)}",
        ),
    ],
}
#: A ledger file: a list of rows (an empty file is an empty ledger).
LEDGER_FILE = FileKind("ledger file", "yaml", 4 << 20, 12, {"type": ["array", "null"], "items": LEDGER_ROW})
_ROW_KIND = FileKind("ledger row", "yaml", 0, 0, LEDGER_ROW)


# --------------------------------------------------------------------------- rules
def is_finite_number(x: Any) -> bool:
    """Whether ``x`` is a finite int or float (a bool is not a number here)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class Grade(NamedTuple):
    """What a rule says at some metrics: the value it graded, the difference shown, the status, the values read."""

    reproduced: float | bool | None
    difference: str
    status: str  # "reproduced" (the rule holds), "differs", "missing" or "absent"
    used: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Rule:
    """The rule of a ledger row: the fields that decide it (a subclass per kind, :func:`rule_of`)."""

    kind: str
    reported: Any
    metric: str = ""
    tolerance: float | None = None
    se: tuple[str, ...] = ()
    z: float = 3.0
    discretisation: float = 0.0
    predicate: str = ""

    def names(self) -> list[str]:
        """The metric keys the rule reads (its metric, or the names of its predicate)."""
        return [self.metric] if self.metric else []

    def grade(self, metrics: Mapping[str, Any] | None) -> Grade:
        """The rule applied to a notebook's ``metrics`` (``None``: the notebook has not run)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The rule as the report's column *rule* shows it (Markdown)."""
        return self.kind + (f" ({fmt_value(self.tolerance, 6)})" if self.tolerance is not None else "")

    def formula(self) -> str:
        """The rule as a plain-text inequality (the notebook pages' verdict table)."""
        return self.kind

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None] | None:
        """The interval of metric values the rule accepts (``None`` bound: unbounded); ``None`` for a rule that
        is no interval on one metric, or whose interval the ``metrics`` do not fix."""
        return None

    def half_width(self, metrics: Mapping[str, Any]) -> float | None:
        """A within_se rule's half-width z·SE + discretisation at ``metrics`` (None for other rules)."""
        return None

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the fields that decide the rule (canonical JSON): equal digests, the same verdicts."""
        fields = {
            "kind": self.kind,
            "reported": self.reported,
            "metric": self.metric,
            "tolerance": self.tolerance,
            "se": list(self.se),
            "z": self.z,
            "discretisation": self.discretisation,
            "predicate": self.predicate,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class AbsentRule(Rule):
    """No notebook computes the claim: nothing to grade."""

    def grade(self, metrics: Mapping[str, Any] | None) -> Grade:
        return Grade(None, "", "absent")


class _SingleMetricRule(Rule):
    """A rule on the value of one metric: a number compared with the reported value or a bound."""

    def grade(self, metrics: Mapping[str, Any] | None) -> Grade:
        x = (metrics or {}).get(self.metric)
        if x is None:
            return Grade(None, "", "missing")
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return Grade(None, f"metric is not a number ({x!r})", "differs")
        x = float(x)
        ok, diff = self._holds(x)
        return Grade(x, diff, "reproduced" if ok else "differs")

    def _holds(self, x: float) -> tuple[bool, str]:
        raise NotImplementedError


class ExactRule(_SingleMetricRule):
    """The metric equals the reported value."""

    def _holds(self, x: float) -> tuple[bool, str]:
        return x == float(self.reported), fmt_value(x - float(self.reported))

    def formula(self) -> str:
        return f"value == {self.reported:g}"

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None]:
        return float(self.reported), float(self.reported)


class AbsRule(_SingleMetricRule):
    """The metric is within ``tolerance`` of the reported value."""

    def _holds(self, x: float) -> tuple[bool, str]:
        r = self.reported
        return abs(x - r) <= self.tolerance, fmt_signed(x - r)

    def formula(self) -> str:
        return f"|value - {self.reported:g}| <= {self.tolerance:g}"

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None]:
        r = float(self.reported)
        return r - self.tolerance, r + self.tolerance


class RelRule(_SingleMetricRule):
    """The metric is within the relative ``tolerance`` of the reported value."""

    def _holds(self, x: float) -> tuple[bool, str]:
        r, tol = self.reported, self.tolerance
        rel = abs(x - r) / abs(r) if r != 0 else math.inf
        return rel <= tol, fmt_percent((x - r) / abs(r), 2, sign="+") if r != 0 else "n/a"

    def formula(self) -> str:
        return f"|value - {self.reported:g}| / |{self.reported:g}| <= {self.tolerance:g}"

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None]:
        r = float(self.reported)
        return r - abs(r) * self.tolerance, r + abs(r) * self.tolerance


class MaxRule(_SingleMetricRule):
    """The metric is at most ``tolerance`` (a bound; the reported value is shown beside it)."""

    def _holds(self, x: float) -> tuple[bool, str]:
        return x <= self.tolerance, f"bound ≤ {fmt_value(self.tolerance)}"

    def formula(self) -> str:
        return f"value <= {self.tolerance:g}"

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None]:
        return None, self.tolerance


class MinRule(_SingleMetricRule):
    """The metric is at least ``tolerance``."""

    def _holds(self, x: float) -> tuple[bool, str]:
        return x >= self.tolerance, f"bound ≥ {fmt_value(self.tolerance)}"

    def formula(self) -> str:
        return f"value >= {self.tolerance:g}"

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None]:
        return self.tolerance, None


class WithinSERule(Rule):
    """|computed − reported| ≤ z·SE + discretisation, with SE the standard error the notebook computed
    (:func:`iclcore.stats.agreement_within_se`)."""

    def grade(self, metrics: Mapping[str, Any] | None) -> Grade:
        metrics = metrics or {}
        value, se = metrics.get(self.metric), metrics.get(self.se[0])
        if value is None or se is None:
            return Grade(value, "no standard error" if value is not None else "", "missing")
        if not (is_finite_number(value) and is_finite_number(se) and se >= 0):
            shown = [format_value(v) if is_finite_number(v) or isinstance(v, float) else repr(v) for v in (value, se)]
            return Grade(None, f"value {shown[0]} or standard error {shown[1]} is not a number", "differs")
        from iclcore.stats import agreement_within_se  # the rule lives with the package's statistics

        a = agreement_within_se(
            float(value), float(self.reported), float(se), z=self.z, discretisation=self.discretisation
        )
        text = (
            f"{fmt_signed(a.difference)} = {fmt_fixed(a.z, 2, sign='+')} SE (SE {fmt_se(se)}); "
            f"margin {fmt_signed(a.margin)}"
        )
        used = ((self.metric, value), (self.se[0], se))
        return Grade(float(value), text, "reproduced" if a.holds else "differs", used)

    def describe(self) -> str:
        disc = f" + {fmt_value(self.discretisation, 6)}" if self.discretisation else ""
        return f"within_se (\\|Δ\\| ≤ {fmt_value(self.z, 6)}·SE{disc})"

    def formula(self) -> str:
        disc = f" + {self.discretisation:g}" if self.discretisation else ""
        return f"|value - {self.reported:g}| <= {self.z:g} SE{disc}"

    def half_width(self, metrics: Mapping[str, Any]) -> float | None:
        se = metrics.get(self.se[0]) if self.se else None
        return self.z * float(se) + self.discretisation if is_finite_number(se) else None

    def acceptance(self, metrics: Mapping[str, Any]) -> tuple[float | None, float | None] | None:
        half = self.half_width(metrics)
        if half is None:
            return None
        r = float(self.reported)
        return r - half, r + half


class PredicateRule(Rule):
    """A whitelisted expression over metrics (:mod:`iclbook.predicates`) that must be true."""

    def names(self) -> list[str]:
        return predicate_names(self.predicate)

    def grade(self, metrics: Mapping[str, Any] | None) -> Grade:
        metrics = metrics or {}
        names = self.names()
        lacking = [n for n in names if n not in metrics]
        if lacking:
            return Grade(None, f"no metric {', '.join(lacking)}", "missing")
        used = tuple((n, metrics[n]) for n in names)
        try:
            ok = evaluate_predicate(self.predicate, dict(metrics), "rule")
        except ReportError as exc:
            return Grade(None, str(exc).split(": ", 1)[-1], "differs", used)
        return Grade(ok, "", "reproduced" if ok else "differs", used)

    def describe(self) -> str:
        return f"predicate `{self.predicate}`"

    def formula(self) -> str:
        return self.predicate


_RULES: dict[str, type[Rule]] = {
    "exact": ExactRule,
    "rel": RelRule,
    "abs": AbsRule,
    "max": MaxRule,
    "min": MinRule,
    "within_se": WithinSERule,
    "predicate": PredicateRule,
    "absent": AbsentRule,
}


def rule_of(kind: str, **fields: Any) -> Rule:
    """The rule of ``kind`` (one of :data:`KINDS`) with the deciding ``fields`` of :class:`Rule`."""
    return _RULES[kind](kind, **fields)


# --------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class Claim:
    """One claim of a paper (a row of ``book/reported/*.yml``) with the rule that decides it."""

    claim: str
    reported: Any
    seed: str
    section: str
    kind: str
    basis: str
    source: str
    notebook: str = ""
    metric: str = ""
    tolerance: float | None = None
    se: tuple[str, ...] = ()
    z: float = 3.0
    discretisation: float = 0.0
    predicate: str = ""
    stochastic: bool = False
    no_se: str = ""
    basis_note: str = ""
    note: str = ""
    id: str = ""
    diagnosis: str = ""
    diagnosis_note: str = ""
    alternative: Any = None  # an iclbook.power.Alternative: what the rule must reject
    depends_on: tuple[str, ...] | None = None  # the swept settings the metric depends on (None: not declared)
    evidence: tuple[Any, ...] = ()  # iclbook.evidence.Reference: the runs behind the diagnosis
    spread: Any = None  # an iclbook.spread.Spread: whether the standard error includes the run-to-run spread

    @cached_property
    def rule(self) -> Rule:
        """The row's :class:`Rule`."""
        return rule_of(
            self.kind,
            reported=self.reported,
            metric=self.metric,
            tolerance=self.tolerance,
            se=self.se,
            z=self.z,
            discretisation=self.discretisation,
            predicate=self.predicate,
        )

    @property
    def label(self) -> str:
        """The row id and ``notebook:metric`` (or the predicate, or the claim for absent rows), for messages."""
        if self.id:
            return f"{self.id} ({self._target()})"
        return self._target()

    def _target(self) -> str:
        target = self.metric or (f"[{self.predicate}]" if self.predicate else "")
        return f"{self.notebook}:{target}" if self.notebook else f"(absent) {self.claim[:50]}"

    @classmethod
    def from_dict(cls, d: Any, source: str) -> Claim:
        """A row checked against the schema (:data:`LEDGER_ROW`), then read by :meth:`from_row`."""
        try:
            check_schema(d, _ROW_KIND, f"{source}: {_row_name(d)}")
        except InputFileError as exc:
            raise ReportError(str(exc)) from None
        return cls.from_row(d, source)

    @classmethod
    def from_row(cls, d: dict[str, Any], source: str) -> Claim:
        """A row the schema accepted, after the checks a schema cannot express (a :class:`ReportError` naming
        the file, the row and the field): finite numbers, the predicate's whitelist, the alternative, the evidence,
        the spread's rule on independent runs.
        """
        where = f"{source}: {_row_name(d)}"
        for field in ("reported", "tolerance", "z", "discretisation"):
            if isinstance(d.get(field), float) and not math.isfinite(d[field]):
                raise ReportError(f"{where}: {field}: {d[field]!r} is not a finite number")
        kind = d["kind"]
        if kind == "predicate":
            parse_predicate(d["predicate"], f"{where}: predicate")
        se = d.get("se", ())
        return cls(
            claim=d["claim"],
            reported=d["reported"],
            seed=d["seed"],
            section=str(d["section"]),
            kind=kind,
            basis=d["basis"],
            source=source,
            notebook=d.get("notebook", ""),
            metric=d.get("metric", ""),
            tolerance=None if d.get("tolerance") is None else float(d["tolerance"]),
            se=(se,) if isinstance(se, str) else tuple(se),
            z=float(d.get("z", 3.0)),
            discretisation=float(d.get("discretisation", 0.0)),
            predicate=d.get("predicate", ""),
            stochastic=d.get("stochastic", kind == "within_se"),
            no_se=d.get("no_se", "").strip(),
            basis_note=d.get("basis_note", "").strip(),
            note=d.get("note", "").strip(),
            id=d.get("id", ""),
            diagnosis=d.get("diagnosis", ""),
            diagnosis_note=d.get("diagnosis_note", "").strip(),
            alternative=_alternative(d, where),
            depends_on=tuple(d["depends_on"]) if "depends_on" in d else None,
            evidence=_evidence(d, where),
            spread=spread_of(d, where),
        )


def _row_name(d: Any) -> str:
    """A row in messages: ``row <id>``, or its notebook and metric (or predicate, or claim) without an id."""
    if not isinstance(d, dict):
        return "row"
    if isinstance(d.get("id"), str):
        return f"row {d['id']}"
    return f"row {d.get('notebook')}:{d.get('metric') or d.get('predicate') or d.get('claim')}"


def _alternative(d: dict[str, Any], where: str) -> Any:
    """The row's :class:`iclbook.power.Alternative` (None if it states none)."""
    if d.get("alternative") is None:
        return None
    from .power import Alternative, AlternativeError

    try:
        return Alternative.from_dict(d["alternative"], where)
    except AlternativeError as exc:
        raise ReportError(str(exc)) from None


def _evidence(d: dict[str, Any], where: str) -> tuple[Any, ...]:
    """The row's evidence references (:func:`iclbook.evidence.parse_evidence`)."""
    if d.get("evidence") is None:
        return ()
    from .evidence import EvidenceError, parse_evidence

    try:
        return parse_evidence(d["evidence"], where)
    except EvidenceError as exc:
        raise ReportError(str(exc)) from None


def load_claims(reported_dir: Path) -> list[Claim]:
    """The claims of every ledger file in ``reported_dir``, each file read through :mod:`iclbook.loaders`."""
    claims = []
    for path in sorted(reported_dir.glob("*.yml")):
        try:
            data = load_file(path, LEDGER_FILE, f"book/reported/{path.name}") or []
        except InputFileError as exc:
            raise ReportError(str(exc)) from None
        claims.extend(Claim.from_row(d, path.name) for d in data)
    seen: dict[str, str] = {}
    for c in claims:
        if c.id and c.id in seen:
            raise ReportError(f"{c.source}: row id {c.id!r} is used twice (also in {seen[c.id]}); ids are never reused")
        seen[c.id] = c.source
    return claims


# --------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Row:
    """A claim with its verdict at some metrics (:func:`evaluate`)."""

    claim: Claim
    reproduced: float | bool | None
    difference: str
    status: str  # "reproduced" (the rule holds), "differs", "missing" or "absent"
    used: tuple[tuple[str, Any], ...] = ()  # the values a predicate or a within_se rule read
    runs_held: bool | None = None  # the rule on independent runs of the row's spread (None: none or not computed)


def evaluate(claim: Claim, metrics: Mapping[str, Any] | None) -> Row:
    """Status of ``claim`` given the ``metrics`` of its notebook (``None``: the notebook has not run), with the
    verdict of the rule on independent runs its ``spread`` states (:meth:`iclbook.spread.Spread.runs_verdict`)."""
    held = claim.spread.runs_verdict(metrics) if claim.spread is not None else None
    return Row(claim, *claim.rule.grade(metrics), runs_held=held)


def compare(claim: Claim, value: float | bool | None) -> Row:
    """Status of a single-metric ``claim`` when its metric has ``value`` (``None``: not computed)."""
    return evaluate(claim, {claim.metric: value} if value is not None else {})


def load_metrics(generated: Path, notebook: str) -> dict[str, Any] | None:
    """The ``metrics.json`` of ``notebook`` in ``generated`` (None if it has none)."""
    path = generated / notebook / "metrics.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: cannot read the metrics ({exc}); run `icl-book run {notebook}`") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object; run `icl-book run {notebook}`")
    return data


#: Status as shown, by basis: a passing rule means different things for different bases.
PASS_LABEL = {
    "predicted": "✓ reproduced",
    "underpowered": "✓ holds (underpowered)",
    "theorem": "✓ identity verified",
    "construction": "✓ holds (by construction)",
    "calibrated": "✓ matches (calibrated)",
    "erratum": "✓ holds (erratum)",
    "other-model": "✓ matches (other model)",
}
FAIL_LABEL = {
    "predicted": "✗ differs",
    "underpowered": "✗ differs (underpowered)",
    "theorem": "✗ identity fails",
    "construction": "✗ differs",
    "calibrated": "✗ differs (calibrated)",
    "erratum": "✗ differs (erratum)",
    "other-model": "✗ differs (other model)",
}


def status_label(row: Row) -> str:
    """A row's status in words, by its basis (:data:`PASS_LABEL`, :data:`FAIL_LABEL`)."""
    if row.status == "absent":
        return "⊘ out of scope" if row.claim.basis == "out-of-scope" else "○ absent"
    if row.status == "missing":
        return "? missing"
    table = PASS_LABEL if row.status == "reproduced" else FAIL_LABEL
    return table[row.claim.basis]


def format_value(v: Any) -> str:
    """A reported or computed value in a table: ``—`` for none, *holds*/*fails* for a boolean, a number to 6
    significant figures (so that a paper's value shows whole) in the book's style (:mod:`iclbook.numbers`)."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "holds" if v else "fails"
    if isinstance(v, int):
        return fmt_count(v)
    if isinstance(v, float):
        return fmt_value(v, 6)
    return str(v)


def table_cell(text: str) -> str:
    """``text`` as one cell of a Markdown table (pipes escaped, newlines joined)."""
    return text.replace("|", "\\|").replace("\n", " ")
