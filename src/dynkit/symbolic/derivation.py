"""The :class:`Derivation` record: ordered steps, a result, the paper's form and the verdict.

Every derivation in :mod:`dynkit.symbolic` is computed by sympy from a definition; the paper's
stated equation is built separately and compared exactly with :func:`equivalent`.

A step or a result never holds a bare boolean: ``sp.Eq(a, b)`` that sympy evaluates to ``False``
(a symbol against a matrix, say) would print as ``\text{False}``, and a verified fact stored as
``1`` prints as a lone ``1``. A fact established by a comparison is a :class:`Check` (a label and
the outcome), which prints as a sentence; :class:`Step` and :func:`finish` refuse booleans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from .._papers import paper_name

__all__ = ["Step", "Check", "Derivation", "equivalent", "finish", "to_latex", "to_text"]


@dataclass(frozen=True)
class Check:
    """A fact a derivation established by an exact comparison it could not state as one equation.

    Compared by :func:`equivalent` as 1 (passed) or 0, printed as ``label: verified exactly`` (or
    ``does not hold``), never as a bare number or boolean.
    """

    label: str
    passed: bool

    def __post_init__(self):
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"Check.label: expected a non-empty str, got {self.label!r}")
        object.__setattr__(self, "passed", _as_bool(self.passed, "Check.passed"))

    def _latex_(self) -> str:
        outcome = "verified exactly" if self.passed else "does not hold"
        return rf"\text{{{_text_escape(self.label)}}} &: \ \text{{{outcome}}}"


def _as_bool(value, what: str) -> bool:
    if not _is_boolean(value):
        raise TypeError(f"{what}: expected a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _is_boolean(x) -> bool:
    """A Python, numpy or sympy truth value (``sp.true``/``sp.false``, e.g. an ``Eq`` sympy
    decided)."""
    return isinstance(x, (bool, np.bool_, sp.logic.boolalg.BooleanAtom))


def _reject_booleans(obj, where: str) -> None:
    """Raise TypeError if ``obj`` (or anything nested in it) is a bare truth value."""
    if _is_boolean(obj):
        raise TypeError(
            f"{where}: a bare boolean ({obj!r}) cannot be shown as a derivation step; sympy "
            f"evaluates "
            "Eq(a, b) to False when the sides cannot be equal as objects (e.g. a Symbol "
            "against a matrix): "
            "use Eq(..., evaluate=False) with a matching left-hand side, or record the fact "
            "as Check(label, passed)"
        )
    if isinstance(obj, dict):
        for k, v in obj.items():
            _reject_booleans(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _reject_booleans(v, f"{where}[{i}]")


# Text-mode LaTeX for the characters that are special (or, with the default fonts, missing) there.
_TEXT_SPECIALS = {
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "\\": r"\textbackslash{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_UNICODE_MATH = {
    "α": r"\alpha",
    "β": r"\beta",
    "γ": r"\gamma",
    "δ": r"\delta",
    "ε": r"\varepsilon",
    "η": r"\eta",
    "θ": r"\theta",
    "λ": r"\lambda",
    "μ": r"\mu",
    "ξ": r"\xi",
    "π": r"\pi",
    "ρ": r"\rho",
    "σ": r"\sigma",
    "τ": r"\tau",
    "φ": r"\phi",
    "ψ": r"\psi",
    "ω": r"\omega",
    "Γ": r"\Gamma",
    "Δ": r"\Delta",
    "Θ": r"\Theta",
    "Λ": r"\Lambda",
    "Σ": r"\Sigma",
    "Φ": r"\Phi",
    "Ψ": r"\Psi",
    "Ω": r"\Omega",
    "→": r"\to",
    "≤": r"\le",
    "≥": r"\ge",
    "≈": r"\approx",
    "∂": r"\partial",
    "∇": r"\nabla",
    "√": r"\surd",
    "·": r"\cdot",
    "×": r"\times",
    "−": "-",
    "∞": r"\infty",
    "∈": r"\in",
}


def latex_text(sentence: str) -> str:
    """``sentence`` as LaTeX text: its ``$...$`` math spans kept, everything else escaped."""
    parts = re.split(r"(\$[^$]+\$)", sentence)
    return "".join(
        part
        if i % 2
        else "".join(
            _TEXT_SPECIALS.get(c) or (f"${_UNICODE_MATH[c]}$" if c in _UNICODE_MATH else c)
            for c in part
        )
        for i, part in enumerate(parts)
    )


def _text_escape(text: str) -> str:
    """``text`` safe inside ``\\text{...}``."""
    return re.sub(r"([_&%#$\\{}])", r"\\\1", text)


@dataclass(frozen=True)
class Step:
    """One step of a worked derivation: a sentence and the sympy object it produces.

    Raises
    ------
    TypeError
        If ``expr`` is, or holds, a bare boolean (see the module docstring).
    """

    text: str
    expr: Any = None

    def __post_init__(self):
        _reject_booleans(self.expr, f"Step({self.text[:60]!r}).expr")


def _parts(obj) -> list:
    """Flatten an object to the scalar sympy expressions an exact comparison needs."""
    if isinstance(obj, Check):
        return [sp.Integer(int(obj.passed))]
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
        return (
            isinstance(x, sp.MatPow)
            and isinstance(x.base, (sp.MatMul, sp.Identity))
            and sum(
                isinstance(a, sp.Identity) for a in sp.Mul.make_args(x.base) + tuple(x.base.args)
            )
            >= 1
            and all(
                isinstance(a, sp.Identity) or not isinstance(a, sp.MatrixExpr) for a in x.base.args
            )
        )

    def rewrite(x):
        ident = next(a for a in (x.base, *x.base.args) if isinstance(a, sp.Identity))
        coeff = sp.Mul(*[a for a in x.base.args if not isinstance(a, sp.MatrixExpr)])
        return coeff**x.exp * ident

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


def _latex_rhs(obj) -> str:
    if isinstance(obj, (list, tuple)):
        return ",\\ ".join(_latex_rhs(o) for o in obj)
    if isinstance(obj, Check):
        return (
            rf"\text{{{_text_escape(obj.label)}: "
            rf"{'verified exactly' if obj.passed else 'does not hold'}}}"
        )
    return sp.latex(obj)


def _aligned_line(obj) -> str:
    if isinstance(obj, Check):
        return obj._latex_()
    if isinstance(obj, sp.Equality):
        return rf"{sp.latex(obj.lhs)} &= {sp.latex(obj.rhs)}"
    if isinstance(obj, str):
        return obj
    return rf"& {sp.latex(obj)}"


def _lines(obj, labels=None) -> list[str]:
    labels = labels or {}
    _reject_booleans(obj, "expression to typeset")
    if isinstance(obj, dict):
        return [rf"{_key_latex(k, labels)} &= {_latex_rhs(v)}" for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [_aligned_line(o) for o in obj]
    return [_aligned_line(obj)]


def to_latex(obj, labels: dict | None = None) -> str:
    """Display LaTeX of what a step, a result or a stated form holds.

    A sympy object, an equation (``lhs &= rhs``), a :class:`Check` (a sentence), a string (taken as
    LaTeX), a list/tuple (one aligned line each) or a dict (``key &= value`` lines; ``labels`` maps
    a key to its LaTeX), wrapped in ``aligned``.

    Raises
    ------
    TypeError
        If ``obj`` is, or holds, a bare boolean.
    """
    if obj is None:
        return ""
    if isinstance(obj, str):
        return obj
    lines = _lines(obj, labels)
    # "{}" keeps a line that starts with "[" from being read as an optional argument ([t] of
    # aligned, [2pt] of \\).
    lines = ["{}" + line if line.startswith("[") else line for line in lines]
    return r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}"


_PLAIN = [
    (r"\\(?:mathrm|mathbf|mathcal|text|operatorname)\{([^{}]*)\}", r"\1"),
    (r"\\sqrt\{([^{}]*)\}", r"√(\1)"),
    (r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)"),
    (r"\\ddot\s*\{?([A-Za-z])\}?", "\\1\u0308"),
    (r"\\dot\s*\{?([A-Za-z])\}?", "\\1\u0307"),
    (r"\\tilde\s*\{?([A-Za-z])\}?", "\\1\u0303"),
    (r"\\hat\s*\{?([A-Za-z])\}?", "\\1\u0302"),
    (r"\\(?:,|;|!|quad)", " "),
    (r"\\left|\\right", ""),
    (r"\^\{([^{}]*)\}", r"^(\1)"),
    (r"_\{([^{}]*)\}", r"_\1"),
]
_MACROS = {
    "nabla": "∇",
    "partial": "∂",
    "to": "→",
    "infty": "∞",
    "cdot": "·",
    "leq": "≤",
    "geq": "≥",
    "le": "≤",
    "ge": "≥",
    "neq": "≠",
    "approx": "≈",
    "in": "∈",
    "mapsto": "↦",
    "times": "×",
    "top": "ᵀ",
    "otimes": "⊗",
    "bullet": "•",
    "det": "det ",
    "exp": "exp ",
    "log": "log ",
    "sin": "sin ",
    "cos": "cos ",
    "circ": "∘",
    "sum": "∑",
    "prod": "∏",
    "int": "∫",
    "ldots": "…",
    "dots": "…",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "eta": "η",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "xi": "ξ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "varphi": "φ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
}


def plain(text: str) -> str:
    """LaTeX in a sentence or a symbol's name made readable as plain Unicode (``$`` dropped,
    ``\\nabla`` -> ∇, ``\\dot a`` -> ȧ, ``x^{k+1}`` -> ``x^(k+1)``); what it does not know stays
    as written."""
    text = text.replace("$", "")
    for pattern, repl in _PLAIN:
        text = re.sub(pattern, repl, text)
    return re.sub(r"\\([A-Za-z]+) ?", lambda m: _MACROS.get(m.group(1), m.group(0)), text)


def _plain_name(name: str) -> str:
    """A symbol's name for a terminal: LaTeX made plain, a sequence index ``x^{k+1}`` written
    ``x[k+1]`` (sympy would draw it as ``x__(k+1)``), ``varepsilon`` as ε."""
    name = re.sub(r"^([A-Za-z])\^\{([^{}]*)\}$", r"\1[\2]", name)
    name = re.sub(r"^([A-Za-z])\^([A-Za-z0-9])$", r"\1[\2]", name)
    return {"varepsilon": "ε"}.get(name, plain(name))


def _plain_names(obj):
    """``obj`` with its symbols, matrix symbols and undefined functions renamed by
    :func:`_plain_name` (before drawing, so the columns of a multi-line drawing stay aligned)."""
    from sympy.core.function import AppliedUndef

    renames = {}
    for sym in obj.atoms(sp.Symbol, sp.MatrixSymbol):
        name = _plain_name(sym.name)
        if name != sym.name:
            renames[sym] = (
                sp.MatrixSymbol(name, *sym.shape)
                if isinstance(sym, sp.MatrixSymbol)
                else sp.Symbol(name, **sym.assumptions0)
            )
    obj = obj.xreplace(renames)
    return obj.replace(
        lambda e: isinstance(e, AppliedUndef) and _plain_name(e.func.__name__) != e.func.__name__,
        lambda e: sp.Function(_plain_name(e.func.__name__))(*e.args),
    )


def _pretty(obj, width: int) -> str:
    """One sympy object drawn in Unicode (``sympy.pretty``), a Check as its sentence, a string as
    given."""
    if isinstance(obj, Check):
        return f"{plain(obj.label)}: {'verified exactly' if obj.passed else 'does not hold'}"
    if isinstance(obj, str):
        return plain(obj)
    if isinstance(obj, (list, tuple)) and not isinstance(obj, sp.Basic):
        return ",  ".join(_pretty(o, width) for o in obj)
    if isinstance(obj, (sp.Basic, sp.MatrixBase)):
        obj = _plain_names(obj)
    return sp.pretty(obj, use_unicode=True, num_columns=width)


def _keyed(key: str, drawing: str) -> str:
    """``key = drawing`` on one line, or ``key =`` above a drawing of several lines (kept
    aligned)."""
    if "\n" not in drawing:
        return f"{key} = {drawing}"
    return f"{key} =\n" + "\n".join("    " + line for line in drawing.splitlines())


def to_text(obj, labels: dict | None = None, width: int = 100) -> str:
    """What a step, a result or a stated form holds, drawn for a terminal (Unicode, no LaTeX).

    The same shapes as :func:`to_latex`: one block per equation of a list, ``key = value`` for a
    dict (``labels`` maps a key to its text), each block indented by four spaces.
    """
    if obj is None:
        return ""
    _reject_booleans(obj, "expression to draw")
    labels = labels or {}
    if isinstance(obj, dict):
        blocks = [_keyed(plain(str(labels.get(k, k))), _pretty(v, width)) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        blocks = [_pretty(o, width) for o in obj]
    else:
        blocks = [_pretty(obj, width)]
    return "\n\n".join("\n".join("    " + line for line in block.splitlines()) for block in blocks)


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
        r"""A LaTeX fragment that compiles with ``amsmath`` and ``amssymb`` loaded
        (``dynkit derive --latex``).

        A ``\subsection*`` with the title, the source, the steps as an ``enumerate`` (each equation
        in ``\[ \begin{aligned} ... \end{aligned} \]``), the result, the paper's form and the check.
        Text is escaped for LaTeX (``_``, ``^``, ``&``, ... and Greek letters outside ``$...$``);
        the math spans of the sentences are kept.
        """
        labels = self.extra.get("labels", {})

        def display(obj, labels=None) -> list[str]:
            body = to_latex(obj, labels)
            return [rf"\[ {body} \]"] if body else []

        out = [
            f"% dynkit derivation {self.name}: a LaTeX fragment (needs "
            f"\\usepackage{{amsmath,amssymb}})",
            rf"\subsection*{{{latex_text(self.title)}}}",
            rf"\noindent\emph{{{latex_text(paper_name(self.paper))}, {latex_text(self.equation)}}}",
        ]
        if self.steps:
            out.append(r"\begin{enumerate}")
            for step in self.steps:
                out.append(rf"\item {latex_text(step.text)}")
                if step.expr is not None:
                    out += display(step.expr)
            out.append(r"\end{enumerate}")
        out += [
            r"\paragraph{Result.}",
            *display(self.result, labels),
            r"\paragraph{Stated in the paper.}",
            *display(self.stated, labels),
            rf"\paragraph{{Check.}} \texttt{{simplify(derived - stated) == 0}}: "
            rf"{'passed' if self.check_passed else 'FAILED'}.",
        ]
        if self.notes:
            out.append(rf"\paragraph{{Note.}} {latex_text(self.notes)}")
        return "\n".join(out) + "\n"

    def to_markdown(self) -> str:
        """Markdown with ``$$ ... $$`` display math.

        In a notebook, showing the derivation itself (``d`` as a cell's last line, or
        ``display(d)``) is typeset everywhere: Jupyter and Sphinx's myst-nb pick its HTML
        (:meth:`_repr_html_`, MathJax's own markup). ``Markdown(d.to_markdown())`` is typeset by
        Jupyter, and by myst-nb only with ``nb_render_markdown_format = "myst"`` and the
        ``dollarmath`` extension in ``conf.py`` (dynkit's docs set both; myst-nb's default,
        commonmark, leaves the ``$$`` as raw text without a warning)."""
        out = [f"### {self.title}", f"*{paper_name(self.paper)}, {self.equation}*", ""]
        for i, step in enumerate(self.steps, 1):
            out.append(f"{i}. {step.text}")
            if step.expr is not None:
                out.append(f"$${to_latex(step.expr)}$$")
        labels = self.extra.get("labels", {})
        out += [
            "**Result**",
            f"$${to_latex(self.result, labels)}$$",
            "**Stated in the paper**",
            f"$${to_latex(self.stated, labels)}$$",
            f"**Check** (`simplify(derived - stated) == 0`): "
            f"{'passed' if self.check_passed else 'FAILED'}",
        ]
        if self.notes:
            out += ["", f"*Note:* {self.notes}"]
        return "\n\n".join(out) + "\n"

    def to_text(self, width: int = 100) -> str:
        """Plain text for a terminal (``dynkit derive NAME``): the steps with their equations
        drawn in Unicode by ``sympy.pretty``, the result, the paper's form and the check."""
        labels = self.extra.get("labels", {})
        out = [self.title, "=" * len(self.title), f"{paper_name(self.paper)}, {self.equation}", ""]
        for i, step in enumerate(self.steps, 1):
            out.append(f"{i}. {plain(step.text)}")
            if step.expr is not None:
                out += ["", to_text(step.expr, width=width)]
            out.append("")
        out += [
            "Result:",
            "",
            to_text(self.result, labels, width),
            "",
            "Stated in the paper:",
            "",
            to_text(self.stated, labels, width),
            "",
            f"Check (simplify(derived - stated) == 0): "
            f"{'passed' if self.check_passed else 'FAILED'}",
        ]
        if self.notes:
            out += ["", f"Note: {plain(self.notes)}"]
        return "\n".join(out) + "\n"

    # Jupyter display: the notebook picks the richest of these.
    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return (
            f"$$\\begin{{array}}{{l}}\\text{{{_text_escape(self.title)}}}\\end{{array}}$$\n"
            f"$${to_latex(self.result, self.extra.get('labels', {}))}$$"
        )

    def _repr_html_(self) -> str:
        import html

        def math(
            obj, labels=None
        ) -> str:  # Sphinx's markup, which Jupyter's and Sphinx's MathJax both typeset
            return (
                f'<div class="math notranslate '
                f'nohighlight">\\[{html.escape(to_latex(obj, labels))}\\]</div>'
            )

        def text(
            sentence: str,
        ) -> str:  # $...$ in a step's sentence becomes inline math in the same markup
            return re.sub(
                r"\$([^$]+)\$",
                r'<span class="math notranslate nohighlight">\\(\1\\)</span>',
                html.escape(sentence),
            )

        labels = self.extra.get("labels", {})
        verdict = "matches the paper" if self.check_passed else "does NOT match the paper"
        parts = [
            f"<h4>{html.escape(self.title)}</h4><p><em>{html.escape(paper_name(self.paper))}, "
            f"{html.escape(self.equation)}</em> &mdash; derived result {verdict}.</p><ol>"
        ]
        for step in self.steps:
            parts.append(
                f"<li>{text(step.text)}{math(step.expr) if step.expr is not None else ''}</li>"
            )
        parts.append(
            f"</ol><p><strong>Result</strong></p>{math(self.result, labels)}"
            f"<p><strong>Stated in the paper</strong></p>{math(self.stated, labels)}"
        )
        return "".join(parts)


def finish(
    name: str,
    title: str,
    paper: str,
    equation: str,
    steps: list[Step],
    result,
    stated,
    notes: str = "",
    **extra,
) -> Derivation:
    """Build a :class:`Derivation`, running the exact check of ``result`` against ``stated``.

    Raises
    ------
    TypeError
        If ``result`` or ``stated`` is, or holds, a bare boolean (use :class:`Check`).
    """
    _reject_booleans(result, f"{name}: result")
    _reject_booleans(stated, f"{name}: stated")
    return Derivation(
        name,
        title,
        paper,
        equation,
        list(steps),
        result,
        stated,
        equivalent(result, stated),
        notes,
        extra,
    )
