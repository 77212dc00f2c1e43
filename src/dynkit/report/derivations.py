"""One view of a worked derivation, shared by the report and the docs (so the two cannot disagree).

:func:`derivation_view` decides everything a reader sees of a
:class:`~dynkit.symbolic.derivation.Derivation`: the paper as readers cite it, each step's LaTeX,
the result and the paper's statement with their real left-hand sides (the derivation's ``labels``,
e.g. ``\\dot a_h`` for the key ``"h"``), and the verdict. The report's templates render the view to
HTML (MathML) and Markdown; the docs' derivation pages are the Markdown rendering
(:func:`derivation_markdown`).

"As stated in the paper" shows the paper's statement: the derivation's ``stated_latex`` (the
equation as printed, in the paper's own notation, e.g. block form) when it has one, else its
``stated`` objects without dynkit's own :class:`~dynkit.symbolic.derivation.Check` sentences (those
are checks dynkit ran, not words of the paper).
"""

from __future__ import annotations

from typing import Any

from .blocks import DerivationView
from .common import paper_name

__all__ = ["derivation_view", "derivation_markdown", "paper_statement", "MATCHES", "DIFFERS"]

MATCHES, DIFFERS = "matches the paper", "differs from the paper"


def _without_checks(obj: Any) -> Any:
    from ..symbolic.derivation import Check

    if isinstance(obj, Check):
        return None
    if isinstance(obj, dict):
        kept = {k: v for k, v in obj.items() if not isinstance(v, Check)}
        return kept or None
    if isinstance(obj, (list, tuple)):
        kept = [o for o in obj if not isinstance(o, Check)]
        return kept or None
    return obj


def paper_statement(d: Any) -> str:
    """LaTeX of what the paper states (see the module docstring); ``""`` when the paper states no
    formula."""
    from ..symbolic.derivation import to_latex

    stated_latex = getattr(d, "extra", {}).get("stated_latex")
    if stated_latex:
        return stated_latex
    return to_latex(_without_checks(d.stated), getattr(d, "extra", {}).get("labels", {}))


def derivation_view(d: Any) -> DerivationView:
    """The :class:`~dynkit.report.blocks.DerivationView` of a derivation (see the module
    docstring)."""
    from ..symbolic.derivation import to_latex

    labels = getattr(d, "extra", {}).get("labels", {})
    steps = [(s.text, to_latex(s.expr) if s.expr is not None else "") for s in d.steps]
    result = to_latex(d.result, labels) if d.result is not None else ""
    if steps and steps[-1][1] and steps[-1][1] in (result, to_latex(d.result)):
        # the last step already shows the result: say so there instead of repeating its equation
        # below
        steps[-1] = (steps[-1][0].rstrip() + " This is the result.", steps[-1][1])
        result = ""
    return DerivationView(
        d.title,
        f"{paper_name(d.paper)}, {d.equation}",
        MATCHES if d.check_passed else DIFFERS,
        steps=steps,
        result=result,
        stated=paper_statement(d) if d.stated is not None else "",
        notes=getattr(d, "notes", "") or "",
        latex=d.to_latex(),
    )


def derivation_markdown(view: DerivationView, level: int = 3) -> str:
    """The Markdown of a derivation view (``$$`` display math), as the report's Markdown twin
    writes it; ``level`` is the heading level of its title (1 for a page of its own)."""
    from .render import render_block_markdown

    return render_block_markdown(view, level=level)
