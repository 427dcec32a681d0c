"""The runner's child process imports papermill without jsonschema's IRI checker (1.2 CPU-s per run)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from iclbook.loaders import import_without_iri_checker
papermill = import_without_iri_checker("papermill")
import jupytext, nbformat
assert "rfc3987_syntax" not in sys.modules, "the IRI checker was imported"
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
nbformat.validate(nb)  # validation still works: no notebook schema uses a format keyword
bad = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "nope"}]})
try:
    nbformat.validate(bad)
except nbformat.ValidationError:
    pass
else:
    raise AssertionError("an invalid notebook passed")
import rfc3987_syntax  # the mask is gone once jsonschema is imported
"""


def test_papermill_comes_without_the_iri_syntax_checker_and_nbformat_still_validates() -> None:
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_child_and_the_html_build_use_it() -> None:
    from pathlib import Path

    import iclbook

    here = Path(iclbook.__file__).parent
    assert 'import_without_iri_checker("papermill")' in (here / "_child.py").read_text()
    assert "import_without_iri_checker as imp" in (here / "cli.py").read_text()
