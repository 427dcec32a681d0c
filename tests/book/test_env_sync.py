"""pyproject.toml, requirements.lock and environment.yml describe one environment."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def lock() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert m, f"requirements.lock: {line!r} is not a `name==version` pin"
        pins[canonicalize_name(m.group(1))] = Version(m.group(2))
    return pins


def all_requirements() -> list[Requirement]:
    project = pyproject()["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in ("book", "test"):
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def test_lock_pins_every_declared_dependency_within_its_range() -> None:
    pins = lock()
    for req in all_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared in pyproject.toml but not pinned in requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"lock pins {name}=={pins[name]}, outside {req.specifier}"
        )


def test_torch_is_the_local_cpu_release() -> None:
    assert "torch==2.13.0" in pyproject()["project"]["dependencies"]
    pins = [ln for ln in (ROOT / "requirements.lock").read_text().splitlines() if not ln.startswith("#")]
    assert "torch==2.13.0" in pins
    assert not [ln for ln in pins if "+" in ln], "local version labels (+cpu) exist only on download.pytorch.org"


def test_environment_yml_is_a_thin_pip_wrapper() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    python = [d for d in deps if isinstance(d, str) and d.startswith("python")]
    assert python == ["python=3.11"]
    requires = pyproject()["project"]["requires-python"]
    assert "3.11" in requires
    pip_lines = [d for d in deps if isinstance(d, dict)][0]["pip"]
    extras = ",".join(pyproject()["project"]["optional-dependencies"])
    assert pip_lines == ["-c requirements.lock", f"-e .[{extras}]"]
    # nothing else is installed by conda behind pyproject's back
    assert sorted(d for d in deps if isinstance(d, str)) == ["pip", "python=3.11"]


def test_console_script_is_declared() -> None:
    assert pyproject()["project"]["scripts"]["icl-book"] == "iclbook.cli:main"
