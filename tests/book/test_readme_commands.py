"""The README's newcomer commands, run as a reader would type them (outputs sent to a temporary folder).

Each command below is looked up in README.md verbatim (so the README cannot drift from what is tested)
and then executed from the repository root with `/tmp/...` output paths moved into pytest's temporary
folder. `make book` and `make test` themselves are what CI runs; `make lab` starts a server and has its
own test (`tests/book/test_jupyter_server.py`); `icl-book clean` would delete the built book, so only its
help is run.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _bash_blocks(text: str) -> list[str]:
    """The commands of the README's ```bash blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for cmd in block.replace("\\\n", " ").splitlines():
            cmd = re.sub(r"\s+#.*$", "", cmd).strip()
            if cmd:
                commands.append(re.sub(r"\s+", " ", cmd))
    return commands


COMMANDS = _bash_blocks(README)


def _run(cmd: str, tmp_path: Path) -> subprocess.CompletedProcess:
    cmd = re.sub(r"/tmp/(\S+)", lambda m: str(tmp_path / m.group(1)), cmd)
    return subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_readme_names_the_two_commands() -> None:
    assert "make book" in COMMANDS and "make test" in COMMANDS


@pytest.mark.parametrize(
    "cmd",
    [
        ".venv/bin/icl-book list",
        ".venv/bin/icl-book status --help",
        ".venv/bin/icl-book clean --help",
    ],
)
def test_cli_help_and_listing(cmd: str, tmp_path: Path) -> None:
    if not cmd.endswith("--help"):
        assert cmd in COMMANDS, f"README no longer shows `{cmd}`"
    proc = _run(cmd, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_regenerate_a_figure_with_other_parameters(tmp_path: Path) -> None:
    cmd = ".venv/bin/icl-book run proof_ladder -p K 16 -p steps 200 --out /tmp/figs"
    assert cmd in COMMANDS, f"README no longer shows `{cmd}`"
    proc = _run(cmd, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "figs" / "proof_ladder"
    assert (out / "metrics.json").exists() and list(out.glob("*.png")) and list(out.glob("*.pdf"))


@pytest.mark.slow
def test_plain_papermill_example(tmp_path: Path) -> None:
    start = next(i for i, c in enumerate(COMMANDS) if c.startswith("mkdir -p /tmp/proof_ladder_K16"))
    recipe = COMMANDS[start : start + 3]
    assert "jupytext" in recipe[1] and "papermill" in recipe[2]
    for cmd in recipe:
        proc = _run(cmd, tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Warning" not in proc.stderr, proc.stderr[-2000:]  # the recipe runs clean
    out = tmp_path / "proof_ladder_K16"
    assert (out / "proof_ladder.ipynb").exists() and (out / "metrics.json").exists()
    assert list(out.glob("*.png")), "the notebook's figures belong in its own working folder"
