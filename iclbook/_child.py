"""Child process of the runner: convert one notebook, inject its parameters, execute it with papermill.

Run as ``python -m iclbook._child SPEC.json`` in its own session (process
group), so that the runner can end it, kernel included, on an interrupt. The
spec holds: ``source`` (py:percent path), ``output`` (executed ipynb path),
``cwd`` (the kernel's working directory), ``parameter_source`` (Python
assignments, one per parameter, values written with ``repr``-exact literals),
``table`` (markdown of the parameter table) and ``metadata``.

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


def main(argv: list[str]) -> int:
    spec = json.loads(open(argv[0], encoding="utf-8").read())
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    import papermill
    from papermill.exceptions import PapermillExecutionError

    nb = prepare(spec)
    try:
        papermill.execute_notebook(
            nb,
            spec["output"],
            parameters=None,
            cwd=spec["cwd"],
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
        )
    except PapermillExecutionError as exc:
        print(f"{exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
