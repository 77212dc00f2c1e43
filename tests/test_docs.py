"""The Sphinx docs: a fresh build with warnings as errors, and the pages generated from dynkit.

The full build runs on a fresh copy of docs/ (no generated/ or _build/ left over) exactly as
`make docs` does. The page generators are also checked directly with the contract fakes, so the
derivation and proposition pages are tested whether or not those components are in this build.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import component_fakes as fakes  # noqa: E402
import dynkit_pages  # noqa: E402

from dynkit.report import ComponentUnavailable, require  # noqa: E402


def _available(dotted: str) -> bool:
    try:
        require(dotted)
        return True
    except ComponentUnavailable:
        return False


@pytest.mark.slow
def test_docs_build_from_fresh_copy_with_warnings_as_errors(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", src, ignore=shutil.ignore_patterns("_build", "generated"))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DYNKIT_DOCS_INSTANCES="5")
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for page in ("index", "api", "guide/steppers", "guide/nfe", "guide/stiffness", "guide/training",
                 "guide/nfe_vs_tolerance", "guide/notebooks", "generated/cli", "generated/derivations/index",
                 "generated/propositions/index"):
        assert (out / f"{page}.html").exists(), page
    derivations = (out / "generated/derivations/index.html").read_text()
    assert ("Not available in this build" in derivations) != _available("symbolic.DERIVATIONS")
    propositions = (out / "generated/propositions/index.html").read_text()
    assert ("Not available in this build" in propositions) != _available("theory.run_all")
    # The methods table is computed at build time from the real solver, one row per method.
    steppers = (out / "guide/steppers.html").read_text()
    import dynkit as dk

    assert all(f'<span class="pre">{m}</span>' in steppers for m in dk.solvers.METHODS)
    assert "dynkit.solvers.solve" in (out / "api.html").read_text()
    assert "dynkit nfe-sweep" in (out / "generated/cli.html").read_text()


def test_derivation_pages_from_the_contract(tmp_path):
    warnings = []
    dynkit_pages.derivation_pages(tmp_path, fakes.DERIVATIONS, warn=warnings.append)
    ok = (tmp_path / "fake_heavy_ball.md").read_text()
    assert ok.startswith("# FAKE heavy-ball limit\n") and "*FAKE paper, Eq. (99).*" in ok
    assert "```{math}\n\\beta \\frac{d}{d t} x{\\left(t \\right)}" in ok  # sympy's LaTeX in a math block
    assert "**matches**" in ok
    assert "does not match" in (tmp_path / "fake_failing.md").read_text()
    index = (tmp_path / "index.md").read_text()
    assert "```{toctree}" in index and "\nfake_heavy_ball\nfake_failing\n" in index
    assert warnings == []


def test_a_raising_derivation_is_a_build_warning(tmp_path):
    def broken():
        raise RuntimeError("sympy gave up")

    warnings = []
    dynkit_pages.derivation_pages(tmp_path, {"broken": broken}, warn=warnings.append)
    assert warnings == ["dynkit.symbolic.DERIVATIONS['broken'] raised RuntimeError: sympy gave up"]


def test_proposition_pages_from_the_contract(tmp_path):
    dynkit_pages.proposition_pages(tmp_path, fakes.CLAIMS, fakes.run_all, 7)
    page = (tmp_path / "fake_true.md").read_text()
    assert page.startswith("# fake_true: FAKE paper, Prop. 1")
    assert "**Statement.** A statement that holds." in page and "- f is smooth" in page
    assert "| fake_true | FAKE paper | Prop. 1 | 7 | 7/7 | holds | 1e-14 | 1e-10 |" in page
    index = (tmp_path / "index.md").read_text()
    assert "| fake_false | FAKE paper | Prop. 2 | 7 | 6/7 | **FAILS** | 0.5 | 1e-10 |" in index


def test_absent_component_page_says_so(tmp_path):
    exc = ComponentUnavailable("dynkit.theory.run_all is not installed in this build")
    dynkit_pages.proposition_pages(tmp_path, None, None, 5, exc)
    assert "Not available in this build: dynkit.theory.run_all is not installed" in (tmp_path / "index.md").read_text()
