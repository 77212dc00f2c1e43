"""The report in a real headless browser (Chromium), offline: a short first screen and every
equation drawn.

The report is the whole quick one that tests/test_report.py reads (conftest's ``quick_report``,
built once per worker): the real derivations (every equation dynkit ships), the real claim table,
the real ledger and every figure. Its equations are MathML made at generation time: the page has
no script, and the probe (tests/browser.py) proves that Chromium lays out every <math> element
natively, that none is an error and that no raw TeX is left. Each check is also run on a planted
violation and must fail there.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser import mathml_problems, probe, remote_references  # noqa: E402


SCREEN = (1280, 800)  # a laptop screen: the first figure must start within two of them


@pytest.fixture(scope="module")
def report_page(quick_report) -> Path:
    return quick_report / "report.html"


@pytest.fixture(scope="module")
def probed(report_page, tmp_path_factory):
    return probe(report_page, tmp_path_factory.mktemp("probe"), *SCREEN)


def _equations(html: str) -> int:
    """Equations the generator wrote: display and inline <math> elements."""
    return len(re.findall(r"<math\b", html))


def test_report_has_no_script_and_fetches_nothing(report_page):
    html = report_page.read_text()
    assert "<script" not in html.lower()  # no JavaScript math engine (nor any other script)
    assert remote_references(html) == []


def test_every_equation_is_drawn_natively(report_page, probed):
    html = report_page.read_text()
    assert (
        html.count('<div class="display">') > 100
    )  # every step of every derivation (about 120 display equations)
    expected = _equations(html)
    found, dom = probed
    assert mathml_problems(found, dom, expected) == []


def test_the_first_figure_is_within_two_screens(probed):
    found, _ = probed
    assert 600 <= found["viewport"] <= SCREEN[1]  # the window less its frame: what a reader sees
    assert (
        found["first_figure_top"] is not None and found["first_figure_top"] < 2 * found["viewport"]
    ), found


def test_the_checks_catch_raw_tex_errors_and_a_figure_pushed_down(report_page, tmp_path):
    from dynkit.report.blocks import Math, Paragraph, Section
    from dynkit.report.render import render_html

    html = report_page.read_text()
    # Planted 1: the same page with its equations left as TeX (what it was before MathML) and a long
    # table before the first figure.
    raw = re.sub(
        r'<div class="display"><math\b.*?</math></div>',
        r'<div class="display">\\[\\frac{a}{b}\\]</div>',
        html,
        flags=re.S,
    )
    raw = raw.replace(
        '<h2 id="figures">', "<table>" + "<tr><td>row</td></tr>" * 200 + '</table><h2 id="figures">'
    )
    planted = tmp_path / "raw.html"
    planted.write_text(raw)
    found, dom = probe(planted, tmp_path, *SCREEN)
    problems = mathml_problems(found, dom, _equations(html))
    assert any("<math> elements, expected" in p for p in problems) and any(
        "raw TeX" in p for p in problems
    )
    assert found["first_figure_top"] > 2 * found["viewport"]
    # Planted 2: an unknown macro and a TeX error become <merror>; a correct equation beside them is
    # fine.
    page = tmp_path / "bad.html"
    page.write_text(
        render_html(
            [
                Section(
                    "x",
                    "x",
                    blocks=[
                        Math("x^2"),
                        Math(r"\nosuchmacro{x}"),
                        Math("x^1^2"),
                        Paragraph(r"inline $\alpha^2$ too"),
                    ],
                )
            ],
            "now",
        )
    )
    found, dom = probe(page, tmp_path, *SCREEN)
    problems = mathml_problems(found, dom, 4)
    assert len(problems) == 2 and all(p.startswith("<merror>") for p in problems), problems
    assert "nosuchmacro" in problems[0] and "DoubleSuperscripts" in problems[1]


def test_the_verdict_and_outcome_columns_are_visible_at_1280_px(probed):
    """The claims table's verdict and the ledger's outcome end inside a 1280 px window (no
    sideways scroll)."""
    found, _ = probed
    columns = found["verdict_columns"]
    assert {c["header"] for c in columns} >= {"verdict"} and columns
    assert all(c["right"] <= found["width"] for c in columns), columns


def test_the_legend_of_the_words_is_on_the_first_screen(report_page):
    html = report_page.read_text()
    legend = html[
        html.index('<details class="legend"') : html.index(
            "</details>", html.index('<details class="legend"')
        )
    ]
    assert html.index('<details class="legend"') < html.index('<h2 id="figures">')
    for word in ("holds", "erratum", "false as stated"):
        assert f">{word}</span></dt>" in legend


def test_matrix_brackets_stretch_to_the_matrix(report_page, probed, tmp_path):
    """A matrix's brackets are as tall as the matrix (they need a font with a MATH table, which
    the report's CSS names). Planted: the same page with a text font for math draws them one line
    high, and the check fails."""
    found, _ = probed
    assert found["fence_ratios"] and min(found["fence_ratios"]) >= 0.8, sorted(
        found["fence_ratios"]
    )[:5]
    planted = tmp_path / "serif_math.html"
    planted.write_text(
        report_page.read_text().replace("</style>", "math{font-family:serif !important}</style>", 1)
    )
    bad, _ = probe(planted, tmp_path, *SCREEN)
    assert min(bad["fence_ratios"]) < 0.8
