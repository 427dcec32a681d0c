"""The ``Examples`` sections of the foundation family ``iclcore.lsq`` and of the utilities
``iclcore.stats`` and ``iclcore.validation`` run and give what they show.

Each public function of these modules carries a tiny seeded example (shapes, ``np.allclose``,
rounded numbers: robust to platform rounding). ``pytest --doctest-modules iclcore/lsq
iclcore/stats.py iclcore/validation.py`` runs the same examples.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import iclcore.lsq

MODULES = [f"iclcore.lsq.{name}" for name in iclcore.lsq.__all__] + ["iclcore.stats", "iclcore.validation"]


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
