"""tsit5 and dop853: their coefficients checked independently of the code that steps with them.

* order conditions over every rooted tree (trees from dynkit.symbolic.ark, elementary weights
  computed here in 50-digit arithmetic; the published coefficients are 16-digit (tsit5) and 30-digit
  (dop853) decimals, so the residuals are that small, not zero);
* observed convergence order with constant steps on a nonlinear system;
* the embedded error estimates against the true local error of the embedded formula;
* the continuous extensions' order conditions (b_j(θ) against θ^ρ/γ).
"""

import dataclasses
from fractions import Fraction as Fr

import mpmath
import numpy as np
import pytest

import dynkit as dk
from dynkit.solvers.backend import NumpyBackend
from dynkit.solvers.explicit import ExplicitRK
from dynkit.solvers.tableaus import DOP853, DOPRI5, TSIT5, RungeKuttaTableau
from dynkit.symbolic.ark import tree_density, tree_order, trees

mpmath.mp.dps = 50


def _mp(x):
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fr) else mpmath.mpf(x)


def extended_tableau(tab: RungeKuttaTableau):
    """A and c over every stage the continuous extension uses (the slope stage, then the extra
    ones)."""
    A = [[_mp(x) for x in row] for row in tab.A]
    c = [_mp(x) for x in tab.C]
    if tab.p_uses_slope:
        A = [row + [mpmath.mpf(0)] for row in A] + [[_mp(x) for x in tab.B] + [mpmath.mpf(0)]]
        c.append(mpmath.mpf(1))
    for row, ci in zip(tab.A_dense, tab.C_dense):
        n = len(A) + 1
        A = [r + [mpmath.mpf(0)] for r in A] + [
            [_mp(x) for x in row] + [mpmath.mpf(0)] * (n - len(row))
        ]
        c.append(_mp(ci))
    return A, c


def tree_residuals(A, b, max_order, theta=1):
    """``{tree: b · Φ(τ) - θ^ρ(τ) / γ(τ)}`` for every rooted tree up to ``max_order`` nodes."""
    s = len(b)
    cache = {}

    def phi(tau):  # the elementary weight vector: Φ(()) = 1, Φ(τ) = Π over children of A Φ(child)
        if tau not in cache:
            v = [mpmath.mpf(1)] * s
            for child in tau:
                a_phi = phi(child)
                w = [mpmath.fsum(A[i][j] * a_phi[j] for j in range(s)) for i in range(s)]
                v = [x * y for x, y in zip(v, w)]
            cache[tau] = v
        return cache[tau]

    out = {}
    for order in range(1, max_order + 1):
        for tau in trees(order):
            got = mpmath.fsum(x * y for x, y in zip(b, phi(tau)))
            out[tau] = got - mpmath.mpf(theta) ** tree_order(tau) / tree_density(tau)
    return out


def worst(residuals, order=None):
    return max(
        float(abs(r)) for tau, r in residuals.items() if order is None or tree_order(tau) == order
    )


# tolerance of the order conditions: the coefficients are printed decimals (tsit5 16 digits,
# dop853 30), and the conditions combine a few hundred products of coefficients up to ~500 in size
CASES = [(TSIT5, 5, 4, 4, 5e-14), (DOP853, 8, 5, 7, 1e-24)]


@pytest.mark.parametrize("tab,order,embedded,dense_order,tol", CASES, ids=["tsit5", "dop853"])
def test_order_conditions_hold_up_to_the_order_and_fail_beyond(
    tab, order, embedded, dense_order, tol
):
    A = [[_mp(x) for x in row] for row in tab.A]
    b = [_mp(x) for x in tab.B]
    res = tree_residuals(A, b, order + 1)
    assert worst({t: r for t, r in res.items() if tree_order(t) <= order}) < tol, tab.name
    assert worst(res, order + 1) > 1e-6, f"{tab.name} would be of order {order + 1}"
    # the embedded formula B - E is of its stated order and not more (DOP853's 5th-order one)
    b_hat = [bi - _mp(e) for bi, e in zip(b, tab.E)]
    res_hat = tree_residuals(A, b_hat, embedded + 1)
    assert worst({t: r for t, r in res_hat.items() if tree_order(t) <= embedded}) < tol
    assert worst(res_hat, embedded + 1) > 1e-6
    # row sums (the "first column" simplifying assumption every explicit RK here uses)
    assert max(abs(mpmath.fsum(row) - ci) for row, ci in zip(A, [_mp(c) for c in tab.C])) < tol


@pytest.mark.parametrize("tab,order,embedded,dense_order,tol", CASES, ids=["tsit5", "dop853"])
def test_continuous_extension_satisfies_the_dense_order_conditions(
    tab, order, embedded, dense_order, tol
):
    A, _ = extended_tableau(tab)
    for theta in (Fr(1, 3), Fr(1, 2), Fr(9, 10), Fr(1)):
        b = [
            mpmath.fsum(_mp(p) * _mp(theta) ** (m + 1) for m, p in enumerate(row)) for row in tab.P
        ]
        res = tree_residuals(A, b, dense_order + 1, theta=_mp(theta))
        assert worst({t: r for t, r in res.items() if tree_order(t) <= dense_order}) < 1e3 * tol, (
            tab.name,
            theta,
        )
        if theta != 1:  # at θ = 1 it is the step itself, of higher order
            assert worst(res, dense_order + 1) > 1e-8, (tab.name, theta)


def test_dop853_dense_matrix_agrees_with_hairers_nested_form():
    # Independent of the expansion in tableaus.py: evaluate CONTD8's nested form numerically from
    # the same r-vectors (B, e1 - B, ..., D rows) and compare with P at several θ.
    from dynkit.solvers import tableaus as T

    b = np.array([float(x) for x in T._DOP_B] + [0.0] * 3)
    e1, e13 = np.eye(16)[0], np.eye(16)[12]
    r = [b, e1 - b, b - e13 - (e1 - b)] + [np.array([float(x) for x in d]) for d in T._DOP_D]
    for theta in (0.1, 0.37, 0.8):
        s1 = 1 - theta
        nested = theta * (
            r[0]
            + s1
            * (r[1] + theta * (r[2] + s1 * (r[3] + theta * (r[4] + s1 * (r[5] + theta * r[6])))))
        )
        assert np.allclose(DOP853.p @ theta ** np.arange(1, 8), nested, rtol=0, atol=1e-12)


def rigid_body(t, y):
    return np.array([-2.0 * y[1] * y[2], 1.25 * y[0] * y[2], -0.5 * y[0] * y[1]])


def rigid_body_reference(t_end):
    from scipy.integrate import solve_ivp

    return solve_ivp(
        rigid_body, [0, t_end], [1.0, 0.0, 0.9], method="DOP853", rtol=1e-13, atol=1e-15
    ).y[:, -1]


@pytest.mark.parametrize(
    "tab,order,steps",
    [(TSIT5, 5, (20, 40)), (DOP853, 8, (8, 16)), (DOPRI5, 5, (20, 40))],
    ids=["tsit5", "dop853", "dopri5"],
)
def test_observed_convergence_order_with_constant_steps(tab, order, steps):
    # the propagated formula alone (E removed: a fixed-step method), steps h and h/2 on [0, 4]
    fixed = dataclasses.replace(tab, E=None, error_order=None, E2=None, name=tab.name + "-fixed")
    exact = rigid_body_reference(4.0)
    errors = [
        np.abs(
            dk.solve(
                rigid_body, np.array([1.0, 0.0, 0.9]), [0, 4.0], method=fixed, step_size=4.0 / n
            ).ys[-1]
            - exact
        ).max()
        for n in steps
    ]
    observed = np.log2(errors[0] / errors[1])
    assert abs(observed - order) < 0.35, (tab.name, observed, errors)  # asymptotic-range tolerance


@pytest.mark.parametrize(
    "tab,embedded", [(TSIT5, 4), (DOP853, 5), (DOPRI5, 4)], ids=["tsit5", "dop853", "dopri5"]
)
def test_embedded_estimate_matches_the_true_error_of_the_embedded_formula(tab, embedded):
    # One step from y0: the estimate h Σ e_j k_j = y_new - y_hat; the true error of y_hat is
    # y(t + h) - y_hat. With y_new far more accurate, the two agree to O(h) relative.
    stepper = ExplicitRK(tab, lambda t, y: rigid_body(t, y), NumpyBackend(np.zeros(3)))
    y0 = np.array([1.0, 0.0, 0.9])
    ratios = []
    for h in (0.2, 0.1):
        trial = stepper.attempt(0.0, y0, h, rigid_body(0.0, y0))
        y_hat = trial.y_new - trial.error
        true = rigid_body_reference(h) - y_hat
        ratios.append(np.linalg.norm(trial.error) / np.linalg.norm(true))
        assert abs(ratios[-1] - 1) < 0.1, (tab.name, h, ratios)
    # and its size scales as h^(embedded + 1)
    e = [np.linalg.norm(stepper.attempt(0.0, y0, h, rigid_body(0.0, y0)).error) for h in (0.2, 0.1)]
    assert abs(np.log2(e[0] / e[1]) - (embedded + 1)) < 0.5, e


def test_a_planted_coefficient_error_breaks_the_order_conditions():
    # the check can fail: perturb one coefficient of B by 1e-10
    B = list(TSIT5.B)
    B[3] += Fr(1, 10**10)
    B[4] -= Fr(1, 10**10)  # keep Σ b = 1 so that only the higher conditions see it
    A = [[_mp(x) for x in row] for row in TSIT5.A]
    assert worst(tree_residuals(A, [_mp(x) for x in B], 5)) > 1e-12


@pytest.mark.parametrize("method", ["tsit5", "dop853"])
def test_torch_autograd_through_the_new_methods_matches_finite_differences(method):
    import torch

    A = np.array([[0.0, 1.0], [-1.0, -0.1]])
    At = torch.tensor(A.T)
    y0 = torch.tensor([1.0, 0.5], dtype=torch.float64, requires_grad=True)
    sol = dk.solve(
        lambda t, y: y @ At + 0.1 * torch.sin(y),
        y0,
        [0, 3.0],
        method=method,
        rtol=1e-11,
        atol=1e-12,
    )
    sol.ys[-1].sum().backward()

    def end_sum(start):
        return (
            dk.solve(
                lambda t, y: y @ A.T + 0.1 * np.sin(y),
                start,
                [0, 3.0],
                method=method,
                rtol=1e-11,
                atol=1e-12,
            )
            .ys[-1]
            .sum()
        )

    # central differences: O(e²) truncation, ~1e-10 / e rounding -> agreement to ~1e-6 relative
    e = 1e-6
    fd = [
        (end_sum(np.array([1.0, 0.5]) + e * d) - end_sum(np.array([1.0, 0.5]) - e * d)) / (2 * e)
        for d in np.eye(2)
    ]
    assert np.allclose(y0.grad.numpy(), fd, rtol=1e-6, atol=0)
    y32 = torch.tensor(
        [1.0, 0.5], requires_grad=True
    )  # float32 stays float32, dense output included
    sol32 = dk.solve(lambda t, y: y @ At.float(), y32, [0, 3.0], method=method, dense=True)
    assert sol32.ys.dtype == torch.float32 and sol32.evaluate([1.0]).dtype == torch.float32
