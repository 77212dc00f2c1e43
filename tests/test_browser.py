"""The report in a real headless browser (Chromium), offline: its equations end up typeset, not raw TeX.

The report is built with the real derivations (every equation dynkit ships) and the real claim table;
the slow measurement sections are left out (tests/test_report.py covers them). A planted violation
(the same page without its MathJax) must be caught by the same check.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser import remote_references, rendered_dom, typeset_problems  # noqa: E402

from dynkit import report  # noqa: E402


@pytest.fixture(scope="module")
def small_report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    mp = pytest.MonkeyPatch()
    mp.setattr(report, "SECTIONS", [s for s in report.SECTIONS if s[0] in ("propositions", "derivations")])
    try:
        return report.build_report(out, quick=True)
    finally:
        mp.undo()


def _display_equations(html: str) -> int:
    return len(re.findall(r'<div class="display">\\\[', html))


def test_report_equations_are_typeset_offline(small_report):
    html = small_report.read_text()
    assert remote_references(html) == []  # nothing to fetch: MathJax, CSS and figures are inline
    expected = _display_equations(html)
    assert expected > 100  # every step of every derivation (about 120 equations)
    dom = rendered_dom(small_report)
    assert 'data-mathjax="typeset"' in dom  # MathJax's startup finished (set by the page once it has)
    assert typeset_problems(dom, expected) == []


def test_the_check_catches_a_page_without_its_renderer(small_report, tmp_path):
    html = small_report.read_text()
    start = html.index("<script>window.MathJax") if "<script>window.MathJax" in html else html.index("<script>\nwindow.MathJax")
    planted = tmp_path / "no_mathjax.html"
    planted.write_text(html[:start] + "</body></html>")
    problems = typeset_problems(rendered_dom(planted), _display_equations(html))
    assert any("typeset equations" in p for p in problems) and any("raw TeX" in p for p in problems)


def test_the_check_catches_tex_errors(tmp_path):
    from dynkit.report.blocks import Math, Section
    from dynkit.report.render import render_html

    page = tmp_path / "bad.html"  # one good equation, an undefined macro, a TeX error (one browser run)
    page.write_text(render_html([Section("x", "x", blocks=[Math("x^2"), Math(r"\nosuchmacro{x}"), Math("x^1^2")])],
                                "now"))
    problems = typeset_problems(rendered_dom(page), 3)
    assert len(problems) == 2, problems
    assert "MathJax TeX error" in problems[0] and "MathJax undefined macro" in problems[1]
