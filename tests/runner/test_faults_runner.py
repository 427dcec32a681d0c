"""Fault table, the runner: bad command lines and faults injected into ``icl-book run`` on a throw-away project.

Each row (one parametrised case of :func:`test_runner_fault_row`) replays one bad input or fault on the small
notebooks of ``runner_project`` (integer, float, string, sized and slow parameters: a run costs a kernel start,
not a computation) and returns ``""`` when the behaviour is right, else what went wrong. Rows that start a
kernel are marked ``slow``. The rows share one project per test worker, in the order written here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from runner_project import HEADER, alive, icl_cmd, icl_env, make_project, popen_icl, run_icl

ROWS: list[tuple[str, bool, Callable[[Path], str]]] = []


def row(name: str, slow: bool) -> Callable[[Callable[[Path], str]], Callable[[Path], str]]:
    """Register a row: its name says what it checks; ``slow`` if it starts a kernel."""

    def deco(fn: Callable[[Path], str]) -> Callable[[Path], str]:
        ROWS.append((name, slow, fn))
        return fn

    return deco


def icl(root: Path, *args: str) -> subprocess.CompletedProcess:
    return run_icl(root, *args, timeout=600)


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """'' if ``proc`` failed with exit code 2 and a single stderr line (no traceback) containing ``words``."""
    err = proc.stderr.strip()
    if proc.returncode != 2:
        return f"exit code {proc.returncode}, expected 2 ({err[-200:]!r})"
    if "Traceback" in err or len(err.splitlines()) != 1:
        return f"not a one-line error: {err[-300:]!r}"
    missing = [w for w in words if w not in err]
    return f"message {err!r} lacks {missing}" if missing else ""


def metrics(root: Path, name: str, out: Path | None = None) -> dict:
    return json.loads(((out or root / "book" / "generated") / name / "metrics.json").read_text())


def folder_consistent(folder: Path) -> str:
    from iclbook.store import STAMP, verify_folder

    key = json.loads((folder / STAMP).read_text())["key"]
    return verify_folder(folder, key)


# --- CLI rows ----------------------------------------------------------------------------------------------


@row("an-unknown-notebook-is-one-line", slow=False)  # unknown notebook
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "no_such_notebook"), "unknown notebook")


@row("an-unknown-parameter-lists-the-parameters", slow=False)  # unknown parameter lists the parameters
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "nope", "3"), "no parameter 'nope'", "K (default 8)")


@row("a-non-integer-for-an-int-parameter-is-one-line", slow=False)  # -p K abc
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "abc"), "'K'")


@row("a-fraction-for-an-int-parameter-is-one-line", slow=False)  # -p K 1.5 (int parameter)
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "1.5"), "'K'")


@row(
    "a-value-below-the-declared-range-is-refused-before-a-kernel", slow=False
)  # -p K -3 (declared range [1, 4096]) refused before a kernel starts
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "-3"), "'K'", "range")


@row("zero-outside-the-declared-range-is-refused", slow=False)  # -p K 0
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "0"), "'K'", "range")


@row(
    "a-size-far-above-the-declared-range-is-refused", slow=False
)  # -p K 1000000000: size guard; 1e9 is not an integer spelling
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "1000000000"), "'K'", "[1, 4096]")


@row(
    "exponent-nan-inf-floats-and-big-ints-reach-the-kernel-exactly", slow=True
)  # 1e-5, 0.00001, nan, inf, 1e300 as floats; 12345678901234567891 exact
def _(root: Path) -> str:
    out = root / "typed"
    expect = {
        "f": ("1e-05", "float"),
        "g": ("nan", "float"),
        "h": ("inf", "float"),
        "big": ("12345678901234567891", "int"),
    }
    for f_value in ("1e-5", "0.00001"):
        proc = icl(
            root,
            "run",
            "types",
            "-p",
            "f",
            f_value,
            "-p",
            "g",
            "nan",
            "-p",
            "h",
            "inf",
            "-p",
            "big",
            "12345678901234567891",
            "--out",
            str(out),
        )
        if proc.returncode != 0:
            return f"exit {proc.returncode}: {proc.stderr[-300:]!r}"
        m = metrics(root, "types", out)
        for k, (r, t) in expect.items():
            if (m[f"repr_{k}"], m[f"type_{k}"]) != (r, t):
                return f"{k} reached the kernel as {m[f'type_{k}']} {m[f'repr_{k}']}"
    proc = icl(root, "run", "types", "-p", "h", "1e300", "--out", str(out))
    m = metrics(root, "types", out)
    return (
        "" if proc.returncode == 0 and m["repr_h"] == "1e+300" and m["type_h"] == "float" else f"1e300: {m['repr_h']}"
    )


@row("code-given-as-a-value-is-refused", slow=False)  # code as an int value
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "__import__('os').system('id')"), "'K'")


@row("an-unknown-preset-is-one-line", slow=False)  # --preset huge
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "types", "--preset", "huge"), "no preset 'huge'")


@row("zero-jobs-is-one-line", slow=False)  # -j 0
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "-j", "0"), "-j")


@row("negative-jobs-is-one-line", slow=False)  # -j -1 --force
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "-j", "-1", "--force"), "-j")


@row("non-numeric-jobs-is-a-usage-error", slow=False)  # -j abc
def _(root: Path) -> str:
    proc = icl(root, "run", "-j", "abc")
    return "" if proc.returncode == 2 and "invalid int value" in proc.stderr else f"exit {proc.returncode}"


@row("an-out-folder-under-proc-is-one-line", slow=False)  # --out /proc/x
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "--out", "/proc/x"), "--out")


@row("an-out-that-is-a-file-is-one-line", slow=False)  # --out an existing file
def _(root: Path) -> str:
    path = root / "a_file"
    path.write_text("x")
    return one_line_error(icl(root, "run", "second", "--out", str(path)), "--out", "not a folder")


@row("an-empty-out-is-one-line", slow=False)  # --out '' (empty)
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "--out", ""), "--out")


@row("an-out-with-a-space-and-a-quote-works", slow=True)  # --out with a space and a quote
def _(root: Path) -> str:
    out = root / "with space" / "and 'quote'"
    proc = icl(root, "run", "second", "--out", str(out))
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {proc.stderr[-200:]!r}"
    return folder_consistent(out / "second")


@row("the-root-is-found-from-a-subfolder", slow=True)  # run from notebooks/ (root found upwards)
def _(root: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "iclbook.cli", "run", "second"],
        capture_output=True,
        text=True,
        env=icl_env(),
        cwd=root / "notebooks",
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    return "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr[-200:]!r}"


@row("outside-any-project-is-one-line", slow=False)  # run outside any project
def _(root: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "iclbook.cli", "run"],
            capture_output=True,
            text=True,
            env=icl_env(),
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    return one_line_error(proc, "no project root")


@row("a-missing-root-is-one-line", slow=False)  # --root /nonexistent
def _(root: Path) -> str:
    return one_line_error(icl(root.parent / "nonexistent", "run"), "--root")


@row("a-repeated-notebook-name-runs-once", slow=True)  # duplicate names run once
def _(root: Path) -> str:
    proc = icl(root, "run", "second", "second", "-j", "2", "--force")
    ran = proc.stderr.count("] ran")
    return "" if proc.returncode == 0 and ran == 1 else f"exit {proc.returncode}, executed {ran} times"


@row("an-unknown-command-is-a-usage-error", slow=False)  # unknown command
def _(root: Path) -> str:
    proc = icl(root, "frobnicate")
    return "" if proc.returncode == 2 and "invalid choice" in proc.stderr else f"exit {proc.returncode}"


@row("a-parameter-without-a-value-is-a-usage-error", slow=False)  # -p K without a value
def _(root: Path) -> str:
    proc = icl(root, "run", "-p", "K")
    return "" if proc.returncode == 2 and "expected 2 arguments" in proc.stderr else f"exit {proc.returncode}"


@row("the-last-of-two-values-for-a-parameter-wins", slow=True)  # -p K 12 -p K 16: the last wins
def _(root: Path) -> str:
    out = root / "c37"
    proc = icl(root, "run", "sized", "-p", "K", "12", "-p", "K", "16", "--out", str(out))
    return "" if proc.returncode == 0 and metrics(root, "sized", out)["K"] == 16 else f"exit {proc.returncode}"


@row("a-parameter-one-named-notebook-lacks-names-it", slow=False)  # a parameter one of the named notebooks lacks
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "sized", "-p", "k", "3"), "'sized'", "no parameter 'k'")


@row(
    "a-stray-notebook-without-parameters-blocks-only-itself", slow=True
)  # stray notebooks/scratch.py without a parameters cell
def _(root: Path) -> str:
    stray = root / "notebooks" / "scratch.py"
    stray.write_text("print('scratch')\n")
    try:
        listed = icl(root, "list")
        if listed.returncode != 2 or "scratch.py" not in listed.stderr or "second" not in listed.stdout:
            return f"list: exit {listed.returncode}, stdout {listed.stdout[:100]!r}, stderr {listed.stderr[-200:]!r}"
        ran = icl(root, "run", "second")
        if ran.returncode != 0:
            return f"run second with a stray file: exit {ran.returncode}: {ran.stderr[-200:]!r}"
        return one_line_error(icl(root, "run", "scratch"), "scratch.py", "parameters")
    finally:
        stray.unlink()


@row("a-computed-parameter-value-is-one-line", slow=False)  # K = 2**3 in the parameters cell
def _(root: Path) -> str:
    path = root / "notebooks" / "sized.py"
    text = path.read_text()
    path.write_text(text.replace("K = 8 ", "K = 2**3 "))
    try:
        proc = icl(root, "list")
        return (
            ""
            if proc.returncode == 2 and "not a literal" in proc.stderr and "Traceback" not in proc.stderr
            else proc.stderr
        )
    finally:
        path.write_text(text)


@row("build-with-out-is-one-line", slow=False)  # build --out X
def _(root: Path) -> str:
    return one_line_error(icl(root, "build", "--out", "x"), "--out is for")


# --- faults ----------------------------------------------------------------------------------------------------


def _kill_while_running(root: Path, sig: int) -> str:
    import psutil

    args = ["run", "slow", "-p", "seconds", "5"]
    proc = popen_icl(root, *args)
    deadline = time.monotonic() + 300
    while not list((root / ".icl-store" / "tmp").rglob("started")) and time.monotonic() < deadline:
        time.sleep(0.2)
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)

    deadline = time.monotonic() + 5
    while alive(kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(kids)
    for k in left:
        k.kill()
    expected = 128 + sig
    if left:
        return f"{len(left)} child process(es) remain"
    if proc.returncode != expected or "Traceback" in err:
        return f"exit {proc.returncode} (expected {expected}); stderr {err[-200:]!r}"
    if list((root / ".icl-store" / "tmp").iterdir()):
        return "a temporary folder was left behind"
    again = run_icl(root, *args, timeout=600, release=True)  # same key, no sleep
    return "" if "1 executed, 0 cached" in again.stdout else f"the next run did not execute: {again.stdout!r}"


@row("sigterm-during-a-run-ends-papermill-and-the-kernel", slow=True)  # SIGTERM while a notebook runs
def _(root: Path) -> str:
    shutil.rmtree(root / "book" / "generated" / "slow", ignore_errors=True)
    for entry in (root / ".icl-store" / "entries").glob("*"):
        if json.loads((entry / ".icl-run.json").read_text())["notebook"] == "slow":
            shutil.rmtree(entry)
    return _kill_while_running(root, signal.SIGTERM)


@row("sigint-during-a-run-ends-papermill-and-the-kernel", slow=True)  # SIGINT while a notebook runs
def _(root: Path) -> str:
    for entry in (root / ".icl-store" / "entries").glob("*"):
        if json.loads((entry / ".icl-run.json").read_text())["notebook"] == "slow":
            shutil.rmtree(entry)
    return _kill_while_running(root, signal.SIGINT)


def _damage_then_run(root: Path, damage: Callable[[Path], None], name: str) -> str:
    icl(root, "run", "second")
    folder = root / "book" / "generated" / "second"
    good = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    damage(folder)
    proc = icl(root, "run", "second")
    now = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    if now != good:
        return f"output not repaired: {sorted(set(good) ^ set(now)) or 'content differs'}"
    if name not in proc.stderr:
        return f"no message naming {name}: {proc.stderr!r}"
    return ""


@row("a-truncated-output-metrics-file-is-restored", slow=True)  # truncated metrics.json, then run
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").write_text('{"k_sq'), "metrics.json")


@row("an-output-metrics-file-with-other-content-is-restored", slow=True)  # metrics.json with wrong content, then run
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").write_text('{"other": 1}'), "metrics.json")


@row("a-removed-output-figure-is-restored", slow=True)  # a figure removed, then run
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "figure.txt").unlink(), "figure.txt")


@row("a-removed-output-metrics-file-is-restored", slow=True)  # metrics.json removed, then run
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").unlink(), "metrics.json")


@row(
    "the-report-names-a-truncated-metrics-file", slow=False
)  # build-side reading of a truncated metrics.json names the file
def _(root: Path) -> str:
    from iclbook.ledger import ReportError, load_metrics

    folder = root / "pages" / "second"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text('{"k_sq')
    try:
        load_metrics(root / "pages", "second")
    except ReportError as exc:
        return "" if "metrics.json" in str(exc) else str(exc)
    return "no error"


def _concurrent(root: Path, a: list[str], b: list[str]) -> tuple[subprocess.CompletedProcess, ...]:
    pa = popen_icl(root, *a)
    time.sleep(0.2)
    pb = popen_icl(root, *b)
    return tuple(subprocess.CompletedProcess(p.args, p.wait(600), *p.communicate()) for p in (pa, pb))


@row(
    "two-identical-runs-at-once-execute-once", slow=True
)  # two identical runs at once: one executes, the other waits and hits the store
def _(root: Path) -> str:
    out = root / "conc13"
    a, b = _concurrent(
        root, ["run", "sized", "-p", "K", "33", "--out", str(out)], ["run", "sized", "-p", "K", "33", "--out", str(out)]
    )
    executed = sum("1 executed" in p.stdout for p in (a, b))
    if a.returncode or b.returncode or executed != 1:
        return f"exit {a.returncode}/{b.returncode}, executed {executed} times"
    return folder_consistent(out / "sized")


@row("two-runs-into-one-folder-take-turns", slow=True)  # two runs with different parameters into one folder, 3 trials
def _(root: Path) -> str:
    for trial in range(3):
        out = root / f"conc14-{trial}"
        a, b = _concurrent(
            root, ["run", "sized", "--out", str(out)], ["run", "sized", "-p", "K", "12", "--out", str(out)]
        )
        if a.returncode or b.returncode:
            return f"trial {trial}: exit {a.returncode}/{b.returncode}"
        problem = folder_consistent(out / "sized")
        stamp = json.loads((out / "sized" / ".icl-run.json").read_text())
        if problem or metrics(root, "sized", out)["K"] != stamp["params"]["K"]:
            return f"trial {trial}: folder inconsistent ({problem or 'metrics of another run'})"
    return ""


@row(
    "a-stale-metrics-file-never-counts-for-a-run-that-wrote-none", slow=True
)  # a notebook that writes no metrics.json into a folder holding an old one
def _(root: Path) -> str:
    folder = root / "book" / "generated" / "nometrics"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text('{"k": 1}')
    proc = icl(root, "run", "nometrics")
    if proc.returncode != 1 or "wrote no metrics.json" not in proc.stderr:
        return f"exit {proc.returncode}: {proc.stderr[-200:]!r}"
    return "" if not (folder / ".icl-run.json").exists() else "the folder was stamped"


# --- failures, integers, loopback, paths --------------------------------------------------------------------

BROKEN = '# %% tags=["parameters"]\nx = 1\n\n# %%\na = 1\nb = 2\nraise ValueError("line three")\n'


@row(
    "a-failed-run-keeps-its-executed-notebook-and-names-the-line", slow=True
)  # a failed run keeps its executed notebook and names the failing line
def _(root: Path) -> str:
    path = root / "notebooks" / "broken.py"
    path.write_text(HEADER + BROKEN)
    try:
        proc = icl(root, "run", "broken")
    finally:
        path.unlink()
    kept = sorted((root / ".icl-store" / "failed").glob("broken-*.ipynb"))
    if proc.returncode != 1 or not kept or str(kept[-1]) not in proc.stderr:
        return f"exit {proc.returncode}, kept {[p.name for p in kept]}: {proc.stderr[-300:]!r}"
    if 'raise ValueError("line three")' not in proc.stderr or "Traceback" not in kept[-1].read_text():
        return f"the failing line or the traceback is missing: {proc.stderr[-300:]!r}"
    return ""


@row(
    "lenient-integer-spellings-are-refused", slow=False
)  # -p K 16.0 / 1e1 / 0x10 / full-width 16, and [0x10] in a list, are refused
def _(root: Path) -> str:
    from iclbook.notebooks import NotebookError, coerce

    for raw in ("16.0", "1e1", "0x10", "\uff11\uff16"):
        problem = one_line_error(icl(root, "run", "sized", "-p", "K", raw), "'K'", "plain decimal digits")
        if problem:
            return f"{raw}: {problem}"
    try:
        coerce("[0x10]", [1], "L")
    except NotebookError as exc:
        return "" if "'L'" in str(exc) and "plain decimal" in str(exc) else str(exc)
    return "[0x10] was accepted"


def _no_loopback(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``icl-book args`` without loopback: in a network namespace (``unshare -n``) if this machine allows one,
    else in this process with a socket that cannot connect."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-n", *icl_cmd(root, *args)]
        return subprocess.run(cmd, capture_output=True, text=True, env=icl_env(), timeout=120, cwd=root)
    import contextlib
    import io
    import socket
    from unittest import mock

    from iclbook import cli

    def unreachable(*a: object, **kw: object) -> None:
        raise OSError(101, "Network is unreachable")

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(socket, "create_connection", unreachable):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(["--root", str(root), *args])
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


@row(
    "no-loopback-is-one-line-before-a-kernel", slow=False
)  # no loopback: one line within seconds, before a kernel starts
def _(root: Path) -> str:
    t0 = time.monotonic()
    proc = _no_loopback(root, "run", "second", "--force")
    problem = one_line_error(proc, "loopback TCP", "127.0.0.1 is not reachable")
    return problem or ("" if time.monotonic() - t0 < 30 else f"took {time.monotonic() - t0:.0f}s")


@row("an-out-under-a-file-names-the-file", slow=False)  # --out under a file: one line naming the path
def _(root: Path) -> str:
    blocker = root / "c45_file"
    blocker.write_text("x")
    return one_line_error(icl(root, "run", "second", "--out", str(blocker / "sub")), "--out", str(blocker))


@row("an-out-through-a-link-loop-names-it", slow=False)  # --out through a symbolic link loop: one line naming the path
def _(root: Path) -> str:
    a, b = root / "loop_a", root / "loop_b"
    a.symlink_to(b)
    b.symlink_to(a)
    try:
        return one_line_error(icl(root, "run", "second", "--out", str(a / "x")), "--out", str(root / "loop_"))
    finally:
        a.unlink()
        b.unlink()


@row(
    "a-file-where-the-store-should-be-names-the-store", slow=False
)  # a file where the store should be: one line naming the store
def _(root: Path) -> str:
    other = make_project(root.parent / "c47", ["second"])
    (other / ".icl-store").write_text("not a folder")
    return one_line_error(icl(other, "run", "second"), "store", str(other / ".icl-store"), "not a folder")


@row(
    "no-space-or-permission-names-the-path", slow=False
)  # no space or no permission in --out, clean that cannot remove: one line naming the path
def _(root: Path) -> str:
    import contextlib
    import errno
    import io
    from unittest import mock

    from iclbook import cli

    def in_process(patch: object, *args: str) -> subprocess.CompletedProcess:
        err = io.StringIO()
        with patch, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli.main(["--root", str(root), *args])
        return subprocess.CompletedProcess(args, rc, "", err.getvalue())

    out = root / "c48"
    for code, words in ((errno.ENOSPC, "no space left"), (errno.EACCES, "permission denied")):

        def refuse(*a: object, dir: object = None, _code: int = code, **kw: object) -> None:  # noqa: A002
            raise OSError(_code, os.strerror(_code), str(dir))

        proc = in_process(mock.patch.object(cli.tempfile, "TemporaryFile", refuse), "run", "second", "--out", str(out))
        problem = one_line_error(proc, f"--out {out}: {words}")
        if problem:
            return problem
    (root / "_build").mkdir(exist_ok=True)

    def cannot(path: object, *a: object, **kw: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    proc = in_process(mock.patch.object(cli.shutil, "rmtree", cannot), "clean")
    return one_line_error(proc, f"icl-book: {root}/", ": permission denied")  # the first folder it cannot remove


@row(
    "list-shows-run-times-from-the-store-or-the-hint", slow=True
)  # list and list NAME show each preset's run time, from the store or the hint
def _(root: Path) -> str:
    icl(root, "run", "second")
    (root / "notebooks" / "seconds.json").write_text(json.dumps({"paper": {"second": 12.0}}))
    try:
        table, one = icl(root, "list").stdout, icl(root, "list", "second").stdout
    finally:
        (root / "notebooks" / "seconds.json").unlink()
    row = next((ln for ln in table.splitlines() if ln.startswith("second ")), "")
    times = next((ln for ln in one.splitlines() if ln.strip().startswith("run time")), "")
    ok = all("(store)" in t and "~12 s (hint)" in t for t in (row, times))
    return "" if ok else f"list row {row!r}, list second's run time row {times!r}"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("runner-faults") / "project")


@pytest.mark.fault
@pytest.mark.parametrize(
    "check", [pytest.param(fn, id=name, marks=[pytest.mark.slow] if slow else []) for name, slow, fn in ROWS]
)
def test_runner_fault_row(project: Path, check: Callable[[Path], str]) -> None:
    assert check(project) == ""
