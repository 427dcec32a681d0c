"""The page *API reference*: one section per ``iclcore`` family, each module documented by Sphinx's automodule.

Each family's section first lists the functions and classes it exports, linked to their modules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .architecture import LAYERS
from .package_exports import lazy_exports, public_modules

__all__ = ["iclcore_exports", "iclcore_modules", "render_api"]


def iclcore_modules(package_dir: Path | None = None) -> list[tuple[str, list[str]]]:
    """Sections of the API page: ``(subpackage, its public modules)`` from each subpackage's folder,
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
        sections.append((package, [f"{package}.{m}" for m in public_modules(init.parent)]))
    sections += [(f"iclcore.{p.stem}", []) for p in package_dir.glob("*.py") if not p.stem.startswith("_")]
    return sorted(sections, key=lambda s: (units.index(s[0]) if s[0] in units else len(units), s[0]))


def iclcore_exports(package_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """``subpackage -> {exported name: its module}``, read statically from each subpackage's ``_EXPORTS``."""
    if package_dir is None:
        spec = importlib.util.find_spec("iclcore")
        package_dir = Path(next(iter(spec.submodule_search_locations)))
    return {
        f"iclcore.{init.parent.name}": lazy_exports(init.read_text()) or {}
        for init in sorted(package_dir.glob("*/__init__.py"))
    }


def _automodule(module: str, members: bool) -> list[str]:
    """An automodule block; a package's members are documented in their modules, so it gets ``:no-members:``."""
    option = "   :members:" if members else "   :no-members:"
    return ["```{eval-rst}", f".. automodule:: {module}", option, "```", ""]


def _exported(package: str, exports: dict[str, str]) -> list[str]:
    """The names ``package`` exports, one line per module, each linked to its documentation in that module."""
    if not exports:
        return []
    by_module: dict[str, list[str]] = {}
    for name, module in sorted(exports.items()):
        by_module.setdefault(module, []).append(name)
    lines = [f"Exported by `{package}` (`from {package} import NAME`):", ""]
    for module, names in sorted(by_module.items()):
        links = ", ".join(f"{{py:obj}}`{name} <{package}.{module}.{name}>`" for name in names)
        lines.append(f"- `{module}`: {links}")
    return [*lines, ""]


def render_api(sections: list[tuple[str, list[str]]], exports: dict[str, dict[str, str]] | None = None) -> str:
    """The API page: each subpackage's docstring and the functions and classes it exports (``exports``,
    ``subpackage -> {name: module}``), then each of its modules with the members of its ``__all__``."""
    exports = exports or {}
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the `iclcore` package, family by family (top to bottom of the",
        "layers of `ARCHITECTURE.md`). Each family exports the functions and classes of its modules; each",
        "module documents the names of its `__all__`; each function states the shapes it takes and the",
        "equation and seed section it implements.",
        "",
        *_automodule("iclcore", members=False),
    ]
    for package, modules in sections:
        lines += [f"## `{package}`", "", *_automodule(package, members=not modules)]
        lines += _exported(package, exports.get(package, {}))
        for module in modules:
            lines += [f"### `{module}`", "", *_automodule(module, members=True)]
    return "\n".join(lines)
