"""The runs behind a ledger row's diagnosis (ledger field ``evidence``), and what each diagnosis needs.

A row that differs carries a diagnosis (:data:`iclbook.ledger.DIAGNOSES`); the diagnosis is only as good as
the runs that show it. ``evidence`` is a list of references, each a mapping with exactly one of:

``metrics``
    keys of the row's notebook's ``metrics.json`` (a size series or a before/after the notebook computes at
    every build); with ``form``, the asymptotic form of a size series and why (power law, 1/N, log, ...);
``sweep``
    a sweep point of the row's notebook, ``{setting: value}`` (a run in the store, ``make sweep``);
``test``
    a test, ``tests/...py::test_name``;
``errata``
    the heading of an errata entry (``book/errata/*.md``);
``row``
    another ledger row's id;
``commit``
    a commit of this repository (the state before a fix);
``trend``
    a size series fitted at every build: ``{values: [metric keys], se: [their SEs], x: [numbers or expressions
    over metrics], limit: number, form: text}``; the weighted least-squares fit ``c + a x`` (``x`` the
    transformed size, e.g. ``1/B`` or ``1/D``, as the stated ``form`` justifies) must reach ``limit`` within
    3 standard errors of ``c`` (:func:`fit_trend`).

What each diagnosis needs (:data:`REQUIRED`, checked by :func:`evidence_problems`): ``finite-size`` a size
series (``metrics`` with at least three keys and its ``form``), ``setting`` a run at another value of the
setting (``metrics`` or ``sweep``), ``fixed`` the before (``commit``) and after (``metrics`` or ``test``),
``erratum`` its ``test``, ``reading`` the ``errata`` entry and the ``row`` of the adopted reading. A
diagnosis without them is to be ``open``. Runs made outside the repository (a separate script, a store run
of another machine) are not evidence here: the note may describe them.

This module imports only :mod:`iclbook.predicates` (for the expressions of a trend's sizes) and
:mod:`iclbook.numbers` (the book's number style).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .numbers import fmt_se, fmt_value

__all__ = [
    "KINDS",
    "REQUIRED",
    "EvidenceError",
    "Reference",
    "Trend",
    "evidence_problems",
    "fit_trend",
    "git_commit_exists",
    "parse_evidence",
    "trend_of",
]

KINDS = ("metrics", "sweep", "test", "errata", "row", "commit", "trend")
#: For each diagnosis, alternatives of the reference kinds it needs (every kind of one alternative).
REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "finite-size": (("metrics",), ("trend",)),
    "setting": (("metrics",), ("sweep",)),
    "fixed": (("commit", "metrics"), ("commit", "test")),
    "erratum": (("test",),),
    "reading": (("errata", "row"),),
}
#: The fewest metrics of a size series.
SERIES_MIN = 3


class EvidenceError(ValueError):
    """A malformed ``evidence`` field."""


@dataclass(frozen=True)
class Reference:
    """One reference: its ``kind`` (:data:`KINDS`), ``target`` (metric keys, ``{setting: value}``, a test id, an
    errata heading, a row id or a commit) and, for a size series, its asymptotic ``form``."""

    kind: str
    target: Any
    form: str = ""

    def describe(self) -> str:
        """One phrase for the report."""
        if self.kind == "metrics":
            text = "metrics " + ", ".join(f"`{k}`" for k in self.target)
            return text + (f" (size series, {self.form})" if self.form else "")
        if self.kind == "sweep":
            return "sweep point " + ", ".join(f"{k}={v!r}" for k, v in self.target.items())
        if self.kind == "trend":
            return f"size series {', '.join(self.target['values'])} fitted as {self.target['form']}"
        if self.kind == "errata":
            return f"errata '{self.target}'"
        return f"{self.kind} `{self.target}`"


def parse_evidence(value: Any, where: str) -> tuple[Reference, ...]:
    """Check and read an ``evidence`` list; a malformed one is an :class:`EvidenceError` naming ``where``."""
    if not isinstance(value, list) or not value:
        raise EvidenceError(f"{where}: evidence must be a non-empty list of references ({', '.join(KINDS)})")
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise EvidenceError(f"{where}: each evidence item is a mapping with one of {KINDS}, got {item!r}")
        kinds = [k for k in KINDS if k in item]
        extra = sorted(set(item) - set(KINDS) - {"form"})
        if len(kinds) != 1 or extra:
            raise EvidenceError(f"{where}: evidence item {item!r} needs exactly one of {KINDS} (and may have 'form')")
        kind, target = kinds[0], item[kinds[0]]
        form = str(item.get("form") or "").strip()
        if form and kind != "metrics":
            raise EvidenceError(f"{where}: 'form' belongs to a metrics size series, not to {kind!r}")
        if kind == "metrics":
            ok = isinstance(target, list) and target and all(isinstance(k, str) and k for k in target)
        elif kind == "sweep":
            ok = isinstance(target, dict) and target and all(isinstance(k, str) for k in target)
        elif kind == "trend":
            ok = _trend_ok(target)
        else:
            ok = isinstance(target, str) and target.strip()
        if not ok:
            raise EvidenceError(f"{where}: evidence {kind} {target!r} is not well formed")
        out.append(Reference(kind, tuple(target) if kind == "metrics" else target, form))
    return tuple(out)


def _trend_ok(t: Any) -> bool:
    if not isinstance(t, dict) or set(t) != {"values", "se", "x", "limit", "form"}:
        return False
    lists = [t["values"], t["se"], t["x"]]
    same = all(isinstance(v, list) for v in lists) and len({len(v) for v in lists}) == 1 and len(t["values"]) >= 3
    number = isinstance(t["limit"], (int, float)) and not isinstance(t["limit"], bool)
    return same and number and isinstance(t["form"], str) and bool(t["form"].strip())


@dataclass(frozen=True)
class Trend:
    """The fit ``c + a x`` of a size series: intercept ``c`` with standard error ``c_se``, slope ``a``, the
    ``chi2`` of the weighted residuals and the ``limit`` it must reach; ``reaches``: ``|c - limit| <= 3 c_se``."""

    c: float
    c_se: float
    a: float
    chi2: float
    limit: float

    @property
    def reaches(self) -> bool:
        return abs(self.c - self.limit) <= 3 * self.c_se


def fit_trend(values: Any, se: Any, x: Any, limit: float) -> Trend:
    """Weighted least squares of ``values`` (n,) with standard errors ``se`` (n,) on ``1`` and ``x`` (n,): the
    extrapolation of a size series to ``x = 0`` (``x`` = 1/size), with the intercept's standard error."""
    import numpy as np

    y, s, xs = (np.asarray(v, dtype=float) for v in (values, se, x))
    if np.any(s <= 0) or len(y) < 3:
        raise EvidenceError("a trend needs at least 3 points with positive standard errors")
    design = np.stack([np.ones_like(xs), xs], axis=1) / s[:, None]
    cov = np.linalg.inv(design.T @ design)
    beta = cov @ design.T @ (y / s)
    chi2 = float(np.sum((y / s - design @ beta) ** 2))
    return Trend(float(beta[0]), float(np.sqrt(cov[0, 0])), float(beta[1]), chi2, float(limit))


def _number(expr: Any, metrics: dict[str, Any]) -> float:
    """A number, or an expression over ``metrics`` in the predicate language, as a float."""
    from .predicates import ReportError, evaluate_tree, parse_predicate, predicate_names

    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return float(expr)
    lacking = [n for n in predicate_names(str(expr)) if n not in metrics]
    if lacking:
        raise EvidenceError(f"metrics {lacking} are not in the notebook's metrics.json")
    try:
        return float(evaluate_tree(parse_predicate(str(expr), "trend"), metrics))
    except (ReportError, ArithmeticError, TypeError, ValueError) as exc:
        raise EvidenceError(f"trend expression {expr!r} cannot be evaluated: {exc}") from None


def trend_of(t: dict[str, Any], metrics: dict[str, Any]) -> Trend:
    """:func:`fit_trend` of a ``trend`` reference at ``metrics``."""

    def num(v: Any) -> float:
        return _number(v, metrics)

    return fit_trend([num(v) for v in t["values"]], [num(v) for v in t["se"]], [num(v) for v in t["x"]], t["limit"])


def errata_headings(errata_dir: Path) -> set[str]:
    """The headings (``### ...``) of the errata entries."""
    found = set()
    for path in sorted(Path(errata_dir).glob("*.md")):
        found.update(m.strip() for m in re.findall(r"^#{2,4}\s+(.+)$", path.read_text(), flags=re.M))
    return found


def git_commit_exists(root: Path, ref: str) -> bool:
    """Whether ``ref`` names a commit of the git repository at ``root`` (``True`` where git cannot be asked:
    a reference that cannot be checked is not refuted)."""
    import subprocess

    try:
        out = subprocess.run(["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return True
    return out.returncode == 0


def _test_exists(root: Path, ref: str) -> bool:
    path, _, name = ref.partition("::")
    file = root / path
    return bool(name) and file.is_file() and re.search(rf"^\s*def {re.escape(name)}\(", file.read_text(), re.M)


@dataclass(frozen=True)
class _Context:
    """What the references of one row are checked against (:func:`evidence_problems`)."""

    claim: Any
    root: Path
    metrics: dict[str, Any] | None
    row_ids: set[str]
    headings: set[str]
    commit_exists: Callable[[str], bool] | None


def _metrics_problems(r: Reference, c: _Context) -> list[str]:
    """A metrics reference: a finite-size series is long enough and has its form; its keys are in the metrics."""
    problems = []
    if c.claim.diagnosis == "finite-size" and (len(r.target) < SERIES_MIN or not r.form):
        problems.append(f"a size series needs at least {SERIES_MIN} metrics and its form: {r.describe()}")
    if c.metrics is not None:
        lacking = [k for k in r.target if k not in c.metrics]
        if lacking:
            problems.append(f"metrics {lacking} are not in {c.claim.notebook}'s metrics.json")
    return problems


def _trend_problems(r: Reference, c: _Context) -> list[str]:
    """A trend reference: its size series extrapolates to the stated limit within 3 SE."""
    if c.metrics is None:
        return []
    try:
        tr = trend_of(r.target, c.metrics)
    except EvidenceError as exc:
        return [str(exc)]
    if tr.reaches:
        return []
    return [
        f"the size series extrapolates to {fmt_value(tr.c)} ± {fmt_se(tr.c_se)}, not to {fmt_value(tr.limit, 6)} "
        "within 3 SE"
    ]


def _reference_problems(r: Reference, c: _Context) -> list[str]:
    """What is wrong with one reference (empty: it resolves)."""
    if r.kind == "metrics":
        return _metrics_problems(r, c)
    if r.kind == "trend":
        return _trend_problems(r, c)
    return [] if _resolves(r, c) else [_UNRESOLVED[r.kind].format(r.target)]


#: What a reference that does not resolve lacks, by kind.
_UNRESOLVED = {
    "test": "test {!r} does not exist",
    "errata": "no errata entry headed {!r}",
    "row": "no ledger row {!r}",
    "commit": "no commit {!r}",
}


def _resolves(r: Reference, c: _Context) -> bool:
    """Whether a test, errata, row or commit reference names something that exists (other kinds: true)."""
    if r.kind == "test":
        return _test_exists(c.root, r.target)
    if r.kind == "errata":
        return r.target in c.headings
    if r.kind == "row":
        return r.target in c.row_ids
    if r.kind == "commit":
        return c.commit_exists is None or c.commit_exists(r.target)
    return True


def evidence_problems(
    claim: Any,
    root: Path,
    metrics: dict[str, Any] | None,
    row_ids: set[str],
    headings: set[str],
    commit_exists: Callable[[str], bool] | None = None,
) -> list[str]:
    """What is missing or wrong in ``claim``'s evidence for its diagnosis (empty: it is supported, as far as
    references can be checked): the kinds its diagnosis needs (:data:`REQUIRED`), and every reference resolves
    (metric keys in ``metrics``, a test function in ``root``, an errata heading, a row id, a commit)."""
    refs: tuple[Reference, ...] = claim.evidence or ()
    problems = []
    need = REQUIRED.get(claim.diagnosis)
    have = {r.kind for r in refs}
    if need and not any(set(alt) <= have for alt in need):
        wanted = " or ".join("+".join(alt) for alt in need)
        problems.append(f"diagnosis {claim.diagnosis!r} needs evidence {wanted}; has {sorted(have) or 'none'}")
    context = _Context(claim, root, metrics, row_ids, headings, commit_exists)
    for r in refs:
        problems += _reference_problems(r, context)
    return problems
