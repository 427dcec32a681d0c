"""The rule fields of a notebook's ledger rows, for its cache key (:func:`iclbook.store.cache_key`).

The last cell of each notebook shows its ledger rows' verdicts (:mod:`iclbook.verdicts`). So that the
stored executed notebook never shows a verdict other than the report's, a notebook's key covers what
decides or labels those verdicts (:data:`RULE_FIELDS`), and not the notes: editing a note re-executes
nothing. Ledger files are read through :mod:`iclbook.loaders` (bounded, schema-checked).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from .loaders import LEDGER, parse_bytes, read_bounded

__all__ = ["RULE_FIELDS", "ledger_rule_digest"]

#: The fields of a ledger row that decide or label its verdict (not its notes, claim or section).
RULE_FIELDS = (
    "id",
    "notebook",
    "kind",
    "metric",
    "predicate",
    "tolerance",
    "se",
    "z",
    "discretisation",
    "reported",
    "basis",
)


@lru_cache(maxsize=32)
def _parse_ledger(text: bytes, where: str) -> Any:
    """The checked ledger ``text`` (:func:`iclbook.loaders.parse_bytes`), memoised by content: every
    notebook's cache key reads the same ledgers; callers only read the result."""
    return parse_bytes(text, LEDGER, where)


def ledger_rule_digest(reported_dir: Path, notebook: str) -> bytes:
    """The rule fields (:data:`RULE_FIELDS`) of the ledger rows naming ``notebook``, as canonical JSON.

    A ledger file that is not a valid ledger (:data:`iclbook.loaders.LEDGER`) is an
    :class:`~iclbook.loaders.InputFileError` naming it and its line: a broken ledger stops the command
    instead of silently re-keying (and re-executing) every notebook. Notes, claims, sections and diagnoses
    are left out: editing them re-executes nothing.
    """
    parts: list[Any] = []
    for path in sorted(Path(reported_dir).glob("*.yml")):
        where = f"book/reported/{path.name}"
        data = _parse_ledger(read_bounded(path, LEDGER, where), where) or []
        for d in data:
            if str(d.get("notebook") or "") == notebook:
                parts.append({k: d[k] for k in RULE_FIELDS if k in d})
    return json.dumps(parts, sort_keys=True, default=repr).encode()
