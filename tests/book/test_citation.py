"""Citations and project metadata: the bibliography, CITATION.cff, LICENSE, the version's one home.

- every ``{cite}`` key used in the book exists in ``book/references.bib``, and the five papers the
  book recomputes are there;
- reader-facing prose (chapters and errata) names a paper by its citation, never by its internal
  seed number (seed numbers stay as identifiers in data files, file names and labels);
- ``CITATION.cff`` repeats the version written in ``pyproject.toml`` and the license of ``LICENSE``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "book" / "references.bib"
PAPERS = ("precond2026", "mmnn2026", "bordelon2025scaling", "mainali2025exact", "nagy2026gd")

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")
SEED = re.compile(r"(?<![\w-])seeds? ?00[0-4](?![\w-])", re.I)  # not "seed001_fig1.png", "fig-seed001-x"


def bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), re.M))


def prose_files() -> list[Path]:
    return sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "book" / "errata").glob("*.md"))


def test_bibliography_holds_the_papers_and_is_unique() -> None:
    text = BIB.read_text()
    keys = re.findall(r"^@\w+\{([^,\s]+),", text, re.M)
    assert len(keys) == len(set(keys)), "duplicate BibTeX keys"
    assert set(PAPERS) <= set(keys)
    for key in keys:
        entry = text.split(f"{{{key},", 1)[1].split("\n}", 1)[0]
        assert re.search(r"^\s*title\s*=", entry, re.M), f"{key} has no title"
        assert re.search(r"^\s*author\s*=", entry, re.M), f"{key} has no author"


def test_every_cited_key_exists() -> None:
    keys = bib_keys()
    missing = {}
    for path in prose_files():
        for group in CITE.findall(path.read_text()):
            for key in (k.strip() for k in group.split(",")):
                if key not in keys:
                    missing.setdefault(str(path.relative_to(ROOT)), []).append(key)
    assert not missing, f"citation keys absent from book/references.bib: {missing}"


def test_chapters_cite_the_papers() -> None:
    chapters = [p for p in (ROOT / "book").glob("*.md") if p.name not in ("bibliography.md",)]
    uncited = [p.name for p in chapters if not CITE.search(p.read_text())]
    assert not uncited, f"chapters without a citation: {uncited}"


def test_no_seed_numbers_in_reader_facing_prose() -> None:
    offenders = []
    for path in prose_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if SEED.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not offenders, "name the paper by its citation, not its seed number:\n" + "\n".join(offenders)


def test_citation_cff_matches_pyproject_and_license() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(cff["version"]) == project["version"]
    assert cff["license"] == project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert cff["cff-version"] == "1.2.0" and cff["title"] and cff["authors"]
