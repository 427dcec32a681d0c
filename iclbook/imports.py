"""The ``iclcore`` files a notebook depends on, from the import graph of the code.

A notebook's cache key covers exactly the files returned by
:func:`dependency_files`: the ``iclcore`` modules the notebook imports, and,
transitively, the ``iclcore`` modules those import, read statically with
``ast`` (nothing is imported or executed).

Rules
-----
* ``import iclcore.a.b``, ``from iclcore.a import b`` and ``from iclcore.a.b import f``
  depend on ``iclcore/a/b.py`` (or ``iclcore/a/b/__init__.py``) and on the
  ``__init__.py`` of every parent package (``iclcore/__init__.py``,
  ``iclcore/a/__init__.py``), because Python executes those too.
  ``from iclcore.a import b`` depends on the module ``b`` when ``iclcore/a/b.py``
  or ``iclcore/a/b/`` exists (otherwise ``b`` is a name defined in ``iclcore/a``).
* Relative imports inside ``iclcore`` (``from .x import f``, ``from ..y import g``)
  are resolved against the importing module's package.
* ``importlib.import_module("iclcore.x")`` and ``__import__("iclcore.x")`` with
  a literal string (and ``import_module(".x", "iclcore.a")`` with literal
  arguments) are resolved like an ``import`` statement.
* ``from iclcore.a import *`` depends on ``iclcore.a``; when ``iclcore.a`` is a
  package, also on the submodules its literal ``__all__`` names (Python imports those).
* A family that exports its modules' names lazily (a literal ``_EXPORTS`` map and a
  module ``__getattr__`` that imports the module defining a name on first use,
  :mod:`iclbook.package_exports`): ``from iclcore.a import f`` depends on the module
  that ``_EXPORTS`` names for ``f``; ``import iclcore.a``, ``from iclcore import a``
  and ``from iclcore.a import *`` (which may reach every exported name) on every
  module of ``_EXPORTS``. The computed import inside that ``__getattr__`` is resolved
  through the map, so it does not count as dynamic.
* Any other dynamic import (``import_module`` / ``__import__`` with a computed
  name, ``importlib.reload``, a star import from a package whose ``__all__`` is
  computed), a file that cannot be parsed, or an ``iclcore`` module that does not exist makes the notebook
  depend on the **whole package**: every file under ``iclcore/`` (conservative:
  such a notebook re-executes after any change to ``iclcore``).
* Imports of other packages (numpy, torch, ...) are covered by the lock file,
  which is part of every key. ``iclbook`` (the tooling) is never part of a key.
* Data files read by a module at run time (``Path(__file__).parent / ...``) are
  covered when they sit in the folder of a module in the set: every non-Python
  file in the folder of a dependency is included.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .package_exports import lazy_exports

PACKAGE = "iclcore"


@dataclass
class ImportScan:
    """Imports found in one source: absolute module names, and whether any import was dynamic."""

    modules: set[str] = field(default_factory=set)  # also ``import a`` (then ``a`` is in ``star`` too)
    maybe_modules: set[str] = field(default_factory=set)  # ``from a import b``: ``a.b`` if it is a module
    star: set[str] = field(default_factory=set)  # ``from a import *`` and ``import a``: every name of ``a``
    dynamic: list[str] = field(default_factory=list)  # reasons


def _resolve_relative(module: str | None, level: int, current: str, is_package: bool) -> str | None:
    if level == 0:
        return module
    parts = current.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _literal_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


@functools.lru_cache(maxsize=4096)
def scan_source(source: str, current: str = "", is_package: bool = False) -> ImportScan:  # noqa: C901 (one pass over the syntax tree with a branch per import form (import, from, relative, star, importlib))
    """Imports of ``source``; ``current`` is the module's dotted name (for relative imports).

    Cached on the arguments (the source text itself), so each module is parsed once per process.
    The result must not be modified.
    """
    scan = ImportScan()
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        scan.dynamic.append(f"cannot parse ({exc.msg}, line {exc.lineno})")
        return scan
    dynamic_names = ("import_module", "__import__", "reload")
    look_for_calls = any(name in source for name in dynamic_names)
    wanted = (ast.Import, ast.ImportFrom, ast.Call) if look_for_calls else (ast.Import, ast.ImportFrom)
    resolved: set[int] = set()  # calls in the lazy loader of a package's `_EXPORTS` (resolved through the map)
    if look_for_calls and is_package and lazy_exports(source) is not None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                resolved.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Call))
    for node in ast.walk(tree):
        if not isinstance(node, wanted) or id(node) in resolved:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                scan.modules.add(alias.name)
                scan.star.add(alias.name)  # the bound package reaches every name it exports
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(node.module, node.level, current, is_package)
            if base is None:
                scan.dynamic.append(f"relative import beyond the top package, line {node.lineno}")
                continue
            scan.modules.add(base)
            for alias in node.names:
                if alias.name == "*":
                    scan.star.add(base)
                else:
                    scan.maybe_modules.add(f"{base}.{alias.name}")
        elif isinstance(node, ast.Call):
            name = _call_name(node.func)
            if name in {"import_module", "__import__"}:
                target = _literal_str(node.args[0]) if node.args else None
                if target is None:
                    scan.dynamic.append(f"`{name}` with a computed name, line {node.lineno}")
                    continue
                if target.startswith("."):
                    pkg = _literal_str(node.args[1]) if len(node.args) > 1 else None
                    if pkg is None:
                        for kw in node.keywords:
                            if kw.arg == "package":
                                pkg = _literal_str(kw.value)
                    if pkg is None:
                        scan.dynamic.append(f"`{name}({target!r})` without a literal package, line {node.lineno}")
                        continue
                    level = len(target) - len(target.lstrip("."))
                    target = _resolve_relative(target.lstrip(".") or None, level, pkg, True) or ""
                scan.modules.add(target)
            elif name == "reload":
                scan.dynamic.append(f"`reload`, line {node.lineno}")
    return scan


@dataclass
class ScanCache:
    """Import scans (:func:`scan_source`) of sources, by SHA-256 of their text, kept in a JSON file between runs.

    A cached rebuild computes every notebook's key, which needs the import graph of ``iclcore``;
    parsing every module with :mod:`ast` costs about a second, looking its scan up by content
    costs a hash. The lookup is exact: an entry is found only for the very same text (and
    module name), so a changed file is always parsed again. The file is advisory: a missing,
    unreadable or foreign one is ignored (and rewritten), and at most :attr:`limit` entries are kept.
    """

    path: Path | None = None
    scans: dict[str, list] = field(default_factory=dict)
    limit: int = 4096
    changed: bool = False

    VERSION = 2

    @classmethod
    def load(cls, path: Path) -> ScanCache:
        """The cache kept at ``path`` (empty if there is none or it is unreadable)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            scans = data["scans"] if data.get("version") == cls.VERSION else {}
            if not isinstance(scans, dict):
                scans = {}
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            scans = {}
        return cls(path, scans)

    def scan(self, source: str, current: str = "", is_package: bool = False) -> ImportScan:
        """:func:`scan_source` of ``source``, from the cache when this exact text was scanned before."""
        digest = hashlib.sha256(f"{current}\0{int(is_package)}\0{source}".encode()).hexdigest()
        hit = self.scans.get(digest)
        if isinstance(hit, list) and len(hit) == 4 and all(isinstance(x, list) for x in hit):
            return ImportScan(set(hit[0]), set(hit[1]), set(hit[2]), list(hit[3]))
        scan = scan_source(source, current, is_package)
        self.scans[digest] = [sorted(scan.modules), sorted(scan.maybe_modules), sorted(scan.star), list(scan.dynamic)]
        self.changed = True
        return scan

    def save(self) -> None:
        """Write the cache back (atomically) if a scan was added; errors are ignored (the cache is advisory)."""
        if not self.changed or self.path is None:
            return
        keep = dict(list(self.scans.items())[-self.limit :])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": self.VERSION, "scans": keep}, fh)
            os.replace(tmp, self.path)
        except OSError:
            return
        self.changed = False


def _literal_all(source: str) -> list[str] | None:
    """The names of a literal ``__all__`` in ``source`` ([] if there is none; None if it is computed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: list[str] = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if not all(isinstance(v, str) for v in value):
                return None
            names += list(value)
    return names


def _module_file(package_dir: Path, module: str) -> Path | None:
    """File of the ``iclcore`` module ``module`` under ``package_dir`` (the folder ``iclcore/``), or None."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts) if parts else package_dir
    if base.is_dir() and (base / "__init__.py").is_file():
        return base / "__init__.py"
    if parts and base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if base.is_dir():  # a namespace package (no __init__.py)
        return base
    return None


def _in_package(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


@dataclass
class Dependencies:
    """Result of :func:`dependency_files`."""

    files: list[Path]
    modules: list[str]
    whole_package: str = ""  # non-empty: why the notebook depends on every file of the package


def _all_files(package_dir: Path) -> list[Path]:
    return sorted(
        p
        for p in package_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    )


def dependency_files(notebook_source: str, package_dir: Path, scans: ScanCache | None = None) -> Dependencies:  # noqa: C901 (a worklist over the import graph with a branch per kind of import found (module, package, maybe-module, star, dynamic))
    """The ``iclcore`` files (under ``package_dir``) a notebook depends on; see the module docstring.

    ``scans`` looks up the import scans of unchanged sources instead of parsing them again (:class:`ScanCache`).
    """
    scan_of = scans.scan if scans is not None else scan_source
    modules: set[str] = set()
    todo: list[tuple[str, ImportScan]] = [("", scan_of(notebook_source))]
    reasons: list[str] = []
    while todo:
        where, scan = todo.pop()
        reasons += [f"{where or 'the notebook'}: {r}" for r in scan.dynamic]
        wanted = {m for m in scan.modules if _in_package(m)}
        star = set(scan.star)
        for m in scan.maybe_modules:
            if not _in_package(m):
                continue
            path = _module_file(package_dir, m)
            if path is not None:
                wanted.add(m)
                star.add(m)  # `from a import b`, b a package: it reaches every name b exports
                continue
            base, name = m.rsplit(".", 1)
            init = _module_file(package_dir, base)
            if init is not None and init.name == "__init__.py":
                module = (lazy_exports(init.read_text()) or {}).get(name)
                if module is not None:
                    wanted.add(f"{base}.{module}")
        for base in star:  # `from a import *`: a package also imports the submodules named in its __all__
            path = _module_file(package_dir, base) if _in_package(base) else None
            if path is not None and path.name == "__init__.py":
                exports = lazy_exports(path.read_text())
                if exports is not None:
                    wanted.update(f"{base}.{module}" for module in exports.values())
                    continue
                names = _literal_all(path.read_text())
                if names is None:
                    reasons.append(f"{where or 'the notebook'}: `from {base} import *` with a computed __all__")
                    continue
                wanted.update(f"{base}.{n}" for n in names if _module_file(package_dir, f"{base}.{n}") is not None)
        for m in sorted(wanted):
            parts = m.split(".")
            for i in range(1, len(parts) + 1):  # the module and every parent package
                name = ".".join(parts[:i])
                if name in modules:
                    continue
                path = _module_file(package_dir, name)
                if path is None:
                    reasons.append(f"{where or 'the notebook'}: no module {name!r} under {package_dir}")
                    continue
                modules.add(name)
                if path.is_file():
                    todo.append((name, scan_of(path.read_text(), name, path.name == "__init__.py")))
    if not package_dir.is_dir():
        return Dependencies([], sorted(modules), "")
    if reasons:
        return Dependencies(_all_files(package_dir), sorted(modules), "; ".join(reasons))
    files: set[Path] = set()
    for name in modules:
        path = _module_file(package_dir, name)
        if path is None or not path.is_file():
            continue
        files.add(path)
        for extra in path.parent.iterdir():  # data files next to a dependency
            if extra.is_file() and extra.suffix not in {".py", ".pyc", ".pyo"} and not extra.name.startswith("."):
                files.add(extra)
    return Dependencies(sorted(files), sorted(modules), "")
