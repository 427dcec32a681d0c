"""The report's section *Robustness across unstated settings*: every swept row's rule at the stored sweep points.

:func:`sweep_bands` gives the band (:func:`iclbook.sweep.band`) of each row of a swept basis from the runs of the
sweep points the store holds (nothing is executed), with a specification-curve figure per swept notebook;
:func:`robustness_section` writes the section that counts and explains them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .ledger import SWEPT_BASES, ReportError, Row, evaluate, is_finite_number, table_cell
from .sensitivity import band_text

__all__ = ["robustness_section", "sweep_bands"]


def sweep_bands(root: Path, rows: list[Row], generated: Path) -> tuple[dict[int, Any], list[str]]:
    """The robustness band (:func:`iclbook.sweep.band`) of every row of a swept basis (:data:`SWEPT_BASES`), by ``id(row)``,
    from the sweep points the store holds (nothing is executed), and the report lines that describe the
    declared settings with one specification-curve figure per swept notebook (written as
    ``generated/sweep-<notebook>.png`` and ``.pdf``). A malformed ``notebooks/sweeps.yml`` is a :class:`ReportError`."""
    from .notebooks import NotebookError, discover_all
    from .sensitivity import INSENSITIVE, metric_sensitivity, with_sensitivity
    from .store import import_scans
    from .sweep import SWEEPS, band, load_plans, spec_curve, stored_points

    try:
        plans = load_plans(root, discover_all(root)[0])
    except NotebookError as exc:
        raise ReportError(str(exc)) from None
    scans = import_scans(root)
    from .record import carried_sweep_points, recorded_sweep_metrics

    recorded = recorded_sweep_metrics(root)  # the committed record's points stand in for runs the store lacks
    carried = carried_sweep_points(root)  # and, under the rule of carried-forward entries, for changed keys
    stored = {name: stored_points(root, plan, scans, recorded, carried.get(name)) for name, plan in plans.items()}
    bands = {}
    for r in rows:
        cl = r.claim
        if cl.basis not in SWEPT_BASES or r.status == "absent":
            continue
        points = stored.get(cl.notebook, [])
        swept = {st.name for st in plans[cl.notebook].settings} if cl.notebook in plans else set()
        unknown = sorted(set(cl.depends_on or ()) - swept)
        if unknown:
            raise ReportError(
                f"{cl.source}: {cl.label}: depends_on names {unknown}, not swept settings of {cl.notebook} "
                f"({', '.join(sorted(swept)) or 'none'}; {SWEEPS.as_posix()})"
            )
        b = band(cl, points, evaluate)
        bands[id(r)] = with_sensitivity(b, metric_sensitivity(cl.rule.names(), points, cl.depends_on)) if points else b
    lines = [
        f"The settings each notebook sweeps, declared in `{SWEEPS.as_posix()}` with the reason for each range:",
        "",
        "| notebook | setting | values (quick preset in bold) | paper | why |",
        "|---|---|---|---|---|",
    ]
    for name, plan in plans.items():
        base = plan.notebook.resolve()
        for st in plan.settings:
            vals = ", ".join(f"**{v!r}**" if v == base[st.name] else repr(v) for v in st.values)
            lines.append(f"| `{name}` | `{st.name}` | {vals} | {st.paper} | {table_cell(st.why)} |")
    lines.append("")
    for name, plan in plans.items():
        points = [(p, m) for p, m in stored[name] if isinstance(m, dict)]
        target = _figure_row(rows, name, plan.figure)
        if target is None or len(points) < 2:
            continue
        metric = target.claim.rule.names()[0]
        data = [
            (p, float(m[metric]), evaluate(target.claim, m).status == "reproduced", target.claim.rule.half_width(m))
            for p, m in points
            if is_finite_number(m.get(metric))
        ]
        if len(data) < 2:
            continue
        lo, hi = target.claim.rule.acceptance(dict(points[0][1]) if not points[0][0].changed else {}) or (None, None)
        reported = float(target.claim.reported) if is_finite_number(target.claim.reported) else None
        spec_curve(
            f"{name}: {metric} ({target.claim.id}) over {len(data)} settings",
            data,
            reported,
            lo,
            hi,
            generated / f"sweep-{name}",  # beside report.md: not a notebook's figure (those live in <notebook>/)
        )
        unrun = len(stored[name]) - len(points)
        flat = bands.get(id(target)) is not None and bands[id(target)].label == INSENSITIVE
        lines += [
            f"```{{figure}} sweep-{name}.png",
            f":name: fig-sweep-{name.replace('_', '-')}",
            "",
            f"Specification curve of `{metric}` (row {target.claim.id}) in `{name}`: the value at each stored sweep "
            f"point, sorted (red: the row's rule fails there; bars: the rule's z·SE at that point where it has one), "
            f"the reported value (dashed) and the rule's band (grey; at the preset's SE); below, the setting that produced "
            f"each point (*preset*: the quick preset)."
            + (f" {unrun} point(s) not run yet." if unrun else "")
            + (
                " **The metric is the same at every point: the swept settings do not enter it, so this curve shows no"
                " robustness (the row is labelled *insensitive*).**"
                if flat
                else ""
            )
            + " Drawn when the book is built from the store's runs of the sweep points (nothing is executed); "
            "regenerate with `make sweep`, then `make book`.",
            "```",
            "",
        ]
    return bands, lines


def _figure_row(rows: list[Row], notebook: str, row_id: str) -> Row | None:
    """The row a notebook's sweep figure shows: ``row_id`` if given, else its first `predicted` numeric row."""
    mine = [r for r in rows if r.claim.notebook == notebook and r.claim.basis in SWEPT_BASES]
    if row_id:
        return next((r for r in mine if r.claim.id == row_id), None)
    numeric = [r for r in mine if r.claim.kind in ("within_se", "rel", "abs", "max", "min")]
    return next(iter(numeric or [r for r in mine if r.claim.kind == "predicate"]), None)


def robustness_section(rows: list[Row], bands: dict[int, Any], extra: list[str]) -> list[str]:
    """The report's closing section: what the sweeps are, the band counts, every fragile row with its
    explanation (its diagnosis or note), the declared settings and the figures (``extra``)."""
    banded = [r for r in rows if id(r) in bands]
    labels = ("robust", "fragile", "fails", "partial", "not swept", "insensitive")
    count = {lab: sum(bands[id(r)].label == lab for r in banded) for lab in labels}
    fragile = [r for r in banded if bands[id(r)].label == "fragile"]
    lines = [
        "## Robustness across unstated settings",
        "",
        "The papers leave most settings unstated (prompt length, noise, conditioning, batch, step size). Each",
        "notebook declares a small range for each of those it uses, and `make sweep` runs the notebook at every",
        "point of a one-at-a-time grid around the quick preset, each point a cached run in the store: a",
        "multiverse analysis {cite:p}`steegen2016multiverse`. The rule of every *predicted*, *underpowered* and",
        "*calibrated* row is evaluated at each stored point: *robust* (holds at every setting), *fragile* (holds at the",
        "preset, fails at some setting), *fails* (fails at the preset), *partial* (holds where run; some points",
        "not run yet), *not swept* (no point in the store), *insensitive* (the metrics the rule reads are the same",
        "number at every stored point, or the row declares in `depends_on` that none of the swept settings enters",
        "them: holding there says nothing about robustness, so such a row is not counted as robust). A calibrated",
        "row is expected to be fragile in the setting it was calibrated on. The figures are specification curves",
        "{cite:p}`simonsohn2020specification`.",
        "",
        f"Of {len(banded)} predicted, underpowered and calibrated rows: "
        + " · ".join(f"{count[k]} {k}" for k in labels)
        + ".",
        "",
    ]
    if fragile:
        lines += ["Fragile rows, with the setting where the rule fails and the ledger's explanation:", ""]
        for r in fragile:
            cl = r.claim
            why = (
                f"*{cl.diagnosis}:* {cl.diagnosis_note}"
                if cl.diagnosis
                else "The ledger gives no diagnosis of this dependence yet."
            )
            lines.append(f"- **{cl.id}** ({cl.basis}, `{cl.notebook}`): {band_text(bands[id(r)])}. {why}")
        lines.append("")
    return [*lines, *extra]
