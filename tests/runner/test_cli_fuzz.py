"""Property-based fuzzing of what a user types: ``-p`` values, list literals and ``sweeps.yml`` documents.

Whatever the input, ``icl-book`` answers with exit code 2 (one line on stderr, no traceback) or succeeds, and
never changes the store. The parsing functions and ``cli.main`` are driven in this process (fast); a few
inputs go through a real subprocess as a user's shell would pass them.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml
from fault_project import cli_main, make_fault_project, store_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runner_project import run_icl

from iclbook.notebooks import QUICK, NotebookError, read_notebook
from iclbook.store import store_dir

pytestmark = pytest.mark.fault

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: Spellings near the edges of the parsers: numbers in other bases and scripts, specials, brackets, code.
NASTY = [
    "nan",
    "-inf",
    "1e999",
    "1e-999",
    "0x10",
    "1_000",
    "١٢",
    "０",
    "True",
    "None",
    "null",
    "...",
    "()",
    "[]",
    "[[]]",
    "(1,)",
    "{}",
    "[1,]",
    "[,]",
    "[1 2]",
    "'",
    '"',
    "\\",
    "\n",
    " 8 ",
    "+8",
    "-0",
    "08",
    "8.0",
    "8e0",
    "__import__('os')",
    "[1]*9",
    "lambda: 1",
    "b'x'",
    "1j",
    "[" * 300,
    "]" * 300,
]
element = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.booleans().map(str),
    st.text(max_size=4).map(repr),
    st.sampled_from(NASTY),
)
list_literal = st.builds(
    lambda items, brackets, sep: brackets[0] + sep.join(items) + brackets[1],
    st.lists(element, max_size=12),
    st.sampled_from([("[", "]"), ("(", ")"), ("{", "}"), ("", ""), ("[", ")"), ("[[", "]]")]),
    st.sampled_from([", ", ",", " ", ",,", ",\n"]),
)
value_text = st.one_of(st.text(max_size=30), st.sampled_from(NASTY), element, list_literal)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_fault_project(tmp_path_factory.mktemp("fuzz") / "p")
    marker = store_dir(root) / "entries" / ("0" * 64) / "metrics.json"  # a stored run nothing may touch
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    return root


def _names(project: Path) -> list[tuple[str, str]]:
    out = []
    for nb in ("sized", "types", "lists"):
        out += [(nb, name) for name in read_notebook(project / "notebooks" / f"{nb}.py").parameters]
    return out + [("sized", "nope")]


def run_quietly(project: Path, *args: str) -> tuple[int, str]:
    """``cli.main`` in this process with stdout and stderr captured; the exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = cli_main(project, *args)
    return rc, err.getvalue()


def assert_clean_answer(rc: int, err: str) -> None:
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 1, err
    if rc == 2:
        assert err.startswith("icl-book: "), err


@FUZZ
@given(data=st.data(), raw=value_text)
@pytest.mark.slow
def test_any_p_value_is_a_typed_value_or_one_line_error(project, data, raw) -> None:
    notebook, name = data.draw(st.sampled_from(_names(project)))
    nb = read_notebook(project / "notebooks" / f"{notebook}.py")
    try:
        params = nb.resolve(QUICK, {name: raw})
    except NotebookError as exc:
        assert "\n" not in str(exc) and (name in str(exc)), str(exc)
        return
    default = nb.parameters[name]
    assert type(params[name]) is type(default) or (isinstance(default, float) and type(params[name]) is float)


@FUZZ
@given(data=st.data(), raw=value_text)
@pytest.mark.slow
def test_status_with_any_p_value_exits_0_or_2_with_one_line_and_changes_nothing(project, data, raw) -> None:
    notebook, name = data.draw(st.sampled_from(_names(project)))
    before = store_snapshot(project)
    rc, err = run_quietly(project, "status", notebook, "-p", name, raw)
    assert_clean_answer(rc, err)
    assert store_snapshot(project) == before


@FUZZ
@given(setting=st.sampled_from(["K", "eta", "nope"]), raw=value_text)
@pytest.mark.slow
def test_any_sweep_grid_is_refused_in_one_line_before_a_point_runs(project, setting, raw) -> None:
    before = store_snapshot(project)
    rc, err = run_quietly(project, "sweep", "sized", "-p", setting, raw, "--max-points", "1")
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert store_snapshot(project) == before


yaml_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=True), st.text(max_size=8)
)
yaml_data = st.recursive(
    yaml_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
setting_spec = st.fixed_dictionaries(
    {},
    optional={
        "values": st.one_of(st.lists(yaml_scalar, max_size=5), yaml_data),
        "why": yaml_data,
        "paper": st.one_of(st.sampled_from(["000", "001", "005", 0]), yaml_data),
        "extra": yaml_data,
    },
)
sweeps_like = st.dictionaries(
    st.sampled_from(["sized", "types", "lists", "nope"]),
    st.fixed_dictionaries(
        {},
        optional={
            "settings": st.one_of(st.dictionaries(st.sampled_from(["K", "eta", "nope"]), setting_spec), yaml_data),
            "figure": yaml_data,
            "other": yaml_data,
        },
    ),
    max_size=3,
)
yaml_document = st.one_of(
    sweeps_like.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    yaml_data.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    st.text(max_size=200),
    st.sampled_from(["a: [", "a: *x", "&a [*a]", "!!python/object:os.system {}", "{a: 1, a: 2}", "\t", "---\n---"]),
)


@FUZZ
@given(document=yaml_document)
@pytest.mark.slow
def test_any_sweeps_yml_is_one_line_or_a_checked_plan(project, document) -> None:
    path = project / "notebooks" / "sweeps.yml"
    saved = path.read_text()
    before = store_snapshot(project)
    try:
        path.write_text(document, encoding="utf-8")
        rc, err = run_quietly(project, "sweep", "sized", "--max-points", "1")
    finally:
        path.write_text(saved)
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert store_snapshot(project) == before


argv_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(argv_text, list_literal.filter(lambda s: "\x00" not in s)))
def test_a_real_process_answers_any_p_value_in_one_line(project, raw) -> None:
    before = store_snapshot(project)
    res = run_icl(project, "status", "lists", "-p", "warmups", raw, timeout=60)
    assert_clean_answer(res.returncode, res.stderr)
    assert store_snapshot(project) == before
