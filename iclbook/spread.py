"""Whether a ledger row's standard error includes the run-to-run spread (ledger field ``spread``).

A stochastic rule is graded with the standard error its notebook computed. When that error is computed
within one training run or one Monte Carlo draw (batch means along one trajectory, the spread over the
evaluation prompts of one trained model), it leaves out the variation between independent runs, and the
verdict may rest on an error that is too small. The field ``spread`` says which case a row is in:

``source``
    ``seeds``: the row's standard error is over ``n`` independent runs (seeds), so it contains the
    run-to-run spread; ``separate-runs``: the build makes one run, and the rule adds to its standard error
    the run-to-run standard deviation measured on ``n`` separate runs of the same notebook at other seeds
    (``reason`` gives the runs and the value; an error model fixed before grading, like a discretisation
    term); ``within-run``: one run, and ``reason`` says why its within-run error covers the spread between
    runs; ``single-run``: one run whose error does not cover it (or is not shown to), so the error
    understates and ``reason`` says what the verdict rests on instead.
``reason``
    one or two sentences, the measurement or argument behind the source.
``n``
    (``seeds``, ``separate-runs``) the number of independent runs behind the standard error.
``checked``
    optional, one short phrase: the verdict at other seeds where separate runs checked it (for example
    ``holds at 3 of 4 seeds (quick)``), shown beside the rule.
``runs``
    optional: the row's rule restated on independent runs the notebook makes at one setting of the row's
    grid, ``{rule: <predicate over metrics>, n: <runs>, at: <the setting in words>}``; the report evaluates
    it beside the row's own verdict (:meth:`Spread.runs_verdict`), so a verdict that independent runs do not
    confirm is visible.

The field's shape is checked by the ledger's JSON Schema (:data:`iclbook.ledger.LEDGER_ROW`); this module
reads it and evaluates ``runs``. It imports only :mod:`iclbook.predicates`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .predicates import ReportError, evaluate_predicate, parse_predicate, predicate_names

__all__ = ["COUNTED", "SOURCES", "Spread", "spread_of"]

#: Where a row's standard error gets the run-to-run spread from (see the module docstring).
SOURCES = ("seeds", "separate-runs", "within-run", "single-run")
#: The sources whose standard error counts independent runs (they state ``n``).
COUNTED = ("seeds", "separate-runs")
_PHRASE = {
    "seeds": "SE over {n} independent runs",
    "separate-runs": "one run; the SE adds the run-to-run SD of {n} separate runs",
    "within-run": "one run; its SE covers the run-to-run spread",
    "single-run": "one run; its error leaves out the run-to-run spread",
}


@dataclass(frozen=True)
class Spread:
    """A row's ``spread`` field: the ``source`` of the run-to-run spread in its standard error, the
    ``reason``, the number ``n`` of runs (:data:`COUNTED` sources), the verdict at other seeds (``checked``), and optionally the rule on independent runs
    (``runs_rule`` over ``runs_n`` runs at the setting ``runs_at``)."""

    source: str
    reason: str
    n: int | None = None
    checked: str = ""
    runs_rule: str = ""
    runs_n: int | None = None
    runs_at: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> Spread:
        """A ``spread`` mapping the schema accepted; a ``runs.rule`` outside the predicate language is a
        :class:`ReportError` naming ``where``."""
        runs = d.get("runs") or {}
        if runs:
            parse_predicate(runs["rule"], f"{where}: spread.runs.rule")
        return cls(
            source=d["source"],
            reason=str(d["reason"]).strip(),
            n=d.get("n"),
            checked=str(d.get("checked", "")).strip(),
            runs_rule=runs.get("rule", ""),
            runs_n=runs.get("n"),
            runs_at=str(runs.get("at", "")).strip(),
        )

    def names(self) -> list[str]:
        """The metric keys ``runs.rule`` reads (none without ``runs``)."""
        return predicate_names(self.runs_rule) if self.runs_rule else []

    def runs_verdict(self, metrics: Mapping[str, Any] | None) -> bool | None:
        """Whether the rule on independent runs holds at ``metrics`` (None: no ``runs``, or its metrics are
        missing or not numbers)."""
        if not self.runs_rule or metrics is None or any(n not in metrics for n in self.names()):
            return None
        try:
            return bool(evaluate_predicate(self.runs_rule, dict(metrics), "spread.runs.rule"))
        except ReportError:
            return None

    def phrase(self) -> str:
        """One short phrase for the report's rule column (with the verdict at other seeds, when checked)."""
        return _PHRASE[self.source].format(n=self.n) + (f"; {self.checked}" if self.checked else "")

    def runs_phrase(self, held: bool | None) -> str:
        """The verdict on independent runs in words (``held`` from :meth:`runs_verdict`; empty when None)."""
        return "" if held is None else f"over {self.runs_n} runs at {self.runs_at}: {'holds' if held else 'fails'}"

    def describe(self) -> str:
        """The row's *Spread* note: the phrase, the reason and the rule on independent runs."""
        runs = f" On independent runs ({self.runs_n} at {self.runs_at}): `{self.runs_rule}`." if self.runs_rule else ""
        return f"{self.phrase()}. {self.reason}{runs}"


def spread_of(d: Mapping[str, Any], where: str) -> Spread | None:
    """The :class:`Spread` of a ledger row ``d`` (None if it states none)."""
    return Spread.from_dict(d["spread"], where) if d.get("spread") is not None else None
