"""The runner's kernels talk over Unix sockets with unique names (no TCP port can be taken from under them)."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import tempfile
from pathlib import Path

import pytest

from iclbook._child import MAX_SOCKET_PREFIX, ipc_socket_prefix, recording_kernel_manager


def test_socket_prefixes_are_unique_and_short_even_under_a_long_tmpdir(tmp_path: Path, monkeypatch) -> None:
    prefixes = {ipc_socket_prefix() for _ in range(100)}
    assert len(prefixes) == 100 and all(p.startswith(tempfile.gettempdir()) for p in prefixes)
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    prefix = ipc_socket_prefix()
    assert prefix.startswith("/tmp/icl-kernel-") and len(prefix) <= MAX_SOCKET_PREFIX


@pytest.mark.slow
def test_two_kernels_started_together_use_ipc_sockets_of_their_own_and_remove_them() -> None:
    kernels: list = []
    manager = recording_kernel_manager(kernels)

    async def start_and_stop() -> tuple[str, str]:
        km = manager(kernel_name="python3")
        await km.start_kernel()
        try:
            info = json.loads(Path(km.connection_file).read_text())
            client = km.client()
            client.start_channels()
            await client.wait_for_ready(timeout=60)
            reply = await client.execute("1 + 1", reply=True, timeout=60)
            assert reply["content"]["status"] == "ok"
            client.stop_channels()
            assert all(os.path.exists(f"{info['ip']}-{info[p]}") for p in ("shell_port", "iopub_port", "hb_port"))
            return info["transport"], info["ip"]
        finally:
            await km.shutdown_kernel()
            assert not [p for p in ("shell_port", "iopub_port") if os.path.exists(f"{km.ip}-{getattr(km, p)}")]

    async def both() -> list:
        return await asyncio.gather(start_and_stop(), start_and_stop())

    (t1, ip1), (t2, ip2) = asyncio.run(both())
    assert t1 == t2 == "ipc" and ip1 != ip2
    assert len(kernels) == 2 and all(k.poll() is not None for k in kernels)


def test_nbval_kernels_use_unix_sockets_too():
    """``tests/conftest.py`` gives nbval's kernels the same transport; one started here answers over it
    and leaves no socket file behind."""
    import nbval.kernel

    km, kc = nbval.kernel.start_new_kernel(kernel_name=nbval.kernel.CURRENT_ENV_KERNEL_NAME)
    try:
        assert km.transport == "ipc" and Path(km.ip).name.startswith("icl-kernel-")
        assert glob.glob(km.ip + "-*")
        msg_id = kc.execute("1 + 1")
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not glob.glob(km.ip + "-*")
