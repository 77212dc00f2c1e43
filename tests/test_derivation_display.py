"""A derivation step, result or stated form can never show a bare boolean; checks print as
sentences.

The planted violations are the two display bugs this module exists to prevent:
``sp.Eq(Symbol, Matrix)`` collapsing to ``False`` under an "ok" badge, and a verified fact stored as
``1`` that printed as ``1 \\\\ 1``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import dynkit as dk
from dynkit.symbolic.derivation import Check, Step, finish, to_latex

BOOLEANS = [
    True,
    False,
    np.bool_(True),
    sp.true,
    sp.false,
    sp.Eq(sp.Symbol("C"), sp.Matrix([[1, 0], [0, 1]])),
]


@pytest.mark.parametrize("value", BOOLEANS, ids=repr)
@pytest.mark.parametrize(
    "wrap",
    [lambda v: v, lambda v: [sp.Symbol("x"), v], lambda v: {"k": v}],
    ids=["bare", "in list", "in dict"],
)
def test_a_step_refuses_a_boolean(value, wrap):
    with pytest.raises(TypeError, match="bare boolean"):
        Step("a step", wrap(value))


def test_finish_refuses_a_boolean_result_and_to_latex_refuses_one():
    with pytest.raises(TypeError, match="d: result.*bare boolean"):
        finish("d", "t", "p", "(1)", [], [sp.Integer(1), True], [1, 1])
    with pytest.raises(TypeError, match="bare boolean"):
        to_latex(sp.false)


def test_check_prints_as_a_sentence_and_compares_by_outcome():
    tex = to_latex([Check("series matches", True), Check("a_b & c", False)])
    assert r"\text{series matches} &: \ \text{verified exactly}" in tex
    assert r"\text{a\_b \& c} &: \ \text{does not hold}" in tex
    ok = finish("d", "t", "p", "(1)", [], [Check("x", True)], [Check("x", True)])
    bad = finish("d", "t", "p", "(1)", [], [Check("x", False)], [Check("x", True)])
    assert ok.check_passed and not bad.check_passed
    with pytest.raises(TypeError, match="Check.passed: expected a bool"):
        Check("x", 1)


def test_a_line_starting_with_a_bracket_is_not_an_optional_argument():
    tex = to_latex([sp.Eq(sp.Symbol("[a]"), 1), sp.Eq(sp.Symbol("[b]"), 2)])
    assert not re.search(r"(\\begin\{aligned\}|\\\\\s*)\[", tex), tex


@given(st.lists(st.sampled_from(["x", "y", "[z]"]), min_size=1, max_size=4))
def test_to_latex_of_any_list_of_equations_is_one_aligned_block(names):
    tex = to_latex([sp.Eq(sp.Symbol(n), i) for i, n in enumerate(names)])
    assert (
        tex.startswith(r"\begin{aligned}")
        and tex.endswith(r"\end{aligned}")
        and tex.count("&=") == len(names)
    )


@pytest.mark.parametrize("name", list(dk.symbolic.DERIVATIONS))
def test_no_shipped_derivation_prints_a_boolean_or_a_lone_number(name):
    d = dk.symbolic.DERIVATIONS[name]()
    texts = [to_latex(s.expr) for s in d.steps if s.expr is not None] + [
        to_latex(d.result),
        to_latex(d.stated),
    ]
    for tex in texts:
        assert r"\text{False}" not in tex and r"\text{True}" not in tex, (name, tex)
        lines = re.split(
            r"\\\\", tex.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
        )
        # A lone 1 is a truth flag shown as a number (the old "1 \\\\ 1"); a residual 0 next to
        # other lines is real.
        assert not any(line.strip() in {"& 1", "1"} for line in lines), (name, tex)
        assert not all(line.strip() in {"& 0", "0"} for line in lines), (name, tex)


def test_derivation_displays_in_jupyter():
    d = dk.symbolic.DERIVATIONS["psi_eps"]()
    assert d._repr_markdown_() == d.to_markdown()
    assert "verified exactly" in d._repr_latex_() and d._repr_latex_().count("$$") == 4
    html = d._repr_html_()
    assert (
        html.startswith("<h4>Solution of the linear second-order model")
        and r'<div class="math' in html
    )
    # inline $...$ of the step sentences become the inline-math markup MathJax (Jupyter's, Sphinx's)
    # typesets
    assert (
        r'<span class="math notranslate nohighlight">\(u = \theta/\varepsilon' in html
        and "$" not in html
    )
