"""The notebooks of notebooks/: jupytext percent-format scripts (no stored outputs), listed in the
docs.

Each asserts its own results, so running it is a test: the docs build runs every one at its small
size (`DYNKIT_NOTEBOOK_SMALL=1`) and renders it with its figures (tests/test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


def test_there_are_notebooks_and_the_docs_list_them():
    names = {p.name for p in NOTEBOOKS}
    assert {
        "hbnode_adjoint.py",
        "nfe_vs_tolerance.py",
        "momentum_resnet_maps.py",
        "ark_vs_rk.py",
    } <= names
    listing = (ROOT / "docs" / "guide" / "notebooks.md").read_text()
    assert all(f"`{n}`" in listing for n in names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_percent_format(path):
    text = path.read_text()
    assert "format_name: percent" in text.split("# ---", 2)[1]  # the jupytext header
    cells = re.findall(r"^# %%", text, flags=re.M)
    assert len(cells) >= 4


def test_the_docs_execute_every_notebook_and_fail_on_an_error():
    # Running the notebooks is part of the docs build (tests/test_docs.py builds the docs and
    # asserts each notebook's page with its figures): myst-nb executes them at their small size, and
    # a failing cell (each notebook asserts its own results) fails the build. So they are not run a
    # second time here.
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'nb_execution_mode = "force"' in conf and "nb_execution_raise_on_error = True" in conf
    assert 'os.environ.setdefault("DYNKIT_NOTEBOOK_SMALL", "1")' in conf
    pages = (ROOT / "docs" / "_ext" / "dynkit_pages.py").read_text()
    assert 'notebook_pages(out / "notebooks", Path(app.srcdir).parent / "notebooks")' in pages


def test_no_notebook_picks_the_matplotlib_backend():
    for (
        path
    ) in NOTEBOOKS:  # matplotlib.use("Agg") would blank the figures in Jupyter and in the docs
        assert not re.search(r"matplotlib\.use\(", path.read_text()), path.name


def test_the_nfe_notebook_shows_the_results_of_record_not_the_solvers_floor():
    # The forced-small run sits at the solver's floor (every value 20.0 ± 0.0): the docs show the
    # committed results instead, which span the tolerances; the notebook asserts they are off the
    # floor.
    text = (ROOT / "notebooks" / "nfe_vs_tolerance.py").read_text()
    assert '"analysis" / "results" / "node_trained"' in text
    import json

    record = json.loads(
        (ROOT / "analysis" / "results" / "node_trained" / "results.json").read_text()
    )
    tight = [m for m in record["metrics"] if m.startswith("node.forward_nfe@")]
    assert (
        len(tight) >= 4
        and record["metrics"][max(tight, key=lambda m: -float(m.split("@")[1]))]["mean"] > 20.0
    )
    assert (
        text.count("invert_xaxis()") == 1
    )  # one figure, one direction (loose to tight, as in the report)


def _visible_code_before_the_first_figure(path: Path) -> list[str]:
    """The code cells a reader sees (not collapsed by myst-nb's ``hide-input`` tag) above the
    first figure."""
    import jupytext

    visible = []
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code" and "plt.show()" in cell.source:
            return visible
        if cell.cell_type == "code" and "hide-input" not in cell.metadata.get("tags", []):
            visible.append(cell.source.splitlines()[0])
    return [*visible, "(no figure at all)"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_opens_with_its_figure(path, tmp_path):
    """Above the first figure there is only text and collapsed code (imports, helpers, the
    computation it shows), so the page's first screen shows it (tests/test_docs.py measures that
    in Chromium). Planted: the same notebook with its cells uncollapsed is caught."""
    assert _visible_code_before_the_first_figure(path) == []
    planted = tmp_path / path.name
    planted.write_text(path.read_text().replace('# %% tags=["hide-input"]', "# %%"))
    assert _visible_code_before_the_first_figure(planted)
