"""Whether a ledger row's metric moves across the sweep of the settings a paper leaves unstated.

A robustness band (:func:`iclbook.sweep.band`) that reads "holds at 7 of 7 settings" says nothing when the
row's metric is the same number at every point: the swept settings do not enter it. :func:`metric_sensitivity`
compares the metrics a row's rule reads at every stored sweep point with their values at the preset point and
names the settings that moved them; :func:`with_sensitivity` relabels such a band ``insensitive`` (not
``robust``), so that the report counts a robust row only where the metric moved.

A row may declare the swept settings its metric depends on (ledger field ``depends_on``, possibly empty): the
declaration is checked against the sweep, and a setting that moves the metric without being declared is named
in the band.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["INSENSITIVE", "Sensitivity", "band_text", "metric_sensitivity", "with_sensitivity"]

INSENSITIVE = "insensitive"
#: Relative difference below which two values of a metric count as the same number (rounding only).
SAME = 1e-12


@dataclass(frozen=True)
class Sensitivity:
    """Which swept settings moved a row's metrics: ``moved`` (some point of that setting differs from the preset),
    ``still`` (swept, no change), ``undeclared`` (moved but not in the row's ``depends_on``), over ``n`` points."""

    moved: tuple[str, ...]
    still: tuple[str, ...]
    undeclared: tuple[str, ...] = ()
    n: int = 0

    @property
    def insensitive(self) -> bool:
        """The metric is the same at every compared point (at least two)."""
        return self.n >= 2 and not self.moved


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=SAME, abs_tol=0.0) or (a != a and b != b)
    return a == b


def metric_sensitivity(
    names: Sequence[str],
    points: Sequence[tuple[Any, dict[str, Any] | str | None]],
    depends_on: Sequence[str] | None = None,
) -> Sensitivity:
    """Compare the metrics ``names`` at each stored point (``(point, metrics)``; ``point.changed`` lists the
    settings that differ from the preset) with the preset point's values (the first stored point's if the preset
    is not stored). Points whose run failed or lacks a metric are left out."""
    runs = [(p, m) for p, m in points if isinstance(m, dict) and all(n in m for n in names)]
    if not runs or not names:
        return Sensitivity((), (), n=len(runs))
    ref = next((m for p, m in runs if not p.changed), runs[0][1])
    moved: dict[str, bool] = {}
    for p, m in runs:
        differs = any(not _same(m[n], ref[n]) for n in names)
        for setting, _ in p.changed:
            moved[setting] = moved.get(setting, False) or differs
    declared = None if depends_on is None else set(depends_on)
    return Sensitivity(
        moved=tuple(s for s, v in moved.items() if v),
        still=tuple(s for s, v in moved.items() if not v),
        undeclared=() if declared is None else tuple(s for s, v in moved.items() if v and s not in declared),
        n=len(runs),
    )


def with_sensitivity(band: Any, s: Sensitivity) -> Any:
    """``band`` (an :class:`iclbook.sweep.Band`) relabelled ``insensitive`` when its metric did not move, with the
    reason; a band whose metric moved with an undeclared setting keeps its label and says so."""
    if s.insensitive and band.label in ("robust", "partial", "fragile"):
        why = f"the metric is the same at all {s.n} stored settings: the swept settings do not enter it"
        return dataclasses.replace(band, label=INSENSITIVE, reason=why)
    if s.undeclared:
        return dataclasses.replace(band, reason=f"moves with {', '.join(s.undeclared)}, not declared in depends_on")
    return band


def band_text(band: Any) -> str:
    """The band's description with its reason (:meth:`iclbook.sweep.Band.describe` says the reason only for an
    unswept row)."""
    text = band.describe()
    return f"{text} ({band.reason})" if band.reason and band.reason not in text else text
