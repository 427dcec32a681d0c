"""Pages the build generates: the Reproduction report, Errata and decisions, the API reference.

The reproduction report joins the papers' reported values (``book/reported/*.yml``)
with the numbers the notebooks computed (``book/generated/<notebook>/metrics.json``).
The status of each row is computed here from the numbers, never typed.
"""

from __future__ import annotations

import json
import math
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .notebooks import toc_order

KINDS = ("exact", "rel", "abs", "max", "min", "qualitative")
REQUIRED = ("notebook", "metric", "claim", "reported", "seed", "section", "kind")
OPTIONAL = ("tolerance", "note")


class ReportError(ValueError):
    """A reported-values file is malformed."""


@dataclass(frozen=True)
class Claim:
    """One reported value of a paper, to be compared with a computed metric."""

    notebook: str
    metric: str
    claim: str
    reported: Any
    seed: str
    section: str
    kind: str
    tolerance: float | None
    note: str
    source: str

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str) -> "Claim":
        if not isinstance(d, dict):
            raise ReportError(f"{source}: each entry must be a mapping, got {type(d).__name__}")
        missing = [k for k in REQUIRED if k not in d]
        unknown = sorted(set(d) - set(REQUIRED) - set(OPTIONAL))
        where = f"{source}: entry {d.get('notebook')}:{d.get('metric')}"
        if missing:
            raise ReportError(f"{where}: missing fields {missing}")
        if unknown:
            raise ReportError(f"{where}: unknown fields {unknown}; allowed: {list(REQUIRED + OPTIONAL)}")
        kind = d["kind"]
        if kind not in KINDS:
            raise ReportError(f"{where}: kind {kind!r} is not one of {KINDS}")
        tol = d.get("tolerance")
        if kind in {"rel", "abs", "max", "min"}:
            if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not math.isfinite(tol):
                raise ReportError(f"{where}: kind {kind!r} needs a numeric tolerance")
        if kind in {"rel", "abs", "exact"} and not isinstance(d["reported"], (int, float)):
            raise ReportError(f"{where}: kind {kind!r} needs a numeric reported value")
        return cls(
            notebook=str(d["notebook"]), metric=str(d["metric"]), claim=str(d["claim"]),
            reported=d["reported"], seed=str(d["seed"]), section=str(d["section"]), kind=kind,
            tolerance=None if tol is None else float(tol), note=str(d.get("note", "") or ""), source=source,
        )


@dataclass(frozen=True)
class Row:
    claim: Claim
    reproduced: float | bool | None
    difference: str
    status: str  # "reproduced", "differs" or "missing"


def load_claims(reported_dir: Path) -> list[Claim]:
    claims = []
    for path in sorted(reported_dir.glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or []
        if not isinstance(data, list):
            raise ReportError(f"{path.name}: the file must hold a YAML list of entries")
        claims.extend(Claim.from_dict(d, path.name) for d in data)
    return claims


def compare(claim: Claim, value: float | bool | None) -> Row:
    """Compute the difference and the status of ``claim`` against the computed ``value``."""
    if value is None:
        return Row(claim, None, "", "missing")
    r, tol, x = claim.reported, claim.tolerance, value
    if claim.kind == "qualitative":
        if not isinstance(x, bool):
            return Row(claim, x, "metric is not a boolean", "differs")
        return Row(claim, x, "", "reproduced" if x else "differs")
    x = float(x)
    if claim.kind == "exact":
        ok, diff = x == float(r), f"{x - float(r):.3g}"
    elif claim.kind == "abs":
        ok, diff = abs(x - r) <= tol, f"{x - r:+.3g}"
    elif claim.kind == "rel":
        rel = abs(x - r) / abs(r) if r != 0 else math.inf
        ok, diff = rel <= tol, f"{(x - r) / abs(r):+.2%}" if r != 0 else "n/a"
    elif claim.kind == "max":
        ok, diff = x <= tol, f"bound ≤ {tol:.3g}"
    else:  # min
        ok, diff = x >= tol, f"bound ≥ {tol:.3g}"
    return Row(claim, x, diff, "reproduced" if ok else "differs")


def load_metrics(generated: Path, notebook: str) -> dict[str, Any] | None:
    path = generated / notebook / "metrics.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def report_rows(root: Path, generated: Path) -> list[Row]:
    rows = []
    cache: dict[str, dict[str, Any] | None] = {}
    for claim in load_claims(root / "book" / "reported"):
        if claim.notebook not in cache:
            cache[claim.notebook] = load_metrics(generated, claim.notebook)
        metrics = cache[claim.notebook] or {}
        rows.append(compare(claim, metrics.get(claim.metric)))
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "holds" if v else "fails"
    if isinstance(v, (int, float)):
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    return str(v)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


STATUS_LABEL = {"reproduced": "✓ reproduced", "differs": "✗ differs", "missing": "? missing"}


def render_report(rows: list[Row], order: list[str] | None = None) -> str:
    """The report page: a summary per notebook, then one table per notebook with numbered notes.

    ``order`` lists notebook names in book order; notebooks not in it come last, by name.
    """
    counts = {s: sum(r.status == s for r in rows) for s in STATUS_LABEL}
    lines = [
        "# Reproduction report",
        "",
        "Every row compares a value a paper **reports** with the value this book **reproduces** when it is",
        "built. The reproduced column is read from the notebook's `metrics.json`; the status is computed",
        "from the two numbers and the comparison rule, never typed. Rules: *rel* — relative difference",
        "within the tolerance; *abs* — absolute difference within it; *exact* — equal; *max*/*min* — the",
        "reproduced value is below/above the tolerance (used for rounding-level identities and bounds,",
        "whose exact digits depend on the draw); *qualitative* — the paper states a property in words and",
        "the notebook computes whether it holds. Where a row differs, its note says why (see",
        "{doc}`errata`). The numbers are those of the preset the book was built with (normally `quick`).",
        "",
        f"**{counts['reproduced']} reproduced, {counts['differs']} differ, {counts['missing']} missing** "
        f"out of {len(rows)} claims.",
        "",
    ]
    by_notebook: dict[str, list[Row]] = {}
    for r in rows:
        by_notebook.setdefault(r.claim.notebook, []).append(r)
    rank = {name: i for i, name in enumerate(order or [])}
    notebooks = sorted(by_notebook, key=lambda n: (rank.get(n, len(rank)), n))
    lines += ["| notebook | claims | reproduced | differ | missing |", "|---|---|---|---|---|"]
    for nb in notebooks:
        nb_rows = by_notebook[nb]
        c = {s: sum(r.status == s for r in nb_rows) for s in STATUS_LABEL}
        lines.append(f"| `{nb}` | {len(nb_rows)} | {c['reproduced']} | {c['differs']} | {c['missing']} |")
    lines.append("")
    for nb in notebooks:
        lines += [
            f"## Notebook `{nb}`",
            "",
            "| # | status | claim (seed, section) | reported | reproduced | difference | rule |",
            "|---|---|---|---|---|---|---|",
        ]
        notes = []
        for i, r in enumerate(by_notebook[nb], start=1):
            c = r.claim
            rule = c.kind + (f" ({c.tolerance:g})" if c.tolerance is not None else "")
            lines.append(
                "| " + " | ".join(_cell(x) for x in (
                    str(i), STATUS_LABEL[r.status], f"{c.claim} (seed {c.seed} {c.section})", _fmt(c.reported),
                    _fmt(r.reproduced), r.difference, rule,
                )) + " |"
            )
            if c.note:
                notes.append(f"- **{i}.** {c.note.strip()}")
        lines.append("")
        if notes:
            lines += ["Notes, by row:", "", *[n.replace("\n", " ") for n in notes], ""]
    return "\n".join(lines)


ERRATA_HEADER = """# Errata and decisions

The papers contain typos, gaps and unstated choices. Wherever one is wrong or silent we decide, write the
decision down here, and test it: each entry names the check (a test in `tests/` or a metric in the
{doc}`report`) that supports it. Entries are grouped by chapter.
"""


def render_errata(errata_dir: Path, order: list[str]) -> str:
    """Concatenate ``book/errata/*.md`` in book order (``order``: chapter stems), the rest by name."""
    frags = sorted(errata_dir.glob("*.md"))
    rank = {stem: i for i, stem in enumerate(order)}
    frags.sort(key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    parts = [ERRATA_HEADER]
    for p in frags:
        parts.append(p.read_text().strip() + "\n")
    return "\n".join(parts)


def iclcore_modules() -> list[str]:
    """Public modules of ``iclcore``, subpackages included (names with a ``_`` part are private)."""
    import iclcore

    names = []
    for info in pkgutil.walk_packages(iclcore.__path__, prefix="iclcore."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names)


def render_api(modules: list[str]) -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the `iclcore` package. Each function states the shapes it",
        "takes and the equation and seed section it implements.",
        "",
    ]
    for mod in modules:
        lines += [f"## `{mod}`", "", "```{eval-rst}", f".. automodule:: {mod}", "   :members:", "```", ""]
    return "\n".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (so Sphinx does not re-read an unchanged page)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_pages(root: Path, generated: Path) -> list[Row]:
    """Write report.md, errata.md and api.md into ``generated``; return the report rows."""
    generated.mkdir(parents=True, exist_ok=True)
    rows = report_rows(root, generated)
    _write_if_changed(generated / "report.md", render_report(rows, toc_order(root / "_toc.yml")))
    toc = (root / "_toc.yml").read_text() if (root / "_toc.yml").exists() else ""
    chapter_order = re.findall(r"file:\s*book/([A-Za-z0-9_\-]+)\s*$", toc, flags=re.M)
    _write_if_changed(generated / "errata.md", render_errata(root / "book" / "errata", chapter_order))
    _write_if_changed(generated / "api.md", render_api(iclcore_modules()))
    return rows
