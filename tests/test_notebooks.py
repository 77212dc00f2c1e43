"""Every notebook in notebooks/ runs top to bottom at its small size, as a script in a fresh process.

The notebooks are jupytext percent-format scripts (no stored outputs); each asserts its own
results, so running it is a test. `DYNKIT_NOTEBOOK_SMALL=1` selects the small sizes.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


def test_there_are_notebooks_and_the_docs_list_them():
    names = {p.name for p in NOTEBOOKS}
    assert {"hbnode_adjoint.py", "nfe_vs_tolerance.py", "momentum_resnet_maps.py", "ark_vs_rk.py"} <= names
    listing = (ROOT / "docs" / "guide" / "notebooks.md").read_text()
    assert all(f"`{n}`" in listing for n in names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_percent_format(path):
    text = path.read_text()
    assert "format_name: percent" in text.split("# ---", 2)[1]  # the jupytext header
    cells = re.findall(r"^# %%", text, flags=re.M)
    assert len(cells) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    env = dict(os.environ, DYNKIT_NOTEBOOK_SMALL="1", MPLBACKEND="Agg", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
