"""The :class:`Derivation` record: ordered steps, a result, the paper's form and the verdict.

Every derivation in :mod:`dynkit.symbolic` is computed by sympy from a definition; the paper's
stated equation is built separately and compared exactly with :func:`equivalent`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

__all__ = ["Step", "Derivation", "equivalent", "finish"]


@dataclass(frozen=True)
class Step:
    """One step of a worked derivation: a sentence and the sympy object it produces."""

    text: str
    expr: Any = None


def _parts(obj) -> list:
    """Flatten an object to the scalar sympy expressions an exact comparison needs."""
    if isinstance(obj, sp.Equality):
        return _parts(obj.lhs - obj.rhs)
    if isinstance(obj, sp.MatrixBase):
        return list(obj)
    if isinstance(obj, sp.MatrixExpr):
        if all(getattr(d, "is_Integer", False) or isinstance(d, int) for d in obj.shape):
            return list(obj.as_explicit())
        return [obj]  # symbolic shape: compared as a matrix expression
    if isinstance(obj, dict):
        return [p for k in sorted(obj, key=str) for p in _parts(obj[k])]
    if isinstance(obj, (list, tuple)):
        return [p for o in obj for p in _parts(o)]
    return [sp.sympify(obj)]


def _identity_powers(expr):
    """(c I)^k -> c^k I, which sympy's matrix-expression algebra leaves alone."""
    def is_scaled_identity(x):
        return isinstance(x, sp.MatPow) and isinstance(x.base, (sp.MatMul, sp.Identity)) and \
            sum(isinstance(a, sp.Identity) for a in sp.Mul.make_args(x.base) + tuple(x.base.args)) >= 1 and \
            all(isinstance(a, sp.Identity) or not isinstance(a, sp.MatrixExpr) for a in x.base.args)

    def rewrite(x):
        ident = next(a for a in (x.base, *x.base.args) if isinstance(a, sp.Identity))
        coeff = sp.Mul(*[a for a in x.base.args if not isinstance(a, sp.MatrixExpr)])
        return coeff ** x.exp * ident

    return expr.replace(is_scaled_identity, rewrite)


def _is_zero(expr) -> bool:
    if isinstance(expr, sp.MatrixExpr):
        e = sp.expand(_identity_powers(expr.doit())).doit()
        return isinstance(e, sp.ZeroMatrix) or e == 0
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    e = sp.expand(expr.doit())
    if e == 0:
        return True
    return sp.simplify(e) == 0


def equivalent(derived, stated) -> bool:
    """Exact check that ``derived`` and ``stated`` agree (``simplify(derived - stated) == 0``).

    Works on expressions, equations (compared as ``lhs - rhs`` up to sign and a nonzero factor is
    *not* allowed: the two residuals must be equal), matrices, matrix expressions, and nested
    lists/tuples/dicts of these with the same structure.
    """
    if isinstance(derived, dict) != isinstance(stated, dict):
        return False
    if isinstance(derived, dict) and set(map(str, derived)) != set(map(str, stated)):
        return False
    a, b = _parts(derived), _parts(stated)
    if len(a) != len(b):
        return False
    return all(_is_zero(x - y) for x, y in zip(a, b))


def _key_latex(k, labels) -> str:
    if k in labels:
        return labels[k]
    k = str(k)
    return k if "\\" in k or "_" in k or "{" in k else rf"\text{{{k}}}"


def _latex(obj, labels=None) -> str:
    labels = labels or {}
    if isinstance(obj, dict):
        return r" \\ ".join(rf"{_key_latex(k, labels)} &= {_latex_rhs(v)}" for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return r" \\ ".join(_aligned_line(o) for o in obj)
    return _aligned_line(obj)


def _latex_rhs(obj) -> str:
    return sp.latex(obj) if not isinstance(obj, (list, tuple)) else ",\\ ".join(sp.latex(o) for o in obj)


def _aligned_line(obj) -> str:
    if isinstance(obj, sp.Equality):
        return rf"{sp.latex(obj.lhs)} &= {sp.latex(obj.rhs)}"
    if isinstance(obj, str):
        return obj
    return rf"& {sp.latex(obj)}"


@dataclass
class Derivation:
    """A worked derivation reproducing one of the papers' equations.

    Attributes
    ----------
    name, title : str
    paper : str
        Which paper, e.g. ``"review (000)"``.
    equation : str
        The equation (or proposition) reproduced, e.g. ``"(26)"``.
    steps : list of Step
    result : sympy object
        What the derivation computed.
    stated : sympy object
        The paper's form, typed in from the paper (never used to compute ``result``).
    check_passed : bool
        ``equivalent(result, stated)``.
    notes : str
        Remarks (conventions, typos found in the paper).
    """

    name: str
    title: str
    paper: str
    equation: str
    steps: list[Step]
    result: Any
    stated: Any
    check_passed: bool
    notes: str = ""
    extra: dict = field(default_factory=dict, repr=False)

    def agrees_with(self, stated) -> bool:
        """Exact check of this derivation's result against another stated form."""
        return equivalent(self.result, stated)

    def to_latex(self) -> str:
        """A LaTeX fragment: text steps and ``aligned`` equations, for MathJax/Sphinx pages."""
        out = [rf"\textbf{{{self.title}}} ({self.paper}, Eq.~{self.equation})", ""]
        for i, step in enumerate(self.steps, 1):
            out.append(rf"{i}. {step.text}")
            if step.expr is not None:
                out.append(r"$$\begin{aligned}" + _latex(step.expr) + r"\end{aligned}$$")
        labels = self.extra.get("labels", {})
        out.append("Result:")
        out.append(r"$$\begin{aligned}" + _latex(self.result, labels) + r"\end{aligned}$$")
        out.append("Stated in the paper:")
        out.append(r"$$\begin{aligned}" + _latex(self.stated, labels) + r"\end{aligned}$$")
        out.append(rf"Check (\texttt{{simplify(derived - stated) == 0}}): "
                   rf"{'passed' if self.check_passed else 'FAILED'}.")
        if self.notes:
            out.append(self.notes)
        return "\n\n".join(out) + "\n"

    def to_markdown(self) -> str:
        """Markdown with ``$$ ... $$`` display math."""
        out = [f"### {self.title}", f"*{self.paper}, Eq. {self.equation}*", ""]
        for i, step in enumerate(self.steps, 1):
            out.append(f"{i}. {step.text}")
            if step.expr is not None:
                out.append(r"$$\begin{aligned}" + _latex(step.expr) + r"\end{aligned}$$")
        labels = self.extra.get("labels", {})
        out += ["**Result**", r"$$\begin{aligned}" + _latex(self.result, labels) + r"\end{aligned}$$",
                "**Stated in the paper**", r"$$\begin{aligned}" + _latex(self.stated, labels) + r"\end{aligned}$$",
                f"**Check** (`simplify(derived - stated) == 0`): {'passed' if self.check_passed else 'FAILED'}"]
        if self.notes:
            out += ["", f"*Note:* {self.notes}"]
        return "\n\n".join(out) + "\n"


def finish(name: str, title: str, paper: str, equation: str, steps: list[Step], result, stated,
           notes: str = "", **extra) -> Derivation:
    """Build a :class:`Derivation`, running the exact check of ``result`` against ``stated``."""
    return Derivation(name, title, paper, equation, list(steps), result, stated,
                      equivalent(result, stated), notes, extra)
