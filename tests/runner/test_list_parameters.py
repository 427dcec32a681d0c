"""List and tuple parameters: declared, parsed, type- and range-checked element-wise, keyed exactly (``iclbook``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runner_project import HEADER, run_icl

from iclbook import cli
from iclbook.notebooks import NotebookError, coerce, read_notebook
from iclbook.runs import make_requests
from iclbook.store import cache_key, store_dir

ROOT = Path(__file__).resolve().parents[2]

LISTS = """# %% [markdown]
# # Lists

# %% tags=["parameters"]
warmups = [200]  # warm-up lengths; range: [0, 100000]; length: [1, 4]
rates = (0.001, 0.002)  # step sizes; range: (0, 1)
kinds = ["lsa"]  # choices: ["lsa", "gpt"]
flags = [True, False]
k = 3  # a scalar; range: [1, 10]

# %% tags=["presets"]
PRESETS = {"paper": {"warmups": [50, 200, 1000], "rates": [0.001]}}

# %%
import json
json.dump(
    {
        "warmups": repr(warmups), "warmups_type": type(warmups).__name__,
        "rates": repr(rates), "rates_type": type(rates).__name__,
        "kinds": repr(kinds), "flags": repr(flags),
    },
    open("metrics.json", "w"),
)
"""


def lists_project(root: Path, body: str = LISTS) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "iclcore").mkdir()
    (root / "requirements.lock").write_text("numpy==0\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: book/generated/lists/lists\n")
    (root / "notebooks" / "lists.py").write_text(HEADER + body)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return lists_project(tmp_path / "p")


def test_defaults_and_presets_keep_their_container_and_element_types(project):
    nb = read_notebook(project / "notebooks" / "lists.py")
    assert nb.parameters["warmups"] == [200] and nb.parameters["rates"] == (0.001, 0.002)
    paper = nb.resolve("paper")
    assert paper["warmups"] == [50, 200, 1000]
    assert paper["rates"] == (0.001,) and type(paper["rates"]) is tuple  # a list preset of a tuple default
    assert nb.lengths["warmups"].describe() == "[1, 4]"


def test_command_line_lists_are_literals_of_the_default_types(project):
    nb = read_notebook(project / "notebooks" / "lists.py")
    got = nb.resolve(overrides={"warmups": "[50, 12345]", "rates": "[0.25, 0.5]", "kinds": '("gpt", "lsa")'})
    assert got["warmups"] == [50, 12345]
    assert got["rates"] == (0.25, 0.5) and type(got["rates"]) is tuple  # a list given for a tuple default
    assert got["kinds"] == ["gpt", "lsa"] and type(got["kinds"]) is list  # a tuple given for a list default
    assert nb.resolve(overrides={"flags": "[False]"})["flags"] == [False]
    assert coerce("[1, 2]", [0.5], "x") == [1.0, 2.0]  # an int element of a float list becomes a float
    assert [type(v) for v in coerce("[1, 2]", [0.5], "x")] == [float, float]


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("warmups", "200", "expected a list"),  # not a list
        ("warmups", "[[1, 2]]", "flat list"),  # nested
        ("warmups", "[1.5]", "element 0 (1.5) is a float, expected int"),  # element type
        ("warmups", "[True]", "element 0 (True) is a bool, expected int"),
        ("warmups", '["1"]', "element 0 ('1') is a str, expected int"),
        ("warmups", "[5, -1]", "element 1 (-1) is outside its range [0, 100000]"),  # out of range
        ("warmups", "[]", "has 0 element(s); its length must be in [1, 4]"),  # empty, forbidden by length
        ("warmups", "[1, 2, 3, 4, 5]", "has 5 element(s)"),
        ("warmups", "__import__('os').system('id')", "cannot read"),  # not a literal: never evaluated
        ("warmups", "[1] * 10**9", "cannot read"),
        ("warmups", "{1: 2}", "expected a list"),
        ("rates", "[0.5, 1]", "element 1 (1.0) is outside its range (0, 1)"),
        ("rates", "[1e999]", "outside its range"),  # inf
        ("kinds", '["lsa", "mlp"]', "element 1 ('mlp') is outside its range one of 'lsa', 'gpt'"),
        ("flags", "[1]", "element 0 (1) is a int, expected bool"),
    ],
)
def test_bad_lists_are_refused_before_a_kernel_starts_naming_the_parameter(project, capsys, name, raw, says):
    rc = cli.main(["--root", str(project), "run", "lists", "-p", name, raw, "--out", str(project / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == cli.EXIT_USAGE
    assert len(err.splitlines()) == 1 and f"'{name}'" in err and says in err, err
    assert not store_dir(project).exists()  # nothing was started or stored


def test_bad_list_declarations_are_refused_when_the_notebook_is_read(tmp_path):
    for i, (line, says) in enumerate(
        [
            ("warmups = []", "empty list default has no element type"),
            ("warmups = [1, [2]]", "lists are flat"),
            ("warmups = [1, 'a']", "mix types"),
            ("warmups = [None]", "must be int, float, bool or str"),
            ("k = 3  # length: [1, 4]", "`length:` is for a list or tuple parameter"),
            ("warmups = [1]  # length: [4, 1]", "empty range"),
        ]
    ):
        body = LISTS.replace("warmups = [200]  # warm-up lengths; range: [0, 100000]; length: [1, 4]", line)
        body = body.replace("k = 3  # a scalar; range: [1, 10]", line if line.startswith("k =") else "k = 3")
        body = body.replace('PRESETS = {"paper": {"warmups": [50, 200, 1000], "rates": [0.001]}}', "PRESETS = {}")
        root = lists_project(tmp_path / f"p{i}", body)
        with pytest.raises(NotebookError, match=says):
            read_notebook(root / "notebooks" / "lists.py")


def test_presets_outside_the_element_domain_are_refused(tmp_path):
    body = LISTS.replace('"warmups": [50, 200, 1000]', '"warmups": [50, -200]')
    root = lists_project(tmp_path / "p", body)
    with pytest.raises(NotebookError, match=r"'warmups'.*element 1 \(-200\)"):
        read_notebook(root / "notebooks" / "lists.py")


def test_the_key_holds_the_typed_list_exactly(project):
    nb = read_notebook(project / "notebooks" / "lists.py")

    def key(**overrides: str) -> str:
        return cache_key(make_requests([nb], project / "out", overrides=overrides)[0], project)

    assert key() == key(warmups="[200]") == key(warmups="(200,)")  # the same typed value
    assert len({key(), key(warmups="[200, 50]"), key(warmups="[50, 200]"), key(rates="[0.001]")}) == 4


@pytest.mark.slow
def test_a_list_reaches_the_kernel_as_a_list_and_a_rerun_is_a_cache_hit(project):
    out = project / "out"
    first = run_icl(project, "run", "lists", "-p", "warmups", "[50, 200]", "-p", "rates", "[0.25]", "--out", str(out))
    assert first.returncode == 0, first.stderr
    metrics = json.loads((out / "lists" / "metrics.json").read_text())
    assert metrics["warmups"] == "[50, 200]" and metrics["warmups_type"] == "list"
    assert metrics["rates"] == "(0.25,)" and metrics["rates_type"] == "tuple"
    assert metrics["kinds"] == "['lsa']" and metrics["flags"] == "[True, False]"
    manifest = json.loads((out / "lists" / ".icl-run.json").read_text())
    assert manifest["params"]["warmups"] == [50, 200] and manifest["param_literals"]["rates"] == "(0.25,)"
    again = run_icl(project, "run", "lists", "-p", "warmups", "[50,200]", "-p", "rates", "(0.25,)", "--out", str(out))
    assert again.returncode == 0 and "0 executed, 1 cached" in again.stdout


def test_gd_probe_declares_real_lists():
    nb = read_notebook(ROOT / "notebooks" / "gd_probe.py")
    assert nb.parameters["warmups"] == [200] and nb.parameters["seeds"] == [0]
    assert nb.resolve("paper")["warmups"] == [50, 200, 1000] and nb.resolve("paper")["seeds"] == [0, 1, 2]
    with pytest.raises(NotebookError, match="'seeds'.*has 0 element"):
        nb.resolve(overrides={"seeds": "[]"})
    with pytest.raises(NotebookError, match="'warmups'.*expected a list"):
        nb.resolve(overrides={"warmups": "200"})
