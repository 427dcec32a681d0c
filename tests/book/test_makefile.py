"""The Makefile's guards, run with `make` on stand-in interpreters (nothing is installed).

* A `.venv` made with another Python than 3.11 (left by a failed install) is recreated, and a `PYTHON`
  that is not 3.11 is refused before anything is created, with the way to choose one (a 3.12 `.venv`
  is not reused by `make venv PYTHON=python3.11`).
* `JOBS` that is not a positive integer does not make the shell divide by zero: THREADS falls back to 1
  and `icl-book` itself refuses the value.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def _fake_python(path: Path, version: str) -> Path:
    """An executable that answers `-V` with ``version`` and the 3.11 check by its exit code."""
    ok = "0" if version.startswith("3.11.") else "1"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-V" ]; then echo "Python {version}"; exit 0; fi\n'
        f'if [ "$1" = "-c" ]; then exit {ok}; fi\n'
        "exit 3\n"
    )
    path.chmod(0o755)
    return path


def _make(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-f", str(ROOT / "Makefile"), "-C", str(ROOT), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_venv_of_another_python_is_recreated_and_a_wrong_python_is_refused(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _fake_python(venv / "bin" / "python", "3.12.1")
    wrong = _fake_python(tmp_path / "python3.12", "3.12.1")
    proc = _make(tmp_path, "venv", f"VENV={venv}", f"PYTHON={wrong}")
    assert proc.returncode != 0
    assert "not Python 3.11: recreating it" in proc.stdout
    assert not venv.exists(), "the 3.12 venv must be removed, not reused"
    assert f"PYTHON={wrong} is not Python 3.11 (Python 3.12.1)" in proc.stderr
    assert "make book PYTHON=python3.11" in proc.stderr


def test_a_missing_python_is_named(tmp_path: Path) -> None:
    proc = _make(tmp_path, "venv", f"VENV={tmp_path / 'venv'}", f"PYTHON={tmp_path / 'nope'}")
    assert proc.returncode != 0 and "is not Python 3.11 (not found)" in proc.stderr
    assert not (tmp_path / "venv").exists()


@pytest.mark.parametrize("jobs", ["0", "-1", "abc", "1e1"])
def test_bad_jobs_do_not_break_the_shell_arithmetic(tmp_path: Path, jobs: str) -> None:
    mk = tmp_path / "threads.mk"
    mk.write_text(f"include {ROOT / 'Makefile'}\nshow-threads:\n\t@echo $(THREADS)\n")
    proc = subprocess.run(
        ["make", "-s", "-f", str(mk), "-C", str(ROOT), "show-threads", f"JOBS={jobs}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr
    assert "division" not in proc.stderr and "syntax error" not in proc.stderr


def test_make_lab_passes_lab_args_for_headless_use(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            "make",
            "-n",
            "-C",
            str(ROOT),
            "lab",
            "LAB_ARGS=--no-browser --port 8899 --ip 127.0.0.1",
            "-o",
            ".venv/.installed",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "jupyter lab" in x)
    assert "--notebook-dir=notebooks" in line and line.rstrip().endswith("--no-browser --port 8899 --ip 127.0.0.1")
