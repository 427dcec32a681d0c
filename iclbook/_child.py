"""Child process of the runner: convert one notebook, inject its parameters, execute it with papermill.

Run as ``python -m iclbook._child SPEC.json`` in its own session (process
group), so that the runner can end it, kernel included, on an interrupt. The
spec holds: ``source`` (py:percent path), ``output`` (executed ipynb path),
``cwd`` (the kernel's working directory), ``parameter_source`` (Python
assignments, one per parameter, values written with ``repr``-exact literals),
``table`` (markdown of the parameter table) and ``metadata``.

A kernel that dies is reported by how it ended (its exit code or the signal that killed it, read from
the kernel process that :func:`recording_kernel_manager` keeps), as the last line of the log.

Parameters are injected as a code cell right after the cell tagged
``parameters`` (tagged ``injected-parameters`` and ``remove-cell``, so the
book does not show it); papermill's own parameter path (YAML/JSON) is never
used, so values keep their exact Python type.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def _watch_parent(parent: int) -> None:
    """Exit when the runner disappears (e.g. SIGKILL); the kernel's own parent poller then ends the kernel."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def prepare(spec: dict):
    import jupytext
    import nbformat

    nb = jupytext.read(spec["source"])
    nb.metadata.get("jupytext", {}).pop("formats", None)  # never paired with its source
    nb.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata["icl"] = spec["metadata"]
    index = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])
    )
    injected = nbformat.v4.new_code_cell(
        spec["parameter_source"], metadata={"tags": ["injected-parameters", "remove-cell"]}
    )
    nb.cells.insert(index + 1, injected)
    table = nbformat.v4.new_markdown_cell(spec["table"], metadata={"tags": ["icl-parameters"]})
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# "):
        nb.cells.insert(1, table)  # right under the page title
    else:
        nb.cells.insert(0, table)
    return nb


#: Longest path a Unix domain socket may have on Linux (``sun_path`` is 108 bytes, one for the NUL), less
#: room for the ``-<n>`` suffix jupyter_client appends to each channel's socket.
MAX_SOCKET_PREFIX = 100


def ipc_socket_prefix() -> str:
    """A fresh path prefix for a kernel's five ``ipc`` sockets (jupyter_client names them ``<prefix>-<n>``).

    ``<temporary folder>/icl-kernel-<uuid4 hex>``: unique, so two kernels never share a socket (jupyter_client's
    own default, ``kernel-ipc`` in the working folder, would be shared by kernels started there together);
    ``/tmp`` instead when ``TMPDIR`` is too long for a Unix socket path (:data:`MAX_SOCKET_PREFIX`).
    """
    import tempfile
    import uuid

    name = f"icl-kernel-{uuid.uuid4().hex}"
    prefix = os.path.join(tempfile.gettempdir(), name)
    return prefix if len(prefix) <= MAX_SOCKET_PREFIX else os.path.join("/tmp", name)


def ipc_kernel_manager(base: type) -> type:
    """``base`` (a jupyter_client ``KernelManager`` class) with its kernels on Unix domain sockets
    (``transport="ipc"``) named by :func:`ipc_socket_prefix`, not on TCP ports.

    With TCP, jupyter_client picks five free ports, closes them and lets the kernel bind them later; a
    process starting beside it (another notebook, a Dask worker, a browser) can take one in between, and
    the kernel then dies with "Address already in use" before it answers ``kernel_info`` (seen once in CI,
    with tests starting kernels in parallel). Socket files with a fresh UUID in their name cannot collide.
    Used by the runner (:func:`recording_kernel_manager`) and by nbval's kernels in ``make test``
    (``tests/conftest.py``).
    """
    from traitlets import default

    class IpcKernelManager(base):
        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

        def _ip_default(self) -> str:  # jupyter_client's (old-style) default, also called directly by it
            return ipc_socket_prefix() if self.transport == "ipc" else super()._ip_default()

    return IpcKernelManager


def recording_kernel_manager(kernels: list) -> type:
    """A jupyter_client ``AsyncKernelManager`` class that appends each kernel process it starts to ``kernels``
    (a ``subprocess.Popen``; its ``returncode`` says how the kernel ended). Its kernels talk over Unix
    domain sockets (:func:`ipc_kernel_manager`).
    """
    from jupyter_client.manager import AsyncKernelManager

    class RecordingKernelManager(ipc_kernel_manager(AsyncKernelManager)):
        async def _async_post_start_kernel(self, **kw: object) -> None:
            await super()._async_post_start_kernel(**kw)
            process = getattr(self.provisioner, "process", None)
            if process is not None:
                kernels.append(process)

    return RecordingKernelManager


def kernel_end(kernels: list) -> str:
    """How the last recorded kernel ended: ``"it was killed by SIGKILL"``, ``"it exited with code 3"``, or ``""``."""
    import signal

    if not kernels:
        return ""
    process = kernels[-1]
    for _ in range(20):  # a dead kernel is reaped within moments
        if process.poll() is not None:
            break
        time.sleep(0.1)
    rc = process.returncode
    if rc is None:
        return ""
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        extra = " (the kernel ran out of memory, or something killed it)" if -rc == signal.SIGKILL else ""
        return f"it was killed by {name}{extra}"
    return f"it exited with code {rc}"


def main(argv: list[str]) -> int:
    spec = json.loads(open(argv[0], encoding="utf-8").read())
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    from .loaders import import_without_iri_checker

    papermill = import_without_iri_checker("papermill")  # 1.2 CPU-s less per run (see there)
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    nb = prepare(spec)
    kernels: list = []
    try:
        papermill.execute_notebook(
            nb,
            spec["output"],
            parameters=None,
            cwd=spec["cwd"],
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            kernel_manager_class=recording_kernel_manager(kernels),
        )
    except PapermillExecutionError as exc:
        print(f"{exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    except DeadKernelError:
        how = kernel_end(kernels)
        print(f"the Jupyter kernel died while a cell ran{': ' + how if how else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
