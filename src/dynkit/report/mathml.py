"""Equations typeset when the report is generated: LaTeX -> MathML, which browsers render natively.

The report carries no JavaScript math engine: each equation is converted once, here, by
``latex2mathml`` (pure Python) and the page holds ``<math>`` elements that Chromium, Firefox and
Safari draw themselves (MathML Core). Two things the converter does not do, done here:

- ``aligned`` (what :func:`dynkit.symbolic.derivation.to_latex` emits) becomes a two-column
  ``array`` (right-aligned left-hand sides, left-aligned right-hand sides), which the converter
  turns into an ``<mtable>``;
- escapes inside ``\\text{...}`` (``\\_``, ``\\&`` ...) are undone in the text it produces.

An equation the converter rejects, or one that leaves a TeX command in its output (an unknown
macro), becomes an ``<merror>`` node holding the TeX: visible on the page and caught by the
browser test (``tests/browser.py``), never silently dropped.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

__all__ = ["to_mathml", "text_with_math", "mathml_problem"]

_INLINE = re.compile(r"\$([^$]+)\$|\\\((.+?)\\\)")
_TEXT_ESCAPES = re.compile(r"\\([_&%#$\\{}])")
_ENTITY = re.compile(r"&#x([0-9A-Fa-f]+);")
_LEFTOVER_COMMAND = re.compile(r">[^<]*\\[A-Za-z]+[^<]*<")  # a text node that still holds \macro


def _character(m: re.Match) -> str:
    """``&#x0003D;`` -> ``=``: the page is UTF-8, and the characters are a third of the markup's
    weight."""
    char = chr(int(m[1], 16))
    return m[0] if char in '<>&"' else char


def _prepare(latex: str) -> str:
    latex = latex.strip()
    latex = latex.replace(r"\begin{aligned}", r"\begin{array}{rl}").replace(
        r"\end{aligned}", r"\end{array}"
    )
    return latex


def _error(latex: str, reason: str, display: bool) -> str:
    mode = "block" if display else "inline"
    return (
        f'<math display="{mode}" class="tex-error"><merror><mtext>{html.escape(reason)}: '
        f"{html.escape(latex)}</mtext></merror></math>"
    )


def mathml_problem(mathml: str) -> str:
    """Why a converted equation is not typeset (``""`` when it is): an ``<merror>`` or a leftover
    ``\\macro``."""
    if "<merror" in mathml:
        return "TeX error"
    found = _LEFTOVER_COMMAND.search(mathml)
    return f"unknown TeX command in {found.group(0)[1:-1]!r}" if found else ""


@lru_cache(maxsize=4096)
def to_mathml(latex: str, display: bool = True) -> str:
    """``<math>`` markup of ``latex`` (display or inline); an ``<merror>`` node when it cannot be
    typeset.

    Parameters
    ----------
    latex : str
        One equation, as sympy and :func:`dynkit.symbolic.derivation.to_latex` write it.
    display : bool
        Display (block) math, or inline math in running text.
    """
    if not isinstance(latex, str):
        raise TypeError(f"latex: expected a str, got {type(latex).__name__}")
    from latex2mathml.converter import convert

    try:
        out = convert(_prepare(latex), display="block" if display else "inline")
    except (
        Exception
    ) as exc:  # the converter's errors are many classes; any of them means "not typeset"
        return _error(
            latex, f"TeX error ({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})", display
        )
    out = re.sub(
        r"(<mtext[^>]*>)([^<]*)(</mtext>)",
        lambda m: m[1] + _TEXT_ESCAPES.sub(r"\1", m[2]) + m[3],
        out,
    )
    out = _ENTITY.sub(_character, out).replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")
    problem = mathml_problem(out)
    return _error(latex, problem, display) if problem else out


def text_with_math(text: str) -> str:
    """HTML of a sentence: the text escaped, each ``$...$`` or ``\\(...\\)`` typeset inline."""
    parts, last = [], 0
    for m in _INLINE.finditer(text):
        parts.append(html.escape(text[last : m.start()]))
        parts.append(to_mathml(m.group(1) or m.group(2), display=False))
        last = m.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)
