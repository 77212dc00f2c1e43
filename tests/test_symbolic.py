"""dk.symbolic: every derivation reproduces its paper equation exactly, wrong forms are rejected,
the ARK constants of dk.solve are the derived ones, and bad input fails early."""

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.symbolic import (
    DERIVATIONS,
    ODESystem,
    Step,
    adjoint,
    adjoint_derivation,
    ark_coefficients,
    ark_family,
    coefficients_of,
    equivalent,
    error_constants,
    heavy_ball_block_charpoly,
    hbnode_system,
    satisfies,
    taylor_conditions,
    tree_conditions,
    trees,
)
from dynkit.symbolic.ark import ark_symbols, tree_density, tree_symmetry

CONTRACT = [
    "heavy_ball_limit",
    "momentum_resnet_limit",
    "momentum_resnet_eps_limits",
    "nesterov_limit",
    "momentum_rnn_unrolled",
    "momentum_attention_unrolled",
    "node_adjoint",
    "hbnode_adjoint_second_order",
    "hbnode_adjoint_first_order",
    "hbnode_adjoint_time_reversed",
    "hbnode_remark6",
    "ghbnode_adjoint",
    "sonode_adjoint",
    "psi_eps",
    "psi_eps_appendix",
    "eigen_pairing_charpoly",
    "revnet_jacobian",
    "ark3_order_conditions",
    "ark4_order_conditions",
]

gamma, xi, eps = (
    sp.Symbol("gamma", positive=True),
    sp.Symbol("xi", positive=True),
    sp.Symbol("varepsilon", positive=True),
)


def test_registry_names():
    assert set(CONTRACT) <= set(DERIVATIONS)


@pytest.mark.parametrize("name", sorted(DERIVATIONS))
def test_derivation_reproduces_paper(name):
    d = DERIVATIONS[name]()
    assert d is DERIVATIONS[name]()  # cached
    assert d.name == name and d.paper and d.equation and d.title
    assert d.steps and all(isinstance(s, Step) for s in d.steps)
    assert d.check_passed, f"{name}: derived {d.result} != stated {d.stated}"
    assert equivalent(d.result, d.stated)
    latex, md = d.to_latex(), d.to_markdown()
    assert (
        r"\begin{aligned}" in latex and r"\[" in latex and "$$" not in latex and "passed" in latex
    )
    assert md.count("$$") >= 4 and d.title in md


def _t():
    return sp.Symbol("t", real=True)


# A deliberately wrong "stated" form for each derivation: each must be rejected by the exact check.
WRONG = {
    "heavy_ball_limit": lambda s: [e.subs(gamma, -gamma) for e in s],
    "momentum_resnet_limit": lambda s: [s[0].subs(eps, 2 * eps), s[1]],
    "momentum_resnet_eps_limits": lambda s: [*s[:2], s[2] * 2, s[3]],
    "nesterov_limit": lambda s: sp.Eq(s.lhs - sp.Function("x")(_t()).diff(_t()) / _t(), 0),
    "momentum_rnn_unrolled": lambda s: (
        s + sp.MatrixSymbol("U", *s.shape[:1] * 2) * sp.MatrixSymbol("h_{t-2}", s.shape[0], 1)
    ),
    # the review's (15) as printed: only the top-left block, the path through h_{k-1} (-mu D U)
    # dropped
    "momentum_rnn_jacobian": lambda s: sp.Matrix(
        sp.BlockMatrix(
            [[sp.Matrix(s)[:2, :2], sp.zeros(2)], [sp.Matrix(s)[2:, :2], sp.Matrix(s)[2:, 2:]]]
        )
    ),
    "momentum_attention_unrolled": lambda s: (
        [e * sp.Symbol("beta", positive=True) for e in s[:2]] + [s[2]]
    ),
    "node_adjoint": lambda s: {**s, "rhs": -s["rhs"]},
    "hbnode_adjoint_second_order": lambda s: {**s, "aT_dot": -s["aT_dot"]},
    "hbnode_adjoint_first_order": lambda s: {"h": s["h"], "m": s["m"].subs(gamma, -gamma)},
    "hbnode_adjoint_time_reversed": lambda s: s.subs(gamma, -gamma),
    "hbnode_remark6": lambda s: {**s, "a_h": -s["a_h"]},
    "ghbnode_adjoint": lambda s: {"h": s["h"].subs(xi, 0), "m": s["m"]},
    "sonode_adjoint": lambda s: {**s, "aT": 2 * s["aT"]},
    "psi_eps": lambda s: [s[0], 0],
    "psi_eps_appendix": lambda s: [s[0], s[1], s[2].replace(sp.cos, sp.cosh), *s[3:]],
    "eigen_pairing_charpoly": lambda s: (
        [-e for e in s[:-1]] + [s[-1]]
    ),  # Eq. (60) as printed (with the minus)
    "revnet_jacobian": lambda s: [s[0].T, *s[1:]],
    "ark3_order_conditions": lambda s: {
        **s,
        "solver": [*s["solver"][:-1], s["solver"][-1] + sp.Rational(1, 1000)],
    },
    "ark4_order_conditions": lambda s: {
        **s,
        "solver": [*s["solver"][:-1], s["solver"][-1] + sp.Rational(1, 1000)],
    },
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_stated_form_is_rejected(name):
    d = DERIVATIONS[name]()
    assert not d.agrees_with(WRONG[name](d.stated))


def test_every_derivation_has_a_wrong_form_test():
    assert set(WRONG) == set(DERIVATIONS)


def test_equivalent_needs_same_structure():
    x = sp.Symbol("x")
    assert equivalent({"a": x}, {"a": x}) and not equivalent({"a": x}, {"b": x})
    assert not equivalent([x, x], [x]) and equivalent(sp.Eq(x, 1), sp.Eq(x - 1, 0))


# ----------------------------------------------------------------------------------------------
# adjoints


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=4, max_size=4), st.integers(0, 10_000))
def test_user_system_adjoint_matches_autograd(k, seed):
    """For all small polynomial-trigonometric systems: -a dF/dz and a dF/dθ agree with torch
    autograd."""
    x, y, p = sp.symbols("x y p", real=True)
    F = sp.Matrix([k[0] * x * y + sp.sin(k[1] * x + p), k[2] * y**2 - p * sp.exp(x / 3) + k[3] * x])
    d = adjoint_derivation(
        ODESystem.create(sp.Matrix([x, y]), F, [p]), check_numerically=True, seed=seed
    )
    assert d.check_passed  # exact formulas evaluated in float64: relative error < 1e-10


def test_numerical_check_detects_a_wrong_adjoint():
    adj = adjoint(hbnode_system())  # generic f: replaced by random smooth functions in the check
    assert adj.numerical_check(seed=1) < 1e-10
    adj.rhs["m"] = -adj.rhs["m"]
    assert adj.numerical_check(seed=1) > 1e-3


def test_adjoint_without_anything_to_check_does_not_pass():
    x = sp.Symbol("x")
    assert not adjoint_derivation(ODESystem.create(sp.Matrix([x]), sp.Matrix([-x]))).check_passed


def test_bad_input_is_rejected_early():
    x, y = sp.symbols("x y")
    with pytest.raises(ValueError, match="Symbols"):
        ODESystem.create(sp.Matrix([1, 2]), sp.Matrix([x, y]))
    with pytest.raises(ValueError, match="shape"):
        ODESystem.create(sp.Matrix([x, y]), sp.Matrix([x]))
    with pytest.raises(ValueError, match="column"):
        ODESystem.create(sp.Matrix([[x, y]]), sp.Matrix([[x, y]]))
    with pytest.raises(ValueError, match="blocks named"):
        ODESystem.create({"h": sp.Matrix([x])}, {"m": sp.Matrix([x])})
    with pytest.raises(ValueError, match="sympy Matrix"):
        ODESystem.create(np.array([1.0]), sp.Matrix([x]))
    with pytest.raises(ValueError, match="ODESystem"):
        adjoint("dx/dt = -x")
    with pytest.raises(ValueError, match="loss"):
        adjoint(ODESystem.create(sp.Matrix([x]), sp.Matrix([-x])), loss=1.5)
    with pytest.raises(ValueError, match="square"):
        heavy_ball_block_charpoly(sp.ones(2, 3), sp.ones(2, 3), gamma)
    with pytest.raises(ValueError, match="shape of J"):
        heavy_ball_block_charpoly(sp.eye(2), sp.eye(3), gamma)
    adj = adjoint(ODESystem.create(sp.Matrix([x]), sp.Matrix([-x])), loss=x**2)
    with pytest.raises(ValueError, match="param_values"):
        adj.gradient([1.0], 0.0, 1.0, [0.5])
    with pytest.raises(ValueError, match="undefined functions"):
        adjoint(hbnode_system(), loss=sp.Symbol("h_1", real=True)).gradient(
            np.zeros(4), 0.0, 1.0, []
        )
    with pytest.raises(ValueError, match="s: expected"):
        ark_family(4)


# ---------------------------------------------------------------------------------------------- ARK


@pytest.mark.parametrize("name, s", [("ark3", 2), ("ark4", 3)])
def test_solver_constants_are_the_derived_ones(name, s):
    method = getattr(dk.solvers, name.upper())
    derived = ark_coefficients()[name]
    assert coefficients_of(method) == derived  # exact Rationals
    p = s + 1
    solver = coefficients_of(method)
    assert satisfies(taylor_conditions(s, p, True, solver))  # y' = f(y)
    assert satisfies(taylor_conditions(s, p, False, solver))  # y' = f(t, y)
    assert satisfies(tree_conditions(s, p, solver))  # systems: every tree
    assert not satisfies(taylor_conditions(s, p + 1, True, solver, exact_order=True))
    assert not satisfies(tree_conditions(s, p + 1, solver, exact_order=True))


def test_families_match_the_solver_docstring():
    c = ark_symbols(3)
    f3 = ark_family(2)
    cm1 = ark_symbols(2)["c_m1"]
    assert equivalent(
        [f3["c1"], f3["c2"], f3["a2"]], [1 + cm1, sp.Rational(1, 2) - cm1, 5 / (6 * (1 - 2 * cm1))]
    )
    f4, al = ark_family(3), c["a2"]
    a3 = 3 * al - sp.Rational(5, 2) * al**2
    c3 = 1 / (6 * al * a3)
    c2 = sp.Rational(5, 12) / al - 1 / (6 * al**2)
    assert equivalent(
        [f4["a3"], f4["c3"], f4["c2"], f4["c_m1"], f4["c1"]],
        [a3, c3, c2, sp.Rational(1, 2) - c2 - c3, sp.Rational(3, 2) - c2 - c3],
    )
    assert satisfies(tree_conditions(3, 4, f4))  # the whole ARK4 family is order 4 for systems


def test_tree_combinatorics():
    assert [len(trees(k)) for k in range(1, 7)] == [1, 1, 2, 4, 9, 20]
    bushy3, tall4 = ((), ()), ((((),),),)
    assert (tree_density(bushy3), tree_symmetry(bushy3)) == (3, 2)
    assert (tree_density(tall4), tree_symmetry(tall4)) == (24, 1)
    # Σ_τ q!/(σ(τ)γ(τ)) counts the increasingly labelled rooted trees with q nodes: (q-1)!
    for q in range(1, 7):
        assert sum(
            sp.Rational(sp.factorial(q), tree_symmetry(t) * tree_density(t)) for t in trees(q)
        ) == sp.factorial(q - 1)


def _ark_step(coeffs, s, f, t, y_now, y_prev, h):
    """One ARK step from exact past values, written from CSAODE Eq. (9)-(10) (independently of
    dk.solvers)."""

    def chain(t0, y0):
        k = [f(t0, y0)]
        for j in range(2, s + 1):
            a = coeffs[f"a{j}"]
            k.append(f(t0 + a * h, y0 + a * h * k[-1]))
        return k

    kf, kb = chain(t, y_now), chain(t - h, y_prev)
    incr = (
        coeffs["c1"] * kf[0]
        - coeffs["c_m1"] * kb[0]
        + sum(coeffs[f"c{j}"] * (kf[j - 1] - kb[j - 1]) for j in range(2, s + 1))
    )
    return coeffs["c0"] * y_now - coeffs["c_m0"] * y_prev + h * incr


@pytest.mark.parametrize("name, s", [("ark3", 2), ("ark4", 3)])
def test_leading_error_constant_numerically(name, s):
    """Local error / h^{p+1} of one step (50-digit arithmetic) equals the derived error constant."""
    mpmath.mp.dps = 50
    p = s + 1
    co = {
        k: mpmath.mpf(sp.Rational(v).p) / sp.Rational(v).q
        for k, v in ark_coefficients()[name].items()
    }
    consts = error_constants(s, ark_coefficients()[name], p)
    h = mpmath.mpf("1e-8")
    # y' = y^2, y = 1/(1 - t): F_k = f^{(k)}(y) = y^2, 2y, 2, 0, ...
    t0 = mpmath.mpf("0.3")
    y = lambda t: 1 / (1 - t)  # noqa: E731
    err = y(t0 + h) - _ark_step(co, s, lambda t, v: v**2, t0, y(t0), y(t0 - h), h)
    yv = y(t0)
    F = {sp.Symbol(f"F_{k}"): v for k, v in enumerate([yv**2, 2 * yv, 2, 0, 0, 0])}
    predicted = consts["scalar"].subs({k: sp.Float(str(v), 50) for k, v in F.items()})
    # the next term is O(h^{p+2}): relative deviation ~ h, far below the tolerance
    assert abs(err / h ** (p + 1) / mpmath.mpf(str(predicted)) - 1) < 1e-5


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.2, 3.0))
def test_psi_eps_matrix_series_matches_expm(seed, e):
    """Prop. 4 for matrices: the top-left block of the block-matrix exponential is the stated
    series."""
    from scipy.linalg import expm

    rng = np.random.default_rng(seed)
    th = rng.normal(size=(2, 2))
    B = np.block([[np.zeros((2, 2)), np.eye(2)], [th / e, -np.eye(2) / e]])
    omega = th / e + np.eye(2) / (4 * e**2)
    series, power = np.zeros((2, 2)), np.eye(2)
    for n in range(40):  # the series converges like 1/(2n)!: 40 terms are exact in float64
        series += (
            1 / float(sp.factorial(2 * n)) + 1 / (2 * e * float(sp.factorial(2 * n + 1)))
        ) * power
        power = power @ omega
    psi = np.exp(-1 / (2 * e)) * series
    # both sides are float64 evaluations of the same entire function: agreement to round-off
    np.testing.assert_allclose(expm(B)[:2, :2], psi, rtol=1e-9, atol=1e-12)
