"""Replay the reliability review's bad-input and fault table against ``icl-book``; report the defects left.

Usage::

    .venv/bin/python tests/runner/replay_reliability.py [--keep] [-k ID]

The review's rows (CLI rows c01-c41, fault rows F1-F20, defects D1-D12, as the review of 851d829 saw them;
and rows c42-c49, issue 24's measurements, defects I2-I12) are data in this repository, ``tests/runner/fixtures/reliability_cases.yml``; this script reads nothing
outside the repository. Each row is replayed on a throw-away project (``tests/runner/runner_project.py``:
tiny notebooks with integer, float, string, sized and slow parameters, so that a run costs a kernel start,
not a computation). Rows the fixture marks ``not_replayed`` say why (the content of a science notebook,
c40 and c41, is covered by the unit tests of ``iclcore``, as are the library rows and D7; F16-F20,
determinism, HTML and network namespaces, are not runner inputs). The script prints one line per row
(``ok`` or ``DEFECT``, with the review's verdict at 851d829) and exits 1 if any defect remains, or if the
fixture and the replayed rows disagree (a row neither replayed nor marked ``not_replayed``, or a replay of
a row the fixture lacks).
"""

from __future__ import annotations

import argparse
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

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner_project import HEADER, icl_cmd, icl_env, make_project  # noqa: E402

CASES = Path(__file__).resolve().parent / "fixtures" / "reliability_cases.yml"
ROWS: list[tuple[str, str, Callable[[Path], str]]] = []


def load_cases(path: Path = CASES) -> dict[str, dict]:
    """The review's rows by id (see the fixture's header)."""
    return {str(r["id"]): r for r in yaml.safe_load(path.read_text())["rows"]}


def _case_id(cases: dict[str, dict], rid: str) -> str:
    """The fixture's id for a replay id: itself, or the row it extends (F6b, a build-side check of F6)."""
    return rid if rid in cases or not rid.endswith("b") else rid[:-1]


def coverage_problems(cases: dict[str, dict]) -> list[str]:
    """Rows of the fixture neither replayed nor marked ``not_replayed``, and replayed ids the fixture lacks."""
    replayed = {_case_id(cases, i) for rid, _, _ in ROWS for i in rid.split("/")}
    problems = [f"{i}: replayed, but not a row of {CASES.name}" for i in sorted(replayed - set(cases))]
    problems += [
        f"{i}: neither replayed nor marked not_replayed"
        for i, r in cases.items()
        if i not in replayed and not r.get("not_replayed")
    ]
    problems += [
        f"{i}: replayed and marked not_replayed" for i in sorted(replayed) if cases.get(i, {}).get("not_replayed")
    ]
    return problems


def review_verdict(cases: dict[str, dict], rid: str) -> str:
    """The review's verdicts (and defects) at its commit for a replay id such as ``F1/F2/F5``."""
    seen = []
    for i in rid.split("/"):
        r = cases.get(_case_id(cases, i), {})
        v = r.get("review_verdict", "?") + (f" {r['defect']}" if r.get("defect") else "")
        if v not in seen:
            seen.append(v)
    return ", ".join(seen)


def row(rid: str, what: str):
    def deco(fn: Callable[[Path], str]) -> Callable[[Path], str]:
        ROWS.append((rid, what, fn))
        return fn

    return deco


def icl(root: Path, *args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        icl_cmd(root, *args),
        capture_output=True,
        text=True,
        env=icl_env(),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=cwd or (root if root.is_dir() else Path(tempfile.gettempdir())),
    )


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


@row("c01", "unknown notebook")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "no_such_notebook"), "unknown notebook")


@row("c02", "unknown parameter lists the parameters")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "nope", "3"), "no parameter 'nope'", "K (default 8)")


@row("c03", "-p K abc")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "abc"), "'K'")


@row("c04", "-p K 1.5 (int parameter)")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "1.5"), "'K'")


@row("c09", "-p K -3 (declared range [1, 4096]) refused before a kernel starts")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "-3"), "'K'", "range")


@row("c10", "-p K 0")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "0"), "'K'", "range")


@row("c11", "-p K 1000000000: size guard (D11); 1e9 is not an integer spelling (issue 24)")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "1000000000"), "'K'", "[1, 4096]")


@row("c12/c13/c14/c15/c33", "1e-5, 0.00001, nan, inf, 1e300 as floats; 12345678901234567891 exact (D1, D8)")
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


@row("c06", "code as an int value")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "sized", "-p", "K", "__import__('os').system('id')"), "'K'")


@row("c05", "--preset huge")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "types", "--preset", "huge"), "no preset 'huge'")


@row("c16", "-j 0")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "-j", "0"), "-j")


@row("c17", "-j -1 --force (D12)")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "-j", "-1", "--force"), "-j")


@row("c17b", "-j abc")
def _(root: Path) -> str:
    proc = icl(root, "run", "-j", "abc")
    return "" if proc.returncode == 2 and "invalid int value" in proc.stderr else f"exit {proc.returncode}"


@row("c18", "--out /proc/x (D6)")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "--out", "/proc/x"), "--out")


@row("c22", "--out an existing file (D6)")
def _(root: Path) -> str:
    path = root / "a_file"
    path.write_text("x")
    return one_line_error(icl(root, "run", "second", "--out", str(path)), "--out", "not a folder")


@row("c38", "--out '' (empty)")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "--out", ""), "--out")


@row("c19", "--out with a space and a quote")
def _(root: Path) -> str:
    out = root / "with space" / "and 'quote'"
    proc = icl(root, "run", "second", "--out", str(out))
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {proc.stderr[-200:]!r}"
    return folder_consistent(out / "second")


@row("c20", "run from notebooks/ (root found upwards)")
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


@row("c21", "run outside any project")
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


@row("c21b", "--root /nonexistent (D9)")
def _(root: Path) -> str:
    return one_line_error(icl(root.parent / "nonexistent", "run"), "--root")


@row("c23", "duplicate names run once (D10)")
def _(root: Path) -> str:
    proc = icl(root, "run", "second", "second", "-j", "2", "--force")
    ran = proc.stderr.count("] ran")
    return "" if proc.returncode == 0 and ran == 1 else f"exit {proc.returncode}, executed {ran} times"


@row("c07", "unknown command")
def _(root: Path) -> str:
    proc = icl(root, "frobnicate")
    return "" if proc.returncode == 2 and "invalid choice" in proc.stderr else f"exit {proc.returncode}"


@row("c08", "-p K without a value")
def _(root: Path) -> str:
    proc = icl(root, "run", "-p", "K")
    return "" if proc.returncode == 2 and "expected 2 arguments" in proc.stderr else f"exit {proc.returncode}"


@row("c37", "-p K 12 -p K 16: the last wins")
def _(root: Path) -> str:
    out = root / "c37"
    proc = icl(root, "run", "sized", "-p", "K", "12", "-p", "K", "16", "--out", str(out))
    return "" if proc.returncode == 0 and metrics(root, "sized", out)["K"] == 16 else f"exit {proc.returncode}"


@row("c39", "a parameter one of the named notebooks lacks")
def _(root: Path) -> str:
    return one_line_error(icl(root, "run", "second", "sized", "-p", "k", "3"), "'sized'", "no parameter 'k'")


@row("c34", "stray notebooks/scratch.py without a parameters cell")
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


@row("c35", "K = 2**3 in the parameters cell")
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


@row("c36", "build --out X")
def _(root: Path) -> str:
    return one_line_error(icl(root, "build", "--out", "x"), "--out is for")


# --- faults ----------------------------------------------------------------------------------------------------


def _kill_while_running(root: Path, sig: int) -> str:
    import psutil

    args = ["run", "slow", "-p", "seconds", "5"]
    proc = subprocess.Popen(
        icl_cmd(root, *args),
        env=icl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not list((root / ".icl-store" / "tmp").rglob("started")) and time.monotonic() < deadline:
        time.sleep(0.2)
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    time.sleep(2)
    left = [k for k in kids if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]
    for k in left:
        k.kill()
    expected = 128 + sig
    if left:
        return f"{len(left)} child process(es) remain"
    if proc.returncode != expected or "Traceback" in err:
        return f"exit {proc.returncode} (expected {expected}); stderr {err[-200:]!r}"
    if list((root / ".icl-store" / "tmp").iterdir()):
        return "a temporary folder was left behind"
    again = icl(root, *args)
    return "" if "1 executed, 0 cached" in again.stdout else f"the next run did not execute: {again.stdout!r}"


@row("F1/F2/F5", "SIGTERM while a notebook runs (D3)")
def _(root: Path) -> str:
    shutil.rmtree(root / "book" / "generated" / "slow", ignore_errors=True)
    for entry in (root / ".icl-store" / "entries").glob("*"):
        if json.loads((entry / ".icl-run.json").read_text())["notebook"] == "slow":
            shutil.rmtree(entry)
    return _kill_while_running(root, signal.SIGTERM)


@row("F3/F4", "SIGINT while a notebook runs")
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


@row("F6", "truncated metrics.json, then run (D2)")
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").write_text('{"k_sq'), "metrics.json")


@row("F7", "metrics.json with wrong content, then run (D2)")
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").write_text('{"other": 1}'), "metrics.json")


@row("F8", "a figure removed, then run (D2)")
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "figure.txt").unlink(), "figure.txt")


@row("F9", "metrics.json removed, then run (D2)")
def _(root: Path) -> str:
    return _damage_then_run(root, lambda f: (f / "metrics.json").unlink(), "metrics.json")


@row("F6b", "build-side reading of a truncated metrics.json names the file")
def _(root: Path) -> str:
    from iclbook.pages import ReportError, load_metrics

    folder = root / "pages" / "second"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text('{"k_sq')
    try:
        load_metrics(root / "pages", "second")
    except ReportError as exc:
        return "" if "metrics.json" in str(exc) else str(exc)
    return "no error"


def _concurrent(root: Path, a: list[str], b: list[str]) -> tuple[subprocess.CompletedProcess, ...]:
    pa = subprocess.Popen(
        icl_cmd(root, *a),
        env=icl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        stdin=subprocess.DEVNULL,
    )
    time.sleep(0.2)
    pb = subprocess.Popen(
        icl_cmd(root, *b),
        env=icl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        stdin=subprocess.DEVNULL,
    )
    return tuple(subprocess.CompletedProcess(p.args, p.wait(600), *p.communicate()) for p in (pa, pb))


@row("F13", "two identical runs at once: one executes, the other waits and hits the store")
def _(root: Path) -> str:
    out = root / "conc13"
    a, b = _concurrent(
        root, ["run", "sized", "-p", "K", "33", "--out", str(out)], ["run", "sized", "-p", "K", "33", "--out", str(out)]
    )
    executed = sum("1 executed" in p.stdout for p in (a, b))
    if a.returncode or b.returncode or executed != 1:
        return f"exit {a.returncode}/{b.returncode}, executed {executed} times"
    return folder_consistent(out / "sized")


@row("F14", "two runs with different parameters into one folder (D4), 3 trials")
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


@row("F15", "a notebook that writes no metrics.json into a folder holding an old one (D5)")
def _(root: Path) -> str:
    folder = root / "book" / "generated" / "nometrics"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text('{"k": 1}')
    proc = icl(root, "run", "nometrics")
    if proc.returncode != 1 or "wrote no metrics.json" not in proc.stderr:
        return f"exit {proc.returncode}: {proc.stderr[-200:]!r}"
    return "" if not (folder / ".icl-run.json").exists() else "the folder was stamped"


# --- issue 24 ------------------------------------------------------------------------------------------------

BROKEN = '# %% tags=["parameters"]\nx = 1\n\n# %%\na = 1\nb = 2\nraise ValueError("line three")\n'


@row("c42", "a failed run keeps its executed notebook and names the failing line (I9)")
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


@row("c43", "-p K 16.0 / 1e1 / 0x10 / full-width 16, and [0x10] in a list, are refused (I11)")
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


@row("c44", "no loopback: one line within seconds, before a kernel starts (I12)")
def _(root: Path) -> str:
    t0 = time.monotonic()
    proc = _no_loopback(root, "run", "second", "--force")
    problem = one_line_error(proc, "loopback TCP", "127.0.0.1 is not reachable")
    return problem or ("" if time.monotonic() - t0 < 30 else f"took {time.monotonic() - t0:.0f}s")


@row("c45", "--out under a file: one line naming the path (I2)")
def _(root: Path) -> str:
    blocker = root / "c45_file"
    blocker.write_text("x")
    return one_line_error(icl(root, "run", "second", "--out", str(blocker / "sub")), "--out", str(blocker))


@row("c46", "--out through a symbolic link loop: one line naming the path (I2)")
def _(root: Path) -> str:
    a, b = root / "loop_a", root / "loop_b"
    a.symlink_to(b)
    b.symlink_to(a)
    try:
        return one_line_error(icl(root, "run", "second", "--out", str(a / "x")), "--out", str(root / "loop_"))
    finally:
        a.unlink()
        b.unlink()


@row("c47", "a file where the store should be: one line naming the store (I2)")
def _(root: Path) -> str:
    other = make_project(root.parent / "c47", ["second"])
    (other / ".icl-store").write_text("not a folder")
    return one_line_error(icl(other, "run", "second"), "store", str(other / ".icl-store"), "not a folder")


@row("c48", "no space or no permission in --out, clean that cannot remove: one line naming the path (I2)")
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


@row("c49", "list shows each preset's run time, from the store or the hint (I6)")
def _(root: Path) -> str:
    icl(root, "run", "second")
    (root / "notebooks" / "seconds.json").write_text(json.dumps({"paper": {"second": 12.0}}))
    try:
        proc = icl(root, "list")
    finally:
        (root / "notebooks" / "seconds.json").unlink()
    lines = proc.stdout[proc.stdout.index("second  (") :].splitlines()
    times = next((ln for ln in lines if ln.strip().startswith("run time")), "")
    ok = "(store)" in times and "~12 s (hint)" in times
    return "" if ok else f"run time row {times!r}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keep", action="store_true", help="keep the throw-away project")
    p.add_argument("-k", metavar="ID", help="only rows whose id contains ID")
    args = p.parse_args(argv)
    cases = load_cases()
    problems = coverage_problems(cases)
    for problem in problems:
        print(f"fixture: {problem}", flush=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    base = Path(tempfile.mkdtemp(prefix="icl-replay-"))
    root = make_project(base / "project")
    defects = 0
    start = time.monotonic()
    try:
        for rid, what, fn in ROWS:
            if args.k and args.k not in rid:
                continue
            t0 = time.monotonic()
            try:
                problem = fn(root)
            except Exception as exc:  # a crash of the replay is a defect too
                problem = f"{type(exc).__name__}: {exc}"
            defects += bool(problem)
            verdict = "DEFECT" if problem else "ok"
            print(
                f"{rid:22s} {verdict:6s} {time.monotonic() - t0:5.1f}s  {what}  [review: {review_verdict(cases, rid)}]"
                + (f"\n{'':30s}{problem}" if problem else ""),
                flush=True,
            )
    finally:
        if args.keep:
            print(f"project kept in {root}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    skipped = [i for i, r in cases.items() if r.get("not_replayed") and (not args.k or args.k in i)]
    print(
        f"replay: {len([r for r in ROWS if not args.k or args.k in r[0]])} rows, {defects} defect(s), "
        f"{time.monotonic() - start:.0f}s; not replayed ({CASES.name}): {', '.join(skipped) or 'none'}"
    )
    return 1 if defects or problems else 0


if __name__ == "__main__":
    sys.exit(main())
