"""dk.symbolic.continuous_limit on schemes that are not prebuilt: the stated limits are typed
here from the literature (Su, Boyd & Candes for Nesterov's r/t) or expanded by hand in the
docstrings; a numerical run of a scheme against its limit's exact solution checks the engine
independently of sympy."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import dynkit as dk
from dynkit.symbolic import NoContinuousLimit, continuous_limit, iterate, k

S = dk.symbolic
s, h = sp.Symbol("s", positive=True), sp.Symbol("h", positive=True)
t = sp.Symbol("t", real=True)
X = sp.Function("x")(t)
grad = sp.Function(r"\nabla F")
x = iterate("x")


def test_nesterov_with_a_general_r_tends_to_r_over_t():
    """beta_k = (k - 1)/(k + r - 1), y_k = x_k + beta_k (x_k - x_{k-1}), x_{k+1} = y_k - s grad
    F(y_k), t = k sqrt(s): x'' + (r/t) x' + grad F(x) = 0 (Su, Boyd & Candes 2016, their (3.1)
    with r in place of 3)."""
    r = sp.Symbol("r", positive=True)
    y = x[k] + (k - 1) / (k + r - 1) * (x[k] - x[k - 1])
    d = continuous_limit(
        sp.Eq(x[k + 1], y - s * grad(y)),
        step=s,
        dt=sp.sqrt(s),
        stated=sp.Eq(X.diff(t, 2) + r / t * X.diff(t) + grad(X), 0),
    )
    assert d.check_passed
    limit = d.extra["limit"]
    assert limit.leading_orders == [2] and limit.correction_orders == [
        1
    ]  # residual s x'' + ..., correction O(sqrt s)
    assert r"\frac{r \frac{d}{d t} x{\left(t \right)}}{t}" in d.to_latex()


B2, GAMMA = sp.symbols("b_2 gamma", positive=True)
THREE_TERM = sp.Eq(
    x[k + 1],
    x[k]
    + (1 - GAMMA * sp.sqrt(s) - B2) * (x[k] - x[k - 1])
    + B2 * (x[k - 1] - x[k - 2])
    - s * grad(x[k]),
)


def test_a_three_term_recursion():
    """x_{k+1} - x_k = a (x_k - x_{k-1}) + b2 (x_{k-1} - x_{k-2}) - s grad F, a = 1 - gamma
    sqrt(s) - b2. By hand with dt = sqrt(s): x_{k+1} - x_k = dt x' + dt^2 x''/2, x_k - x_{k-1} =
    dt x' - dt^2 x''/2, x_{k-1} - x_{k-2} = dt x' - 3 dt^2 x''/2; order dt: (1 - a - b2) x' =
    gamma dt x' (moves to order dt^2); order dt^2: x''(1/2 + a/2 + 3 b2/2) + gamma x' + grad F =
    (1 + b2) x'' + gamma x' + grad F."""
    d = continuous_limit(
        THREE_TERM, step=s, stated=sp.Eq((1 + B2) * X.diff(t, 2) + GAMMA * X.diff(t) + grad(X), 0)
    )
    assert d.check_passed and d.extra["limit"].dt == sp.sqrt(s)  # found by the automatic scaling


def test_the_three_term_limit_matches_the_scheme_numerically():
    """F = x^2 / 2, b2 = 0.5, gamma = 1: the scheme at s = 1e-6 (t = 1 after 1000 steps) against
    the exact solution of 1.5 x'' + x' + x = 0, x(0) = 1, x'(0) = 0 (roots of 1.5 l^2 + l + 1);
    the gap is O(sqrt(s)) = 1e-3, so 5e-3 separates it from a wrong limit (with (1 - b2) x'' the
    solution differs by 0.24 at t = 1; measured gap 7e-5)."""
    b2, gamma, step = 0.5, 1.0, 1e-6
    dt = np.sqrt(step)
    xs = [1.0, 1.0, 1.0]
    for _ in range(int(round(1 / dt)) - 1):
        a = 1 - gamma * dt - b2
        xs.append(xs[-1] + a * (xs[-1] - xs[-2]) + b2 * (xs[-2] - xs[-3]) - step * xs[-1])
    lam = np.roots([1 + b2, gamma, 1.0])
    c = np.linalg.solve(np.array([[1, 1], lam]), np.array([1.0, 0.0]))
    exact = float(np.real(c @ np.exp(lam * 1.0)))
    assert abs(xs[-1] - exact) < 5e-3


def test_the_automatic_scaling_picks_the_non_trivial_limit():
    """Gradient descent x_{k+1} = x_k - h grad F(x_k): at dt = sqrt(h) the leading equation is x'
    = 0 (trivial, reported in tried); at dt = h it is the gradient flow x' + grad F(x) = 0."""
    d = continuous_limit(
        sp.Eq(x[k + 1], x[k] - h * grad(x[k])), step=h, stated=sp.Eq(X.diff(t) + grad(X), 0)
    )
    assert d.check_passed and d.extra["limit"].dt == h and sp.sqrt(h) in d.extra["limit"].tried


def test_a_system_in_x_and_v():
    """Symplectic Euler of x' = v, v' = -gamma v - grad F(x) with step h: the first-order system
    back."""
    v, gamma = iterate("v"), sp.Symbol("gamma", positive=True)
    V = sp.Function("v")(t)
    scheme = [
        sp.Eq(v[k + 1], v[k] - h * gamma * v[k] - h * grad(x[k])),
        sp.Eq(x[k + 1], x[k] + h * v[k + 1]),
    ]
    d = continuous_limit(
        scheme,
        step=h,
        dt=h,
        stated=[sp.Eq(V.diff(t) + gamma * V + grad(X), 0), sp.Eq(X.diff(t) - V, 0)],
    )
    assert d.check_passed and d.extra["limit"].leading_orders == [1, 1]


def test_a_divergent_coefficient_is_an_error_naming_the_term():
    """beta = 1/s in heavy ball at t = k sqrt(s): the momentum term dominates (-x'/sqrt(s) = 0):
    no limit; the error names x[k - 1]/s and its coefficient."""
    scheme = sp.Eq(x[k + 1], x[k] - s * grad(x[k]) + (x[k] - x[k - 1]) / s)
    with pytest.raises(NoContinuousLimit, match=r"x\[k - 1\]/s.*diverges as s -> 0"):
        continuous_limit(scheme, step=s, dt=sp.sqrt(s))


def test_a_wrong_stated_limit_fails_the_check_and_no_statement_does_not_pass():
    wrong = continuous_limit(
        THREE_TERM, step=s, stated=sp.Eq(X.diff(t, 2) + GAMMA * X.diff(t) + grad(X), 0)
    )
    assert not wrong.check_passed
    unstated = continuous_limit(THREE_TERM, step=s)
    assert not unstated.check_passed and "No stated limit" in unstated.notes
    assert unstated.paper == "your scheme"


def test_the_prebuilt_limits_are_the_engines():
    """nesterov_limit's result is continuous_limit's for beta_k = (k - 1)/(k + 2) (the same
    scheme, eliminated)."""
    y = x[k] + (k - 2) / (k + 1) * (
        x[k] - x[k - 1]
    )  # beta_{k-1}: the review's (4) as nesterov_limit writes it
    d = continuous_limit(sp.Eq(x[k + 1], y - s * grad(y)), step=s, dt=sp.sqrt(s))
    assert S.equivalent(d.result[0], S.DERIVATIONS["nesterov_limit"]().result)


def test_a_users_adjoint_is_labelled_as_the_users():
    y = sp.Matrix([sp.Symbol("y")])
    d = S.adjoint_derivation(S.ODESystem.create(y, -(y**2)))
    assert (
        "review" not in d.to_markdown()
        and "Wang" not in d.to_markdown()
        and d.paper == "your system"
    )
    cited = S.adjoint_derivation(
        S.ODESystem.create(y, -y), paper="review (000)", equation="(19)-(20)"
    )
    assert "Wang et al., momentum review, (19)-(20)" in cited.to_markdown()
