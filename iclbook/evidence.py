"""The runs behind a ledger row's diagnosis (ledger field ``evidence``), and what each diagnosis needs.

A row that differs carries a diagnosis (:data:`iclbook.pages.DIAGNOSES`); the diagnosis is only as good as
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
    a commit of this repository (the state before a fix).

What each diagnosis needs (:data:`REQUIRED`, checked by :func:`evidence_problems`): ``finite-size`` a size
series (``metrics`` with at least three keys and its ``form``), ``setting`` a run at another value of the
setting (``metrics`` or ``sweep``), ``fixed`` the before (``commit``) and after (``metrics`` or ``test``),
``erratum`` its ``test``, ``reading`` the ``errata`` entry and the ``row`` of the adopted reading. A
diagnosis without them is to be ``open``. Runs made outside the repository (a separate script, a store run
of another machine) are not evidence here: the note may describe them.

This module imports no other ``iclbook`` module.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "REQUIRED", "EvidenceError", "Reference", "evidence_problems", "parse_evidence"]

KINDS = ("metrics", "sweep", "test", "errata", "row", "commit")
#: For each diagnosis, alternatives of the reference kinds it needs (every kind of one alternative).
REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "finite-size": (("metrics",),),
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
        else:
            ok = isinstance(target, str) and target.strip()
        if not ok:
            raise EvidenceError(f"{where}: evidence {kind} {target!r} is not well formed")
        out.append(Reference(kind, tuple(target) if kind == "metrics" else target, form))
    return tuple(out)


def errata_headings(errata_dir: Path) -> set[str]:
    """The headings (``### ...``) of the errata entries."""
    found = set()
    for path in sorted(Path(errata_dir).glob("*.md")):
        found.update(m.strip() for m in re.findall(r"^#{2,4}\s+(.+)$", path.read_text(), flags=re.M))
    return found


def _test_exists(root: Path, ref: str) -> bool:
    path, _, name = ref.partition("::")
    file = root / path
    return bool(name) and file.is_file() and re.search(rf"^\s*def {re.escape(name)}\(", file.read_text(), re.M)


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
    for r in refs:
        if r.kind == "metrics":
            if claim.diagnosis == "finite-size" and (len(r.target) < SERIES_MIN or not r.form):
                problems.append(f"a size series needs at least {SERIES_MIN} metrics and its form: {r.describe()}")
            if metrics is not None:
                lacking = [k for k in r.target if k not in metrics]
                if lacking:
                    problems.append(f"metrics {lacking} are not in {claim.notebook}'s metrics.json")
        elif r.kind == "test" and not _test_exists(root, r.target):
            problems.append(f"test {r.target!r} does not exist")
        elif r.kind == "errata" and r.target not in headings:
            problems.append(f"no errata entry headed {r.target!r}")
        elif r.kind == "row" and r.target not in row_ids:
            problems.append(f"no ledger row {r.target!r}")
        elif r.kind == "commit" and commit_exists is not None and not commit_exists(r.target):
            problems.append(f"no commit {r.target!r}")
    return problems
