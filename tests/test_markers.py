"""Every test that starts a Jupyter kernel or a Dask cluster is marked ``slow``, found by reading the test sources.

``pytest -m "not slow"`` is the quick loop: it must not start a kernel (seconds each) or a cluster. A test
function starts one, for this static reading, when its body, a fixture it requests or a helper of its module
that it calls

* names ``LocalCluster``, ``papermill``, ``nbclient``, ``ExecutePreprocessor`` or ``jupyter_server``, or
  passes a ``local:N`` scheduler (``--scheduler local:2``); or
* runs ``icl-book`` (``cli.main`` or a helper of the test sources that reaches it or the ``icl-book`` command)
  with a subcommand that executes notebooks (``run``, ``sweep``, ``build``, ``record``) and compares the exit
  status with 0 (the notebooks ran) or 1 (a notebook failed). A usage error (2) or a signal (130, 143) ends
  the command before a kernel starts, and a run served from the store starts none: tests that expect those
  are not flagged.

Such a test is marked ``slow`` by a decorator, by its module's ``pytestmark``, or on every one of its
parameters. The scan itself is checked on sources written here, so that it can fail.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Names whose mention in a function means a kernel, a Jupyter server or a Dask cluster is started.
STARTERS = frozenset({"LocalCluster", "papermill", "nbclient", "ExecutePreprocessor", "jupyter_server"})
#: icl-book subcommands that execute notebooks (and ``record refresh``).
EXECUTING_WORDS = frozenset({"run", "sweep", "build"})
#: Words of a command line that are not notebook names.
SUBCOMMAND_WORDS = EXECUTING_WORDS | {"record", "refresh"}
#: Test helpers that put a notebook's run in the store or the record without a kernel.
STORE_WRITERS = frozenset({"store_run", "put_run", "add_entry", "write_entry"})
#: A Dask cluster of the runner's own: ``--scheduler local:N`` or ``local:NxC``.
LOCAL_SCHEDULER = re.compile(r"local:[1-9][0-9]*(x[1-9][0-9]*)?")
#: Exit statuses of a command whose notebooks ran (0) or whose notebook raised (1).
RAN = frozenset({0, 1})
#: Keyword arguments of a run that never reaches a kernel.
NO_KERNEL_FLAGS = frozenset({"--dry-run", "--help", "-h"})


def _is_cli_main(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == "main" and isinstance(f.value, ast.Name) and f.value.id == "cli"


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def _strings(call: ast.Call) -> list[str]:
    """The string constants among a call's positional arguments, inside list/tuple literals included."""
    out: list[str] = []
    stack: list[ast.AST] = list(call.args)
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.Starred):
            stack.append(node.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def runner_helpers(trees: list[ast.Module]) -> frozenset[str]:
    """Names of the test sources' functions that reach ``cli.main`` or the ``iclbook.cli`` command, to a fixpoint."""
    defs = [f for t in trees for f in _functions(t).values()]
    names: set[str] = set()
    while True:
        new = {
            f.name
            for f in defs
            if f.name not in names
            and any(
                (isinstance(n, ast.Call) and (_is_cli_main(n) or _call_name(n) in names))
                or (isinstance(n, ast.Constant) and n.value == "iclbook.cli")
                for n in ast.walk(f)
            )
        }
        if not new:
            return frozenset(names)
        names |= new


def _is_runner_call(node: ast.AST, helpers: frozenset[str]) -> bool:
    return isinstance(node, ast.Call) and (_is_cli_main(node) or _call_name(node) in helpers)


def _executing(call: ast.Call) -> bool:
    words = set(_strings(call))
    return bool(words & EXECUTING_WORDS or {"record", "refresh"} <= words) and not words & NO_KERNEL_FLAGS


def stored_names(func: ast.FunctionDef, helpers: frozenset[str]) -> set[str]:
    """Notebooks ``func`` puts in the store or the record without a kernel (``store_run(root, "second")``);
    ``"*"`` when it imports an archive (any notebook may be in it)."""
    out: set[str] = set()
    for n in ast.walk(func):
        if isinstance(n, ast.Call) and _call_name(n) in STORE_WRITERS and len(n.args) > 1:
            name = n.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                out.add(name.value)
        elif _is_runner_call(n, helpers) and "import" in _strings(n):
            out.add("*")
    return out


def _served(call: ast.Call, stored: set[str]) -> bool:
    """A run of notebooks that are all in the store already (and not forced): served without a kernel."""
    words = [w for w in _strings(call) if w not in SUBCOMMAND_WORDS and not w.startswith("-")]
    if "--force" in _strings(call) or not stored:
        return False
    return "*" in stored or (bool(words) and set(words) <= stored)


def starts_directly(func: ast.FunctionDef, helpers: frozenset[str], stored: set[str] = frozenset()) -> str | None:
    """Why ``func``'s own body starts a kernel or a cluster (module docstring), or None; ``stored``: the
    notebooks the test has put in the store (:func:`stored_names`)."""
    for n in ast.walk(func):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if name in STARTERS:
            return name
        if isinstance(n, ast.alias) and n.name.split(".")[0] in STARTERS:
            return n.name
        if _is_runner_call(n, helpers):
            words = _strings(n)
            if "--scheduler" in words and any(LOCAL_SCHEDULER.fullmatch(w) for w in words):
                return "icl-book --scheduler " + next(w for w in words if LOCAL_SCHEDULER.fullmatch(w))
    executing = [n for n in ast.walk(func) if _is_runner_call(n, helpers) and _executing(n) and not _served(n, stored)]
    # names bound to a runner call's result (`proc = run_icl(...)`, `rc, out, err = call(...)`), by line:
    # a comparison reads the binding of its name that comes last before it
    bindings = []
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and _is_runner_call(n.value, helpers):
            for t in n.targets:
                first = t.elts[0] if isinstance(t, ast.Tuple) and t.elts else t
                if isinstance(first, ast.Name):
                    bindings.append((n.lineno, first.id, any(n.value is e for e in executing)))
    bindings.sort()

    def bound(name: str, line: int) -> bool:
        before = [ran for at, bound_name, ran in bindings if bound_name == name and at <= line]
        return bool(before) and before[-1]

    def status(node: ast.AST, line: int) -> bool:
        if isinstance(node, ast.Subscript):  # call(...)[0]
            node = node.value
        if isinstance(node, ast.Attribute) and node.attr == "returncode":  # proc.returncode
            node = node.value
        return any(node is e for e in executing) or (isinstance(node, ast.Name) and bound(node.id, line))

    for n in ast.walk(func):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq):
            for a, b in ((n.left, n.comparators[0]), (n.comparators[0], n.left)):
                if status(a, n.lineno) and isinstance(b, ast.Constant) and type(b.value) is int and b.value in RAN:
                    return f"icl-book expecting exit {b.value}"
    return None


def _is_slow_mark(node: ast.AST) -> bool:
    """``pytest.mark.slow`` (also called, or in a list of marks)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_slow_mark(e) for e in node.elts)
    return isinstance(node, ast.Attribute) and node.attr == "slow"


def _module_is_slow(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
        and _is_slow_mark(n.value)
        for n in tree.body
    )


def _all_params_slow(func: ast.FunctionDef) -> bool:
    """A ``parametrize`` whose every case is a ``pytest.param(..., marks=pytest.mark.slow)``."""
    for d in func.decorator_list:
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize":
            cases = d.args[1] if len(d.args) > 1 else None
            if isinstance(cases, (ast.List, ast.Tuple)) and cases.elts:
                return all(
                    isinstance(c, ast.Call) and any(k.arg == "marks" and _is_slow_mark(k.value) for k in c.keywords)
                    for c in cases.elts
                )
    return False


def is_marked_slow(func: ast.FunctionDef, tree: ast.Module) -> bool:
    return _module_is_slow(tree) or any(_is_slow_mark(d) for d in func.decorator_list) or _all_params_slow(func)


@dataclass
class Finding:
    test: str
    reason: str
    via: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.test}: {self.reason}" + (f" (through {' -> '.join(self.via)})" if self.via else "")


def unmarked_starters(tree: ast.Module, shared: dict[str, ast.FunctionDef], helpers: frozenset[str]) -> list[Finding]:
    """The test functions of ``tree`` that start a kernel or a cluster, directly or through a fixture or
    helper of the module (or a fixture of ``shared``, the conftest), and are not marked ``slow``."""
    local = _functions(tree)
    known = {**shared, **local}

    def uses(f: ast.FunctionDef) -> set[str]:
        called = {n.func.id for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        return ({a.arg for a in f.args.args} | called) & known.keys() - {f.name}

    def closure(name: str) -> list[str]:
        """``name`` and the fixtures and helpers of the module it reaches, in the order first reached."""
        order, todo = [], [name]
        while todo:
            n = todo.pop(0)
            if n not in order:
                order.append(n)
                todo.extend(sorted(uses(known[n])))
        return order

    out = []
    for name, f in local.items():
        if not name.startswith("test_") or is_marked_slow(f, tree):
            continue
        reach = closure(name)
        stored = set().union(*(stored_names(known[n], helpers) for n in reach))
        for n in reach:
            why = starts_directly(known[n], helpers, stored)
            if why:
                out.append(Finding(name, why, [] if n == name else [n]))
                break
    return out


def _test_sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def test_every_test_that_starts_a_kernel_or_a_cluster_is_marked_slow() -> None:
    paths = _test_sources()
    trees = {p: _parse(p) for p in paths}
    helpers = runner_helpers(list(trees.values()))
    assert {"run_cli", "call", "run_icl", "popen_icl", "cli_main"} <= helpers  # the scan sees the runner helpers
    shared = _functions(trees[TESTS / "conftest.py"])
    findings = [
        f"{p.relative_to(TESTS.parent)}::{f}" for p, t in trees.items() for f in unmarked_starters(t, shared, helpers)
    ]
    assert not findings, "start a kernel or a cluster but are not marked @pytest.mark.slow:\n" + "\n".join(findings)


def _scan(source: str) -> list[str]:
    tree = ast.parse(source)
    helpers = runner_helpers([tree])
    return sorted(f.test for f in unmarked_starters(tree, {}, helpers))


SCAN_CASES = {
    "cluster": ("from distributed import LocalCluster\ndef test_a():\n    LocalCluster(n_workers=1)\n", ["test_a"]),
    "cluster fixture": (
        "import pytest\n@pytest.fixture\ndef cluster():\n    from distributed import LocalCluster\n    yield 1\n"
        "def test_a(cluster):\n    pass\ndef test_b():\n    pass\n",
        ["test_a"],
    ),
    "local scheduler": (
        "from iclbook import cli\ndef test_a(p):\n    cli.main(['run', 'x', '--scheduler', 'local:2'])\n"
        "def test_b(p):\n    assert cli.main(['run', 'x', '--scheduler', 'local:0x2']) == 2\n",
        ["test_a"],
    ),
    "served from the store": (
        "from iclbook import cli\ndef call(root, *a):\n    return cli.main([*a])\n"
        "def test_a(p):\n    store_run(p, 'x')\n    assert call(p, 'run', 'x') == 0\n"
        "def test_b(p):\n    store_run(p, 'x')\n    assert call(p, 'run', 'x', '--force') == 0\n"
        "def test_c(p):\n    store_run(p, 'x')\n    assert call(p, 'run', 'y')[0] == 0\n"
        "def test_d(p):\n    rc, out, err = call(p, 'record', 'refresh', '--only', 'y')\n    assert rc == 0\n"
        "def test_e(p):\n    assert call(p, 'list') == 0 and call(p, 'run', 'y') == 2\n",
        ["test_b", "test_c", "test_d"],
    ),
    "a name read after it is bound again": (
        "from iclbook import cli\ndef call(root, *a):\n    return cli.main([*a])\n"
        "def test_a(p):\n    rc = call(p, 'run', 'y', '-p', 'bad', '1')\n    assert rc == 2\n"
        "    rc = call(p, 'list')\n    assert rc == 0\n"
        "def test_b(p):\n    rc = call(p, 'list')\n    assert rc == 0\n    rc = call(p, 'run', 'y')\n    assert rc == 1\n",
        ["test_b"],
    ),
    "papermill": ("import papermill\ndef test_a():\n    papermill.execute_notebook('a', 'b')\n", ["test_a"]),
    "run expecting 0": (
        "from iclbook import cli\ndef run_cli(root, *a):\n    return cli.main(['--root', root, *a])\n"
        "def test_a(p):\n    assert run_cli(p, 'run', 'x') == 0\n"
        "def test_b(p):\n    assert run_cli(p, 'run', 'x', '-p', 'bad', '1') == 2\n"
        "def test_c(p):\n    assert run_cli(p, 'list') == 0\n",
        ["test_a"],
    ),
    "subprocess expecting 1 through a helper": (
        "def icl_cmd(root, *a):\n    return ['python', '-m', 'iclbook.cli', *a]\n"
        "def run_icl(root, *a):\n    return subprocess.run(icl_cmd(root, *a))\n"
        "def ran(p):\n    proc = run_icl(p, 'sweep', 's')\n    assert proc.returncode == 1\n"
        "def test_a(p):\n    ran(p)\n",
        ["test_a"],
    ),
    "marked": (
        "import pytest\nfrom distributed import LocalCluster\n@pytest.mark.slow\ndef test_a():\n    LocalCluster()\n"
        "@pytest.mark.parametrize('n', [pytest.param(1, marks=pytest.mark.slow)])\ndef test_b(n):\n    LocalCluster()\n",
        [],
    ),
    "module mark": ("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a():\n    LocalCluster()\n", []),
}


@pytest.mark.parametrize("case", sorted(SCAN_CASES))
def test_the_scan_finds_unmarked_starters_and_only_those(case: str) -> None:
    source, want = SCAN_CASES[case]
    assert _scan(source) == want
