"""The rule fields of a notebook's ledger rows, for its cache key (:func:`iclbook.store.cache_key`).

The last cell of each notebook shows its ledger rows' verdicts (:mod:`iclbook.verdicts`). So that the
stored executed notebook never shows a verdict other than the report's, a notebook's key covers what
decides or labels those verdicts (:data:`RULE_FIELDS`), and not the notes: editing a note re-executes
nothing. This module imports no other ``iclbook`` module (the store imports it).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

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
def _parse_yaml(text: bytes) -> Any:
    """The parsed YAML of ``text``, or ``text`` itself if it does not parse (memoised by content: every
    notebook's cache key reads the same ledgers; callers only read the result)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return text


def _load_yaml(path: Path) -> Any:
    """The parsed YAML of ``path``; its raw bytes if it does not parse."""
    return _parse_yaml(path.read_bytes())


def ledger_rule_digest(reported_dir: Path, notebook: str) -> bytes:
    """The rule fields (:data:`RULE_FIELDS`) of the ledger rows naming ``notebook``, as canonical JSON.

    A file that is not a YAML list of mappings contributes its raw bytes (a broken ledger still changes
    the key). Notes, claims, sections and diagnoses are left out: editing them re-executes nothing.
    """
    parts: list[Any] = []
    for path in sorted(Path(reported_dir).glob("*.yml")):
        data = _load_yaml(path)
        if isinstance(data, bytes) or not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            parts.append([path.name, data.decode("utf-8", "replace") if isinstance(data, bytes) else repr(data)])
            continue
        for d in data:
            if str(d.get("notebook") or "") == notebook:
                parts.append({k: d[k] for k in RULE_FIELDS if k in d})
    return json.dumps(parts, sort_keys=True, default=repr).encode()
