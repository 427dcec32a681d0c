"""Torch-device parameters of notebooks: the declared domain ``domain: device``.

A parameter whose line in the parameters cell declares ``domain: device`` in its comment::

    device = "cpu"  # torch device of the trainings; domain: device

accepts ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``, and only a device this machine has.
:meth:`iclbook.notebooks.Notebook.resolve` raises the message of :func:`device_error` after the range
checks, so ``-p device cuda:7`` on a machine without that GPU (or ``-p device gpu``) is refused with
one line naming the parameter before a kernel starts. The value ``"cpu"`` never imports torch; any
other value asks torch what this machine has (as :func:`iclcore.models.training.torch_device` does
in the training code itself).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["DEVICE_DOMAIN", "device_error", "device_parameters", "missing_device"]

#: The comment declaration of a device parameter.
DEVICE_DOMAIN = re.compile(r"#.*\bdomain:\s*device\b")
_DEVICE_RE = re.compile(r"(cpu|cuda|mps)(:[0-9]+)?")
_CELL_RE = re.compile(r"^# %%")
_PARAMETERS_CELL_RE = re.compile(r"""^# %%.*tags\s*=\s*\[[^\]]*["']parameters["']""")
_ASSIGNMENT_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=")


@functools.lru_cache(maxsize=256)
def _declared(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    names, inside = set(), False
    for line in Path(path).read_text().splitlines():
        if _CELL_RE.match(line):
            inside = bool(_PARAMETERS_CELL_RE.match(line))
        elif inside and (m := _ASSIGNMENT_RE.match(line)) and DEVICE_DOMAIN.search(line):
            names.add(m.group(1))
    return frozenset(names)


def device_parameters(path: str | Path) -> frozenset[str]:
    """Names of the parameters of the notebook at ``path`` declared ``domain: device``."""
    st = Path(path).stat()
    return _declared(str(path), st.st_mtime_ns, st.st_size)


def missing_device(name: str) -> str | None:
    """Why this machine cannot run on the device ``name`` (``"cuda"``, ``"cuda:N"``, ``"mps"``), or None."""
    import torch  # only for a device other than the CPU

    kind, _, index = name.partition(":")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            return f"this machine has no CUDA device (torch {torch.__version__}); use 'cpu'"
        if int(index or 0) >= count:
            return f"this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}"
    elif kind == "mps" and not torch.backends.mps.is_available():
        return "this machine has no MPS device; use 'cpu'"
    return None


def device_error(path: str | Path, params: Mapping[str, Any], where: str) -> str | None:
    """The one-line refusal of the first parameter of ``params`` that the notebook at ``path``
    declares a device and whose value is not a device of this machine, or None (all accepted)."""
    for name in sorted(device_parameters(path)):
        value = params.get(name, "cpu")
        if not isinstance(value, str) or not _DEVICE_RE.fullmatch(value):
            return (
                f"parameter {name!r} = {value!r} is not a torch device; expected 'cpu', 'cuda', 'cuda:N' "
                f"or 'mps' (declared `domain: device` in {where})"
            )
        if value != "cpu" and (why := missing_device(value)):
            return f"parameter {name!r} = {value!r}: {why} (declared in {where})"
    return None
