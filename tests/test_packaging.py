"""Packaging: the wheel's metadata (license, the core's dependency list) and importing from next to a clone."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Never in the core install: the doc toolchain (Sphinx pulls ~20 packages), test and cluster tools,
# optional peers. `make test` / `make docs` get them from the extras (Makefile).
NOT_IN_CORE = re.compile(r"^(sphinx.*|furo|numpydoc|myst-.*|jupytext|pytest.*|hypothesis|import-linter|ray|rich|"
                         r"torchode|diffrax|jax|gymnasium|pyarrow|kumo-.*|pandas)$", re.IGNORECASE)


def _requirement_name(line: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0]


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory) -> tuple[str, list[str]]:
    """Build the wheel offline from a copy of the sources (the worktree stays clean); its METADATA and file names."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "dynkit", src / "dynkit", ignore=shutil.ignore_patterns("__pycache__"))
    out = src / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(src)], check=True, cwd=src, capture_output=True, text=True)
    (wheel,) = out.glob("dynkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    return metadata, names


def test_wheel_core_dependencies_carry_no_doc_toolchain(wheel_metadata):
    metadata, _ = wheel_metadata
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [_requirement_name(r) for r in requires if "extra ==" not in r]
    extras = [_requirement_name(r) for r in requires if "extra ==" in r]
    assert {"numpy", "scipy", "sympy", "torch", "Jinja2", "latex2mathml"} <= set(core), core
    assert not [name for name in core if NOT_IN_CORE.match(name)], core
    # the doc toolchain (and MathJax for the Sphinx pages) is still installable, from the extras
    assert {"sphinx", "sphinx-mathjax-offline", "rich"} <= set(extras)


def test_planted_sphinx_in_core_is_caught():
    """The check above is not vacuous: a Sphinx requirement in the core list matches NOT_IN_CORE."""
    assert NOT_IN_CORE.match(_requirement_name("sphinx-mathjax-offline>=0.0.2"))
    assert NOT_IN_CORE.match(_requirement_name("Sphinx>=8; python_version >= '3.11'"))
    assert not NOT_IN_CORE.match(_requirement_name("scipy>=1.10"))


def test_wheel_license_is_spdx_bsd_3_clause_with_its_text(wheel_metadata):
    metadata, names = wheel_metadata
    headers = metadata.split("\n\n", 1)[0].splitlines()  # the README (long description) follows a blank line
    assert "License-Expression: BSD-3-Clause" in headers
    assert not any(line.startswith("License: ") for line in headers)  # the deprecated table form
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    assert not [n for n in names if n.startswith(("tests/", "docs/", "analysis/")) or n == "__init__.py"]


def _import_from(folder: Path) -> subprocess.CompletedProcess:
    code = ("import dynkit as dk, numpy as np; print(dk.__file__); "
            "print(dk.solve(lambda t, y: -y, np.ones(1), [0, 1]).success)")
    return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_script_next_to_a_clone_imports_the_package_not_the_folder(tmp_path):
    """A clone named ``dynkit/`` in the script's folder: ``import dynkit`` gives the package inside it."""
    (tmp_path / "with_guard").mkdir()
    (tmp_path / "with_guard" / "dynkit").symlink_to(ROOT, target_is_directory=True)
    run = _import_from(tmp_path / "with_guard")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(tmp_path / "with_guard" / "dynkit" / "dynkit" / "__init__.py"), "True"]
    # planted: the same clone without the repository's __init__.py imports as an empty namespace package
    clone = tmp_path / "without_guard" / "dynkit"
    clone.mkdir(parents=True)
    (clone / "dynkit").symlink_to(ROOT / "dynkit", target_is_directory=True)
    # (-S: no site-packages, so that an installed dynkit cannot stand in for the missing guard)
    run = subprocess.run([sys.executable, "-S", "-c", "import dynkit; dynkit.solve"], cwd=clone.parent,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "has no attribute 'solve'" in run.stderr
