"""Pieces the report, the CLI and the docs share: optional components, JSON-friendly values,
verdicts."""

from __future__ import annotations

import importlib
import math
import re
from typing import Any

from ..io import jsonable  # noqa: F401  (re-exported: dynkit.report.jsonable)
from .._papers import PAPER_NAMES, paper_name  # noqa: F401  (re-exported)

__all__ = [
    "MEANINGS",
    "legend",
    "ComponentUnavailable",
    "require",
    "require_any",
    "jsonable",
    "fmt",
    "latex_of",
    "claim_holds",
    "held_text",
    "claim_verdict",
    "count_by",
    "effect_text",
    "ours_text",
    "reason_text",
    "paper_name",
    "row_label",
    "CLAIM_VERDICTS",
    "LEDGER_VERDICTS",
]

CLAIM_VERDICTS = ("holds", "holds with correction", "erratum", "false as stated", "undecided")
"""Verdicts of ``dk.theory.run_all()`` rows about a paper's statement as written (DESIGN.md)."""

LEDGER_VERDICTS = (
    "reproduced",
    "partly reproduced",
    "not reproduced at this scale",
    "contradicted",
)
"""Verdicts of ``dk.experiments.ledger()`` rows (DESIGN.md)."""


MEANINGS = {
    # the claims of the papers (dynkit.theory): a verdict about each statement as the paper writes
    # it
    "holds": "the statement as written holds on every instance checked",
    "holds with correction": "holds once the stated correction is made (the row gives it)",
    "erratum": "an evident typo: the statement the authors meant holds",
    "false as stated": "a counterexample refutes the statement as written (the row gives it)",
    "undecided": "the check could not settle it in its budget (the row says why)",
    # the empirical ledger (dynkit.experiments): an outcome from paired runs with seeds fixed in
    # advance
    "reproduced": "the effect's confidence interval excludes no effect, on the paper's side, and reaches "  # noqa: E501
    "the "
    "paper's effect",
    "smaller effect": "on the paper's side, short of the paper's effect, reaching the smallest "
    "effect of interest",
    "smaller effect (negligible)": "on the paper's side, inside the smallest effect of interest",
    "negligible": "the interval holds no effect and lies inside ± the smallest effect of interest",
    "opposite (negligible)": "on the other side of no effect, inside the smallest effect of "
    "interest",
    "pilot agrees": "a pilot (not the paper's experiment) whose interval lies on the paper's side and "  # noqa: E501
    "reaches the paper's effect",
    "pilot: smaller effect": "a pilot whose interval lies on the paper's side but short of the paper's "  # noqa: E501
    "effect",
    "pilot disagrees": "a pilot whose interval lies on the other side, beyond the smallest effect "
    "of interest",
    "pilot: no effect": "a pilot whose interval lies inside ± the smallest effect of interest",
    "pilot inconclusive": "a pilot whose interval decides nothing with the seeds run",
    "pilot invalid": "a pilot in which a model did not learn, or another validity check failed",
    "not run": "no results: the row or the comparison says what it needs",
    "ruled out": "the interval contains no effect and lies inside ± the smallest effect of interest",  # noqa: E501
    "opposite": "the interval lies entirely on the other side of no effect",
    "inconclusive": "none of these with the seeds run; the row says how many seeds would decide it",
    "invalid": "a model did not learn, or another validity check failed; the row says which",
    "deterministic": "the same value in every seed: one measurement, shown as its value",
    "needs full scale": "the mechanism needs the paper's scale (stated in the recipe before the runs)",  # noqa: E501
    # the worked derivations (dynkit.symbolic)
    "matches the paper": "sympy's result equals the paper's equation exactly",
    "differs from the paper": "sympy's result differs from the paper's equation (the note says how)",  # noqa: E501
}
"""What each verdict and outcome word of the report means: the legend of its first screen."""


def legend(words) -> list[tuple[str, str]]:
    """``(word, meaning)`` for each word of ``words`` that has one, in the order of
    :data:`MEANINGS`."""
    used = set(words)
    return [(word, meaning) for word, meaning in MEANINGS.items() if word in used]


class ComponentUnavailable(RuntimeError):
    """A part of dynkit that a command or report section needs is not installed in this build."""


def require(dotted: str) -> Any:
    """Return the object ``dynkit.<module>.<name>`` named by ``dotted`` (e.g. ``"theory.run_all"``).

    Raises
    ------
    ComponentUnavailable
        When the module does not exist or lacks the name: the message says which.
    """
    module_name, _, attr = dotted.rpartition(".")
    full = f"dynkit.{module_name}"
    try:
        module = importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (full == exc.name or full.startswith(exc.name + ".")):
            raise ComponentUnavailable(
                f"{full} is not installed in this build (needed: {full}.{attr})"
            ) from None
        raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ComponentUnavailable(f"{full}.{attr} is not installed in this build") from None


def require_any(*dotted: str) -> Any:
    """The first of ``dotted`` names that this build has (see :func:`require`); a component that
    moved between modules (``diagnostics.nfe_vs_tolerance`` -> ``experiments.nfe_vs_tolerance``)
    keeps working.

    Raises
    ------
    ComponentUnavailable
        When none is installed: the message names the first.
    """
    first = None
    for name in dotted:
        try:
            return require(name)
        except ComponentUnavailable as exc:
            first = first or exc
    raise first


def fmt(x: Any) -> str:
    """A table cell: booleans as yes/no, numbers (numpy, mpmath, sympy too) to 3 significant
    digits."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not isinstance(x, (int, float, str)) and hasattr(x, "__float__"):
        x = float(x)
    if isinstance(x, float):
        if x == 0 or math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 else f"{x:.2e}"
    return str(x)


def latex_of(expr: Any) -> str:
    """Display LaTeX of what a derivation step holds (see
    :func:`dynkit.symbolic.derivation.to_latex`)."""
    from ..symbolic.derivation import to_latex

    return to_latex(expr)


def _field(row: Any, name: str, default: Any = None) -> Any:
    return row.get(name, default) if isinstance(row, dict) else getattr(row, name, default)


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ in ("bool_", "bool")  # numpy bools too


def claim_holds(row: Any) -> bool:
    """Whether one claim-table row (object or dict) held: its ``holds`` if it has one, else ``held``
    as a bool, or as the number of instances that held (then every instance must have)."""
    holds = _field(row, "holds")
    if holds is not None:
        return bool(holds)
    held = _field(row, "held")
    return bool(held) if _is_bool(held) else int(held) == int(_field(row, "instances"))


def held_text(row: Any) -> str:
    """``held`` as shown in tables: ``k/n`` for a count, yes/no for a bool."""
    held = _field(row, "held")
    return (
        ("yes" if held else "no")
        if _is_bool(held)
        else f"{int(held)}/{int(_field(row, 'instances'))}"
    )


def claim_verdict(row: Any) -> str:
    """The row's ``verdict`` (one of :data:`CLAIM_VERDICTS`); a row from a build without verdicts
    gets ``holds`` or ``did not hold`` from its numerical check."""
    verdict = _field(row, "verdict")
    if verdict:
        return str(verdict)
    return "holds" if claim_holds(row) else "did not hold"


def count_by(verdicts: list[str], order: tuple[str, ...]) -> list[tuple[str, int]]:
    """``(verdict, count)`` for every verdict of ``order`` (zeros included), then any other
    verdict seen."""
    extra = [v for v in dict.fromkeys(verdicts) if v not in order]
    return [(v, verdicts.count(v)) for v in (*order, *extra)]


# The short names the code gives the papers (/work/shared/papers/README.md), as the ledger cites
# them.
def row_label(row: Any) -> str:
    """The label a ledger row is counted by: its ``outcome`` where rows carry one, else its
    ``verdict``."""
    return str(_field(row, "outcome") or _field(row, "verdict") or "")


def effect_text(row: dict) -> str:
    """A ledger row's effect on its scale with its 95% CI (``log -0.21 [-0.26, -0.17]``); ``–``
    without one."""
    if row.get("effect") is None:
        return (
            ours_text(row.get("ours") or {}) if "effect" not in row else "–"
        )  # a row from before the ledger had effects
    ci = f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]" if row.get("ci_low") is not None else ""
    return f"{row.get('scale') or ''} {fmt(row['effect'])}{ci}".strip()


def reason_text(row: dict) -> str:
    """Why a ledger row is undecided or invalid, and the seeds that would decide it where known."""
    text = row.get("reason_words") or row.get("reason") or ""  # metric ids in words, where given
    reads = row.get("reading") or row.get("outcome")
    if row.get("seeds_needed") is not None and reads in ("inconclusive", "needs full scale"):
        text = (text + "; " if text else "") + f"seeds needed {row['seeds_needed']}"
    return text


def ours_text(ours: dict) -> str:
    """A ledger row's measurement: ``mean [ci_low, ci_high] (n seeds)``."""
    if not ours:
        return ""
    text = fmt(ours.get("mean"))
    if ours.get("ci_low") is not None and ours.get("ci_high") is not None:
        text += f" [{fmt(ours['ci_low'])}, {fmt(ours['ci_high'])}]"
    if ours.get("n_seeds"):
        text += f" ({ours['n_seeds']} seeds)"
    return text
