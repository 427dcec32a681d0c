"""The page *Errata and decisions*: the errata fragments of the chapters (``book/errata/*.md``) in book order."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ERRATA_HEADER", "chapter_order", "render_errata"]

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


def chapter_order(toc: Path) -> list[str]:
    """The stems of the chapters ``book/<stem>`` in the order the table of contents ``toc`` lists them."""
    text = toc.read_text() if toc.exists() else ""
    return re.findall(r"file:\s*book/([A-Za-z0-9_\-]+)\s*$", text, flags=re.M)
