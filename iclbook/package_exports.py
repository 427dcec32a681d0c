"""The public names of each ``iclcore`` family, exported lazily by its ``__init__`` (PEP 562).

Each subpackage of ``iclcore`` exports the public functions and classes defined in its public
modules, scikit-learn style (``from iclcore.dmft import fit_power_law``), without importing any
module when the family itself is imported: its ``__init__.py`` holds a literal map ``_EXPORTS``
(module -> the names it defines), a literal ``__all__`` (those names, sorted) and a module
``__getattr__`` that imports the defining module on first use. The modules stay importable by path
(``iclcore.dmft.scaling``).

The block is generated from the modules' source (read with :mod:`ast`, nothing imported):
``python -m iclbook.package_exports --write`` rewrites it after a public function or class was
added, removed or renamed, and ``tests/test_package_exports.py`` fails while it is out of date.

A name defined by two modules of one family is exported from the module :data:`CHOSEN` names; a
function named like a module of its family is left out (:data:`NOT_EXPORTED`), since importing
that module would replace the function by the module on the package.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

__all__ = [
    "CHOSEN",
    "EXPORTS",
    "NOT_EXPORTED",
    "defined_names",
    "export_gaps",
    "expected_exports",
    "lazy_exports",
    "public_modules",
    "render_exports",
    "write_exports",
]

ROOT = Path(__file__).resolve().parents[1]

#: The name of the literal map ``module -> names`` in a family's ``__init__.py``.
EXPORTS = "_EXPORTS"

#: ``(family, name) -> module`` for a public name that two modules of the family define.
CHOSEN: dict[tuple[str, str], str] = {
    # the prompt-level held-out risk of the paper; baselines.depth_risk is the same risk on LinearSystems
    ("richardson", "depth_risk"): "decoder",
    # the same relative Frobenius error; the encoder's checks that the shapes agree
    ("richardson", "relative_error"): "encoder",
}

#: ``(family, name) -> why`` for public names left out of the family's exports.
NOT_EXPORTED: dict[tuple[str, str], str] = {
    ("gd", "appendix_statements"): "named like its module: import it from iclcore.gd.appendix_statements",
    ("gd", "scalar_statements"): "named like its module: import it from iclcore.gd.scalar_statements",
    ("richardson", "counterexample"): "named like its module: import it from iclcore.richardson.counterexample",
}

BEGIN = "# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write"
END = "# END GENERATED EXPORTS"

_LOADER = '''

def __getattr__(name: str) -> object:
    """The public function or class ``name``, imported from its module on first use (PEP 562)."""
    for module, names in _EXPORTS.items():
        if name in names:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
'''


def public_modules(family_dir: Path) -> list[str]:
    """The public modules of a family (its ``.py`` files not starting with ``_``), sorted."""
    return sorted(p.stem for p in family_dir.glob("*.py") if not p.stem.startswith("_"))


def defined_names(path: Path) -> list[str]:
    """Public functions and classes defined at the top level of a module, in source order."""
    return [
        node.name
        for node in ast.parse(path.read_text(), filename=str(path)).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_")
    ]


def expected_exports(family_dir: Path) -> dict[str, list[str]]:
    """``module -> names`` the family must export: every public function and class of its public modules,
    each once (a name two modules define goes to the module :data:`CHOSEN` names; a name without a
    choice raises ``ValueError``), less :data:`NOT_EXPORTED`."""
    family = family_dir.name
    owners: dict[str, list[str]] = defaultdict(list)
    for module in public_modules(family_dir):
        for name in defined_names(family_dir / f"{module}.py"):
            owners[name].append(module)
    exports: dict[str, list[str]] = defaultdict(list)
    for name, modules in owners.items():
        if (family, name) in NOT_EXPORTED:
            continue
        if len(modules) > 1:
            module = CHOSEN.get((family, name))
            if module not in modules:
                raise ValueError(
                    f"iclcore.{family}: {name!r} is defined in {modules}; choose one in "
                    "iclbook.package_exports.CHOSEN (or rename one)"
                )
            modules = [module]
        exports[modules[0]].append(name)
    return {module: sorted(exports[module]) for module in sorted(exports)}


def lazy_exports(source: str) -> dict[str, str] | None:
    """``name -> module`` from the literal ``_EXPORTS`` of a package's source (None if it has none or
    it is not a literal dict of string tuples)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == EXPORTS for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if not isinstance(value, dict) or not all(
                isinstance(m, str) and isinstance(ns, tuple | list) and all(isinstance(n, str) for n in ns)
                for m, ns in value.items()
            ):
                return None
            return {name: module for module, names in value.items() for name in names}
    return None


def render_exports(exports: dict[str, list[str]]) -> str:
    """The generated block of a family's ``__init__.py``: ``_EXPORTS``, ``__all__`` and the lazy loader."""
    lines = [BEGIN, "import importlib", "", "_EXPORTS = {"]
    for module, names in exports.items():
        lines.append(f'    "{module}": (')
        lines += [f'        "{name}",' for name in names]
        lines.append("    ),")
    lines += ["}", "", "__all__ = ["]
    lines += [f'    "{name}",' for name in sorted(n for names in exports.values() for n in names)]
    lines += ["]", *_LOADER.split("\n"), "", END]
    return "\n".join(lines) + "\n"


def _spliced(init: Path, block: str) -> str:
    """The ``__init__.py`` text with its generated block (or its old literal ``__all__``) replaced by ``block``."""
    text = init.read_text()
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            lines = text.splitlines(keepends=True)
            return "".join(lines[: node.lineno - 1]) + block + "".join(lines[node.end_lineno :])
    return text.rstrip("\n") + "\n\n" + block


def export_gaps(root: Path = ROOT) -> list[str]:
    """Families whose ``__init__.py`` is not the generated block of :func:`expected_exports`."""
    found = []
    for init in sorted((root / "iclcore").glob("*/__init__.py")):
        try:
            block = render_exports(expected_exports(init.parent))
        except ValueError as err:
            found.append(str(err))
            continue
        if BEGIN not in init.read_text() or _spliced(init, block) != init.read_text():
            found.append(f"iclcore.{init.parent.name}: exports out of date (python -m iclbook.package_exports --write)")
    return found


def write_exports(root: Path = ROOT) -> list[Path]:
    """Rewrite the generated block of every family's ``__init__.py``; return the files that changed."""
    changed = []
    for init in sorted((root / "iclcore").glob("*/__init__.py")):
        text = _spliced(init, render_exports(expected_exports(init.parent)))
        if text != init.read_text():
            init.write_text(text)
            changed.append(init)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated block of each __init__.py")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_exports():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    found = export_gaps()
    print("\n".join(found) or "every family's exports are current")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
