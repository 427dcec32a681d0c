"""The torch device of the trainings: validation, moving batches, and no assumed device.

Everything here runs on the CPU: a device passed explicitly (as a string or a ``torch.device``) gives
exactly the default's numbers, a device the machine lacks is refused with one line naming the
parameter (in the library and, before any kernel starts, in the runner), and no torch notebook or
torch module of iclcore hard-codes a device.
"""

from __future__ import annotations

import re
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from iclbook.devices import device_parameters
from iclbook.notebooks import NotebookError, read_notebook
from iclcore.models.training import to_device, torch_device

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
HAS_CUDA = torch.cuda.is_available()

#: Notebooks that train torch models and take a ``device`` parameter.
DEVICE_NOTEBOOKS = (
    "dmft_attention",
    "dmft_softmax",
    "dmft_width",
    "flexformer_decoder",
    "flexformer_encdec",
    "gd_probe",
    "gd_vonoswald",
    "logistic_probes",
    "pde_galerkin",
    "softmax_qk",
)


def test_cpu_names_and_device_objects_are_accepted():
    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "CPU", "cuda:", "tpu", "", "cpu:0:1", 0, None])
def test_unknown_device_names_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"^device: not a torch device"):
        torch_device(bad)


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a CUDA device")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:7"])
def test_cuda_without_a_gpu_is_refused_in_one_line(name):
    with pytest.raises(ValueError, match=r"^device: .*no CUDA device") as exc:
        torch_device(name)
    assert "\n" not in str(exc.value)


def test_cuda_index_beyond_the_machine_is_refused():
    with pytest.raises(ValueError, match=r"^device: 'cuda:64'"):
        torch_device("cuda:64")


def test_to_device_moves_tensors_of_dataclasses_tuples_and_namedtuples():
    @dataclass(frozen=True)
    class Batch:
        X: torch.Tensor
        n: int
        parts: tuple

    Pair = namedtuple("Pair", "a b")
    x = torch.arange(3.0)
    b = to_device(Batch(x, 4, (x, "label")), torch.device("cpu"))
    assert isinstance(b, Batch) and b.n == 4 and b.parts[1] == "label" and torch.equal(b.X, x)
    p = to_device(Pair(x, 2), "cpu")
    assert isinstance(p, Pair) and p.b == 2 and torch.equal(p.a, x)
    assert to_device("text", "cpu") == "text" and to_device(x, "cpu") is x


def test_probe_training_on_an_explicit_cpu_device_equals_the_default():
    """Every record and loss of a tiny gd_probe sweep (LSA and GPT): identical bits for the default,
    ``device="cpu"`` and ``torch.device("cpu")``."""
    from iclcore.gd.depth_probe import ProbeSweep, probe_training_run

    sweep = ProbeSweep(lsa_steps=3, gpt_steps=3, gpt_width=8, gpt_heads=2, n_probe=8, n_rich=4, m_rich=3, n_boot=4)
    for kind in ("lsa", "gpt"):
        runs = [
            probe_training_run(sweep, kind, 2, seed=0),
            probe_training_run(sweep, kind, 2, seed=0, device="cpu"),
            probe_training_run(sweep, kind, 2, seed=0, device=torch.device("cpu")),
        ]
        for r in runs[1:]:
            np.testing.assert_array_equal(r.curve, runs[0].curve)
            assert r.records == runs[0].records


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_probe_training_on_cuda_equals_the_cpu_to_rounding():
    """A tiny gd_probe sweep on the GPU: the same batches (drawn on the CPU), so the training losses
    agree with the CPU's to rounding. Error model as for the pinned losses: reordered reductions of
    length <= 64 move a result by <= 64 ulp, 3 steps amplify by <= 2, hence ``128 eps`` relative of
    the run's precision (float64 LSA, float32 GPT; TF32 is off by default in torch)."""
    from iclcore.gd.depth_probe import ProbeSweep, probe_training_run

    sweep = ProbeSweep(lsa_steps=3, gpt_steps=3, gpt_width=8, gpt_heads=2, n_probe=8, n_rich=4, m_rich=3, n_boot=4)
    for kind, eps in (("lsa", np.finfo(np.float64).eps), ("gpt", np.finfo(np.float32).eps)):
        cpu = probe_training_run(sweep, kind, 2, seed=0)
        gpu = probe_training_run(sweep, kind, 2, seed=0, device="cuda")
        np.testing.assert_allclose(gpu.curve, cpu.curve, rtol=128 * eps, atol=0.0)
        assert [r["step"] for r in gpu.records] == [r["step"] for r in cpu.records]


def test_probe_training_refuses_a_missing_device_before_training():
    from iclcore.gd.depth_probe import ProbeSweep, probe_training_sweep

    with pytest.raises(ValueError, match=r"^device: not a torch device: 'gpu'"):
        probe_training_sweep(ProbeSweep(lsa_steps=1, gpt_steps=1), device="gpu")


# --------------------------------------------------------------------------------------------
# the runner: `domain: device` parameters are checked before a kernel starts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DEVICE_NOTEBOOKS)
def test_torch_notebooks_declare_a_cpu_device_parameter(name):
    nb = read_notebook(ROOT / "notebooks" / f"{name}.py")
    assert device_parameters(nb.path) == {"device"}
    assert nb.parameters["device"] == "cpu"
    assert all("device" not in p for p in nb.presets.values())  # a preset never picks the hardware


@pytest.mark.parametrize(
    ("value", "message"),
    [("gpu", "is not a torch device"), ("cuda:x", "is not a torch device")]
    + ([] if HAS_CUDA else [("cuda", "no CUDA device"), ("cuda:7", "no CUDA device")]),
)
def test_the_runner_refuses_a_device_the_machine_lacks_naming_the_parameter(value, message):
    nb = read_notebook(ROOT / "notebooks" / "gd_probe.py")
    with pytest.raises(NotebookError, match=rf"^parameter 'device' = .*{message}.*notebooks/gd_probe\.py") as exc:
        nb.resolve("quick", {"device": value})
    assert "\n" not in str(exc.value)
    assert nb.resolve("quick", {"device": "cpu"})["device"] == "cpu"


def test_the_runner_checks_a_cpu_device_without_importing_torch():
    """``"cpu"`` is accepted from the string alone: resolving gd_probe's parameters imports no torch."""
    import subprocess
    import sys

    code = (
        "import sys; from iclbook.notebooks import read_notebook; "
        f"read_notebook({str(ROOT / 'notebooks' / 'gd_probe.py')!r}).resolve('quick', {{'device': 'cpu'}}); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


# --------------------------------------------------------------------------------------------
# nothing assumes a device (grep)
# --------------------------------------------------------------------------------------------

_TORCH_MODULES = sorted(
    p for p in (ROOT / "iclcore").rglob("*.py") if re.search(r"^\s*(import torch|from torch)", p.read_text(), re.M)
)


def test_no_torch_code_hard_codes_a_device():
    """No ``.cuda()`` moves and no ``device="cpu"`` except as a parameter default
    (``device: str | torch.device = "cpu"``) in iclcore's torch modules and the device notebooks."""
    files = _TORCH_MODULES + [ROOT / "notebooks" / f"{n}.py" for n in DEVICE_NOTEBOOKS]
    assert len(_TORCH_MODULES) >= 10
    bad = []
    for path in files:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if ".cuda(" in code or re.search(r"""device\s*=\s*["']c(pu|uda)""", code):
                if not re.search(r"""device: str \| torch\.device = "cpu"|^device = "cpu"$""", code.strip()):
                    bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


def _device_entry_points() -> set[str]:
    """Public functions and job dataclasses of iclcore's modules that take a ``device`` (the torch modules and
    the analyses that call them)."""
    import importlib
    import inspect

    names = set()
    for path in sorted((ROOT / "iclcore").rglob("[!_]*.py")):
        mod = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == mod.__name__:
                try:
                    params = inspect.signature(obj).parameters
                except (TypeError, ValueError):
                    continue
                if "device" in params:
                    names.add(name)
    return names


def test_every_notebook_that_trains_through_a_device_entry_point_passes_its_device():
    """A notebook that calls a training function or builds a job taking ``device`` declares the
    ``device`` parameter and passes ``device=device`` at every such call (counted per line)."""
    entry = _device_entry_points()
    assert {"probe_training_sweep", "SoftmaxRun", "ToyModelJob", "PreconditionerJob", "AttentionRun"} <= entry
    users, bad = set(), []
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        lines = path.read_text().splitlines()
        calls = [i for i, line in enumerate(lines) if any(re.search(rf"\b{n}\(", line) for n in entry)]
        if not calls:
            continue
        users.add(path.stem)
        if device_parameters(path) != {"device"}:
            bad.append(f"{path.stem}: no `device` parameter declared `domain: device`")
        for i in calls:  # the call may span a few lines
            if not any("device=device" in line for line in lines[i : i + 4]):
                bad.append(f"{path.stem}:{i + 1}: {lines[i].strip()[:60]} does not pass device=device")
    assert not bad, "\n".join(bad)
    assert users == set(DEVICE_NOTEBOOKS)


def test_the_device_enters_the_cache_key():
    """Two runs that differ only in the device are different runs of the store (a GPU's numbers are
    never served for a CPU request); the manifest records it with the other parameters."""
    from iclbook.runs import RunRequest
    from iclbook.store import cache_key

    nb = read_notebook(ROOT / "notebooks" / "gd_probe.py")
    params = nb.resolve("quick")
    keys = {
        cache_key(RunRequest(nb, {**params, "device": d}, "quick", Path("/nonexistent")), ROOT)
        for d in ("cpu", "cuda", "cuda:1")
    }
    assert len(keys) == 3
