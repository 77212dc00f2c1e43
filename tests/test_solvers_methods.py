"""Methods as data: exact order conditions of every tableau, dense output, ARK coefficients,
two-step validation, and properties that hold for all linear problems (hypothesis)."""

from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dynkit as dk
from dynkit.solvers import ARK3, ARK4, METHODS, TwoStepRK
from dynkit.solvers.tableaus import BOSH3, DOPRI5, RKF45, RungeKuttaTableau, TABLEAUS


def rooted_tree_conditions(A, b, c, order):
    """Residuals of the RK order conditions for all trees up to ``order`` (exact in Fractions)."""
    s = len(b)
    dot = lambda u, v: sum(x * y for x, y in zip(u, v))
    Amul = lambda v: [dot(A[i], v) for i in range(s)]
    ones = [Fr(1)] * s
    c2 = [x * x for x in c]
    conds = [(1, dot(b, ones), Fr(1))]
    if order >= 2:
        conds += [(2, dot(b, c), Fr(1, 2))]
    if order >= 3:
        conds += [(3, dot(b, c2), Fr(1, 3)), (3, dot(b, Amul(c)), Fr(1, 6))]
    if order >= 4:
        conds += [
            (4, dot(b, [x**3 for x in c]), Fr(1, 4)),
            (4, dot(b, [x * y for x, y in zip(c, Amul(c))]), Fr(1, 8)),
            (4, dot(b, Amul(c2)), Fr(1, 12)),
            (4, dot(b, Amul(Amul(c))), Fr(1, 24)),
        ]
    if order >= 5:
        Ac, Ac2, Ac3 = Amul(c), Amul(c2), Amul([x**3 for x in c])
        conds += [
            (5, dot(b, [x**4 for x in c]), Fr(1, 5)),
            (5, dot(b, [x * x * y for x, y in zip(c, Ac)]), Fr(1, 10)),
            (5, dot(b, [x * y for x, y in zip(c, Ac2)]), Fr(1, 15)),
            (5, dot(b, [x * y for x, y in zip(c, Amul(Ac))]), Fr(1, 30)),
            (5, dot(b, [y * y for y in Ac]), Fr(1, 20)),
            (5, dot(b, Ac3), Fr(1, 20)),
            (5, dot(b, Amul([x * y for x, y in zip(c, Ac)])), Fr(1, 40)),
            (5, dot(b, Amul(Ac2)), Fr(1, 60)),
            (5, dot(b, Amul(Amul(Ac))), Fr(1, 120)),
        ]
    return [(p, got - want) for p, got, want in conds]


def order_of(A, b, c, max_order=6):
    p = 0
    for order in range(1, min(max_order, 5) + 1):
        if all(r == 0 for q, r in rooted_tree_conditions(A, b, c, order) if q == order):
            p = order
        else:
            break
    return p


# tsit5 and dop853 are printed as decimals (not exact rationals): tests/test_solvers_high_order.py
# checks their conditions over all rooted trees to the printed precision.
@pytest.mark.parametrize("name", sorted(set(TABLEAUS) - {"tsit5", "dop853"}))
def test_tableau_satisfies_its_order_conditions_exactly(name):
    tab = TABLEAUS[name]
    A, b, c = [list(r) for r in tab.A], list(tab.B), list(tab.C)
    assert all(sum(row) == ci for row, ci in zip(A, c)), "row sums of A must equal C"
    assert order_of(A, b, c) == tab.order, f"{name}: B is not exactly of order {tab.order}"
    if tab.E is not None:
        b_hat = [x - e for x, e in zip(b, tab.E)]
        assert order_of(A, b_hat, c) == tab.error_order


@pytest.mark.parametrize("tab", [DOPRI5, RKF45])
def test_continuous_extension_is_of_order_4_and_continuous(tab):
    # b(θ) = P [θ, θ², θ³, θ⁴] must satisfy the order-4 conditions with right-hand sides θ^p / γ for
    # every θ (checked exactly at several rational θ) and equal B at θ = 1 (continuity at step end).
    A = [list(r) for r in tab.A]
    c = list(tab.C)
    if (
        len(tab.P) == tab.stages + 1
    ):  # the extra row multiplies f(t + h, y_new) = stage with A-row B
        A = [row + [Fr(0)] for row in A] + [list(tab.B) + [Fr(0)]]
        c = c + [Fr(1)]
    for theta in [Fr(1, 3), Fr(1, 2), Fr(4, 5), Fr(1)]:
        b = [sum(p * theta ** (k + 1) for k, p in enumerate(row)) for row in tab.P]
        s = len(b)
        dot = lambda u, v: sum(x * y for x, y in zip(u, v))
        Amul = lambda v: [dot(A[i], v) for i in range(s)]
        assert dot(b, [1] * s) == theta
        assert dot(b, c) == theta**2 / 2
        assert dot(b, [x * x for x in c]) == theta**3 / 3 and dot(b, Amul(c)) == theta**3 / 6
        assert dot(b, [x**3 for x in c]) == theta**4 / 4
        assert dot(b, [x * y for x, y in zip(c, Amul(c))]) == theta**4 / 8
        assert (
            dot(b, Amul([x * x for x in c])) == theta**4 / 12
            and dot(b, Amul(Amul(c))) == theta**4 / 24
        )
    end = [sum(row) for row in tab.P]
    assert end[: tab.stages] == list(tab.B) and all(x == 0 for x in end[tab.stages :])


def ark_local_error_terms(method: TwoStepRK):
    """Coefficients of the scalar local error (as in dynkit.solvers.ark's docstring) for a quick
    exact check."""
    c = list(method.c)
    a = list(method.a)
    S = method.c_m1 + sum(c)
    first = [
        method.c1 - method.c_m1 - 1,
        S - Fr(1, 2),
        sum(x * y for x, y in zip(a, c)) - Fr(5, 12),
    ]
    if len(c) == 2:
        first += [a[0] ** 2 * c[0] + a[1] ** 2 * c[1] - Fr(1, 3), a[0] * a[1] * c[1] - Fr(1, 6)]
    return first


@pytest.mark.parametrize("method", [ARK3, ARK4])
def test_ark_coefficients_satisfy_the_derived_conditions(method):
    assert all(r == 0 for r in ark_local_error_terms(method))
    assert method.c0 == 1 and method.c_m0 == 0


def test_two_step_rk_rejects_inconsistent_or_unstable_coefficients():
    with pytest.raises(ValueError, match="inconsistent: need c0 - c_m0 = 1"):
        TwoStepRK("bad", 1, c0=1.0, c_m0=0.5, c1=1.0, c_m1=0.0, c=(), a=())
    with pytest.raises(ValueError, match="inconsistent: need c_m0 \\+ c1 - c_m1 = 1"):
        TwoStepRK("bad", 1, c0=1.0, c_m0=0.0, c1=1.2, c_m1=0.0, c=(), a=())
    with pytest.raises(ValueError, match="not zero-stable"):
        TwoStepRK("bad", 1, c0=3.0, c_m0=2.0, c1=0.0, c_m1=1.0, c=(), a=())
    with pytest.raises(ValueError, match="same length"):
        TwoStepRK("bad", 1, c0=1, c_m0=0, c1=1, c_m1=0, c=(0.1,), a=())


def test_user_two_step_method_in_csaode_form():
    # A user-given consistent, zero-stable member with c_m0 != 0: the explicit two-step
    # y_{n+1} = (1 + m) y_n - m y_{n-1} + h[(1 + m/2 ... )] is order 1 at least; check it converges.
    m = Fr(1, 2)
    user = TwoStepRK(
        "user", 1, c0=1 + m, c_m0=m, c1=Fr(1) - m + Fr(1, 4), c_m1=Fr(1, 4), c=(), a=()
    )
    errors = []
    for h in [0.02, 0.01]:
        sol = dk.solve(lambda t, y: -y, np.array([1.0]), [0.0, 1.0], method=user, step_size=h)
        errors.append(abs(sol.ys[-1, 0] - np.exp(-1.0)))
    assert errors[1] < errors[0] and errors[1] < 1e-2


def test_methods_registry_describes_every_method():
    assert set(METHODS) == {
        "euler",
        "midpoint",
        "heun",
        "rk4",
        "ark3",
        "ark4",
        "bosh3",
        "rkf45",
        "dopri5",
        "tsit5",
        "dop853",
        "rosenbrock23",
        "rodas4",
        "rodas5",
        "radau5",
        "bdf",
        "auto",
    }
    # Rosenbrock: stages after the first, plus f(t + h, y_new) unless FSAL (rosenbrock23's last
    # stage)
    assert (
        METHODS["rodas4"].new_evaluations_per_step == 6
        and METHODS["rosenbrock23"].new_evaluations_per_step == 2
    )
    assert METHODS["dop853"].new_evaluations_per_step == 12 and METHODS["dop853"].order == 8
    assert METHODS["tsit5"].new_evaluations_per_step == 6 and METHODS["tsit5"].error_order == 4
    assert METHODS["dopri5"].new_evaluations_per_step == 6 and METHODS["dopri5"].adaptive
    assert METHODS["rk4"].new_evaluations_per_step == 4 and not METHODS["rk4"].adaptive
    assert (METHODS["ark4"].order, METHODS["ark4"].new_evaluations_per_step) == (4, 3)
    assert (METHODS["ark3"].order, METHODS["ark3"].new_evaluations_per_step) == (3, 2)


def test_user_tableau_runs_and_bad_tableau_is_rejected():
    ralston = RungeKuttaTableau(
        "ralston", 2, A=((0, 0), (Fr(2, 3), 0)), B=(Fr(1, 4), Fr(3, 4)), C=(0, Fr(2, 3))
    )
    sol = dk.solve(lambda t, y: -y, np.ones(1), [0, 1], method=ralston, step_size=0.01)
    assert abs(sol.ys[-1, 0] - np.exp(-1)) < 1e-5
    with pytest.raises(ValueError, match="strictly lower triangular"):
        RungeKuttaTableau("implicit", 1, A=((1,),), B=(1,), C=(1,))


# --------------------------------------------------------------------------------------------------
# properties for all linear problems


small_matrices = st.integers(1, 4).flatmap(
    lambda n: arrays(np.float64, (n, n), elements=st.floats(-1.0, 1.0, allow_nan=False, width=64))
)


@settings(max_examples=25, deadline=None)
@given(A=small_matrices, method=st.sampled_from(["dopri5", "rkf45", "bosh3", "rk4", "ark4"]))
def test_batched_solve_equals_separate_solves_for_fixed_steps(A, method):
    # Fixed-step methods are linear maps on y for linear f: solving a batch of two states at once
    # gives exactly (to round-off) the separate solves. (Adaptive methods choose steps from the
    # whole batch's norm, so only fixed steps are compared bit-for-bit-ish: 1e-12.)
    n = A.shape[0]
    y0 = np.stack([np.ones(n), np.linspace(-1, 1, n)])
    f = lambda t, y: y @ A.T
    if METHODS[method].adaptive:
        sol = dk.solve(f, y0, [0.0, 1.0], method=method, rtol=1e-9, atol=1e-12)
        exact = y0 @ __import__("scipy").linalg.expm(A).T
        assert np.allclose(sol.ys[-1], exact, rtol=1e-6, atol=1e-8)
    else:
        both = dk.solve(f, y0, [0.0, 1.0], method=method, step_size=0.05).ys[-1]
        for i in range(2):
            alone = dk.solve(f, y0[i], [0.0, 1.0], method=method, step_size=0.05).ys[-1]
            assert np.allclose(both[i], alone, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(A=small_matrices)
def test_forward_then_backward_returns_to_the_start(A):
    # For all small linear systems: integrating to t = 1 and back must return y0 to ~ the tolerance
    # (1e-10 requested, 1e-7 allowed: two accumulated global errors, amplified by at most
    # e^{2||A||}).
    y0 = np.linspace(0.5, 1.5, A.shape[0])
    f = lambda t, y: A @ y
    fwd = dk.solve(f, y0, [0.0, 1.0], rtol=1e-10, atol=1e-12).ys[-1]
    back = dk.solve(f, fwd, [1.0, 0.0], rtol=1e-10, atol=1e-12).ys[-1]
    assert np.allclose(back, y0, rtol=1e-7, atol=1e-7)
