"""Interactive rerun through a real Jupyter server (the README's `make lab` path).

A Jupyter server is started on 127.0.0.1 with a random port and a random token, over a temporary
copy of the project's `notebooks/proof_ladder.py` and `pyproject.toml` (which holds the jupytext
configuration). Through the server's REST API the test checks that

- the py:percent file opens as a notebook (jupytext's contents manager is active);
- a kernel starts, and the `parameters` cell and the import cell execute over the kernel websocket,
  with the parameter values the cell's source assigns;
- saving the executed notebook, with outputs and papermill's metadata added, writes back a `.py`
  that holds neither.

The real notebook is never written: the server's root is a temporary folder.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "proof_ladder"

pytest.importorskip("jupyter_server", reason="JupyterLab is not installed (it is in the `book` extra: make venv)")
pytest.importorskip("jupytext", reason="jupytext is not installed (it is in the `book` extra: make venv)")
websocket = pytest.importorskip("tornado.websocket", reason="tornado (a jupyter_server dependency) is missing")

STARTUP_TIMEOUT = 90.0
EXECUTE_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A jupyter_server subprocess and a minimal REST client for it."""

    def __init__(self, root_dir: Path, work: Path):
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(work / "config"),  # no user configuration
            "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
            "JUPYTER_DATA_DIR": str(work / "data"),
            "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        cmd = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root_dir}",
        ]
        self.log = open(work / "server.log", "w")  # closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.log_path = work / "server.log"

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    def wait_ready(self) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < STARTUP_TIMEOUT:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited ({self.proc.returncode}):\n{self.log_path.read_text()}")
            try:
                self.request("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        raise RuntimeError(f"jupyter server not ready after {STARTUP_TIMEOUT}s:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()


def _message(code: str, session: str) -> dict:
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "username": "test",
            "session": session,
            "date": "",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        },
        "channel": "shell",
        "buffers": [],
    }


async def _execute_all(url: str, token: str, codes: list[str]) -> list[dict]:
    """Execute each code string over the kernel websocket; return reply status, outputs and count."""
    from tornado.httpclient import HTTPRequest

    conn = await websocket.websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    session = uuid.uuid4().hex
    results = []
    try:
        for code in codes:
            msg = _message(code, session)
            msg_id = msg["header"]["msg_id"]
            await conn.write_message(json.dumps(msg))
            res: dict = {"outputs": [], "reply": None, "idle": False}
            while res["reply"] is None or not res["idle"]:
                raw = await asyncio.wait_for(conn.read_message(), EXECUTE_TIMEOUT)
                if raw is None:
                    raise RuntimeError("kernel websocket closed")
                m = json.loads(raw)
                if m.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = m["header"]["msg_type"]
                if kind == "execute_reply":
                    res["reply"] = m["content"]
                elif kind == "status" and m["content"]["execution_state"] == "idle":
                    res["idle"] = True
                elif kind == "stream":
                    res["outputs"].append(
                        {"output_type": "stream", "name": m["content"]["name"], "text": m["content"]["text"]}
                    )
                elif kind in ("execute_result", "display_data"):
                    out = {"output_type": kind, "data": m["content"]["data"], "metadata": m["content"]["metadata"]}
                    if kind == "execute_result":
                        out["execution_count"] = m["content"]["execution_count"]
                    res["outputs"].append(out)
                elif kind == "error":
                    res["outputs"].append({"output_type": "error", **m["content"]})
            results.append(res)
    finally:
        conn.close()
    return results


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _literal_assignments(code: str) -> dict:
    """name -> value of the literal assignments of a parameters cell."""
    out = {}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


@pytest.fixture(params=["repository", "notebooks"])
def server(request, tmp_path):
    """A server rooted at the repository, or at ``notebooks/`` as ``make lab`` roots it.

    Yields the server, the project root and the contents-API path of the notebook folder.
    """
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    for name in (f"{NOTEBOOK}.py", "jupytext.toml"):  # jupytext.toml: the configuration, beside the notebooks
        shutil.copy2(ROOT / "notebooks" / name, root / "notebooks" / name)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    work = tmp_path / "jupyter"
    for sub in ("config", "runtime", "data"):
        (work / sub).mkdir(parents=True)
    at_notebooks = request.param == "notebooks"
    srv = Server(root / "notebooks" if at_notebooks else root, work)
    try:
        srv.wait_ready()
        yield srv, root, "" if at_notebooks else "notebooks/"
    finally:
        srv.stop()


@pytest.mark.slow
def test_notebook_opens_runs_and_saves_clean(server):
    srv, root, folder = server
    path = f"/api/contents/{folder}{NOTEBOOK}.py"
    original = (root / "notebooks" / f"{NOTEBOOK}.py").read_text()
    assert original == (ROOT / "notebooks" / f"{NOTEBOOK}.py").read_text()

    # 1. The py:percent file opens as a notebook.
    model = srv.request("GET", path + "?type=notebook&content=1")
    assert model["type"] == "notebook", model["type"]
    nb = model["content"]
    cells = nb["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged `parameters`"
    params_cell = tagged[0]
    import_cell = next(
        c
        for c in cells[cells.index(params_cell) + 1 :]
        if c["cell_type"] == "code" and any(line.startswith(("import ", "from ")) for line in _source(c).splitlines())
    )
    params = _literal_assignments(_source(params_cell))
    assert params, "the parameters cell assigns literal values"

    # 2. A kernel starts; the parameters cell and the import cell run over the websocket.
    kernel = srv.request("POST", "/api/kernels", {"name": "python3"})
    try:
        url = f"ws://127.0.0.1:{srv.port}/api/kernels/{kernel['id']}/channels"
        probe = "print(repr({" + ", ".join(f"{k!r}: {k}" for k in params) + "}))"
        codes = [_source(params_cell), _source(import_cell), probe]
        results = asyncio.run(_execute_all(url, srv.token, codes))
    finally:
        srv.request("DELETE", f"/api/kernels/{kernel['id']}")
    for code, res in zip(codes, results):
        errors = [o for o in res["outputs"] if o["output_type"] == "error"]
        assert res["reply"]["status"] == "ok", (code[:200], errors)
    printed = "".join(o["text"] for o in results[2]["outputs"] if o["output_type"] == "stream")
    assert ast.literal_eval(printed.strip()) == params

    # 3. Save the executed notebook, with outputs and papermill metadata, through the server.
    for cell, res in ((params_cell, results[0]), (import_cell, results[1])):
        cell["execution_count"] = res["reply"]["execution_count"]
        cell["outputs"] = res["outputs"] or [{"output_type": "stream", "name": "stdout", "text": "marker-output\n"}]
        cell["metadata"]["papermill"] = {"duration": 0.5, "exception": False, "status": "completed"}
        cell["metadata"]["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    nb["metadata"]["papermill"] = {"parameters": {"K": 8}, "version": "2.7.0"}
    saved = srv.request("PUT", path, {"type": "notebook", "format": "json", "content": nb})
    assert saved["type"] == "notebook"
    text = (root / "notebooks" / f"{NOTEBOOK}.py").read_text()
    assert "papermill" not in text, "papermill metadata leaked into the .py source"
    assert "marker-output" not in text and "execution_count" not in text, "outputs leaked into the .py source"
    assert text == original, "saving an executed notebook must give back the committed source"
