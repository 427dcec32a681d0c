"""A throw-away project for runner tests: small notebooks that report the type of their parameters, sleep, or misbehave.

The notebooks import nothing from ``iclcore`` (metrics are written with ``json``), so each run costs one kernel
start (a few seconds) and no computation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HEADER = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"

NOTEBOOKS = {
    "types": """# %% [markdown]
# # Types

# %% tags=["parameters"]
i = 3
big = 1
f = 0.5
g = 1.0
h = 1.0
b = False
s = "x"

# %% tags=["presets"]
PRESETS = {"paper": {"i": 4}}

# %%
import json
names = ["i", "big", "f", "g", "h", "b", "s"]
out = {}
for k in names:
    v = globals()[k]
    out["repr_" + k] = repr(v)
    out["type_" + k] = type(v).__name__
json.dump(out, open("metrics.json", "w"))
""",
    "second": """# %% [markdown]
# # Second

# %% tags=["parameters"]
k = 3

# %% tags=["presets"]
PRESETS = {"paper": {"k": 4}}

# %%
import json
json.dump({"k_squared": k * k}, open("metrics.json", "w"))
open("figure.txt", "w").write("figure for k=%d\\n" % k)
""",
    "slow": """# %% [markdown]
# # Slow

# %% tags=["parameters"]
seconds = 4.0

# %%
import json, os, time
open("started", "w").write("1")
# sleeps `seconds`, or less once the file named by ICL_TEST_RELEASE exists (same key, same metrics: a test
# that only needs the run to complete again sets it, instead of waiting)
release, deadline = os.environ.get("ICL_TEST_RELEASE", ""), time.monotonic() + seconds
while time.monotonic() < deadline and not (release and os.path.exists(release)):
    time.sleep(0.02)
json.dump({"slept": seconds}, open("metrics.json", "w"))
""",
    "nometrics": """# %% [markdown]
# # No metrics

# %% tags=["parameters"]
k = 1

# %%
print(k)
""",
    "sized": """# %% [markdown]
# # Sized

# %% tags=["parameters"]
K = 8      # a size; range: [1, 4096]
eta = 0.5  # a step fraction; range: (0, 1)

# %%
import json
json.dump({"K": K, "eta": eta}, open("metrics.json", "w"))
""",
}


def make_project(root: Path, names: list[str] | None = None) -> Path:
    """Write a project (``_toc.yml``, ``notebooks/``, ``requirements.lock``, an empty ``iclcore/``) at ``root``."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "iclcore").mkdir(exist_ok=True)
    (root / "requirements.lock").write_text("numpy==0\n")
    chosen = names or list(NOTEBOOKS)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n" + "".join(f"  - file: book/generated/{n}/{n}\n" for n in chosen)
    )
    for n in chosen:
        (root / "notebooks" / f"{n}.py").write_text(HEADER + NOTEBOOKS[n])
    return root


def icl_env(release: Path | None = None) -> dict[str, str]:
    """This process's environment at one BLAS thread; with ``release`` (created here), the ``slow`` notebook
    returns at once instead of sleeping (its key and metrics are those of a full sleep)."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    if release is not None:
        release.touch()
        env["ICL_TEST_RELEASE"] = str(release)
    return env


def icl_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "iclbook.cli", "--root", str(root), *args]


def popen_icl(root: Path, *args: str) -> subprocess.Popen:
    """``icl-book --root root args`` started in a subprocess (text pipes), for a signal or a concurrent run."""
    return subprocess.Popen(
        icl_cmd(root, *args),
        env=icl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        stdin=subprocess.DEVNULL,
    )


def run_icl(root: Path, *args: str, timeout: float = 300, release: bool = False) -> subprocess.CompletedProcess:
    """``icl-book --root root args`` in a subprocess (its own interpreter, like a user's shell); ``release``:
    the ``slow`` notebook does not sleep (:func:`icl_env`)."""
    cwd = root if root.is_dir() else root.parent
    return subprocess.run(
        icl_cmd(root, *args),
        capture_output=True,
        text=True,
        env=icl_env(root / ".release" if release and root.is_dir() else None),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


def store_run(root: Path, name: str, preset: str = "quick", overrides: dict[str, Any] | None = None) -> str:
    """Put a verified store entry for ``name`` at ``preset`` (with ``-p`` ``overrides``) under the key the runner
    would use, without a kernel (a metrics file, a figure, an executed notebook); its key."""
    from iclbook.notebooks import discover_all, python_literal
    from iclbook.runs import make_requests
    from iclbook.store import add_entry, cache_key, hash_files, store_dir

    nb = next(n for n in discover_all(root)[0] if n.name == name)
    req = make_requests([nb], root / "book" / "generated", preset, overrides)[0]
    key = cache_key(req, root)
    work = store_dir(root) / "tmp" / f"w-{key}"
    (work / "figures").mkdir(parents=True)
    (work / "metrics.json").write_text(json.dumps({"value": len(name), "preset": preset}))
    (work / "figures" / "fig.png").write_bytes(bytes(range(256)) * 4)
    (work / f"{name}.ipynb").write_text(json.dumps({"cells": [], "metadata": {"preset": preset}}))
    literals = {k: python_literal(v) for k, v in req.params.items()}
    manifest = {"key": key, "notebook": name, "preset": preset, "params": req.params, "param_literals": literals}
    manifest.update(files=hash_files(work), seconds=1.0, threads=1)
    (store_dir(root) / "entries").mkdir(parents=True, exist_ok=True)
    add_entry(root, key, work, manifest, work.parent)
    return key


def rewrite_archive(path: Path, out: Path, change: Any) -> None:
    """Copy the tar file ``path`` to ``out`` member by member, passing each ``(name, bytes)`` through ``change``."""
    import io
    import tarfile

    with tarfile.open(path) as tin, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tout:
        for m in tin:
            data = change(m.name, tin.extractfile(m).read())
            m.size = len(data)
            tout.addfile(m, io.BytesIO(data))


def call(root: Path, *args: str) -> tuple[int, str, str]:
    """``icl-book --root root args`` in this process: exit code, stdout, stderr."""
    import contextlib
    import io

    from iclbook import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["--root", str(root), *args])
    return rc, out.getvalue(), err.getvalue()


def one_line(err: str, pattern: str) -> None:
    """``err`` is one line, with no traceback, matching the regular expression ``pattern``."""
    import re

    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert re.search(pattern, lines[0]), (pattern, lines[0])


def store_snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the store's entries, by path: equal before and after means the store is unchanged."""
    entries = root / ".icl-store" / "entries"
    return {p.relative_to(entries).as_posix(): p.read_bytes() for p in sorted(entries.rglob("*")) if p.is_file()}


def alive(procs: list) -> list:
    """The ``psutil`` processes of ``procs`` still running (zombies and vanished ones left out)."""
    import psutil

    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out
