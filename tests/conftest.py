"""Shared fixtures of the test suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    """A throw-away project root with two small notebooks and its own `iclcore/` folder."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "demo_project", root)
    (root / "iclcore").mkdir()
    (root / "iclcore" / "module.py").write_text("X = 1\n")
    (root / "requirements.lock").write_text("numpy==0\n")
    return root
