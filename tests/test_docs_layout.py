"""The docs' layout at 1280 x 800 in headless Chromium: nothing cut off, the notebooks open with
their figure.

The checks (tests/browser.py, :data:`~browser.LAYOUT_PROBE`) run on the real docs in the slow docs
build (tests/test_docs.py). Here they run on a small site built with the same theme, the same
stylesheet (docs/_static/dynkit.css) and the same offline MathJax: a wide display equation (and one
as a notebook prints it, without furo's wrapper), a wide code block, a ledger-like table of 12
columns and a page that opens with a figure. Each check passes there and fails on a planted
violation: the stylesheet left out, overflow hidden injected, the figure pushed below the first
screen. Scrollbars are overlays (they show only while scrolling), so a scrolling box passes only
where the stylesheet makes its scrollbar stay.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import dynkit_pages  # noqa: E402
from browser import layout, layout_problems  # noqa: E402

SCREEN = (1280, 800)

# A sympy-sized equation: a row of 14 partial derivatives is about twice the content column's width.
WIDE_TEX = (
    r"\dot a_h = \left[\begin{matrix}"
    + " & ".join(
        rf"- a_{{v{i}}} \frac{{\partial}}{{\partial h_{{{i}}}}} "
        rf"f_{{{i}}}{{\left(h_{{1}},h_{{2}},v_{{1}},v_{{2}},t \right)}}"
        for i in range(14)
    )
    + r"\end{matrix}\right]"
)
# Cells as the ledger has them (prose, identifiers, intervals, labels), twelve columns.
LEDGER_HEADER = [
    "claim",
    "paper",
    "metric",
    "family / level",
    "interval method",
    "sign count",
    "baseline (ours)",
    "baseline (authors')",
    "effect [95% CI]",
    "n (agree)",
    "outcome",
    "reason or seeds needed",
]
LEDGER_ROW = [
    "GHBNODE needs fewer backward NFE per training batch than NODE "
    "(``review.ghbnode_backward_nfe_per_epoch``)",
    "Wang et al., momentum review, Figs. 6, 10 (MNIST/PMNIST; digits here)",
    "backward NFE GHBNODE / NODE, last training epoch (fashion_mnist_permuted, trained at "
    "rtol 1e-5)",
    "review · NFE per epoch",
    "paired t on log ratios",
    "5 of 5 negative (p = 0.06)",
    "NODE 123.4 ± 5.6 NFE",
    "MNIST, Fig. 6: 110 NFE",
    "log -0.176 [-0.275, -0.0766]",
    "5 (5)",
    "inconclusive",
    "trained: node.final_loss_median <= 0.5 (binary cross-entropy; the trivial predictor "
    "scores 0.637) fails in seed 7; momentum_lstm_fashion_mnist needs 9 seeds",
]


def _rst_table(header: list[str], rows: list[list[str]]) -> str:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines += [f"   * - {row[0]}", *[f"     - {cell}" for cell in row[1:]]]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A three-page Sphinx site with furo, docs/_static/dynkit.css and the docs' offline MathJax."""
    src = tmp_path_factory.mktemp("site")
    dynkit_pages.mathjax_static(src / "_mathjax")
    (src / "heavy_ball.png").write_bytes(
        (ROOT / "docs" / "_static" / "heavy_ball.png").read_bytes()
    )
    (src / "conf.py").write_text(
        "extensions = ['sphinx.ext.mathjax']\nhtml_theme = 'furo'\n"
        f"html_static_path = [{str(ROOT / 'docs' / '_static')!r}, "
        f"'_mathjax']\nhtml_css_files = ['dynkit.css']\n"
        "mathjax_path = 'mathjax/tex-svg-full.js'\nexclude_patterns = ['_build']\n"
    )
    (src / "index.rst").write_text(
        "Site\n====\n\n.. toctree::\n\n   equations\n   ledger\n   notebook\n"
    )
    long_line = "y = solve(f, y0, t)  # " + "a comment that runs on " * 6
    (src / "equations.rst").write_text(
        "Equations\n=========\n\nA wide display equation:\n\n.. math::\n\n   " + WIDE_TEX + "\n\n"
        "The same as a notebook prints it (no furo wrapper):\n\n.. raw:: html\n\n"
        f'   <div class="math notranslate nohighlight">\\[{WIDE_TEX}\\]</div>\n\n'
        f"A wide code block:\n\n.. code-block:: python\n\n   {long_line}\n"
    )
    (src / "ledger.rst").write_text(
        "Ledger\n======\n\n" + _rst_table(LEDGER_HEADER, [LEDGER_ROW] * 6)
    )
    (src / "notebook.rst").write_text(
        "A notebook\n==========\n\nWhat it shows, in two lines.\n\n"
        ".. image:: heavy_ball.png\n\nThe rest of the page.\n"
    )
    out = src / "_build"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def _planted(page: Path, name: str, edit) -> Path:
    """A copy of ``page`` beside it (its links still resolve), changed by ``edit``."""
    copy = page.with_name(f"{name}_{page.name}")
    html = page.read_text()
    changed = edit(html)
    assert changed != html, f"the planted change {name!r} did not apply"
    copy.write_text(changed)
    return copy


def _without_stylesheet(html: str) -> str:
    return re.sub(r'<link[^>]+href="_static/dynkit\.css[^"]*"[^>]*>', "", html)


def test_wide_equations_and_code_scroll_with_a_scrollbar_that_stays(site):
    found = layout(site / "equations.html", *SCREEN)
    kinds = {(item["kind"], item["layout"]) for item in found["boxes"]}
    # not vacuous: both equations and the code are wider than the column, and they scroll
    assert {("equation", "scrolls"), ("code", "scrolls")} <= kinds, found["boxes"]
    assert sum(item["kind"] == "equation" for item in found["boxes"]) == 2
    assert layout_problems(found) == []


def test_the_layout_check_catches_clipped_and_invisibly_scrolling_equations(site):
    page = site / "equations.html"
    hidden = _planted(
        page,
        "hidden",
        lambda h: h.replace(
            "</head>",
            "<style>article[role=main] div.math{overflow-x:hidden !important}</style></head>",
        ),
    )
    problems = layout_problems(layout(hidden, *SCREEN))
    assert sum(p.startswith("equation clipped") for p in problems) == 2, problems
    bare = _planted(
        page, "bare", _without_stylesheet
    )  # furo alone: overlay scrollbars, no wrapper in notebooks
    problems = layout_problems(layout(bare, *SCREEN))
    assert any(p.startswith("equation hidden scrollbar") for p in problems), problems
    assert any(p.startswith("equation beyond the") for p in problems), (
        problems
    )  # the article's or the window's edge
    assert any(p.startswith("code hidden scrollbar") for p in problems), problems


def test_a_twelve_column_ledger_fits_at_1280_px_and_the_check_sees_when_it_does_not(site):
    page = site / "ledger.html"
    found = layout(page, *SCREEN)
    tables = [item for item in found["boxes"] if item["kind"] == "table"]
    assert len(tables) == 1 and layout_problems(found, must_fit=("table",)) == [], tables
    problems = layout_problems(
        layout(_planted(page, "bare", _without_stylesheet), *SCREEN), must_fit=("table",)
    )
    assert problems and all(p.startswith("table ") and "fits" not in p for p in problems), problems


def test_the_first_figure_is_on_the_first_screen_and_the_check_sees_it_pushed_down(site):
    page = site / "notebook.html"
    found = layout(page, *SCREEN)
    assert 600 <= found["viewport"] <= SCREEN[1]  # the window less its frame: what a reader sees
    assert (
        found["first_figure_top"] is not None and found["first_figure_top"] < found["viewport"]
    ), found
    pushed = _planted(
        page, "pushed", lambda h: h.replace("<img ", '<div style="height:900px"></div><img ', 1)
    )
    found = layout(pushed, *SCREEN)
    assert found["first_figure_top"] > found["viewport"], found
