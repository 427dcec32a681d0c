"""Every notebook parameter declares its domain, checked without a kernel.

A parameter line declares the values it accepts in its trailing comment (``# ...; range: [1, inf)``
or ``# choices: [...]``, see :mod:`iclbook.notebooks`); the runner refuses a value outside it before a
kernel starts, with an error naming the parameter, the value and the domain. These tests read the
notebooks statically (``iclbook.notebooks``): every parameter has a domain, every preset (``quick``
included) lies inside it, and values outside a domain (``proof_ladder -p cond 0.5``, a condition number
below 1; ``nan``, ``-1``, ``inf``) are refused up front instead of failing deep inside numpy.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from iclbook.devices import device_parameters
from iclbook.notebooks import BOOL_DOMAIN, Notebook, NotebookError, discover_all

ROOT = Path(__file__).resolve().parents[2]


def _notebooks() -> dict[str, Notebook]:
    good, bad = discover_all(ROOT)
    assert not bad, "unreadable notebooks: " + "; ".join(f"{k}: {v}" for k, v in bad.items())
    return {nb.name: nb for nb in good}


NOTEBOOKS = _notebooks()


def test_every_parameter_declares_a_domain() -> None:
    missing = [
        f"{nb.name}.{key} = {value!r}"
        for nb in NOTEBOOKS.values()
        for key, value in nb.parameters.items()
        if key not in nb.ranges and key not in device_parameters(nb.path)
    ]
    assert not missing, (
        f"{len(missing)} parameters without a declared domain (add `; range: [lo, hi]`, "
        "`; choices: [...]` or `; domain: device` to the line's comment): " + ", ".join(missing)
    )


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_presets_lie_inside_their_domains(name: str) -> None:
    nb = NOTEBOOKS[name]
    outside = []
    for preset in nb.preset_names:
        values = {**nb.parameters, **nb.presets.get(preset, {})}
        for key, value in values.items():
            if key in nb.ranges and not nb.ranges[key].contains(value):
                outside.append(f"{preset}: {key} = {value!r} outside {nb.ranges[key].describe()}")
        assert nb.resolve(preset) == values
    assert not outside, "; ".join(outside)


@pytest.mark.parametrize("raw", ["0.5", "nan", "-1", "inf"])
def test_proof_ladder_refuses_a_condition_number_below_one_or_not_finite(raw: str) -> None:
    nb = NOTEBOOKS["proof_ladder"]
    domain = nb.ranges["cond"].describe()
    assert domain == "[1, inf)"
    with pytest.raises(NotebookError) as info:
        nb.resolve(overrides={"cond": raw})
    message = str(info.value)
    assert "'cond'" in message
    assert repr(float(raw)) in message  # the value as read: 0.5, nan, -1.0, inf
    assert domain in message


def test_proof_ladder_accepts_the_edge_of_its_condition_domain() -> None:
    nb = NOTEBOOKS["proof_ladder"]
    assert nb.resolve(overrides={"cond": "1"})["cond"] == 1.0
    assert nb.resolve(overrides={"cond": "1e6"})["cond"] == 1e6
    assert math.isinf(nb.ranges["cond"].hi) and nb.ranges["cond"].hi_open


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_papermill_reads_every_parameter_line(name: str, caplog) -> None:
    """Plain papermill infers each parameter from its line; a second '=' (in the comment) makes it warn
    'Unable to parse line' and skip the parameter, so parameter comments avoid '='."""
    jupytext = pytest.importorskip("jupytext")
    translators = pytest.importorskip("papermill.translators")
    nb = jupytext.read(NOTEBOOKS[name].path)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = {p.name for p in translators.PythonTranslator.inspect(cell)}
    assert not [r.getMessage() for r in caplog.records if "Unable to parse" in r.getMessage()]
    assert set(NOTEBOOKS[name].parameters) <= found


def test_a_flag_needs_no_declaration_its_type_is_its_domain() -> None:
    """``gpt_compile = False`` declares nothing: its domain is ``[False, True]``; the command line's
    ``true`` is read as True, and another number or word is refused with the parameter's name."""
    nb = NOTEBOOKS["gd_probe"]
    assert nb.ranges["gpt_compile"] == BOOL_DOMAIN and nb.ranges["gpt_compile"].describe() == "one of False, True"
    assert nb.resolve(overrides={"gpt_compile": "true"})["gpt_compile"] is True
    for raw in ("2", "maybe", 1, 2.0):
        with pytest.raises(NotebookError, match="gpt_compile"):
            nb.resolve(overrides={"gpt_compile": raw})
