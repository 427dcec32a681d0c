"""The ``Examples`` sections of the foundation family ``iclcore.lsq`` and of the utilities
``iclcore.stats`` and ``iclcore.validation`` run and give what they show.

Each public function of these modules (and, in the utilities, each public method or property of their
classes) carries a tiny seeded example (shapes, ``np.allclose``, rounded numbers: robust to platform
rounding). ``pytest --doctest-modules iclcore/lsq
iclcore/stats.py iclcore/validation.py`` runs the same examples.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

import iclcore.lsq

UTILITIES = ["iclcore.stats", "iclcore.validation"]
MODULES = [m.name for m in pkgutil.iter_modules(iclcore.lsq.__path__, "iclcore.lsq.") if "._" not in m.name] + UTILITIES


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, report=True, verbose=False)
    assert result.attempted > 0, f"{name}: no examples found"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (see the output)"


@pytest.mark.parametrize("name", MODULES)
def test_every_public_function_has_an_example(name: str) -> None:
    module = importlib.import_module(name)
    missing = [
        member
        for member in module.__all__
        if inspect.isfunction(getattr(module, member)) and ">>>" not in (inspect.getdoc(getattr(module, member)) or "")
    ]
    assert not missing, f"{name}: public functions without an Examples section: {missing}"


def _public_members(cls: type) -> list[tuple[str, object]]:
    """The public methods and properties ``cls`` defines itself (dataclass machinery left out)."""
    out = []
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        target = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if inspect.isfunction(target):
            out.append((attr, target))
    return out


@pytest.mark.parametrize("name", UTILITIES)
def test_every_public_method_and_property_has_an_example(name: str) -> None:
    module = importlib.import_module(name)
    missing = [
        f"{member}.{attr}"
        for member in module.__all__
        if inspect.isclass(cls := getattr(module, member)) and cls.__module__ == module.__name__
        for attr, target in _public_members(cls)
        if ">>>" not in (inspect.getdoc(target) or "")
    ]
    assert not missing, f"{name}: public methods or properties without an Examples section: {missing}"
