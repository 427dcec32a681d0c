"""Shared fixtures of the test suite."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: The ledger's coverage tests (tests/book/test_ledger.py) read the figures and tables each paper names from
#: this in-repository list unless ICL_SEEDS_DIR points at the papers' texts: nothing is read outside the repository.
os.environ.setdefault("ICL_SEEDS_DIR", str(ROOT / "tests" / "book" / "fixtures" / "paper_refs"))


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    """A throw-away project root with two small notebooks and its own `iclcore/` folder."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "demo_project", root)
    (root / "iclcore").mkdir()
    (root / "iclcore" / "module.py").write_text("X = 1\n")
    (root / "requirements.lock").write_text("numpy==0\n")
    return root


#: Set by `make test`, which builds the HTML in the background while the other tests run: the file
#: that receives the build's exit status once it has finished (its log is beside it, `.log`).
BUILD_STATUS_ENV = "ICL_BOOK_BUILD_STATUS"
BUILD_WAIT = 1800.0  # seconds a `build` test waits for the background build


def pytest_configure(config: pytest.Config) -> None:
    """nbval's kernels (``make test``'s determinism check) talk over Unix sockets, as the runner's do
    (:func:`iclbook._child.ipc_kernel_manager`): with TCP, a kernel started beside the tests' other kernels
    can lose one of its ports before it binds it, and dies at start."""
    try:
        import nbval.kernel
    except ImportError:  # nbval is a test dependency; without it there is nothing to set
        return
    from jupyter_client.manager import KernelManager

    from iclbook._child import ipc_kernel_manager

    nbval.kernel.KernelManager = ipc_kernel_manager(KernelManager)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked ``build`` wait for `make test`'s background HTML build, and fail if it failed."""
    status_file = os.environ.get(BUILD_STATUS_ENV)
    if not status_file or item.get_closest_marker("build") is None:
        return
    status = Path(status_file)
    deadline = time.monotonic() + BUILD_WAIT
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the background book build did not finish within {BUILD_WAIT:.0f} s ({status})")
        time.sleep(0.5)
    code = status.read_text().strip()
    if code != "0":
        log = status.with_suffix(".log")
        tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
        pytest.fail(f"the book build failed (exit {code}):\n" + "\n".join(tail))


@pytest.fixture
def one_torch_thread():
    """torch at one thread, as the notebooks set it, restored after the test. A torch training's last bits depend
    on its thread count; tests that compare trainings run at one thread, and tests whose in-process Dask tasks set
    torch's (process-wide) thread count leave it as they found it for the next test of the same pytest worker."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
