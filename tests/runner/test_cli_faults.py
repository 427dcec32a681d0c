"""The command line's fault table: every bad request is one line on stderr naming what is wrong, exit code 2,
refused before any work starts (no kernel, no store write), and fast; a request larger than its bound says
how large it is and how to raise the bound; a dead kernel is named by how it ended."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fault_project import cli_main, make_fault_project, one_line, store_snapshot
from runner_project import HEADER, run_icl

from iclbook.notebooks import MAX_ELEMENTS, MAX_LITERAL_CHARS


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_fault_project(tmp_path / "p")


def _list(n: int, item: str = "1") -> str:
    return "[" + ", ".join([item] * n) + "]"


def refused(project: Path, capsys: pytest.CaptureFixture[str], *args: str, limit: float = 5.0) -> str:
    """Run ``args``; assert exit 2, one line, within ``limit`` seconds, the store untouched; the line."""
    before = store_snapshot(project)
    start = time.monotonic()
    try:
        rc = cli_main(project, *args)
    except SystemExit as exc:  # a usage error of argparse
        rc = exc.code
    seconds = time.monotonic() - start
    line = one_line(capsys.readouterr().err)
    assert rc == 2, line
    assert seconds < limit, f"took {seconds:.1f} s"
    assert store_snapshot(project) == before
    assert not (project / "book" / "generated").exists()
    return line


# --- -p values: refused before a kernel starts, naming the parameter ------------------------------------------

PARAM_FAULTS = [
    ("float-for-int", "sized", "K", "1e9", "cannot read '1e9' as int"),
    ("above-range", "sized", "K", "99999", "outside its range [1, 4096]"),
    ("below-range", "sized", "K", "0", "outside its range [1, 4096]"),
    ("hex-int", "sized", "K", "0x10", "cannot read '0x10' as int"),
    ("underscore-int", "sized", "K", "1_000", "cannot read '1_000' as int"),
    ("empty-int", "sized", "K", "", "cannot read '' as int"),
    ("arabic-digits", "sized", "K", "١٢", "cannot read"),
    ("int-5000-digits", "sized", "K", "9" * 5000, "cannot read"),
    ("nan-step", "sized", "eta", "nan", "outside its range (0, 1)"),
    ("inf-step", "sized", "eta", "inf", "outside its range (0, 1)"),
    ("open-bound", "sized", "eta", "1", "outside its range (0, 1)"),
    ("word-for-float", "sized", "eta", "abc", "cannot read 'abc' as float"),
    ("unknown-parameter", "sized", "nope", "1", "has no parameter 'nope'"),
    ("bool-word", "types", "b", "maybe", "cannot read 'maybe' as bool"),
    ("fraction-for-int", "types", "i", "1.5", "cannot read '1.5' as int"),
    ("list-over-declared-length", "lists", "warmups", _list(20_000), "20,000 element(s), more than the 4 allowed"),
    ("list-over-default-bound", "lists", "flags", _list(MAX_ELEMENTS + 1, "True"), "declare `length: [lo, hi]`"),
    ("list-over-char-bound", "lists", "long", "[" + " " * MAX_LITERAL_CHARS + "1]", "characters"),
    ("list-deeply-nested", "lists", "warmups", "[" * 1000 + "]" * 1000, "cannot read"),
    ("list-unclosed", "lists", "warmups", "[1, 2", "cannot read"),
    ("list-hex-element", "lists", "warmups", "[0x10]", "element 0 (0x10) is not a plain decimal integer"),
    ("list-mixed-types", "lists", "kinds", '["lsa", 1]', "element 1 (1) is a int"),
    ("list-infinite-element", "lists", "rates", "[1e999]", "outside its range (0, 1)"),
    ("list-call", "lists", "warmups", "__import__('os').getpid()", "cannot read"),
    ("list-multiplied", "lists", "warmups", "[1] * 10**9", "cannot read"),
    ("list-element-out-of-range", "lists", "long", _list(5000, "11"), "element 0 (11) is outside its range [0, 10]"),
    ("value-starting-with-dash", "sized", "eta", "-inf", "= -inf is outside its range (0, 1)"),
    ("value-looking-like-an-option", "sized", "K", "--help", "cannot read '--help' as int"),
]


@pytest.mark.fault
@pytest.mark.parametrize(
    ("notebook", "name", "raw", "says"), [row[1:] for row in PARAM_FAULTS], ids=[row[0] for row in PARAM_FAULTS]
)
def test_a_bad_parameter_value_is_one_line_naming_it(project, capsys, notebook, name, raw, says) -> None:
    line = refused(project, capsys, "run", notebook, "-p", name, raw, "--out", str(project / "out"))
    assert f"'{name}'" in line and says in line, line
    assert len(line) < 600, "a long value is cut in the message"
    assert not (project / "out").exists()


@pytest.mark.fault
def test_a_long_list_literal_is_read_in_linear_time(project, capsys) -> None:
    """A 20,000-element list within its declared length: `status` answers in about a second, not minutes."""
    start = time.monotonic()
    assert cli_main(project, "status", "lists", "-p", "long", _list(20_000)) == 0
    assert time.monotonic() - start < 5.0
    assert "would execute" in capsys.readouterr().out


# --- presets -----------------------------------------------------------------------------------------------------

PRESET_FAULTS = [
    ("plan-unknown", ("plan", "--preset", "nope"), "--preset 'nope': no notebook defines it"),
    ("plan-wrong-case", ("plan", "--preset", "PAPER"), "did you mean 'paper'?"),
    ("plan-empty", ("plan", "--preset", ""), "--preset '': no notebook defines it"),
    ("plan-write-hint-unknown", ("plan", "--preset", "nope", "--write-hint"), "--preset 'nope'"),
    ("run-unknown", ("run", "sized", "--preset", "nope"), "has no preset 'nope'"),
    ("status-wrong-case", ("status", "types", "--preset", "PAPER"), "has no preset 'PAPER'"),
]


@pytest.mark.fault
@pytest.mark.parametrize(("args", "says"), [r[1:] for r in PRESET_FAULTS], ids=[r[0] for r in PRESET_FAULTS])
def test_an_unknown_preset_is_refused(project, capsys, args, says) -> None:
    line = refused(project, capsys, *args)
    assert says in line, line
    assert not (project / "notebooks" / "seconds.json").exists()


# --- scheduler addresses: one line, fast, naming the address and the cause -----------------------------------------

SCHEDULER_FAULTS = [
    ("unknown-scheme", "run", "nonsense://x", "unknown address scheme 'nonsense'"),
    ("no-port", "run", "tcp://x", "not an address"),
    ("port-too-large", "run", "tcp://h:99999", "port '99999' is not a number from 1 to 65535"),
    ("port-not-a-number", "sweep", "tcp://h:abc", "port 'abc'"),
    ("empty", "run", "", "not an address"),
    ("local-zero", "run", "local:0", "expected local:N or local:NxC with N >= 1"),
    ("local-negative", "status", "local:-1", "expected local:N or local:NxC with N >= 1"),
    ("local-word", "sweep", "local:x", "expected local:N"),
    ("local-too-many", "run", "local:100000", "more than the bound"),
    ("local-zero-threads", "run", "local:2x0", "workers of C >= 1 threads"),
    ("local-too-many-threads", "run", "local:2x100000", "worker threads on"),
    ("refused-port", "run", "tcp://127.0.0.1:1", "cannot reach the Dask scheduler: Connection refused"),
    ("refused-bare", "run", "127.0.0.1:1", "Connection refused"),
    ("two-colons", "run", "foo:bar:baz", "port 'bar:baz' is not a number"),
]


@pytest.mark.fault
@pytest.mark.parametrize(
    ("command", "address", "says"), [r[1:] for r in SCHEDULER_FAULTS], ids=[r[0] for r in SCHEDULER_FAULTS]
)
def test_a_bad_scheduler_address_is_one_fast_line(project, capsys, command, address, says) -> None:
    pytest.importorskip("distributed")
    name = "sized"
    line = refused(project, capsys, command, name, "--scheduler", address, limit=10.0)
    assert says in line and f"--scheduler {address or repr(address)}" in line, line


@pytest.mark.fault
def test_an_unreachable_scheduler_in_a_subprocess_is_one_line_within_seconds(project) -> None:
    """The user's view: a real process, no double traceback at exit, well under Dask's 16 s close timeout."""
    pytest.importorskip("distributed")
    start = time.monotonic()
    res = run_icl(project, "run", "sized", "--scheduler", "tcp://127.0.0.1:1", timeout=60)
    assert time.monotonic() - start < 10
    assert res.returncode == 2 and "Connection refused" in one_line(res.stderr)


# --- sweep: bounded grids and bad grids --------------------------------------------------------------------------

SWEEP_FAULTS = [
    (
        "full-grid-over-bound",
        ("sweep", "sized", "--full", "-p", "K", str(list(range(1, 4001))), "-p", "eta", "[0.1, 0.2, 0.3]"),
        "the full product grid is 12,001 points (4000 x 3); more than the bound of 500: pass --max-points 12001",
    ),
    ("one-at-a-time-over-bound", ("sweep", "sized", "--max-points", "5"), "7 points; more than the bound of 5"),
    ("max-points-zero", ("sweep", "sized", "--max-points", "0"), "--max-points must be at least 1"),
    ("grid-not-a-list", ("sweep", "sized", "-p", "K", "8"), "the grid must be a list"),
    ("grid-unreadable", ("sweep", "sized", "-p", "K", "[1, 2"), "cannot read '[1, 2' as a list"),
    ("grid-outside-domain", ("sweep", "sized", "-p", "K", "[1, 99999]"), "outside its range [1, 4096]"),
    ("grid-unknown-setting", ("sweep", "sized", "-p", "nope", "[1, 2]"), "'nope' is not swept in sized"),
    ("grid-over-char-bound", ("sweep", "sized", "-p", "K", "[" + " " * MAX_LITERAL_CHARS + "1]"), "characters"),
    ("names-and-all", ("sweep", "sized", "--all"), "give one or more notebooks, or --all"),
    ("not-sweepable", ("sweep", "types"), "'types' declares no unstated setting"),
    ("not-a-notebook", ("sweep", "notebooks/nope.py"), "'nope' is not a notebook"),
    ("jobs-zero", ("sweep", "sized", "-j", "0"), "-j/--jobs must be at least 1"),
]


@pytest.mark.fault
@pytest.mark.parametrize(("args", "says"), [r[1:] for r in SWEEP_FAULTS], ids=[r[0] for r in SWEEP_FAULTS])
def test_a_bad_or_too_large_sweep_is_refused_before_it_starts(project, capsys, args, says) -> None:
    line = refused(project, capsys, *args)
    assert says in line, line


@pytest.mark.fault
def test_a_million_point_grid_is_refused_at_once_with_its_estimate(project, capsys) -> None:
    """Three 100-value grids: counted (10^6 points), never made; the bound and how to raise it are named."""
    big = str([round(0.01 * i, 2) for i in range(1, 100)] + [0.995])
    body = (
        (project / "notebooks" / "sized.py").read_text().replace("eta = 0.5", "eta = 0.5\ngamma = 0.5  # range: (0, 1)")
    )
    (project / "notebooks" / "sized.py").write_text(body)
    sweeps = (project / "notebooks" / "sweeps.yml").read_text()
    sweeps += '    gamma:\n      values: [0.25, 0.5, 0.75]\n      why: "a third setting"\n      paper: "000"\n'
    (project / "notebooks" / "sweeps.yml").write_text(sweeps)
    args = ("sweep", "sized", "--full", "-p", "K", str(list(range(1, 101))), "-p", "eta", big, "-p", "gamma", big)
    line = refused(project, capsys, *args, limit=3.0)
    assert "1,000,001 points (100 x 100 x 100)" in line and "--max-points 1000001" in line, line


# --- names, lists, other options -----------------------------------------------------------------------------------

OTHER_FAULTS = [
    ("list-unknown-name", ("list", "nope"), "unknown notebook(s) ['nope']"),
    ("list-unknown-path", ("list", "notebooks/nope.py"), "unknown notebook(s) ['nope']"),
    ("status-unknown-name", ("status", "nope.py"), "unknown notebook(s) ['nope']"),
    ("run-path-elsewhere", ("run", "other/sized.py"), "unknown notebook(s) ['other/sized.py']"),
    ("plan-unknown-name", ("plan", "--preset", "quick", "nope"), "plan: no notebook named nope"),
    ("plan-zero-workers", ("plan", "--workers", "0"), "--workers: expected a number of workers >= 1"),
    ("run-zero-jobs", ("run", "sized", "-j", "0"), "-j/--jobs must be at least 1, got 0"),
    ("build-with-out", ("build", "--out", "x"), "--out is for `run`"),
    ("p-without-value", ("status", "sized", "-p", "K"), "status: argument -p/--param: expected 2 arguments"),
    ("p-on-list", ("list", "-p", "K", "8"), "-p/--param is not an option of `list`"),
    ("unknown-command", ("bogus",), "invalid choice: 'bogus'"),
    ("unknown-option", ("status", "--bogus"), "unrecognized arguments: --bogus"),
]


@pytest.mark.fault
@pytest.mark.parametrize(("args", "says"), [r[1:] for r in OTHER_FAULTS], ids=[r[0] for r in OTHER_FAULTS])
def test_a_bad_name_or_option_is_one_line(project, capsys, args, says) -> None:
    line = refused(project, capsys, *args)
    assert says in line, line


# --- friction: list, tab-completed names, the sweep's closing line ---------------------------------------------------


def test_list_is_one_line_per_notebook(project, capsys) -> None:
    assert cli_main(project, "list") == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 3 + 1  # header, one line per notebook, the closing hint
    assert out[1].split()[0] == "sized" and "K, eta" in out[1]
    assert "icl-book list NAME" in out[-1]


@pytest.mark.parametrize("name", ["lists", "lists.py", "notebooks/lists.py"])
def test_list_name_shows_descriptions_domains_and_preset_values(project, capsys, name) -> None:
    assert cli_main(project, "list", name) == 0
    out = capsys.readouterr().out
    warmups = next(line for line in out.splitlines() if line.strip().startswith("warmups"))
    assert "[200]" in warmups and "[50, 200, 1000]" in warmups  # quick and paper values
    assert "range [0, 100000]; length [1, 4]" in warmups and warmups.endswith("warm-up lengths")
    assert "range:" not in out  # the declarations are shown as domains, not repeated in the description


def test_a_tab_completed_path_runs_the_notebook_it_names(project, capsys) -> None:
    assert cli_main(project, "status", "notebooks/sized.py", "sized.py") == 0
    out = capsys.readouterr().out
    assert out.count("sized") == 1 and "1 notebook(s) would execute" in out


# --- dead kernels are named by how they ended ---------------------------------------------------------------------

DYING = """# %% [markdown]
# # Dying

# %% tags=["parameters"]
how = "kill"

# %%
import os, signal
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
else:
    os._exit(3)
"""


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "says"),
    [("kill", "killed by SIGKILL"), ("exit", "exited with code 3")],
    ids=["kernel-killed-by-signal", "kernel-exits-with-code"],
)
def test_a_dying_kernel_is_named_by_how_it_ended_not_blamed_on_the_network(project, how, says) -> None:
    (project / "notebooks" / "dying.py").write_text(HEADER + DYING)
    res = run_icl(project, "run", "dying", "-p", "how", how)
    assert res.returncode == 1, res.stderr
    line = next(ln for ln in res.stderr.splitlines() if ln.strip().startswith("dying:"))
    assert "the Jupyter kernel died while a cell ran" in line and says in line, line
    assert "127.0.0.1" not in res.stderr and "loopback" not in res.stderr
    assert "Traceback" not in res.stderr
