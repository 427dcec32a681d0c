"""Each family of ``iclcore`` exports the public functions and classes of its modules (not module
names), lazily: importing the family imports none of its modules, a name imports its module on first
use, and the modules stay importable by path. The cache key of a notebook that imports a name from a
family covers the module that defines it; the API page lists each family's exports.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iclbook import package_exports as px
from iclbook.api_page import iclcore_exports, iclcore_modules, render_api
from iclbook.architecture import declared_all
from iclbook.imports import dependency_files

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "iclcore"
FAMILIES = sorted(init.parent.name for init in PACKAGE_DIR.glob("*/__init__.py"))


def _defined(family: str) -> dict[str, list[str]]:
    """``name -> modules defining it`` over the family's public modules (top-level functions and classes)."""
    owners: dict[str, list[str]] = {}
    for path in sorted((PACKAGE_DIR / family).glob("*.py")):
        if path.stem.startswith("_"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name[0] != "_":
                owners.setdefault(node.name, []).append(path.stem)
    return owners


def test_every_family_is_checked():
    assert {"dmft", "gd", "logistic", "lsq", "models", "pde", "richardson", "spectra"} <= set(FAMILIES)


def test_the_generated_exports_are_current():
    found = px.export_gaps()
    assert not found, "\n".join(found)


@pytest.mark.parametrize("family", FAMILIES)
def test_all_is_the_public_functions_and_classes_of_the_modules(family):
    init = PACKAGE_DIR / family / "__init__.py"
    public = declared_all(init)
    modules = {p.stem for p in (PACKAGE_DIR / family).glob("*.py")}
    owners = _defined(family)
    left_out = {name for (fam, name) in px.NOT_EXPORTED if fam == family}
    assert public == sorted(set(public)), f"iclcore.{family}.__all__ is not sorted or has duplicates"
    assert not set(public) & modules, f"iclcore.{family}.__all__ names modules: {sorted(set(public) & modules)}"
    assert not [n for n in public if n.startswith("_")], f"iclcore.{family}.__all__ names private names"
    assert set(public) == set(owners) - left_out
    assert left_out <= set(owners) & modules  # only names that a module's name would shadow are left out
    mapping = px.lazy_exports(init.read_text())
    assert mapping is not None and set(mapping) == set(public)
    assert all(mapping[name] in owners[name] for name in public)


def test_names_defined_twice_in_a_family_are_chosen_explicitly():
    """``richardson`` defines ``depth_risk`` in baselines and decoder (exported: decoder's, the
    prompt-level risk), ``relative_error`` in decoder and encoder (exported: encoder's, which checks shapes)."""
    twice = {(f, n): sorted(m) for f in FAMILIES for n, m in _defined(f).items() if len(m) > 1}
    assert twice == {
        ("richardson", "depth_risk"): ["baselines", "decoder"],
        ("richardson", "relative_error"): ["decoder", "encoder"],
    }
    assert px.CHOSEN == {("richardson", "depth_risk"): "decoder", ("richardson", "relative_error"): "encoder"}
    mapping = px.lazy_exports((PACKAGE_DIR / "richardson" / "__init__.py").read_text())
    assert mapping["depth_risk"] == "decoder" and mapping["relative_error"] == "encoder"


def test_a_name_defined_twice_without_a_choice_is_refused(tmp_path):
    family = tmp_path / "fam"
    family.mkdir()
    (family / "a.py").write_text("def f():\n    pass\n")
    (family / "b.py").write_text("def f():\n    pass\n\n\nclass G:\n    pass\n")
    with pytest.raises(ValueError, match=r"'f' is defined in \['a', 'b'\]"):
        px.expected_exports(family)
    (family / "b.py").write_text("class G:\n    pass\n\n\ndef _f():\n    pass\n")
    assert px.expected_exports(family) == {"a": ["f"], "b": ["G"]}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_exported_name_resolves_to_its_module(family):
    package = importlib.import_module(f"iclcore.{family}")
    mapping = px.lazy_exports((PACKAGE_DIR / family / "__init__.py").read_text())
    wrong = []
    for name in package.__all__:
        value = getattr(package, name)
        module = f"iclcore.{family}.{mapping[name]}"
        if value is not getattr(importlib.import_module(module), name) or value.__module__ != module:
            wrong.append(name)
    assert not wrong, f"iclcore.{family}: names that do not resolve to their module: {wrong}"
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match=f"module 'iclcore.{family}' has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def _loaded_after(code: str) -> set[str]:
    probe = "\nimport json as _json, sys as _sys\nprint(_json.dumps(sorted(_sys.modules)))\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code + probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_importing_a_family_imports_none_of_its_modules():
    loaded = _loaded_after("".join(f"import iclcore.{family}\n" for family in FAMILIES))
    assert {f"iclcore.{family}" for family in FAMILIES} <= loaded
    inside = sorted(m for m in loaded if m.startswith("iclcore.") and m.count(".") > 1)
    assert not inside, f"importing the families imported their modules: {inside}"
    assert {"torch", "scipy.stats", "torch._dynamo"}.isdisjoint(loaded)


def test_a_name_imports_only_its_module_and_modules_stay_importable():
    loaded = _loaded_after(
        "from iclcore.spectra import mp_density\n"
        "import iclcore.spectra.mp\n"
        "from iclcore.dmft import scaling\n"
        "assert iclcore.spectra.mp.mp_density is mp_density\n"
        "assert scaling.__name__ == 'iclcore.dmft.scaling'\n"
    )
    assert {"iclcore.spectra.mp", "iclcore.dmft.scaling"} <= loaded
    assert "iclcore.spectra.prompt" not in loaded


def _dependencies(source: str) -> set[str]:
    deps = dependency_files(source, PACKAGE_DIR)
    assert deps.whole_package == ""  # the lazy loader's import is resolved through _EXPORTS, not dynamic
    return {p.relative_to(PACKAGE_DIR).as_posix() for p in deps.files if p.suffix == ".py"}


def test_a_notebook_importing_an_exported_name_depends_on_its_module():
    found = _dependencies("from iclcore.spectra import mp_density\n")
    assert {"__init__.py", "spectra/__init__.py", "spectra/mp.py"} <= found
    assert "spectra/prompt.py" not in found
    assert _dependencies("from iclcore.spectra.mp import mp_density\n") == _dependencies(
        "from iclcore.spectra import mp_density\n"
    )


@pytest.mark.parametrize(
    "source", ["import iclcore.spectra\n", "from iclcore import spectra\n", "from iclcore.spectra import *\n"]
)
def test_a_notebook_binding_a_family_depends_on_every_module_it_exports(source):
    assert {"spectra/mp.py", "spectra/prompt.py"} <= _dependencies(source)


def test_the_api_page_lists_modules_and_each_familys_functions_and_classes():
    sections = dict(iclcore_modules())
    assert "iclcore.dmft.scaling" in sections["iclcore.dmft"]
    assert not [m for m in sections["iclcore.spectra"] if m.split(".")[-1] not in {"mp", "prompt"}]
    exports = iclcore_exports()
    assert exports["iclcore.spectra"]["mp_density"] == "mp"
    page = render_api(iclcore_modules(), exports)
    assert "{py:obj}`mp_density <iclcore.spectra.mp.mp_density>`" in page
    assert "{py:obj}`ConcentrationResult <iclcore.spectra.prompt.ConcentrationResult>`" in page
    assert ".. automodule:: iclcore.spectra\n   :no-members:" in page
    assert ".. automodule:: iclcore.spectra.mp\n   :members:" in page


def test_only_the_lazy_loader_of_a_literal_exports_map_is_exempt_from_the_dynamic_rule(tmp_path):
    package = tmp_path / "iclcore"
    (package / "fam").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "fam" / "a.py").write_text("def f():\n    pass\n")
    loader = (
        "import importlib\n_EXPORTS = {'a': ('f',)}\n__all__ = ['f']\n\n\n"
        "def __getattr__(name):\n    return getattr(importlib.import_module(f'{__name__}.a'), name)\n"
    )
    (package / "fam" / "__init__.py").write_text(loader)
    deps = dependency_files("from iclcore.fam import f\n", package)
    assert deps.whole_package == "" and "iclcore.fam.a" in deps.modules
    (package / "fam" / "__init__.py").write_text(loader + "\n\nimportlib.import_module(__name__ + '.a')\n")
    assert "computed name" in dependency_files("from iclcore.fam import f\n", package).whole_package
    (package / "fam" / "__init__.py").write_text(loader.replace("_EXPORTS = {'a': ('f',)}\n", ""))
    assert "computed name" in dependency_files("from iclcore.fam import f\n", package).whole_package
