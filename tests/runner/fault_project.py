"""A throw-away project for the command line's fault table: scalar, sized and list parameters, presets, a sweep.

Nothing here starts a kernel by itself; helpers run ``icl-book`` in-process (:func:`cli_main`) or in a
subprocess (:func:`runner_project.run_icl`) and take a snapshot of the store (:func:`store_snapshot`) so a
test can assert that a refused command changed nothing.
"""

from __future__ import annotations

from pathlib import Path

from runner_project import HEADER, NOTEBOOKS

from iclbook import cli
from iclbook.store import store_dir

FAULT_NOTEBOOKS = {
    "sized": NOTEBOOKS["sized"],
    "types": NOTEBOOKS["types"],
    "lists": """# %% [markdown]
# # Lists

# %% tags=["parameters"]
warmups = [200]  # warm-up lengths; range: [0, 100000]; length: [1, 4]
long = [1]  # a long list of counts; range: [0, 10]; length: [1, 100000]
rates = (0.001, 0.002)  # step sizes; range: (0, 1)
kinds = ["lsa"]  # choices: ["lsa", "gpt"]
flags = [True, False]

# %% tags=["presets"]
PRESETS = {"paper": {"warmups": [50, 200, 1000]}}

# %%
import json
json.dump({"n": len(warmups)}, open("metrics.json", "w"))
""",
}

SWEEPS = """sized:
  settings:
    K:
      values: [4, 8, 16]
      why: "a size the paper leaves open"
      paper: "000"
    eta:
      values: [0.25, 0.5, 0.75]
      why: "a step the paper leaves open"
      paper: "000"
"""


def make_fault_project(root: Path) -> Path:
    """Write the project at ``root``: ``_toc.yml``, three notebooks, ``notebooks/sweeps.yml``, an empty ``iclcore/``."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "iclcore").mkdir(exist_ok=True)
    (root / "requirements.lock").write_text("numpy==0\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n"
        + "".join(f"  - file: book/generated/{n}/{n}\n" for n in FAULT_NOTEBOOKS)
    )
    for name, body in FAULT_NOTEBOOKS.items():
        (root / "notebooks" / f"{name}.py").write_text(HEADER + body)
    (root / "notebooks" / "sweeps.yml").write_text(SWEEPS)
    return root


def cli_main(root: Path, *args: str) -> int:
    """``icl-book --root root args`` in this process; its exit code."""
    return cli.main(["--root", str(root), *args])


def store_snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the store with its size and modification time (``{}`` when there is no store)."""
    store = store_dir(root)
    if not store.exists():
        return {}
    out = {}
    for path in sorted(store.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[path.relative_to(store).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def one_line(err: str) -> str:
    """The only line of ``err``; an AssertionError if there are more, or a traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
