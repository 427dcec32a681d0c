"""The layers of the code base, its static import graph, and the diagram of ARCHITECTURE.md.

The layer table :data:`LAYERS` is the one place that says which part of the code may import which:
a module may import from its own layer and the layers below it, never from a layer above. A
module's *unit* is its family: the subpackage of ``iclcore`` it lives in (``iclcore.lsq.tasks`` ->
``iclcore.lsq``), the top-level module itself (``iclcore.linalg``), or ``notebooks`` / ``benchmarks``.
So a module added to a family needs no entry here; a new family or utility needs one line.

The import graph is built statically with :mod:`ast` (imports inside functions included), so
nothing is imported to check it. ``tests/test_architecture.py`` enforces the rules;
``python -m iclbook.architecture --write`` regenerates the diagram in ``ARCHITECTURE.md``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LAYERS",
    "TOOLING",
    "TOOLING_MAY_IMPORT",
    "MODULES_BEGIN",
    "MODULES_END",
    "Import",
    "cycles",
    "declared_all",
    "generated_architecture",
    "import_graph",
    "layer_of",
    "module_cycles",
    "names_outside_all",
    "private_imports",
    "public_api_gaps",
    "render_diagram",
    "render_module_lists",
    "source_modules",
    "spliced",
    "subpackage_gaps",
    "tooling_imports",
    "torch_importers",
    "unit_cycles",
    "unit_graph",
    "unit_of",
    "upward_imports",
    "write_diagram",
]

ROOT = Path(__file__).resolve().parents[1]

#: Layers from top to bottom: ``(name, units)``. A unit may import only from its layer or below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("chapters", ("notebooks", "benchmarks")),
    ("references and recasts", ("iclcore._reference", "iclcore.pde")),
    ("paper families", ("iclcore.richardson", "iclcore.dmft")),
    ("models and theories", ("iclcore.models", "iclcore.spectra", "iclcore.gd", "iclcore.logistic")),
    ("foundation", ("iclcore.lsq", "iclcore.linalg")),
    (
        "utilities",
        ("iclcore.stats", "iclcore.plotting", "iclcore.progress", "iclcore.validation", "iclcore.parallel", "iclcore"),
    ),
)

#: The book tooling stands apart from the layers: ``iclcore`` never imports it ...
TOOLING = "iclbook"
#: ... and it imports only these utilities of ``iclcore``.
TOOLING_MAY_IMPORT: frozenset[str] = frozenset(
    {"iclcore.progress", "iclcore.parallel", "iclcore.stats", "iclcore.plotting"}
)

#: Source trees scanned: package directories and flat script folders (the top layer).
PACKAGES = ("iclcore", TOOLING)
SCRIPTS = ("notebooks", "benchmarks")

#: Private modules another unit may import: naive references exist to be benchmarked against.
PRIVATE_ALLOWED: frozenset[tuple[str, str]] = frozenset({("benchmarks", "iclcore.models._reference")})
#: Units whose imports of ``iclcore`` must name members of the imported module's ``__all__``.
ALL_CHECKED = ("notebooks", "iclcore._reference")

BEGIN = "<!-- BEGIN GENERATED DIAGRAM: python -m iclbook.architecture --write -->"
END = "<!-- END GENERATED DIAGRAM -->"
MODULES_BEGIN = "<!-- BEGIN GENERATED MODULES: python -m iclbook.architecture --write -->"
MODULES_END = "<!-- END GENERATED MODULES -->"


@dataclass(frozen=True)
class Import:
    """One import of an internal module: ``from target import name`` (``name`` None: the module itself)."""

    source: str
    target: str
    name: str | None
    line: int


def source_modules(root: Path = ROOT) -> dict[str, Path]:
    """Map every scanned module name (``iclcore.lsq.tasks``, ``notebooks.gd_probe``) to its file."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for folder in SCRIPTS:
        for path in sorted((root / folder).glob("*.py")):
            found[f"{folder}.{path.stem}"] = path
    return found


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """Absolute module of ``from <node.module> import ...`` written in ``module`` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _imports_in(module: str, path: Path, known: frozenset[str]) -> Iterator[Import]:
    """Imports of internal modules in one file, at any depth (function bodies included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield Import(module, alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    yield Import(module, sub, None, node.lineno)
                elif base in known:
                    yield Import(module, base, alias.name, node.lineno)


def import_graph(root: Path = ROOT) -> list[Import]:
    """Every import of a scanned module by a scanned module, in file order."""
    modules = source_modules(root)
    known = frozenset(modules)
    return [imp for module, path in modules.items() for imp in _imports_in(module, path, known)]


def unit_of(module: str) -> str:
    """The family a module belongs to: its subpackage of ``iclcore``, its top-level module, or its folder."""
    parts = module.split(".")
    if parts[0] in SCRIPTS or parts[0] == TOOLING:
        return parts[0]
    return ".".join(parts[:2])


def layer_of(unit: str) -> int:
    """Index of ``unit``'s layer in :data:`LAYERS` (0 is the top); KeyError names a unit with no layer."""
    for index, (_, units) in enumerate(LAYERS):
        if unit in units:
            return index
    raise KeyError(f"{unit} has no layer: add it to LAYERS in iclbook/architecture.py")


def unit_graph(imports: Iterable[Import]) -> dict[str, set[str]]:
    """Units each unit imports from (self-imports dropped)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        src, dst = unit_of(imp.source), unit_of(imp.target)
        graph.setdefault(src, set())
        graph.setdefault(dst, set())
        if src != dst:
            graph[src].add(dst)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:  # noqa: C901 (Tarjan's strongly connected components, kept in one piece as the algorithm is published)
    """Strongly connected components with more than one node (or a self-loop), each sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _where(imp: Import) -> str:
    what = imp.target if imp.name is None else f"{imp.target}.{imp.name}"
    return f"{imp.source}:{imp.line} imports {what}"


def _layered(imports: Iterable[Import]) -> Iterator[Import]:
    """Imports between two different units of the layer table (the tooling left out)."""
    for imp in imports:
        src, dst = unit_of(imp.source), unit_of(imp.target)
        if src != dst and TOOLING not in (src, dst):
            yield imp


def upward_imports(imports: Iterable[Import]) -> list[str]:
    """Imports from a higher layer than the importer's (a unit with no layer is reported too)."""
    found = []
    for imp in _layered(imports):
        try:
            if layer_of(unit_of(imp.target)) < layer_of(unit_of(imp.source)):
                found.append(_where(imp) + " (upwards)")
        except KeyError as err:
            found.append(f"{_where(imp)}: {err.args[0]}")
    return found


def unit_cycles(imports: Iterable[Import]) -> list[list[str]]:
    """Cycles between units (families, top-level modules, the tooling)."""
    return cycles(unit_graph(imports))


def module_cycles(imports: Iterable[Import], unit: str) -> list[list[str]]:
    """Cycles between the modules of one unit (``iclbook``: its modules must form a DAG)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if unit_of(imp.source) == unit == unit_of(imp.target) and imp.source != imp.target:
            graph.setdefault(imp.source, set()).add(imp.target)
    return cycles(graph)


def _private(imp: Import) -> bool:
    parts = imp.target.split(".")[1:] + ([imp.name] if imp.name else [])
    return any(p.startswith("_") and not p.startswith("__") for p in parts)


def private_imports(imports: Iterable[Import]) -> list[str]:
    """Imports of a private name or module (``_x``) of another unit; the unit ``iclcore._reference`` is not private."""
    found = []
    for imp in imports:
        src, dst = unit_of(imp.source), unit_of(imp.target)
        if src == dst or (src, imp.target) in PRIVATE_ALLOWED:
            continue
        target = imp.target.removeprefix(dst) if dst == "iclcore._reference" else imp.target
        if _private(Import(imp.source, target or dst.split(".")[0], imp.name, imp.line)):
            found.append(_where(imp) + " (private)")
    return found


def tooling_imports(imports: Iterable[Import]) -> list[str]:
    """``iclcore`` importing the tooling, or the tooling importing more of ``iclcore`` than its utilities."""
    found = []
    for imp in imports:
        src, dst = unit_of(imp.source), unit_of(imp.target)
        if src.startswith("iclcore") and dst == TOOLING:
            found.append(_where(imp) + " (iclcore never imports the tooling)")
        elif src == TOOLING and dst.startswith("iclcore") and dst not in TOOLING_MAY_IMPORT:
            found.append(_where(imp) + f" (the tooling imports only {sorted(TOOLING_MAY_IMPORT)})")
    return found


def declared_all(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module file (None if it has none)."""
    for node in ast.parse(path.read_text()).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return list(ast.literal_eval(node.value))
    return None


def names_outside_all(imports: Iterable[Import], modules: dict[str, Path]) -> list[str]:
    """Names that notebooks and ``iclcore._reference`` import from ``iclcore`` but that are not in ``__all__``."""
    found = []
    for imp in imports:
        if unit_of(imp.source) not in ALL_CHECKED or imp.name is None or not imp.target.startswith("iclcore"):
            continue
        public = declared_all(modules[imp.target])
        if public is None or imp.name not in public:
            found.append(_where(imp) + f" (not in {imp.target}.__all__)")
    return found


def _top_level_names(path: Path) -> tuple[set[str], set[str]]:
    """``(public functions and classes, every bound name)`` at the top level of a module."""
    defined: set[str] = set()
    bound: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
            if not node.name.startswith("_"):
                defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                bound.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return defined, bound


def public_api_gaps(modules: dict[str, Path]) -> list[str]:
    """``iclcore`` modules (not packages, not private) whose ``__all__`` is missing, names an unbound
    name, or leaves out a public function or class."""
    found = []
    for name, path in modules.items():
        if not name.startswith("iclcore.") or path.name == "__init__.py" or _private(Import(name, name, None, 0)):
            continue
        public = declared_all(path)
        if public is None:
            found.append(f"{name}: no __all__")
            continue
        defined, bound = _top_level_names(path)
        if missing := sorted(defined - set(public)):
            found.append(f"{name}: public but not in __all__: {missing}")
        if unbound := sorted(set(public) - bound):
            found.append(f"{name}: __all__ names what the module does not define: {unbound}")
    return found


def subpackage_gaps(root: Path = ROOT) -> list[str]:
    """Subpackages of ``iclcore`` whose ``__init__`` imports anything but :mod:`importlib` (its modules are
    imported lazily, :mod:`iclbook.package_exports`), lacks a docstring, or whose docstring does not
    list its public modules."""
    found = []
    for init in sorted((root / "iclcore").glob("*/__init__.py")):
        package = f"iclcore.{init.parent.name}"
        tree = ast.parse(init.read_text())
        doc = ast.get_docstring(tree) or ""
        if not doc:
            found.append(f"{package}: no docstring")
        imported = [
            a.name if isinstance(n, ast.Import) else f"{n.module}.{a.name}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        ]
        if imported != ["importlib"]:
            found.append(f"{package}: __init__ must import importlib only (for its lazy exports), got {imported}")
        modules = sorted(p.stem for p in init.parent.glob("*.py") if not p.stem.startswith("_"))
        if unlisted := [m for m in modules if f":mod:`~{package}.{m}`" not in doc]:
            found.append(f"{package}: the docstring's 'Public modules:' list does not name {unlisted}")
    return found


def _node(unit: str) -> str:
    return unit.replace(".", "_")


def render_diagram(imports: Iterable[Import]) -> str:
    """Mermaid flowchart: one box per layer (top to bottom), one arrow per unit that imports another.

    Arrows out of the chapters layer and into the utilities layer are left out (the chapters import
    from every family, every family imports the utilities); the tooling's arrows are all drawn.
    """
    graph = unit_graph(imports)
    bottom = len(LAYERS) - 1
    lines = ["```mermaid", "flowchart TB"]
    for index, (name, units) in enumerate(LAYERS):
        lines.append(f'  subgraph L{index}["{name}"]')
        lines += [f'    {_node(u)}["{u}"]' for u in units]
        lines.append("  end")
    lines.append(f'  {_node(TOOLING)}["{TOOLING} (tooling)"]')
    for src in sorted(graph, key=lambda u: (layer_of(u) if u != TOOLING else -1, u)):
        if src != TOOLING and layer_of(src) == 0:
            continue
        drawn = sorted(d for d in graph[src] if src == TOOLING or layer_of(d) < bottom)
        lines += [f"  {_node(src)} --> {_node(dst)}" for dst in drawn]
    lines.append("```")
    return "\n".join(lines) + "\n"


def _summary(path: Path) -> str:
    """The first line of a module's docstring (empty if it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""
    return doc.strip().splitlines()[0].replace("|", "\\|") if doc.strip() else ""


def torch_importers(root: Path = ROOT) -> list[str]:
    """Modules of ``iclcore`` and ``iclbook`` whose source imports ``torch`` (at any depth, any place)."""
    found = []
    for module, path in source_modules(root).items():
        if module.split(".")[0] not in PACKAGES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(n == "torch" or n.startswith("torch.") for n in names):
                found.append(module)
                break
    return sorted(found)


def render_module_lists(root: Path = ROOT) -> str:
    """Markdown: every module of ``iclcore`` and ``iclbook`` by unit, with its docstring's first line.

    Sizes are left out on purpose: a list that changed with every edit would be regenerated, not read.

    Modules that import torch are marked (torch), so the text cannot claim a family boundary for torch
    that the code does not keep.
    """
    torch_users = set(torch_importers(root))
    modules = {m: p for m, p in source_modules(root).items() if m.split(".")[0] in PACKAGES}
    by_unit: dict[str, list[str]] = {}
    for module in modules:
        if module in PACKAGES:
            continue
        by_unit.setdefault(unit_of(module) if not module.startswith(TOOLING) else TOOLING, []).append(module)
    lines = []
    for unit in sorted(by_unit, key=lambda u: (u == TOOLING, layer_of(u) if u != TOOLING else 0, u)):
        lines += [f"**`{unit}`**", "", "| module | what it is |", "|---|---|"]
        for module in sorted(by_unit[unit]):
            mark = " (torch)" if module in torch_users else ""
            lines.append(f"| `{module}`{mark} | {_summary(modules[module])} |")
        lines.append("")
    return "\n".join(lines)


def spliced(document: str, diagram: str, begin: str = BEGIN, end: str = END) -> str:
    """``document`` with the text between the ``begin``/``end`` markers replaced by ``diagram``."""
    head, sep, rest = document.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not sep or not sep2:
        raise ValueError(f"markers {begin!r} ... {end!r} not found")
    return f"{head}{begin}\n{diagram}{end}{tail}"


def generated_architecture(document: str, root: Path = ROOT) -> str:
    """``document`` (ARCHITECTURE.md) with its diagram and module lists regenerated from the code."""
    with_diagram = spliced(document, render_diagram(import_graph(root)))
    return spliced(with_diagram, render_module_lists(root), MODULES_BEGIN, MODULES_END)


def write_diagram(path: Path = ROOT / "ARCHITECTURE.md", root: Path = ROOT) -> bool:
    """Regenerate the diagram and the module lists in ``path``; return whether the file changed."""
    old = path.read_text()
    new = generated_architecture(old, root)
    if new != old:
        path.write_text(new)
    return new != old


def main(argv: list[str] | None = None) -> int:
    """``python -m iclbook.architecture [--write]``: print the diagram, or write it into ARCHITECTURE.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate the diagram in ARCHITECTURE.md")
    args = parser.parse_args(argv)
    if args.write:
        print("ARCHITECTURE.md " + ("updated" if write_diagram() else "already up to date"))
    else:
        sys.stdout.write(render_diagram(import_graph()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
