"""The layering of the code base: imports run downwards, families form no cycle, other
families' private names stay private, notebooks use only public API, and ARCHITECTURE.md is current.

The layer table and the static import graph (``ast``, imports inside functions included) live in
:mod:`iclbook.architecture`; a module's layer is the layer of its family (its subpackage of
``iclcore``), so a new module in a family needs no change here.
"""

from __future__ import annotations

import ast

import pytest

from iclbook import architecture as arch

REGENERATE = "python -m iclbook.architecture --write"


@pytest.fixture(scope="module")
def modules() -> dict[str, object]:
    return arch.source_modules()


@pytest.fixture(scope="module")
def imports() -> list[arch.Import]:
    return arch.import_graph()


def _report(found: list) -> str:
    return "\n".join(map(str, found))


def test_the_graph_sees_imports_inside_functions_and_relative_imports(tmp_path):
    """The scanner on a small tree: a lazy import in a function body, relative imports, submodule imports."""
    pkg = tmp_path / "iclcore" / "fam"
    pkg.mkdir(parents=True)
    (tmp_path / "iclcore" / "__init__.py").write_text("")
    (tmp_path / "iclcore" / "util.py").write_text("def f():\n    pass\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def g():\n    from ..util import f\n    return f\n")
    (pkg / "b.py").write_text("from . import a\nfrom iclcore.fam.a import _h\nimport numpy\n")
    found = {(i.source, i.target, i.name) for i in arch.import_graph(tmp_path)}
    assert found == {
        ("iclcore.fam.a", "iclcore.util", "f"),
        ("iclcore.fam.b", "iclcore.fam.a", None),
        ("iclcore.fam.b", "iclcore.fam.a", "_h"),
    }


def test_the_checks_catch_what_they_should():
    up = arch.Import("iclcore.lsq.tasks", "iclcore.richardson.decoder", "online_decoder_training", 3)
    private = arch.Import("notebooks.x", "iclcore.lsq.iterates", "_as_batch", 5)
    same_family = arch.Import("iclcore.lsq.moments", "iclcore.lsq.iterates", "_as_batch", 7)
    reference = arch.Import("benchmarks.bench", "iclcore._reference", "run_encdec_naive", 9)
    assert arch.upward_imports([up, private, same_family, reference]) == [
        "iclcore.lsq.tasks:3 imports iclcore.richardson.decoder.online_decoder_training (upwards)"
    ]
    assert arch.private_imports([up, private, same_family, reference]) == [
        "notebooks.x:5 imports iclcore.lsq.iterates._as_batch (private)"
    ]
    assert arch.tooling_imports([arch.Import("iclcore.lsq.tasks", "iclbook.report", None, 1)])
    assert arch.tooling_imports([arch.Import("iclbook.report", "iclcore.lsq.tasks", None, 1)])
    assert not arch.tooling_imports([arch.Import("iclbook.store", "iclcore.progress", None, 1)])
    back = arch.Import("iclcore.richardson.decoder", "iclcore.lsq.tasks", None, 1)
    assert arch.unit_cycles([up, back]) == [["iclcore.lsq", "iclcore.richardson"]]


def test_every_unit_has_a_layer(imports):
    units = {arch.unit_of(m) for m in arch.source_modules()} - {arch.TOOLING}
    missing = []
    for unit in sorted(units):
        try:
            arch.layer_of(unit)
        except KeyError as err:
            missing.append(err.args[0])
    assert not missing, _report(missing)


def test_no_import_runs_upwards(imports):
    found = arch.upward_imports(imports)
    assert not found, "imports from a higher layer (see LAYERS in iclbook/architecture.py):\n" + _report(found)


def test_no_cycle_between_families(imports):
    found = arch.unit_cycles(imports)
    assert not found, "families importing each other in a cycle:\n" + _report(found)


def test_no_cycle_between_iclbook_modules(imports):
    found = arch.module_cycles(imports, arch.TOOLING)
    assert not found, "iclbook modules importing each other in a cycle:\n" + _report(found)


def test_no_private_name_crosses_a_family(imports):
    found = arch.private_imports(imports)
    assert not found, "make the name public (a mathematical name, in __all__) or keep it in its family:\n" + _report(
        found
    )


def test_tooling_stays_apart(imports):
    found = arch.tooling_imports(imports)
    assert not found, _report(found)


def test_notebooks_and_reference_import_only_public_names(imports, modules):
    found = arch.names_outside_all(imports, modules)
    assert not found, "import only names listed in the module's __all__:\n" + _report(found)


def test_every_module_lists_its_public_names(modules):
    found = arch.public_api_gaps(modules)
    assert not found, _report(found)


def test_subpackages_list_their_modules_without_importing_them():
    found = arch.subpackage_gaps()
    assert not found, _report(found)


def test_package_docstring_names_every_family_and_utility():
    tree = ast.parse((arch.ROOT / "iclcore" / "__init__.py").read_text())
    doc = ast.get_docstring(tree) or ""
    units = [u for _, layer in arch.LAYERS for u in layer if u.startswith("iclcore.")]
    missing = [u for u in units if f":mod:`{u}`" not in doc]
    assert not missing, f"iclcore/__init__.py's docstring does not describe {missing}"


def test_cycle_finder_on_a_small_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert arch.cycles(graph) == [["a", "b", "c"], ["d"]]
    assert arch.cycles({"a": {"b"}, "b": set()}) == []


def test_architecture_md_diagram_is_current(imports):
    committed = (arch.ROOT / "ARCHITECTURE.md").read_text()
    expected = arch.spliced(committed, arch.render_diagram(imports))
    assert committed == expected, f"ARCHITECTURE.md's diagram is out of date with the import graph: run `{REGENERATE}`"


def test_architecture_md_module_lists_are_current():
    committed = (arch.ROOT / "ARCHITECTURE.md").read_text()
    expected = arch.spliced(committed, arch.render_module_lists(), arch.MODULES_BEGIN, arch.MODULES_END)
    assert committed == expected, f"ARCHITECTURE.md's module lists are out of date with the code: run `{REGENERATE}`"


def test_torch_importers_finds_every_form_of_import(tmp_path):
    pkg = tmp_path / "iclcore" / "fam"
    pkg.mkdir(parents=True)
    (tmp_path / "iclbook").mkdir()
    (tmp_path / "iclcore" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    import torch.nn as nn\n    return nn\n")
    (pkg / "b.py").write_text("from torch import tensor\n")
    (pkg / "c.py").write_text("import torchvision_like_name\nfrom .a import f\n")
    (tmp_path / "iclbook" / "d.py").write_text("import numpy\n")
    assert arch.torch_importers(tmp_path) == ["iclcore.fam.a", "iclcore.fam.b"]


def project_imports(source: str, allowed: str = "iclcore") -> list[str]:
    """``line: module`` for each import in ``source`` of a project package other than ``allowed``
    (the book tooling, the tests, the benchmarks, another notebook); third-party and stdlib pass."""
    own = {p.name for p in arch.ROOT.iterdir() if p.is_dir() and any(p.glob("*.py"))} - {allowed}
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ["." * node.level + (node.module or "")]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        found += [f"{node.lineno}: {n}" for n in names if n.startswith(".") or n.split(".")[0] in own]
    return found


def test_notebooks_import_only_iclcore():
    """A chapter runs on the mathematics alone: its verdicts are rendered when the book is built."""
    bad = "import numpy as np\nfrom iclcore.stats import mean_se\ndef f():\n    from iclbook.verdicts import main\n"
    assert project_imports(bad) == ["4: iclbook.verdicts"]
    assert project_imports("import iclbook\nfrom . import x\nimport tests.conftest\n") == [
        "1: iclbook",
        "2: .",
        "3: tests.conftest",
    ]
    notebooks = sorted((arch.ROOT / "notebooks").glob("*.py"))
    assert len(notebooks) >= 20
    found = [f"{p.name}:{hit}" for p in notebooks for hit in project_imports(p.read_text())]
    assert not found, "notebooks import only iclcore (and third-party packages):\n" + _report(found)
