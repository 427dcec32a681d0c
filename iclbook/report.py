"""The Reproduction report: the ledger's rows graded on the notebooks' metrics, and the pages the build writes.

The report joins the papers' reported values (the ledger, :mod:`iclbook.ledger`) with the numbers the notebooks
computed (``book/generated/<notebook>/metrics.json``); the status of each row is computed by its rule, never
typed. :func:`write_pages` writes every generated page of the book: the report (a summary page and one page per
paper), the ``ledger`` pseudo-notebook's counts, *Errata and decisions* (:mod:`iclbook.errata`), the API
reference (:mod:`iclbook.api_page`) and the measurements (:mod:`iclbook.measurements`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .api_page import iclcore_exports, iclcore_modules, render_api
from .errata import chapter_order, render_errata
from .ledger import (
    BASES,
    SEEDS,
    STATUSES,
    Claim,
    Row,
    evaluate,
    format_value,
    load_claims,
    load_metrics,
    status_label,
    table_cell,
)
from .measurements import render_measurements
from .notebooks import toc_order
from .numbers import fmt_power, fmt_value
from .robustness import robustness_section, sweep_bands
from .sensitivity import band_text

__all__ = [
    "BASIS_MEANING",
    "EXPLAINED",
    "LEDGER",
    "PAPERS",
    "PAPER_PRESET",
    "basis_status_table",
    "evidence_checks",
    "headline_table",
    "ledger_counts",
    "outcome_counts",
    "paper_metrics",
    "paper_rows",
    "render_paper_report",
    "render_report",
    "report_page",
    "report_rows",
    "rule_powers",
    "summary_counts",
    "write_pages",
]


def report_rows(root: Path, generated: Path) -> list[Row]:
    rows = []
    cache: dict[str, dict[str, Any] | None] = {}
    for claim in load_claims(root / "book" / "reported"):
        if claim.notebook and claim.notebook not in cache:
            cache[claim.notebook] = load_metrics(generated, claim.notebook)
        rows.append(evaluate(claim, cache.get(claim.notebook)))
    return rows


PAPER_PRESET = "paper"


def _built_preset(generated: Path, notebook: str) -> str | None:
    """The preset of the run in ``generated/<notebook>/`` (None if there is none or it is unreadable)."""
    from .store import STAMP

    try:
        return json.loads((generated / notebook / STAMP).read_text()).get("preset")
    except (OSError, ValueError, AttributeError):
        return None


def paper_metrics(
    root: Path, generated: Path, notebooks: list[str], keys: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Metrics of the store's paper-preset run of each notebook, under the notebook's *current* key.

    A notebook contributes only if it defines a ``paper`` preset, the book was not itself built
    with that preset (``generated/<nb>/.icl-run.json``), and the store holds a verified entry for
    the key that ``icl-book run <nb> --preset paper`` would use now (same source, parameters,
    lock and ``iclcore`` files). Nothing is executed. ``keys``, if given, receives each found run's key.
    """
    from .notebooks import NotebookError, discover_all
    from .runs import make_requests
    from .store import cache_key, store_dir, verify_folder

    wanted = set(notebooks)
    entries = store_dir(root) / "entries"
    if not wanted or not entries.is_dir():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for nb in discover_all(root)[0]:
        if nb.name not in wanted or PAPER_PRESET not in nb.presets:
            continue
        if _built_preset(generated, nb.name) == PAPER_PRESET:
            continue  # the main column already is the paper preset
        try:
            key = cache_key(make_requests([nb], generated, PAPER_PRESET)[0], root)
        except (NotebookError, OSError):
            continue
        if (entries / key).is_dir() and not verify_folder(entries / key, key):
            metrics = load_metrics(entries, key)
            if metrics is not None:
                found[nb.name] = metrics
                if keys is not None:
                    keys[nb.name] = key
    return found


def paper_rows(rows: list[Row], metrics: dict[str, dict[str, Any]]) -> list[Row | None]:
    """Each row re-evaluated on the paper-preset metrics of its notebook (``None`` where there are none)."""
    return [
        evaluate(r.claim, metrics[r.claim.notebook]) if r.status != "absent" and r.claim.notebook in metrics else None
        for r in rows
    ]


def rule_powers(rows: list[Row], metrics: dict[str, dict[str, Any] | None]) -> dict[int, Any]:
    """The power (:class:`iclbook.power.Power`) of every row that states an alternative, by ``id(row)``, at the
    metrics of its notebook (``metrics``: notebook -> its metrics, ``None`` if not run); where the power cannot
    be computed (a metric missing), a one-line string that says why."""
    from .power import AlternativeError, rule_power

    out: dict[int, Any] = {}
    for r in rows:
        cl = r.claim
        if cl.alternative is None or r.status == "absent":
            continue
        m = metrics.get(cl.notebook)
        if m is None:
            out[id(r)] = "not computed: the notebook has not run"
            continue
        try:
            out[id(r)] = rule_power(cl, cl.alternative, m)
        except AlternativeError as exc:
            out[id(r)] = f"not computed: {exc}"
    return out


def evidence_checks(root: Path, rows: list[Row], metrics: dict[str, dict[str, Any] | None]) -> dict[int, list[str]]:
    """For every row with a diagnosis other than ``open``, what its evidence lacks
    (:func:`iclbook.evidence.evidence_problems`), by ``id(row)``; rows whose evidence holds are left out. Metric
    references are checked against ``metrics`` (notebook -> its metrics; ``None``: not run, not checked)."""
    from .evidence import errata_headings, evidence_problems, git_commit_exists

    def commit_exists(ref: str) -> bool:
        return git_commit_exists(root, ref)

    ids = {r.claim.id for r in rows if r.claim.id}
    headings = errata_headings(root / "book" / "errata")
    found = {}
    for r in rows:
        cl = r.claim
        if cl.diagnosis and cl.diagnosis != "open":
            problems = evidence_problems(cl, root, metrics.get(cl.notebook), ids, headings, commit_exists)
            if problems:
                found[id(r)] = problems
    return found


def _power_cell(cl: Claim, p: Any) -> str:
    """The report's cell beside a verdict: the power against the stated alternative and the alternative."""
    if cl.alternative is None:
        return "—"
    if not hasattr(p, "power"):
        return f"? ({cl.alternative.text}; {p or 'not computed'})"
    from .power import POWER_MIN

    flag = f" ⚠ below {fmt_value(POWER_MIN)}" if p.power < POWER_MIN else ""
    return f"**{fmt_power(p.power)}**{flag} against: {cl.alternative.text}"


def _paper_power(p: Any) -> str:
    """`` · power 0.93`` after a paper-preset status, where the power at the paper metrics was computed."""
    return f" · power {fmt_power(p.power)}" if hasattr(p, "power") else ""


PAPERS = {
    "000": "Generalization, optimization and preconditioning dynamics for encoder–decoder in-context least squares",
    "001": "Optimization and generalization for encoder, decoder and encoder–decoder: MMNN experiments",
    "002": "Bordelon, Letey, Pehlevan: scaling laws of in-context learning (DMFT)",
    "003": "Mainali, Teixeira: exact mode dynamics of in-context logistic regression",
    "004": "Nagy: in-context learning as gradient descent (identities)",
}
BASIS_MEANING = {
    "predicted": "an independent computation that could disagree with the paper's number, whose rule rejects the "
    "stated alternative (a result that would change the paper's conclusion) with power at least 0.8",
    "underpowered": "an independent computation whose rule cannot reject that alternative with power 0.8 "
    "(the note says why and what would make it decisive): shown, not counted as a reproduction",
    "calibrated": "a free setting was chosen from the paper's number (the note names it)",
    "construction": "true because of how the experiment is built",
    "theorem": "holds for every input: a check of our code",
    "erratum": "the paper is wrong; the evidence is given",
    "other-model": "our model differs from the paper's (the note says why)",
    "absent": "not reproduced yet",
    "out-of-scope": "cannot be recomputed offline (needs a pretrained checkpoint or other material that cannot be had here; the note says what)",
}


def _used(row: Row) -> str:
    return ", ".join(f"{k} = {format_value(v)}" for k, v in row.used)


def summary_counts(rows: list[Row]) -> dict[str, int]:
    """Headline counts: reproduced = predicted rows whose rule holds; identities = theorem rows that hold."""
    return {
        "reproduced": sum(r.claim.basis == "predicted" and r.status == "reproduced" for r in rows),
        "predicted": sum(r.claim.basis == "predicted" for r in rows),
        "identities": sum(r.claim.basis == "theorem" and r.status == "reproduced" for r in rows),
        "theorems": sum(r.claim.basis == "theorem" for r in rows),
        "absent": sum(r.status == "absent" and r.claim.basis != "out-of-scope" for r in rows),
        "out_of_scope": sum(r.claim.basis == "out-of-scope" for r in rows),
        "missing": sum(r.status == "missing" for r in rows),
        "total": len(rows),
    }


#: Diagnoses that explain a `predicted` row that differs (erratum, finite-size, setting or reading).
EXPLAINED = ("erratum", "finite-size", "setting", "reading")


def outcome_counts(
    rows: list[Row], bands: dict[int, Any] | None = None, lacking: Collection[int] = ()
) -> dict[str, int]:
    """The headline: `predicted` rows reproduced / explained (a differing row whose diagnosis is
    erratum, finite-size, setting or reading, and whose evidence holds: ``lacking`` holds the ``id`` of the rows
    whose evidence does not, :func:`evidence_checks`) / open (any other differing row) / missing, rows absent
    and out of scope; ``robust``: reproduced rows whose sweep band (``bands``, by ``id(row)``) is robust."""
    pred = [r for r in rows if r.claim.basis == "predicted"]
    bands = bands or {}

    def explained(r: Row) -> bool:
        return r.claim.diagnosis in EXPLAINED and id(r) not in lacking

    return {
        "predicted": len(pred),
        "reproduced": sum(r.status == "reproduced" for r in pred),
        "robust": sum(r.status == "reproduced" and getattr(bands.get(id(r)), "label", "") == "robust" for r in pred),
        "explained": sum(r.status == "differs" and explained(r) for r in pred),
        "open": sum(r.status == "differs" and not explained(r) for r in pred),
        "missing": sum(r.status == "missing" for r in pred),
        "absent": sum(r.status == "absent" and r.claim.basis != "out-of-scope" for r in rows),
        "out_of_scope": sum(r.claim.basis == "out-of-scope" for r in rows),
    }


def headline_table(
    rows: list[Row],
    paper: list[Row | None],
    bands: dict[int, Any] | None = None,
    lacking: Collection[int] = (),
) -> list[str]:
    """Markdown lines: per paper and overall, the outcome counts (:func:`outcome_counts`) at the preset the
    book was built with and, for the rows with a stored paper-preset run, at the paper preset. *robust* counts
    the reproduced rows that hold at every swept setting; *not computed* is absent + out of scope (nine
    columns, so that the table fits the text column at 1280 px). A diagnosis whose evidence does not hold at a
    preset (``lacking``: ``id`` of quick or paper rows) counts as open there."""
    head = "| paper | preset | predicted | reproduced | robust | explained | open | missing | not computed |"
    lines = [head, "|---" * 9 + "|"]
    keys = ("predicted", "reproduced", "robust", "explained", "open", "missing")
    for seed in (*SEEDS, "all"):
        idx = [i for i, r in enumerate(rows) if seed == "all" or r.claim.seed == seed]
        if not idx:
            continue
        name = "**all**" if seed == "all" else seed
        c = outcome_counts([rows[i] for i in idx], bands, lacking)
        uncomputed = f"{c['absent']} + {c['out_of_scope']}"
        lines.append(f"| {name} | quick | " + " | ".join(str(c[k]) for k in keys) + f" | {uncomputed} |")
        with_paper = [paper[i] for i in idx if paper[i] is not None]
        if with_paper:
            pc = outcome_counts(with_paper, lacking=lacking)
            cells = [str(pc[k]) if k != "robust" else "—" for k in keys] + ["—"]
            lines.append(f"| {name} | paper, {len(with_paper)} rows | " + " | ".join(cells) + " |")
    return lines


#: Pseudo-notebook whose ``metrics.json`` holds the ledger's counts, so that chapters can state coverage
#: with the ``{metric}`` role (``{metric}`ledger:predicted```) instead of typing numbers.
LEDGER = "ledger"


def ledger_counts(
    rows: list[Row],
    paper: list[Row | None] | None = None,
    bands: dict[int, Any] | None = None,
    lacking: Collection[int] = (),
) -> dict[str, int]:
    """Counts for the ``ledger`` pseudo-notebook: headline counts, rows per basis, per paper and per status.

    ``paper`` (from :func:`paper_rows`) adds ``paper_<count>`` for the rows that have a paper-preset value.
    """
    counts: dict[str, int] = dict(summary_counts(rows))
    for k, v in outcome_counts(rows, bands, lacking).items():
        counts[f"outcome_{k}"] = v
    for k, v in summary_counts([r for r in paper or [] if r is not None]).items():
        counts[f"paper_{k}"] = v
    for b in BASES:
        counts[f"basis_{b.replace('-', '_')}"] = sum(r.claim.basis == b for r in rows)
    for st in STATUSES:
        counts[f"status_{st}"] = sum(r.status == st for r in rows)
    for seed in SEEDS:
        sub = [r for r in rows if r.claim.seed == seed]
        for k, v in summary_counts(sub).items():
            counts[f"seed{seed}_{k}"] = v
    return counts


def basis_status_table(rows: list[Row]) -> list[str]:
    """A markdown table: one line per basis present in ``rows``, one column per status."""
    bases = [b for b in BASES if any(r.claim.basis == b for r in rows)]
    head = "| basis | " + " | ".join(STATUSES) + " | rows |"
    lines = [head, "|---" * (len(STATUSES) + 2) + "|"]
    for b in bases:
        sub = [r for r in rows if r.claim.basis == b]
        cells = [str(sum(r.status == s for r in sub)) for s in STATUSES]
        lines.append(f"| {b} | " + " | ".join(cells) + f" | {len(sub)} |")
    cells = [str(sum(r.status == s for r in rows)) for s in STATUSES]
    lines.append("| **all** | " + " | ".join(cells) + f" | {len(rows)} |")
    return lines


def _paper_summary(rows: list[Row], paper: list[Row | None]) -> str:
    """One line: how the rows that have a paper-preset value fare at both sizes."""
    pairs = [(r, p) for r, p in zip(rows, paper) if p is not None]
    if not pairs:
        return ""
    q, pc = summary_counts([r for r, _ in pairs]), summary_counts([p for _, p in pairs])
    changed = sum(r.status != p.status for r, p in pairs)
    n_nb = len({r.claim.notebook for r, _ in pairs})
    return (
        f"At the **paper preset** ({n_nb} notebook(s) with a paper-size run, {len(pairs)} rows): "
        f"**{pc['reproduced']} reproduced** of {pc['predicted']} predicted claims (quick: {q['reproduced']}) · "
        f"**{pc['identities']} identities verified** of {pc['theorems']} (quick: {q['identities']}) · "
        f"{pc['missing']} missing · {changed} row(s) change status between the sizes."
    )


def _uncomputed_table(rows: list[Row], why: str) -> list[str]:
    """Markdown lines: the rows no notebook computes (absent or out of scope), by paper and section."""
    lines = [f"| id | paper | section | claim | reported | {why} |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r.claim.seed, r.claim.section)):
        a = r.claim
        cells = (a.id, a.seed, a.section, a.claim, format_value(a.reported), a.basis_note)
        lines.append("| " + " | ".join(table_cell(x) for x in cells) + " |")
    return [*lines, ""]


def _rows_by_notebook(rows: list[Row], order: list[str] | None) -> tuple[list[str], dict[str, list[Row]]]:
    """The computed rows grouped by notebook, and the notebooks in book ``order`` (others last, by name)."""
    by_notebook: dict[str, list[Row]] = {}
    for r in rows:
        if r.status != "absent":
            by_notebook.setdefault(r.claim.notebook, []).append(r)
    rank = {name: i for i, name in enumerate(order or [])}
    return sorted(by_notebook, key=lambda n: (rank.get(n, len(rank)), n)), by_notebook


def _difference(r: Row) -> str:
    """The column *difference / values used*: a predicate row shows the values it read."""
    if r.claim.kind == "predicate" and r.used:
        return _used(r) + (f"; {r.difference}" if r.difference else "")
    return r.difference


def _row_cells(
    i: int, r: Row, paper: Row | None, with_paper: bool, bands: dict[int, Any], powers: dict[int, Any]
) -> list[str]:
    """The cells of row ``r`` (number ``i`` in its table) in its notebook's table, the rule last."""
    cl = r.claim
    cells = [
        cl.id or str(i),
        status_label(r)
        + (f" · {cl.diagnosis}" if cl.diagnosis and r.status == "differs" else "")
        + (f" · {bands[id(r)].label}" if id(r) in bands else ""),
        _power_cell(cl, powers.get(id(r))),
        cl.basis,
        f"{cl.claim} ({cl.seed} {cl.section})",
        format_value(cl.reported),
        format_value(r.reproduced),
        _difference(r),
    ]
    if with_paper:
        cells += (
            [
                status_label(paper) + _paper_power(powers.get(id(paper))) + _runs_note(paper),
                format_value(paper.reproduced),
                _difference(paper),
            ]
            if paper is not None
            else ["—", "—", ""]
        )
    return [*cells, cl.rule.describe() + _spread_cell(r)]


def _spread_summary(rows: list[Row]) -> list[str]:
    """The report's paragraph on the run-to-run spread: how many rows state where their standard error gets it."""
    from .spread import SOURCES

    counts = {s: sum(r.claim.spread is not None and r.claim.spread.source == s for r in rows) for s in SOURCES}
    if not any(counts.values()):
        return []
    return [
        f"Run-to-run spread: {sum(counts.values())} rows say where their standard error gets the spread between "
        f"independent runs (*Spread* in the row's notes; the others do not say): {counts['seeds']} have a standard "
        f"error over independent runs; {counts['separate-runs']} rest on one run and add to its error the "
        f"run-to-run spread measured on separate runs; {counts['within-run']} rest on one run whose within-run "
        f"error covers the spread between runs, with the reason; {counts['single-run']} rest on one run whose "
        "error leaves that spread out, and say what the verdict rests on instead (the verdict at other seeds where "
        "separate runs checked it, and, where the notebook makes independent runs at one setting, the rule's "
        "verdict on them).",
        "",
    ]


def _spread_cell(r: Row) -> str:
    """The row's spread phrase after its rule (:mod:`iclbook.spread`), with the verdict on independent runs."""
    sp = r.claim.spread
    if sp is None:
        return ""
    return f"; *{sp.phrase()}*" + _runs_note(r)


def _runs_note(r: Row) -> str:
    """`` (over 4 runs at N = 16: holds)``: the verdict of the row's rule on independent runs, when computed."""
    text = r.claim.spread.runs_phrase(r.runs_held) if r.claim.spread is not None else ""
    return f" ({text})" if text else ""


def _row_note(
    r: Row,
    bands: dict[int, Any],
    powers: dict[int, Any],
    unsupported: dict[int, list[str]],
    paper_row: Row | None = None,
) -> str:
    """The notes of row ``r`` in one paragraph: basis note, note, diagnosis, evidence (and what it lacks at the
    built preset and at the paper preset, ``paper_row``), robustness, power."""
    cl = r.claim
    lacking_paper = unsupported.get(id(paper_row), []) if paper_row is not None else []
    parts = (
        f"*{cl.basis}:* {cl.basis_note}" if cl.basis_note else "",
        cl.note,
        f"*No standard error:* {cl.no_se}" if cl.no_se else "",
        f"*Spread:* {cl.spread.describe()}" if cl.spread is not None else "",
        f"*Diagnosis ({cl.diagnosis}):* {cl.diagnosis_note}" if cl.diagnosis else "",
        "*Evidence:* " + "; ".join(e.describe() for e in cl.evidence) + "." if cl.evidence else "",
        f"**Evidence lacking:** {'; '.join(unsupported[id(r)])}." if id(r) in unsupported else "",
        f"**Evidence lacking at the paper preset** (counted open there): {'; '.join(lacking_paper)}."
        if lacking_paper
        else "",
        f"*Robustness:* {band_text(bands[id(r)])}." if id(r) in bands else "",
        f"*Power:* {powers[id(r)].describe()} against {cl.alternative.text}."
        if hasattr(powers.get(id(r)), "power")
        else "",
    )
    return " ".join(t for t in parts if t)


def _notebook_details(
    notebooks: list[str],
    by_notebook: dict[str, list[Row]],
    paper_of: dict[int, Row | None],
    bands: dict[int, Any],
    powers: dict[int, Any],
    unsupported: dict[int, list[str]],
    origins: dict[str, str] | None,
    built: dict[str, str] | None = None,
    heading: str = "###",
) -> list[str]:
    """One table per notebook (in the order given) of its rows, with the notes by row, under ``heading``s."""
    lines: list[str] = []
    for nb in notebooks:
        with_paper = any(paper_of[id(r)] is not None for r in by_notebook[nb])
        head = (
            "| id | status | power against the alternative | basis | claim (paper, section) | reported | computed "
            "| difference / values used |"
        )
        if with_paper:
            head += " paper preset: status | paper preset: computed | paper preset: difference / values used |"
        lines += [f"{heading} Notebook `{nb}`", ""]
        if nb in (built or {}):
            lines += [f"The first status and values come from a run {(built or {})[nb]}.", ""]
        if with_paper:
            lines += [
                "The first status and values are those of the preset the book was built with; the `paper`",
                "columns evaluate the same rule on the stored run of the notebook's `paper` preset"
                + (f", {(origins or {})[nb]}." if nb in (origins or {}) else "."),
                "",
            ]
        lines += [head + " rule |", "|---" * head.count("|") + "|"]
        notes = []
        for i, r in enumerate(by_notebook[nb], start=1):
            cells = _row_cells(i, r, paper_of[id(r)], with_paper, bands, powers)
            lines.append("| " + " | ".join(table_cell(x) for x in cells) + " |")
            text = _row_note(r, bands, powers, unsupported, paper_of[id(r)])
            if text:
                notes.append(f"- **{r.claim.id or i}.** {text}")
        lines.append("")
        if notes:
            lines += ["Notes, by row:", "", *[n.replace("\n", " ") for n in notes], ""]
    return lines


def report_page(seed: str) -> str:
    """The document name of the report page of paper ``seed`` (beside ``report.md``)."""
    return f"report-{seed}"


def render_paper_report(
    seed: str,
    rows: list[Row],
    order: list[str] | None = None,
    paper: list[Row | None] | None = None,
    bands: dict[int, Any] | None = None,
    origins: dict[str, str] | None = None,
    powers: dict[int, Any] | None = None,
    unsupported: dict[int, list[str]] | None = None,
    built: dict[str, str] | None = None,
) -> str:
    """The report page of one paper: its counts, basis × status, and one table per notebook of its rows."""
    paper = list(paper) if paper is not None else [None] * len(rows)
    paper_of = {id(r): p for r, p in zip(rows, paper)}
    sub = [r for r in rows if r.claim.seed == seed]
    sc = summary_counts(sub)
    lines = [
        f"# Paper {seed}: {PAPERS.get(seed, '')}",
        "",
        "The rows of the ledger that grade this paper's claims; the rules, bases and columns are explained on the",
        "{doc}`summary page <report>`.",
        "",
        f"**{sc['reproduced']} reproduced** of {sc['predicted']} predicted claims · **{sc['identities']} identities "
        f"verified** of {sc['theorems']} · {sc['absent']} absent · {sc['out_of_scope']} out of scope · "
        f"{sc['missing']} missing · {sc['total']} rows.",
        "",
        *basis_status_table(sub),
        "",
    ]
    line = _paper_summary(sub, [paper_of[id(r)] for r in sub])
    if line:
        lines += [line, ""]
    notebooks, by_notebook = _rows_by_notebook(sub, order)
    lines += _notebook_details(
        notebooks, by_notebook, paper_of, bands or {}, powers or {}, unsupported or {}, origins, built, heading="##"
    )
    return "\n".join(lines)


def render_report(
    rows: list[Row],
    order: list[str] | None = None,
    paper: list[Row | None] | None = None,
    bands: dict[int, Any] | None = None,
    sweeps: list[str] | None = None,
    origins: dict[str, str] | None = None,
    powers: dict[int, Any] | None = None,
    unsupported: dict[int, list[str]] | None = None,
    details: bool = True,
    built: dict[str, str] | None = None,
    paper_sources: str = "",
) -> str:
    """The report page: headline, basis × status per paper, absent claims, then one table per notebook.

    With ``details=False`` the tables by notebook are left out (the book puts them on one page per paper,
    :func:`render_paper_report`) and the page links to those pages instead.

    ``order`` lists notebook names in book order; notebooks not in it come last, by name.
    ``paper`` (aligned with ``rows``, from :func:`paper_rows`): the same rules evaluated on the
    notebooks' paper-preset runs; where present, a second value and status appear beside the
    quick ones and the summaries count both. ``origins``: notebook -> where its paper run came from, when
    it was imported from an archive (:func:`iclbook.archive.origin_note`), said above its table. ``powers``
    (:func:`rule_powers`, by ``id(row)``, of the rows and of the paper-preset rows): the power of each rule
    against its stated alternative, shown in a column beside the verdict and after the paper-preset status.
    ``unsupported`` (:func:`evidence_checks`): what the evidence of a diagnosis lacks, said in the row's notes
    and counted under the headline.
    ``built``: notebook -> where the run the book was built with came from, when it was imported.
    """
    paper = list(paper) if paper is not None else [None] * len(rows)
    if len(paper) != len(rows):
        raise ValueError("paper: must be aligned with rows")
    paper_of = {id(r): p for r, p in zip(rows, paper)}
    bands = bands or {}
    powers = powers or {}
    unsupported = unsupported or {}
    c = summary_counts(rows)
    lines = [
        "# Reproduction report",
        "",
        "Every row compares what a paper **reports** with what this book **computes** when it is built. The",
        "computed values are read from the notebooks' `metrics.json`; the status is computed from them and the",
        "row's rule, never typed. Rules: *rel* — relative difference within the tolerance; *abs* — absolute",
        "difference within it; *exact* — equal; *max*/*min* — the computed value is below/above the tolerance;",
        "*within_se* — \\|computed − reported\\| ≤ z·SE (+ a stated discretisation term), with SE the standard",
        "error the notebook computed; *predicate* — an expression over metrics, shown with the values it read.",
        "Tolerances come from an error model stated in the row's note.",
        "",
        "A rule that cannot fail proves nothing, so every *predicted* row states the **alternative** it must reject",
        "(a result that would change the paper's conclusion: an exponent off by 0.1, a ratio off by 3 %, …) and the",
        "report computes the rule's **power** against it from the row's own error model (the statistic normal with",
        "the standard error the notebook computed: analytic for interval rules, a seeded simulation of 100,000 draws",
        "for predicates; `iclbook/power.py`). A rule with power below 0.8 is not a reproduction: its row is",
        "*underpowered*.",
        "",
        "Each row also has a **basis**, which says what a passing rule is worth:",
        "",
        *[f"- *{b}*: {m}." for b, m in BASIS_MEANING.items()],
        "",
        "Only *predicted* rows count as reproductions. The numbers are those of the preset the book was built",
        "with (normally `quick`). Where a row differs, its note says why (see {doc}`errata`).",
        "",
        f"**{c['reproduced']} reproduced** of {c['predicted']} predicted claims · "
        f"**{c['identities']} identities verified** of {c['theorems']} · {c['absent']} absent · "
        f"{c['out_of_scope']} out of scope · {c['missing']} missing · {c['total']} rows in all.",
        "",
        f"Random quantities: {sum(r.claim.stochastic for r in rows)} rows are graded with the standard error "
        f"the notebook computed; {sum(bool(r.claim.no_se) for r in rows)} rows graded on a random quantity have "
        "none (functions of single training runs), and each says so in its note.",
        "",
        *_spread_summary(rows),
    ]
    if _paper_summary(rows, paper):
        lines += [_paper_summary(rows, paper) + (f" {paper_sources}" if paper_sources else ""), ""]
    lines += [
        "Outcome of the *predicted* rows, per paper: reproduced (of which **robust**: the rule holds at every",
        "swept setting the paper leaves unstated, see *Robustness across unstated settings* below), explained",
        "(differs, with an erratum, finite-size, setting or reading diagnosis), open (differs otherwise), missing; and",
        "the rows not computed (absent + out of scope).",
        "",
        *headline_table(rows, paper, bands, set(unsupported)),
        "",
        "Each diagnosis other than *open* cites the runs behind it (its *Evidence*: the notebook's own size series or",
        "before/after metrics, a test, an errata entry and the row of the adopted reading, or a commit); the build checks",
        "that they exist"
        + (
            f". **{len(unsupported)} diagnosis(es) lack their evidence** at the preset the book was built with or at the "
            "paper preset (said in the row's notes, and counted open there)."
            if unsupported
            else ", and every diagnosis has its evidence."
        ),
        "",
    ]
    seeds = sorted({r.claim.seed for r in rows})
    for seed in seeds:
        sub = [r for r in rows if r.claim.seed == seed]
        sc = summary_counts(sub)
        lines += [
            f"## Paper {seed}: {PAPERS.get(seed, '')}",
            "",
            f"{sc['reproduced']} of {sc['predicted']} predicted claims reproduced; {sc['identities']} of "
            f"{sc['theorems']} identities verified; absent: {sc['absent']}.",
            "",
            *basis_status_table(sub),
            "",
        ]
        line = _paper_summary(sub, [paper_of[id(r)] for r in sub])
        if line:
            lines += [line, ""]
    absent = [r for r in rows if r.status == "absent" and r.claim.basis == "absent"]
    if absent:
        lines += [
            "## Not reproduced yet",
            "",
            "Figures, tables and numbered claims of the papers that no notebook computes yet, with the chapter",
            "that will cover them or the reason they are out of scope.",
            "",
            *_uncomputed_table(absent, "where / why"),
        ]
    out_of_scope = [r for r in rows if r.claim.basis == "out-of-scope"]
    if out_of_scope:
        lines += [
            "## Out of scope",
            "",
            "Claims that cannot be recomputed offline (pretrained public checkpoints, a proof assistant's",
            "export): counted apart from the absent ones, each with the reason.",
            "",
            *_uncomputed_table(out_of_scope, "why"),
        ]
    notebooks, by_notebook = _rows_by_notebook(rows, order)
    lines += [
        "## By notebook",
        "",
        "| notebook | rows | predicted: reproduced / rows | theorem: verified / rows | differ | missing |",
        "|---|---|---|---|---|---|",
    ]
    for nb in notebooks:
        nb_rows = by_notebook[nb]
        nc = summary_counts(nb_rows)
        differ = sum(r.status == "differs" for r in nb_rows)
        lines.append(
            f"| `{nb}` | {len(nb_rows)} | {nc['reproduced']} / {nc['predicted']} | "
            f"{nc['identities']} / {nc['theorems']} | {differ} | {nc['missing']} |"
        )
    lines.append("")

    if details:
        lines += _notebook_details(notebooks, by_notebook, paper_of, bands, powers, unsupported, origins, built)
    else:
        lines += [
            "The rows of each paper, notebook by notebook (reported, computed, rule, verdict, power and notes), are on",
            "one page per paper: " + ", ".join(f"{{doc}}`paper {seed} <{report_page(seed)}>`" for seed in PAPERS) + ".",
            "",
        ]
    if bands:
        lines += robustness_section(rows, bands, sweeps or [])
    return "\n".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (so Sphinx does not re-read an unchanged page)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_pages(root: Path, generated: Path) -> list[Row]:
    """Write report.md (the summary), report-<paper>.md (one page per paper), errata.md, api.md and
    measurements.md into ``generated``; return the report rows."""
    generated.mkdir(parents=True, exist_ok=True)
    rows = report_rows(root, generated)
    keys: dict[str, str] = {}  # notebook -> key of its stored paper run; an imported one says where from
    names = sorted({r.claim.notebook for r in rows if r.claim.notebook})
    found = paper_metrics(root, generated, names, keys)
    from .archive import built_origins, entry_origin, origin_note
    from .record import record_sources, recorded_runs

    built_with_paper = {n for n in names if _built_preset(generated, n) == PAPER_PRESET}
    recorded, record_notes = recorded_runs(root, PAPER_PRESET, skip=set(found) | built_with_paper)
    paper_sources = record_sources(root, found, recorded)
    stored_paper = {**found, **recorded}
    paper = paper_rows(rows, stored_paper)
    origins = {nb: origin_note(o) for nb, key in keys.items() if (o := entry_origin(root, key)) is not None}
    origins.update(record_notes)
    built = built_origins(generated, names)
    bands, sweep_lines = sweep_bands(root, rows, generated)
    own = {nb: load_metrics(generated, nb) for nb in sorted({r.claim.notebook for r in rows if r.claim.notebook})}
    powers = {**rule_powers(rows, own), **rule_powers([p for p in paper if p is not None], dict(stored_paper))}
    unsupported = {
        **evidence_checks(root, rows, own),
        **evidence_checks(root, [p for p in paper if p is not None], dict(stored_paper)),
    }
    order = toc_order(root / "_toc.yml")
    _write_if_changed(
        generated / "report.md",
        render_report(
            rows,
            order,
            paper,
            bands,
            sweep_lines,
            origins,
            powers,
            unsupported,
            details=False,
            built=built,
            paper_sources=paper_sources,
        ),
    )
    for seed in PAPERS:
        _write_if_changed(
            generated / f"{report_page(seed)}.md",
            render_paper_report(seed, rows, order, paper, bands, origins, powers, unsupported, built),
        )
    (generated / LEDGER).mkdir(exist_ok=True)
    _write_if_changed(
        generated / LEDGER / "metrics.json",
        json.dumps(ledger_counts(rows, paper, bands, set(unsupported)), indent=2, sort_keys=True) + "\n",
    )
    _write_if_changed(
        generated / "errata.md", render_errata(root / "book" / "errata", chapter_order(root / "_toc.yml"))
    )
    _write_if_changed(generated / "api.md", render_api(iclcore_modules(), iclcore_exports()))
    _write_if_changed(generated / "measurements.md", render_measurements(root))
    return rows
