"""One reader for every input file of ``icl-book``: a size bound, a YAML depth and alias bound, a schema per
file kind, and one-line errors naming the file and the line.

Kinds (:data:`KINDS`, one :class:`FileKind` each): the declared sweep ranges ``notebooks/sweeps.yml``
(:data:`SWEEPS`), a store entry's manifest ``.icl-run.json`` (:data:`RUN_MANIFEST`), an archive's manifest
``icl-archive.json`` (:data:`ARCHIVE_MANIFEST`) and the committed timing hint ``notebooks/seconds.json``
(:data:`SECONDS_HINT`). The kind of a ledger file ``book/reported/*.yml`` lives with the ledger
(:data:`iclbook.ledger.LEDGER_FILE`).

:func:`load_file` reads a path (a regular file only: a FIFO or a device is refused before it is opened
for reading), :func:`parse_bytes` the bytes of an archive member. In order, each refuses with an
:class:`InputFileError` (``<file>:<line>: <what is wrong>``, one line):

1. more than the kind's ``max_bytes`` (read at most one byte beyond the bound: nothing larger is held);
2. bytes that are not UTF-8 (the line of the first bad byte);
3. text that does not parse (YAML's or JSON's own position);
4. YAML anchors used more than :data:`MAX_ALIASES` times (an alias bomb expands exponentially in whoever
   walks the result) or nesting deeper than the kind's ``max_depth`` (JSON too);
5. a document that does not follow the kind's JSON Schema (``jsonschema``, Draft 2020-12): the first
   error, with the line of the offending value where the text says it, the ``id`` of the list item it is in
   (where that item has one) and, where the broken part of the schema has a ``description``, that description
   as the message (:func:`check_schema`).

An :class:`InputFileError` is a :class:`~iclbook.notebooks.NotebookError`, so every command reports it as
``icl-book: error: ...`` with exit code 2, and a stored run is never re-keyed or re-executed because some
other file is malformed: the caller either stops, or (a damaged manifest) names the entry it distrusts.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .notebooks import NotebookError

__all__ = [
    "ARCHIVE_MANIFEST",
    "KINDS",
    "MAX_ALIASES",
    "RUN_MANIFEST",
    "SECONDS_HINT",
    "SWEEPS",
    "FileKind",
    "InputFileError",
    "check_schema",
    "load_file",
    "parse_bytes",
    "read_bounded",
]

#: The most YAML alias uses (``*name``) a file may hold; none of the project's files needs any.
MAX_ALIASES = 8


class InputFileError(NotebookError):
    """An input file that is refused: ``<file>:<line>: <what is wrong>`` (one line)."""


@dataclass(frozen=True)
class FileKind:
    """One kind of input file: its name in messages, its syntax, its bounds and its JSON Schema."""

    name: str
    syntax: str  # "yaml" or "json"
    max_bytes: int
    max_depth: int
    schema: dict[str, Any] = field(hash=False, compare=False)


_SHA = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_FILES = {"type": "object", "additionalProperties": _SHA}
_NUMBER = {"type": "number"}

_RUN_MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["key", "notebook", "preset", "files", "seconds"],
    "properties": {
        "key": _SHA,
        "notebook": {"type": "string", "minLength": 1},
        "preset": {"type": "string", "minLength": 1},
        "files": _FILES,
        "params": {"type": "object"},
        "param_literals": {"type": "object", "additionalProperties": {"type": "string"}},
        "seconds": _NUMBER,
        "cpu": _NUMBER,
        "threads": {"type": "integer", "minimum": 0},
        "inner": {"type": "array", "items": {"type": "object"}},
        "origin": {"type": "object", "required": ["archive_sha256"], "properties": {"archive_sha256": _SHA}},
    },
}

_MACHINE = {"type": "object"}
_COMPUTED = {
    "type": "object",
    "properties": {"commit": {"type": "string"}, "date": {"type": "string"}, "machine": _MACHINE},
}

_ARCHIVE_MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format", "preset", "entries", "archive_sha256"],
    "properties": {
        "format": {"type": "string"},
        "preset": {"type": "string"},
        "commit": {"type": "string"},
        "dirty": {"type": "boolean"},
        "lock_sha256": _SHA,
        "exported": {"type": "string"},
        "machine": _MACHINE,
        "archive_sha256": _SHA,
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["notebook", "key", "source_sha256", "manifest_sha256", "files", "entry_sha256"],
                "properties": {
                    "notebook": {"type": "string", "pattern": "^[A-Za-z0-9_\\-]+$"},
                    "key": _SHA,
                    "source_sha256": _SHA,
                    "manifest_sha256": _SHA,
                    "files": _FILES,
                    "entry_sha256": _SHA,
                    "computed": _COMPUTED,
                },
            },
        },
    },
}

_SETTING = {
    "type": "object",
    "properties": {"why": {"type": ["string", "null"]}, "paper": {"type": ["string", "integer"]}},
}
_SWEEPS_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": {
        "type": "object",
        "required": ["settings"],
        "properties": {
            "settings": {"type": "object", "minProperties": 1, "additionalProperties": _SETTING},
            "figure": {"type": ["string", "null"]},
        },
    },
}

_TIMES = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}
_SECONDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quick": _TIMES,
        "paper": _TIMES,
        "inner": {"type": "object", "additionalProperties": {"type": "object"}},
        "measured": {"type": "object"},
        "threads": {  # {preset: {notebook: {"declared": [t, ...], "speedup": {"2": s, ...}}}}
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["declared", "speedup"],
                    "properties": {
                        "declared": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}},
                        "speedup": {
                            "type": "object",
                            "propertyNames": {"pattern": "^[1-9][0-9]{0,3}$"},
                            "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                        },
                    },
                },
            },
        },
    },
    "additionalProperties": {"type": "object"},
}

SWEEPS = FileKind("sweep declaration", "yaml", 1 << 20, 12, _SWEEPS_SCHEMA)
RUN_MANIFEST = FileKind("run manifest", "json", 8 << 20, 24, _RUN_MANIFEST_SCHEMA)
ARCHIVE_MANIFEST = FileKind("archive manifest", "json", 64 << 20, 24, _ARCHIVE_MANIFEST_SCHEMA)
SECONDS_HINT = FileKind("timing hint", "json", 4 << 20, 12, _SECONDS_SCHEMA)
KINDS = (SWEEPS, RUN_MANIFEST, ARCHIVE_MANIFEST, SECONDS_HINT)


def load_file(path: Path, kind: FileKind, shown: str | None = None) -> Any:
    """The checked content of the file ``path`` of ``kind`` (see the module doc); ``shown`` names it in errors.

    An :class:`OSError` (a missing or unreadable file) is left to the caller, who knows whether the file
    is optional; anything else wrong is an :class:`InputFileError`.
    """
    where = shown or str(path)
    return parse_bytes(read_bounded(path, kind, where), kind, where)


def read_bounded(path: Path, kind: FileKind, where: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``kind.max_bytes + 1`` of them (so that
    :func:`parse_bytes` sees an oversized file as such); a FIFO, device or folder is an :class:`InputFileError`
    before anything is read from it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputFileError(f"{where}: not a regular file (a {kind.name} must be one)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(kind.max_bytes + 1)
    finally:
        os.close(fd)


def parse_bytes(data: bytes, kind: FileKind, where: str) -> Any:
    """The checked content of ``data``, the bytes of a file of ``kind`` shown as ``where`` in errors."""
    if len(data) > kind.max_bytes:
        raise InputFileError(f"{where}: larger than {kind.max_bytes} bytes, the bound for a {kind.name}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputFileError(
            f"{where}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {col})"
        ) from None
    if kind.syntax == "yaml":
        doc, node = _parse_yaml(text, kind, where)
    else:
        doc, node = _parse_json(text, kind, where), None
    _check_schema(doc, text, node, kind, where)
    return doc


def _parse_yaml(text: str, kind: FileKind, where: str) -> tuple[Any, Any]:
    """The document and its composed node graph; the alias and depth bounds checked on the graph (linear)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_yaml_graph(node, kind, where)
        return loader.construct_document(node), node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InputFileError(f"{where}{line}: not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise InputFileError(f"{where}: not valid YAML ({' '.join(str(exc).split())[:200]})") from None
    finally:
        loader.dispose()


def _check_yaml_graph(root: Any, kind: FileKind, where: str) -> None:
    """Count the uses of shared nodes (aliases) and the nesting depth, visiting each node once."""
    import yaml

    seen: set[int] = set()
    aliases = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise InputFileError(
                    f"{where}:{node.start_mark.line + 1}: more than {MAX_ALIASES} YAML aliases (anchors "
                    f"reused with *name); a {kind.name} needs none"
                )
            continue
        seen.add(id(node))
        if depth > kind.max_depth:
            raise InputFileError(
                f"{where}:{node.start_mark.line + 1}: nested deeper than {kind.max_depth} levels, "
                f"the bound for a {kind.name}"
            )
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((child, depth + 1) for pair in node.value for child in pair)


def _parse_json(text: str, kind: FileKind, where: str) -> Any:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise InputFileError(
            f"{where}: nested deeper than {kind.max_depth} levels, the bound for a {kind.name}"
        ) from None
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > kind.max_depth:
            raise InputFileError(f"{where}: nested deeper than {kind.max_depth} levels, the bound for a {kind.name}")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return doc


def import_without_iri_checker(name: str) -> Any:
    """Import module ``name`` with ``rfc3987_syntax`` masked, so that ``jsonschema`` (imported by ``nbformat``,
    ``papermill``, ``jupytext``, ``myst_nb``) comes without its optional IRI-syntax format checker.

    ``rfc3987_syntax`` builds Earley parsers for its grammar when imported: 1.2 CPU-s on the 2-core VM, paid by
    every notebook run's child process and every command that reads a file. No schema we or nbformat
    validate against uses a ``format`` keyword, so no check is lost. The mask is removed after the import (a
    later explicit ``import rfc3987_syntax`` still works); once ``jsonschema`` is imported it has no effect.
    """
    import importlib

    with _IMPORT_LOCK:  # worker threads read manifests at once; the mask below must be set and removed once
        if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
            sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # the import raises ImportError
            try:
                import jsonschema  # noqa: F401
            finally:
                del sys.modules["rfc3987_syntax"]
    return importlib.import_module(name)


def _jsonschema() -> Any:
    """``jsonschema``, imported without its optional IRI-syntax format checker (:func:`import_without_iri_checker`)."""
    return import_without_iri_checker("jsonschema")


_IMPORT_LOCK = threading.Lock()


@cache
def _validator(kind: FileKind) -> Any:
    jsonschema = _jsonschema()
    return jsonschema.Draft202012Validator(kind.schema)


def _check_schema(doc: Any, text: str, node: Any, kind: FileKind, where: str) -> None:
    check_schema(doc, kind, where, node if node is not None else _json_nodes(text))


def check_schema(doc: Any, kind: FileKind, where: str, node: Any = None) -> None:
    """An :class:`InputFileError` (one line) if ``doc`` does not follow ``kind``'s schema; ``node``: the document's
    YAML node graph, for the line of the offending value (``None``: no line)."""
    error = _jsonschema().exceptions.best_match(_validator(kind).iter_errors(doc))
    if error is None:
        return
    path = list(error.absolute_path)
    line = _line_of(node, path)
    at = _path_text(doc, path)
    message = _description(kind.schema, error.absolute_schema_path)
    if message and not isinstance(error.instance, (dict, list)):
        message += f" (got {error.instance!r})"
    message = " ".join((message or error.message).split())
    if len(message) > 200:
        message = message[:197] + "..."
    raise InputFileError(
        f"{where}{f':{line}' if line else ''}: {f'{at}: ' if at else ''}{message} (the schema of a {kind.name})"
    )


def _path_text(doc: Any, path: list[Any]) -> str:
    """``[3] (id x-01).tolerance``: keys and indices, with the ``id`` of a list item that has one; a key with
    control characters (a YAML key "\\r") is shown escaped, so the message stays one line."""
    at, value = "", doc
    for p in path:
        if isinstance(p, int):
            value = value[p] if isinstance(value, list) and p < len(value) else None
            item_id = value.get("id") if isinstance(value, dict) else None
            at += f"[{p}]" + (f" (id {item_id})" if isinstance(item_id, str) and item_id.isprintable() else "")
        else:
            value = value.get(p) if isinstance(value, dict) else None
            at += f".{p if str(p).isprintable() else repr(p)}"
    return at.lstrip(".")


def _description(schema: Any, schema_path: Any) -> str:
    """The ``description`` of the innermost part of ``schema`` on ``schema_path`` that has one (else '')."""
    found, node = "", schema
    for step in schema_path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and isinstance(node.get("description"), str):
            found = node["description"]
    return found


def _json_nodes(text: str) -> Any:
    """The YAML node graph of a JSON text (JSON is YAML), for line numbers only; None if it does not compose."""
    import yaml

    try:
        return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None


def _line_of(node: Any, path: list[Any]) -> int | None:
    """The 1-based line of the value at ``path`` (keys and indices) in the node graph, as deep as it goes."""
    import yaml

    if node is None:
        return None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(step)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            child = node.value[step]
        else:
            child = None
        if child is None:
            break
        node = child
    return node.start_mark.line + 1
