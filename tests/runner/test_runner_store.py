"""The runner's key (import graph), exact parameters, ranges, store, output folders and CLI errors (``iclbook``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from runner_project import make_project, run_icl

from iclbook import cli
from iclbook.imports import dependency_files
from iclbook.notebooks import NotebookError, coerce, discover, discover_all, python_literal, read_notebook
from iclbook.runs import make_requests
from iclbook.store import cache_key, check_metrics, verify_folder

ROOT = Path(__file__).resolve().parents[2]

# --- import graph: precise invalidation --------------------------------------------------------------

PACKAGE = {
    "__init__.py": '"""pkg"""\n',
    "a/__init__.py": '"""a"""\n',
    "a/x.py": "from .y import Y\nX = Y + 1\n",
    "a/y.py": "Y = 1\n",
    "b.py": "B = 2\n",
    "c.py": 'import importlib\nmod = importlib.import_module("iclcore.b")\n',
    "d.py": 'import importlib\nname = "iclcore." + "b"\nmod = importlib.import_module(name)\n',
    "unused.py": "U = 0\n",
    "e/__init__.py": '__all__ = ["f"]\n',
    "e/f.py": "F = 1\n",
    "e/g.py": "G = 1\n",
    "s.py": "from iclcore.b import *\n",
}
NOTEBOOKS = {
    "n_x": "from iclcore.a.x import X",
    "n_ax": "from iclcore.a import x",
    "n_b": "import iclcore.b as b",
    "n_c": "from iclcore import c",
    "n_d": "from iclcore.d import mod",
    "n_e": "from iclcore.e import *",
    "n_s": "from iclcore.s import B",
}


@pytest.fixture
def graph_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel, text in PACKAGE.items():
        (root / "iclcore" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "iclcore" / rel).write_text(text)
    (root / "notebooks").mkdir()
    for name, line in NOTEBOOKS.items():
        (root / "notebooks" / f"{name}.py").write_text(f'# %% tags=["parameters"]\nk = 1\n\n# %%\n{line}\n')
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (root / "iclbook").mkdir()
    (root / "iclbook" / "cli.py").write_text("def main(): pass\n")
    return root


def _keys(root: Path) -> dict[str, str]:
    return {r.notebook.name: cache_key(r, root) for r in make_requests(discover(root), root / "out")}


def _changed_after(root: Path, rel: str) -> set[str]:
    before = _keys(root)
    path = root / rel
    path.write_text(path.read_text() + "\n# edited\n")
    after = _keys(root)
    return {n for n in before if before[n] != after[n]}


@pytest.mark.parametrize(
    "edited, expected",
    [
        ("iclcore/a/y.py", {"n_x", "n_ax", "n_d"}),  # through a relative import; n_d depends on everything
        ("iclcore/a/__init__.py", {"n_x", "n_ax", "n_d"}),  # a parent package's __init__ runs on import
        ("iclcore/__init__.py", set(NOTEBOOKS)),
        (
            "iclcore/b.py",
            {"n_b", "n_c", "n_d", "n_s"},
        ),  # n_c: import_module("iclcore.b") is resolved; n_s: a star import
        ("iclcore/e/f.py", {"n_e", "n_d"}),  # a star import of a package imports the submodules of its __all__
        ("iclcore/e/g.py", {"n_d"}),
        ("iclcore/unused.py", {"n_d"}),
        ("iclbook/cli.py", set()),  # the tooling is in no key
    ],
)
def test_editing_a_module_changes_exactly_the_notebooks_that_reach_it(
    graph_project: Path, edited: str, expected: set
) -> None:
    assert _changed_after(graph_project, edited) == expected


def test_a_computed_dynamic_import_keys_on_the_whole_package(graph_project: Path) -> None:
    deps = dependency_files((graph_project / "notebooks" / "n_d.py").read_text(), graph_project / "iclcore")
    assert "computed name" in deps.whole_package
    resolved = dependency_files((graph_project / "notebooks" / "n_c.py").read_text(), graph_project / "iclcore")
    assert resolved.whole_package == ""
    assert "iclcore.b" in resolved.modules


def test_every_project_notebook_has_a_precise_import_set() -> None:
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        deps = dependency_files(path.read_text(), ROOT / "iclcore")
        assert deps.whole_package == "", f"{path.name}: {deps.whole_package}"
        assert "iclcore.plotting" in deps.modules, path.name
        assert not any(p.is_relative_to(ROOT / "iclbook") for p in deps.files)


# --- exact parameters ----------------------------------------------------------------------------------

VALUES = [
    0,
    -7,
    2**200,
    -(10**5000),
    1e-5,
    1e300,
    -0.5,
    -0.0,
    5e-324,
    math.inf,
    -math.inf,
    True,
    False,
    None,
    "",
    'it\'s "quoted"\n\u00e9',
    "1e-5",
]


@pytest.mark.parametrize("value", VALUES, ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(VALUES)])
def test_python_literal_round_trips_exactly(value) -> None:
    back = eval(python_literal(value))  # noqa: S307 (our own literal)
    assert type(back) is type(value)
    assert back == value
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan_round_trips() -> None:
    back = eval(python_literal(math.nan))  # noqa: S307
    assert isinstance(back, float) and math.isnan(back)


@pytest.mark.parametrize(
    "raw, default, expected",
    [
        ("12345678901234567891", 1, 12345678901234567891),
        ("9007199254740993", 1, 9007199254740993),
        ("+300", 1, 300),
        ("1e-5", 1.0, 1e-5),
        ("1e300", 1.0, 1e300),
        ("-0.5", 1.0, -0.5),
        ("7", 1.0, 7.0),
        ("None", None, None),
        ("2.5", None, 2.5),
        ("text", None, "text"),
        ("1e-5", "s", "1e-5"),
    ],
)
def test_coerce_is_exact(raw: str, default, expected) -> None:
    got = coerce(raw, default, "p")
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("raw", ["16.0", "1e1", "0x10", "0o20", "1_6", "\uff11\uff16", "16 0", "", "- 3"])
def test_integers_are_plain_decimal_digits_only(raw: str) -> None:
    """An int is ``[+-]?[0-9]+`` (ASCII); the error names the parameter and what is accepted."""
    with pytest.raises(NotebookError, match=r"parameter 'K': .*plain decimal digits"):
        coerce(raw, 8, "K")


@pytest.mark.parametrize("raw", ["[0x10]", "[1_000]", "[16, 0b1]"])
def test_list_integers_are_plain_decimal_digits_only(raw: str) -> None:
    with pytest.raises(NotebookError, match=r"parameter 'L': element \d .*plain decimal"):
        coerce(raw, [1], "L")
    assert coerce("[16, -3, +2]", [1], "L") == [16, -3, 2]


def test_wrong_type_names_the_parameter(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", ["types"])
    nb = read_notebook(root / "notebooks" / "types.py")
    with pytest.raises(NotebookError, match="parameter 'i'"):
        nb.resolve("quick", {"i": "1.5"})
    with pytest.raises(NotebookError, match="parameter 'i'"):
        nb.resolve("quick", {"i": 1.5})  # from Python: no silent conversion
    with pytest.raises(NotebookError, match="parameter 'b'"):
        nb.resolve("quick", {"b": 1})


# --- ranges ---------------------------------------------------------------------------------------------


def test_ranges_are_read_from_the_parameter_comments(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", ["sized"])
    nb = read_notebook(root / "notebooks" / "sized.py")
    assert nb.ranges["K"].describe() == "[1, 4096]" and nb.ranges["eta"].describe() == "(0, 1)"
    assert nb.resolve("quick", {"K": "4096", "eta": "0.99"})["K"] == 4096
    for key, raw in [("K", "0"), ("K", "4097"), ("eta", "1"), ("eta", "0"), ("eta", "nan")]:
        with pytest.raises(NotebookError, match=f"parameter '{key}' = .* outside its range"):
            nb.resolve("quick", {key: raw})


@pytest.mark.parametrize(
    "cell, message",
    [
        ("K = 0  # range: [1, 10]\n", "outside its range"),  # a default must respect its own range
        ("K = 1  # range: [1, x]\n", "not a number"),
        ("K = 1  # range: 1 to 10\n", "cannot read the range"),
        ('s = "c"  # choices: ["a", "b"]\n', "outside its range one of 'a', 'b'"),
    ],
)
def test_bad_range_declarations(tmp_path: Path, cell: str, message: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text('# %% tags=["parameters"]\n' + cell)
    with pytest.raises(NotebookError, match=message):
        read_notebook(path)


def test_a_preset_outside_the_range_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text(
        '# %% tags=["parameters"]\nK = 1  # range: [1, 10]\n\n# %% tags=["presets"]\nPRESETS = {"paper": {"K": 11}}\n'
    )
    with pytest.raises(NotebookError, match="'K' = 11"):
        read_notebook(path)


# --- metrics schema and manifests --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, ok",
    [
        ('{"a": 1, "b": 2.5, "d": true, "e": -3e-300}', True),
        ('{"c": "x", "d": "1e+300"}', True),
        ('{"c": "%s"}' % ("x" * 201), False),
        ('{"": 1}', False),
        ('{"a": {"b": 1}}', False),
        ('{"a": NaN}', False),
        ('{"a": Infinity}', False),
        ('{"a": 1e999}', False),
        ('{"a": null}', False),
        ('{"a": [1]}', False),
        ("[1]", False),
        ('{"a": ', False),
    ],
)
def test_metrics_schema(tmp_path: Path, text: str, ok: bool) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(text)
    assert (check_metrics(path) == "") is ok


@pytest.mark.parametrize(
    "value",
    [1, -2.5, True, False, 10**30, "text", "x" * 200, "x" * 201, None, [1.0], {"a": 1}, math.nan, math.inf, -math.inf],
)
def test_the_store_accepts_exactly_what_write_metrics_writes(tmp_path: Path, value) -> None:
    """One contract (iclcore.plotting.METRICS_CONTRACT): a value write_metrics refuses is refused by the store
    when a notebook writes it by hand, and a value it writes is stored."""
    from iclcore.plotting import write_metrics

    try:
        write_metrics({"k": value}, tmp_path / "written")
    except (TypeError, ValueError):
        written = False
    else:
        written = True
        assert check_metrics(tmp_path / "written" / "metrics.json") == ""
    by_hand = tmp_path / "metrics.json"
    by_hand.write_text(json.dumps({"k": value}))
    assert (check_metrics(by_hand) == "") is written
    finite = isinstance(value, float) and math.isfinite(value)
    assert written is (isinstance(value, (bool, int)) or finite or (isinstance(value, str) and len(value) <= 200))


def test_verify_folder_names_the_problem(tmp_path: Path) -> None:
    from iclbook.store import STAMP, sha256_file

    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"png")
    k = "a" * 64
    manifest = {
        "key": k,
        "notebook": "n",
        "preset": "quick",
        "seconds": 1.0,
        "files": {"a.png": sha256_file(folder / "a.png")},
    }
    (folder / STAMP).write_text(json.dumps(manifest))
    assert verify_folder(folder, k) == ""
    assert verify_folder(folder, "other") == "it holds another run"
    (folder / "stale.pdf").write_bytes(b"old")
    assert verify_folder(folder, k) == "stale.pdf is not an output of this run"
    (folder / "stale.pdf").unlink()
    (folder / "a.png").write_bytes(b"PNG")
    assert verify_folder(folder, k) == "a.png changed"
    (folder / "a.png").unlink()
    assert verify_folder(folder, k) == "a.png is missing"


# --- CLI errors (no kernel) ----------------------------------------------------------------------------------


def test_stray_file_is_named_and_the_others_still_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p", ["second", "sized"])
    (root / "notebooks" / "scratch.py").write_text("print('no parameters cell')\n")
    assert cli.main(["--root", str(root), "list"]) == 2
    captured = capsys.readouterr()
    assert "second" in captured.out and "sized" in captured.out and "K, eta" in captured.out
    assert "scratch.py" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert cli.main(["--root", str(root), "list", "sized"]) == 0
    assert "range [1, 4096]" in capsys.readouterr().out
    good, bad = discover_all(root)
    assert [nb.name for nb in good] == ["second", "sized"] and list(bad) == ["scratch"]
    assert cli.main(["--root", str(root), "run", "scratch"]) == 2
    assert "scratch.py" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "--out", ""], "--out is empty"),
        (["run", "-j", "0"], "-j/--jobs"),
        (["build", "--out", "x"], "--out is for `run`"),
    ],
)
def test_one_line_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    root = make_project(tmp_path / "p", ["second"])
    assert cli.main(["--root", str(root), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


# --- store and output folders (kernels: a few seconds each) -----------------------------------------------------


@pytest.mark.slow
def test_store_serves_switches_back_and_repairs(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", ["second", "types"])
    out = root / "book" / "generated" / "second"
    assert "1 executed" in run_icl(root, "run", "second").stdout
    assert "1 executed" in run_icl(root, "run", "second", "--preset", "paper").stdout
    assert json.loads((out / "metrics.json").read_text()) == {"k_squared": 16}
    back = run_icl(root, "run", "second")  # back to quick: a cache hit, the folder holds quick's files
    assert "0 executed, 1 cached" in back.stdout
    assert json.loads((out / "metrics.json").read_text()) == {"k_squared": 9}
    (out / "leftover.png").write_bytes(b"stale")  # a file left in an output folder never counts
    assert run_icl(root, "run", "second").returncode == 0
    assert not (out / "leftover.png").exists()
    # a damaged store entry: one line naming the file, then re-execution
    entry = next(
        p
        for p in (root / ".icl-store" / "entries").iterdir()
        if json.loads((p / ".icl-run.json").read_text())["preset"] == "quick"
    )
    (entry / "figure.txt").write_text("tampered\n")
    again = run_icl(root, "run", "second")
    assert "1 executed" in again.stdout
    assert "figure.txt changed" in again.stderr and "re-executing" in again.stderr
    assert (out / "figure.txt").read_text() == "figure for k=3\n"
    # the output folder is the new run, not the older (valid) copy of the same key
    assert (out / ".icl-run.json").read_text() == (entry / ".icl-run.json").read_text()
    assert not list((root / ".icl-store" / "tmp").iterdir())  # no temporary folder left


@pytest.mark.slow
def test_executed_notebook_hides_the_injected_cell_and_shows_a_parameter_table(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", ["types"])
    assert run_icl(root, "run", "types", "-p", "i", "5", "--preset", "paper").returncode == 0
    nb = json.loads((root / "book" / "generated" / "types" / "types.ipynb").read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0]["metadata"]["tags"]
    assert "i = 5" in "".join(injected[0]["source"])
    table = nb["cells"][1]  # right under the title
    assert "icl-parameters" in table["metadata"]["tags"]
    text = "".join(table["source"])
    assert "preset `paper`" in text and "changed on the command line: `i`" in text
    assert "| `i` | `5` | `3` | `4` |" in text
    assert nb["metadata"]["icl"]["params"]["i"] == "5"
