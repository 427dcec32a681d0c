"""Discovery of the book's notebooks, their parameters and presets.

A notebook is a jupytext py:percent file ``notebooks/<name>.py`` with

* a cell tagged ``parameters`` holding one literal assignment per line; these
  defaults are the ``quick`` preset (what CI runs), and
* optionally a cell tagged ``presets`` holding ``PRESETS = {"paper": {...}}``,
  a literal dict of named overrides of those parameters.

Both cells are read statically (``ast``), never executed, so listing the
notebooks is instant and safe.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Preset name that means "the defaults of the parameters cell".
QUICK = "quick"

_CELL_RE = re.compile(r"^# %%(?P<rest>.*)$")
_TAGS_RE = re.compile(r"tags\s*=\s*(\[[^\]]*\])")

ParamValue = int | float | bool | str


class NotebookError(ValueError):
    """A notebook source or a request about it is malformed."""


@dataclass(frozen=True)
class Notebook:
    """A notebook of the book.

    Attributes
    ----------
    name : str
        File stem, e.g. ``"proof_ladder"``; also the output folder name.
    path : Path
        The py:percent source.
    parameters : dict
        Parameter name -> default value (the ``quick`` preset).
    presets : dict
        Preset name -> overrides of ``parameters``.
    """

    name: str
    path: Path
    parameters: dict[str, ParamValue]
    presets: dict[str, dict[str, ParamValue]] = field(default_factory=dict)

    @property
    def preset_names(self) -> list[str]:
        return [QUICK, *sorted(self.presets)]

    def resolve(self, preset: str = QUICK, overrides: dict[str, Any] | None = None) -> dict[str, ParamValue]:
        """Parameters for ``preset`` with ``overrides`` applied.

        String overrides (from the command line) are converted to the type of
        the default. Unknown preset or parameter names raise
        :class:`NotebookError` listing what is available.
        """
        if preset != QUICK and preset not in self.presets:
            raise NotebookError(
                f"notebook {self.name!r} has no preset {preset!r}; available: {', '.join(self.preset_names)}"
            )
        params = dict(self.parameters)
        params.update(self.presets.get(preset, {}))
        for key, raw in (overrides or {}).items():
            if key not in self.parameters:
                raise NotebookError(
                    f"notebook {self.name!r} has no parameter {key!r}; its parameters are: "
                    + ", ".join(f"{k} (default {v!r})" for k, v in self.parameters.items())
                )
            params[key] = coerce(raw, self.parameters[key], key) if isinstance(raw, str) else raw
        return params


def coerce(raw: str, default: ParamValue, name: str) -> ParamValue:
    """Convert the command-line string ``raw`` to the type of ``default``."""
    try:
        if isinstance(default, bool):
            low = raw.strip().lower()
            if low in {"1", "true", "yes", "on"}:
                return True
            if low in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if isinstance(default, int):
            value = float(raw)
            if not value.is_integer():
                raise ValueError(raw)
            return int(value)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise NotebookError(
            f"parameter {name!r}: cannot read {raw!r} as {type(default).__name__} (default is {default!r})"
        ) from None
    return raw


def _cells(source: str) -> list[tuple[list[str], str]]:
    """Split py:percent source into (tags, body) pairs."""
    cells: list[tuple[list[str], list[str]]] = []
    for line in source.splitlines():
        m = _CELL_RE.match(line)
        if m:
            tags: list[str] = []
            t = _TAGS_RE.search(m.group("rest"))
            if t:
                try:
                    tags = list(ast.literal_eval(t.group(1)))
                except (ValueError, SyntaxError):
                    tags = []
            cells.append((tags, []))
        elif cells:
            cells[-1][1].append(line)
    return [(tags, "\n".join(body)) for tags, body in cells]


def _literal_assignments(body: str, where: str) -> dict[str, Any]:
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        raise NotebookError(f"{where}: cannot parse: {exc}") from None
    out: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise NotebookError(f"{where}: line {node.lineno}: only `name = literal` assignments are allowed")
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise NotebookError(f"{where}: line {node.lineno}: the value of {node.targets[0].id!r} is not a literal") from None
    return out


def read_notebook(path: str | Path) -> Notebook:
    """Read the parameters and presets of the py:percent notebook at ``path``."""
    path = Path(path)
    cells = _cells(path.read_text())
    param_cells = [body for tags, body in cells if "parameters" in tags]
    if len(param_cells) != 1:
        raise NotebookError(f"{path}: expected exactly one cell tagged 'parameters', found {len(param_cells)}")
    parameters = _literal_assignments(param_cells[0], f"{path} (parameters cell)")
    for key, value in parameters.items():
        if not isinstance(value, (int, float, bool, str)):
            raise NotebookError(f"{path}: parameter {key!r} must be an int, float, bool or str, not {type(value).__name__}")
    presets: dict[str, dict[str, Any]] = {}
    preset_cells = [body for tags, body in cells if "presets" in tags]
    if len(preset_cells) > 1:
        raise NotebookError(f"{path}: more than one cell tagged 'presets'")
    if preset_cells:
        found = _literal_assignments(preset_cells[0], f"{path} (presets cell)")
        if set(found) != {"PRESETS"} or not isinstance(found["PRESETS"], dict):
            raise NotebookError(f"{path}: the presets cell must hold exactly `PRESETS = {{...}}`")
        presets = found["PRESETS"]
        for pname, overrides in presets.items():
            if pname == QUICK:
                raise NotebookError(f"{path}: preset {QUICK!r} is the parameters cell itself; do not redefine it")
            unknown = sorted(set(overrides) - set(parameters))
            if unknown:
                raise NotebookError(f"{path}: preset {pname!r} sets unknown parameters {unknown}; parameters are {sorted(parameters)}")
    return Notebook(name=path.stem, path=path, parameters=parameters, presets=presets)


def toc_order(toc_path: Path) -> list[str]:
    """Notebook names in the order their executed pages appear in ``_toc.yml``."""
    if not toc_path.exists():
        return []
    names = re.findall(r"book/generated/([A-Za-z0-9_\-]+)/\1\b", toc_path.read_text())
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def discover(root: Path) -> list[Notebook]:
    """All notebooks under ``root/notebooks``: those in the toc first, in book order, then the rest by name."""
    paths = sorted((root / "notebooks").glob("*.py"))
    order = {name: i for i, name in enumerate(toc_order(root / "_toc.yml"))}
    paths.sort(key=lambda p: (order.get(p.stem, len(order)), p.stem))
    return [read_notebook(p) for p in paths]
