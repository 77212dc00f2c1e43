"""Packaging: the wheel's metadata (license, the core's dependency list) and importing from next
to a clone."""

from __future__ import annotations

import os
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
NOT_IN_CORE = re.compile(
    r"^(sphinx.*|furo|numpydoc|myst-.*|jupytext|pytest.*|hypothesis|import-linter|ray|rich|"
    r"torchode|diffrax|jax|gymnasium|pyarrow|kumo-.*|pandas|torchdiffeq|numba|llvmlite)$",
    re.IGNORECASE,
)


def _requirement_name(line: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0]


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory) -> tuple[str, list[str]]:
    """Build the wheel offline from a copy of the sources (the worktree stays clean); its
    METADATA and file names."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "src" / "dynkit",
        src / "src" / "dynkit",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    out = src / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        cwd=src,
        capture_output=True,
        text=True,
    )
    (wheel,) = out.glob("dynkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    return metadata, names


def test_wheel_core_dependencies_carry_no_doc_toolchain(wheel_metadata):
    metadata, _ = wheel_metadata
    requires = [
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = [_requirement_name(r) for r in requires if "extra ==" not in r]
    extras = [_requirement_name(r) for r in requires if "extra ==" in r]
    assert {"numpy", "scipy", "sympy", "torch", "Jinja2", "latex2mathml"} <= set(core), core
    assert not [name for name in core if NOT_IN_CORE.match(name)], core
    # the doc toolchain (and MathJax for the Sphinx pages) is still installable, from the extras
    assert {"sphinx", "sphinx-mathjax-offline", "rich", "torchdiffeq", "numba"} <= set(extras)


def core_closure(requirements: list[str]) -> dict[str, str | None]:
    """Every distribution a core install pulls in (``requirements`` and theirs, extras off), name
    -> installed version, resolved against this environment's metadata (None: not installed
    here)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    seen: dict[str, str | None] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            seen[name] = None
            continue
        seen[name] = dist.version
        todo += [Requirement(r) for r in dist.requires or []]
    return seen


def test_a_core_install_pulls_no_doc_toolchain(wheel_metadata):
    """The whole dependency tree of ``pip install dynkit`` (no extras), as installed here: no
    Sphinx, docutils, Jupyter. (The issue counted 69 packages, 20 of them the Sphinx stack, when
    MathJax came from the core.)"""
    metadata, _ = wheel_metadata
    requires = [
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    closure = core_closure([r for r in requires if "extra ==" not in r])
    assert None not in closure.values(), [n for n, v in closure.items() if v is None]
    doc_stack = re.compile(
        r"^(sphinx.*|docutils|alabaster|babel|imagesize|snowballstemmer|furo|myst-.*|jupyter.*|"
        r"nbformat|ipykernel|pygments|rich)$"
    )
    assert not [name for name in closure if doc_stack.match(name)], sorted(closure)
    assert len(closure) <= 40, sorted(
        closure
    )  # 30 measured (torch, scipy, matplotlib, sklearn and theirs)
    # planted: the docs extra's tree does hold the Sphinx stack
    docs = core_closure([r.split(";")[0] for r in requires if 'extra == "docs"' in r])
    assert [name for name in docs if doc_stack.match(name)]


def test_planted_sphinx_in_core_is_caught():
    """The check above is not vacuous: a Sphinx requirement in the core list matches NOT_IN_CORE."""
    assert NOT_IN_CORE.match(_requirement_name("sphinx-mathjax-offline>=0.0.2"))
    assert NOT_IN_CORE.match(_requirement_name("Sphinx>=8; python_version >= '3.11'"))
    assert not NOT_IN_CORE.match(_requirement_name("scipy>=1.10"))


def test_wheel_license_is_spdx_bsd_3_clause_with_its_text(wheel_metadata):
    metadata, names = wheel_metadata
    headers = metadata.split("\n\n", 1)[
        0
    ].splitlines()  # the README (long description) follows a blank line
    assert "License-Expression: BSD-3-Clause" in headers
    assert not any(line.startswith("License: ") for line in headers)  # the deprecated table form
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    assert not [
        n for n in names if n.startswith(("tests/", "docs/", "analysis/")) or n == "__init__.py"
    ]


def _import_from(folder: Path, path: str | None = None) -> subprocess.CompletedProcess:
    code = (
        "import dynkit as dk, numpy as np; print(dk.__file__); "
        "print(dk.solve(lambda t, y: -y, np.ones(1), [0, 1]).success)"
    )
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if path is not None:
        env["PYTHONPATH"] = path
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_package_lives_in_src_and_the_clone_root_is_no_package():
    """The src layout: ``make install``'s editable install puts ``src/`` on ``sys.path`` (a static
    path entry), and the clone's root holds no ``__init__.py`` that could pose as the package."""
    assert (ROOT / "src" / "dynkit" / "__init__.py").is_file()
    assert not (ROOT / "__init__.py").exists() and not (ROOT / "dynkit").exists()


def test_a_script_next_to_a_clone_imports_the_package_not_the_folder(tmp_path):
    """A clone named ``dynkit/`` in the script's folder is a namespace-package candidate only; a
    regular package on any later path entry wins over it (the import system's rule), so
    ``import dynkit`` from beside the clone gives the package in ``src/``."""
    (tmp_path / "dynkit").symlink_to(ROOT, target_is_directory=True)
    run = _import_from(tmp_path, path=str(tmp_path / "dynkit" / "src"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        str(tmp_path / "dynkit" / "src" / "dynkit" / "__init__.py"),
        "True",
    ]
    # with the environment's own install (no PYTHONPATH): the package, not the folder
    (tmp_path / "elsewhere").mkdir()
    installed = _import_from(tmp_path / "elsewhere")
    beside = _import_from(tmp_path)
    assert beside.returncode == 0, beside.stderr
    assert beside.stdout == installed.stdout and beside.stdout.split()[-1] == "True"
    # planted: the package on no path entry at all (-S: not even the environment's install) -- the
    # folder binds as an empty namespace package
    run = subprocess.run(
        [sys.executable, "-S", "-c", "import dynkit; dynkit.solve"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0 and "has no attribute 'solve'" in run.stderr
