"""Accuracy of the steppers: measured orders, tolerance tracking, dense output, scipy as a peer."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dynkit as dk
from dynkit.solvers import METHODS

FIXED = [name for name, info in METHODS.items() if not info.adaptive]
ADAPTIVE = [name for name, info in METHODS.items() if info.adaptive]


def scalar_field(t, y):
    # y' = y cos t, y(0) = 1  ->  y = exp(sin t): smooth, non-autonomous
    return y * np.cos(t)


def scalar_exact(t):
    return np.exp(np.sin(t))


def oscillator_field(t, y):
    # damped, forced linear system with a closed form (see oscillator_exact)
    return np.stack([y[1], -y[0] - 0.2 * y[1] + 0 * t])


def oscillator_exact(t):
    w = np.sqrt(1 - 0.01)
    x = np.exp(-0.1 * t) * (np.cos(w * t) + 0.1 / w * np.sin(w * t))
    v = -np.exp(-0.1 * t) * (1 / w) * np.sin(w * t)
    return np.array([x, v])


def rigid_body(t, y):
    # Euler's equations for a free rigid body: nonlinear, every elementary differential present
    return np.array([y[1] * y[2], -y[0] * y[2], -0.51 * y[0] * y[1]])


def observed_order(method, f, y0, t_end, exact, steps):
    errors = []
    for h in steps:
        sol = dk.solve(f, y0, [0.0, t_end], method=method, step_size=h)
        errors.append(np.max(np.abs(sol.ys[-1] - exact)))
    return np.polyfit(np.log(steps), np.log(errors), 1)[0]


@pytest.mark.parametrize("method", FIXED)
def test_fixed_step_methods_reach_their_order(method):
    # Tolerance 0.15 on the fitted slope (the criterion); steps divide the interval, so no
    # interpolation enters, and errors stay far above round-off (smallest ~1e-10 for rk4/ark4).
    order = METHODS[method].order
    steps = np.array([0.1, 0.05, 0.025, 0.0125])
    p_scalar = observed_order(method, scalar_field, np.array([1.0]), 2.0, scalar_exact(2.0), steps)
    reference = dk.solve(
        rigid_body, np.array([0.0, 1.0, 1.0]), [0.0, 4.0], method="dopri5", rtol=1e-13, atol=1e-14
    ).ys[-1]
    p_system = observed_order(method, rigid_body, np.array([0.0, 1.0, 1.0]), 4.0, reference, steps)
    assert abs(p_scalar - order) < 0.15, (method, p_scalar)
    assert abs(p_system - order) < 0.15, (method, p_system)


# a 2nd-order propagated solution (rosenbrock23) has a global error ~ tol^(2/3), not ~ tol: it has
# its own version of this test in tests/test_solvers_stiff.py
@pytest.mark.parametrize("method", [m for m in ADAPTIVE if METHODS[m].order >= 3])
def test_adaptive_error_tracks_tolerance(method):
    # Global error over t in [0, 10] of a closed-form problem: it must fall with the tolerance, stay
    # within a modest factor of it (a global error is an accumulation of local ones: factor 100),
    # and keep falling by at least 10x per three decades of tolerance.
    t = np.linspace(0.0, 10.0, 11)
    errors = []
    for tol in [1e-3, 1e-4, 1e-6, 1e-8, 1e-10]:
        sol = dk.solve(scalar_field, np.array([1.0]), t, method=method, rtol=tol, atol=tol)
        err = np.max(np.abs(sol.ys[:, 0] - scalar_exact(t)))
        errors.append(err)
        assert err < 100 * tol, (method, tol, err)
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < errors[0] * 1e-5


# tsit5 and dop853 are excluded here: a solve stopping at t[i] takes another, shorter step sequence
# whose end error is far below the long step's (their step-end error constants are much smaller than
# their interpolants'); tests/test_solvers_dense_events.py compares interior and step-end errors of
# the same solve for every adaptive method.
@pytest.mark.parametrize("method", sorted(set(ADAPTIVE + FIXED) - {"tsit5", "dop853"}))
def test_dense_output_as_accurate_as_step_ends(method):
    # Each requested time is reached by interpolation inside a step. Its error is compared with the
    # error at step ends near it: for adaptive methods the end of a solve stopping exactly there,
    # for fixed-step methods the two grid points around it. Allowed: 3x that error plus 1e-12
    # round-off.
    t = np.array([0.0, 0.37, 1.1, 2.9, 3.3, 5.0])
    adaptive = METHODS[method].adaptive
    h = 0.01 if METHODS[method].order >= 3 else 0.001
    tol = 1e-8 if METHODS[method].order >= 3 else 1e-6  # a 2nd-order method at 1e-8: ~50 s alone
    kwargs = dict(rtol=tol, atol=tol) if adaptive else dict(step_size=h)
    y0 = np.array([1.0, 0.0])
    dense = dk.solve(oscillator_field, y0, t, method=method, **kwargs)
    dense_err = np.abs(dense.ys - oscillator_exact(t).T).max(axis=1)

    def end_error(t_end):
        sol = dk.solve(oscillator_field, y0, [0.0, t_end], method=method, **kwargs)
        return np.abs(sol.ys[-1] - oscillator_exact(t_end)).max()

    for i in range(1, len(t)):
        if adaptive:
            reference = end_error(t[i])
        else:
            k = np.floor(t[i] / h + 1e-9)
            reference = max(end_error(k * h), end_error((k + 1) * h))
        assert dense_err[i] <= 3 * reference + 1e-12, (method, t[i], dense_err[i], reference)


@pytest.mark.parametrize("tol", [1e-4, 1e-6, 1e-8])
@pytest.mark.parametrize("problem", ["scalar", "oscillator"])
def test_dopri5_matches_scipy_rk45(problem, tol):
    # Same pair (Dormand–Prince 5(4)) and tolerance: errors within the same accuracy class (a factor
    # 10 either way) and NFE within 20% of scipy's RK45.
    if problem == "scalar":
        f, y0, exact = scalar_field, np.array([1.0]), lambda t: scalar_exact(t)[None]
    else:
        f, y0, exact = oscillator_field, np.array([1.0, 0.0]), oscillator_exact
    t_end = 20.0
    ours = dk.solve(f, y0, [0.0, t_end], method="dopri5", rtol=tol, atol=tol)
    ref = solve_ivp(f, (0.0, t_end), y0, method="RK45", rtol=tol, atol=tol)
    err_ours = np.max(np.abs(ours.ys[-1] - exact(t_end)))
    err_scipy = np.max(np.abs(ref.y[:, -1] - exact(t_end)))
    assert err_ours < 10 * err_scipy + 1e-12 and err_scipy < 10 * err_ours + 1e-12, (
        err_ours,
        err_scipy,
    )
    assert abs(ours.stats.nfe - ref.nfev) <= 0.2 * ref.nfev, (ours.stats.nfe, ref.nfev)


def test_decreasing_times_integrate_backwards():
    # y' = y cos t backwards from t = 3 to 0 must recover exp(sin t) at the requested times.
    t = np.array([3.0, 2.0, 0.5, 0.0])
    for method, kw in [
        ("dopri5", dict(rtol=1e-10, atol=1e-10)),
        ("rk4", dict(step_size=-0.01)),
        ("ark4", dict(step_size=-0.01)),
    ]:
        sol = dk.solve(scalar_field, np.array([scalar_exact(3.0)]), t, method=method, **kw)
        assert np.allclose(sol.ys[:, 0], scalar_exact(t), rtol=1e-7), method
        assert np.array_equal(sol.ts, t)


def test_fixed_step_past_the_final_time_is_interpolated_not_shortened():
    # h = 0.3 does not divide 1.0: four steps (to 1.2) are taken and y(1.0) is interpolated.
    sol = dk.solve(scalar_field, np.array([1.0]), [0.0, 1.0], method="rk4", step_size=0.3)
    assert sol.stats.n_steps == 4
    assert abs(sol.ys[-1, 0] - scalar_exact(1.0)) < 1e-3
