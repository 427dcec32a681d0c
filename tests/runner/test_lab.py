"""``make lab``: one Ctrl-C stops a headless JupyterLab, and a notebook run in place leaves no untracked litter."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lab_options() -> list[str]:
    """The options the Makefile's ``lab`` recipe passes to ``jupyter lab`` (Make variables left out)."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    recipe = lines[lines.index(next(ln for ln in lines if ln.startswith("lab:"))) + 1]
    words = shlex.split(recipe.replace("$(BIN)/jupyter lab", ""))
    return [w for w in words if w.startswith("--") and "$(" not in w and not w.startswith("--notebook-dir")]


@pytest.mark.parametrize("name", ["metrics.json", "figure.png", "figure.pdf", "figure.svg", "identity_table.md"])
def test_what_a_notebook_run_in_place_writes_is_ignored(name: str) -> None:
    res = subprocess.run(["git", "check-ignore", "-q", f"notebooks/{name}"], cwd=ROOT, capture_output=True)
    assert res.returncode == 0, f"notebooks/{name} would be untracked litter"


def test_the_notebooks_themselves_are_not_ignored() -> None:
    for path in ("notebooks/proof_ladder.py", "notebooks/sweeps.yml", "notebooks/seconds.json"):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 1, path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.fault
@pytest.mark.slow
def test_a_headless_lab_stops_on_one_interrupt(tmp_path: Path) -> None:
    """No terminal to answer Jupyter's "Shut down this server (y/[n])?": the recipe's options make one SIGINT enough."""
    pytest.importorskip("jupyterlab")
    options = lab_options()
    assert "--JupyterApp.answer_yes=True" in options
    port = _free_port()
    jupyter = Path(sys.executable).with_name("jupyter")
    cmd = [str(jupyter), "lab", "--no-browser", "--ip", "127.0.0.1", "--port", str(port), f"--notebook-dir={tmp_path}"]
    cmd += options + (["--allow-root"] if os.getuid() == 0 else [])
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None, "jupyter lab did not start"
                time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            pytest.fail("one SIGINT did not stop jupyter lab")
    assert proc.returncode == 0
