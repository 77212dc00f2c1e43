"""Render report sections to HTML and Markdown from the Jinja2 templates in ``templates/``.

``report.j2`` is the layout, written once; ``html.j2`` and ``md.j2`` define the same macros (one per
block kind) for each format, so the two twins cannot drift apart. In HTML, equations are typeset to
MathML here, at generation time (:mod:`dynkit.report.mathml`): the page carries no script.
"""

from __future__ import annotations

import re
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from .blocks import Section
from .common import CLAIM_VERDICTS, LEDGER_VERDICTS, legend
from .mathml import text_with_math, to_mathml

__all__ = ["render_html", "render_markdown", "render_block_markdown", "verdict_class"]

# Colours of the labels rows carry. A label not listed (a new outcome, say) is shown uncoloured, not
# refused.
_TONE = {
    "good": ("holds", "reproduced", "yes", "matches the paper"),
    "warn": (
        "holds with correction",
        "partly reproduced",
        "smaller effect",
        "smaller effect (negligible)",
        "erratum",
    ),
    "bad": (
        "false as stated",
        "contradicted",
        "opposite",
        "did not hold",
        "differs from the paper",
        "error",
        "failed",
        "invalid",
    ),
    "neutral": (
        "undecided",
        "not reproduced at this scale",
        "ruled out",
        "negligible",
        "inconclusive",
        "deterministic",
        "needs full scale",
        "unavailable",
        "opposite (negligible)",
        "pilot agrees",
        "pilot: smaller effect",
        "pilot disagrees",
        "pilot: no effect",
        "pilot inconclusive",
        "pilot invalid",
        "not run",
    ),
}
_CLASS = {verdict: tone for tone, verdicts in _TONE.items() for verdict in verdicts}
assert set(CLAIM_VERDICTS) | set(LEDGER_VERDICTS) <= set(
    _CLASS
)  # every contract verdict has a colour


def verdict_class(text: str) -> str:
    """CSS class (good / warn / bad / neutral) of a verdict, ``""`` for any other cell."""
    return _CLASS.get(str(text), "")


def _display(latex: str) -> Markup:
    return (
        Markup('<div class="display">')
        + Markup(to_mathml(str(latex), display=True))
        + Markup("</div>")
    )


def _mathtext(text: str) -> Markup:
    return Markup(text_with_math(str(text)))


@lru_cache(maxsize=2)
def _environment(html: bool) -> Environment:
    env = Environment(
        loader=PackageLoader("dynkit.report", "templates"),
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["verdict_class"] = verdict_class
    env.filters["display"] = _display if html else str
    env.filters["mathtext"] = _mathtext if html else str
    return env


def _render(html: bool, sections: list[Section], generated: str, **extra) -> str:
    env = _environment(html)
    words = [word for s in sections for b in s.summary if b.kind == "counts" for word, _ in b.items]
    return env.get_template("report.j2").render(
        macros="html.j2" if html else "md.j2",
        title="dynkit report",
        generated=generated,
        sections=sections,
        legend=legend(words),
        **extra,
    )


def render_html(sections: list[Section], generated: str) -> str:
    """One self-contained page: CSS, figures (data URIs) and equations (MathML) inline; no
    script, nothing fetched."""
    css = _environment(True).loader.get_source(_environment(True), "report.css")[0]
    return _render(True, sections, generated, css=css)


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_markdown(sections: list[Section], generated: str) -> str:
    """The Markdown twin (``$$`` display math, figures linked from ``figures/``)."""
    return _tidy(_render(False, sections, generated, css=""))


def render_block_markdown(block, level: int = 3) -> str:
    """One block in Markdown, as the twin writes it (a derivation's title at heading ``level``)."""
    module = _environment(False).get_template("md.j2").module
    return _tidy(
        str(module.derivation(block, level) if block.kind == "derivation" else module.block(block))
    )
