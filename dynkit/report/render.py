"""Render report sections to HTML and Markdown from the Jinja2 templates in ``templates/``.

``report.j2`` is the layout, written once; ``html.j2`` and ``md.j2`` define the same macros (one per
block kind) for each format, so the two twins cannot drift apart.
"""
from __future__ import annotations

import re
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from .blocks import Section
from .common import CLAIM_VERDICTS, LEDGER_VERDICTS
from .mathjax import mathjax_script

__all__ = ["render_html", "render_markdown", "verdict_class"]

_TONE = {
    "good": ("holds", "reproduced", "yes", "matches the paper", "ok"),
    "warn": ("holds with correction", "erratum", "partly reproduced"),
    "bad": ("false as stated", "contradicted", "did not hold", "differs from the paper", "error", "failed"),
    "neutral": ("undecided", "not reproduced at this scale"),
}
_CLASS = {verdict: tone for tone, verdicts in _TONE.items() for verdict in verdicts}
assert set(CLAIM_VERDICTS) | set(LEDGER_VERDICTS) <= set(_CLASS)  # every contract verdict has a colour


def verdict_class(text: str) -> str:
    """CSS class (good / warn / bad / neutral) of a verdict, ``""`` for any other cell."""
    return _CLASS.get(str(text), "")


@lru_cache(maxsize=2)
def _environment(html: bool) -> Environment:
    env = Environment(loader=PackageLoader("dynkit.report", "templates"), autoescape=html,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals["verdict_class"] = verdict_class
    return env


def _render(html: bool, sections: list[Section], generated: str, **extra) -> str:
    env = _environment(html)
    return env.get_template("report.j2").render(
        macros="html.j2" if html else "md.j2", title="dynkit report", generated=generated, sections=sections,
        **extra)


def render_html(sections: list[Section], generated: str) -> str:
    """One self-contained page: CSS, figures (data URIs) and MathJax inlined; nothing is fetched."""
    css = _environment(True).loader.get_source(_environment(True), "report.css")[0]
    return _render(True, sections, generated, css=css, mathjax=mathjax_script())


def render_markdown(sections: list[Section], generated: str) -> str:
    """The Markdown twin (``$$`` display math, figures linked from ``figures/``)."""
    text = _render(False, sections, generated, css="", mathjax="")
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
