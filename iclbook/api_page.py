"""The page *API reference*: one section per ``iclcore`` family, each module documented by Sphinx's automodule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .architecture import LAYERS, declared_all

__all__ = ["iclcore_modules", "render_api"]


def iclcore_modules(package_dir: Path | None = None) -> list[tuple[str, list[str]]]:
    """Sections of the API page: ``(subpackage, its public modules)`` from each subpackage's ``__all__``,
    in the order of the layer table, then ``(utility, [])`` for each public top-level module.

    Read statically (nothing of ``iclcore`` is imported here; Sphinx imports the modules it documents).
    """
    if package_dir is None:
        spec = importlib.util.find_spec("iclcore")
        package_dir = Path(next(iter(spec.submodule_search_locations)))
    units = [u for _, layer in LAYERS for u in layer]
    sections = []
    for init in package_dir.glob("*/__init__.py"):
        package = f"iclcore.{init.parent.name}"
        sections.append((package, [f"{package}.{m}" for m in declared_all(init) or []]))
    sections += [(f"iclcore.{p.stem}", []) for p in package_dir.glob("*.py") if not p.stem.startswith("_")]
    return sorted(sections, key=lambda s: (units.index(s[0]) if s[0] in units else len(units), s[0]))


def _automodule(module: str, members: bool) -> list[str]:
    """An automodule block; a package's ``__all__`` names modules, not members, so it gets ``:no-members:``."""
    option = "   :members:" if members else "   :no-members:"
    return ["```{eval-rst}", f".. automodule:: {module}", option, "```", ""]


def render_api(sections: list[tuple[str, list[str]]]) -> str:
    """The API page: each subpackage's docstring, then each of its modules with the members of its ``__all__``."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the `iclcore` package, family by family (top to bottom of the",
        "layers of `ARCHITECTURE.md`). Each module documents the names of its `__all__`; each function",
        "states the shapes it takes and the equation and seed section it implements.",
        "",
        *_automodule("iclcore", members=False),
    ]
    for package, modules in sections:
        lines += [f"## `{package}`", "", *_automodule(package, members=not modules)]
        for module in modules:
            lines += [f"### `{module}`", "", *_automodule(module, members=True)]
    return "\n".join(lines)
