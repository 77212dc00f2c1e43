"""Rosenbrock methods (rosenbrock23, rodas4), their Jacobians, and method="auto" (issue 13, Sect.
1).

References are closed forms or the Bari IVP test set's published values (checked independently
against scipy's Radau here for two of them); every checker is also run on a planted violation.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.integrate
import torch

import dynkit as dk
from dynkit.diagnostics.testset import TESTSET
from dynkit.solvers import auto
from dynkit.solvers.backend import NumpyBackend, TorchBackend
from dynkit.solvers.engine import SolverStats
from dynkit.solvers.jacobian import AutogradJacobian, FiniteDifferenceJacobian, UserJacobian
from dynkit.solvers.rosenbrock import RODAS4, ROSENBROCK23, RosenbrockStepper, RosenbrockTableau

ROSENBROCK = [ROSENBROCK23, RODAS4]


class _Field:
    """A counted field like the engine's, for driving a stepper directly."""

    def __init__(self, f, y0, jac=None, batched=False):
        self.f, self.shape, self.jac, self.batched = f, tuple(y0.shape), jac, batched
        self.stats = SolverStats()

    def __call__(self, t, y):
        self.stats.nfe += 1
        return self.f(t, y)


def _one_step(tableau, f, y0, t0, h, jac=None):
    field = _Field(f, y0, jac)
    stepper = RosenbrockStepper(tableau, field, NumpyBackend(y0))
    return stepper.attempt(t0, y0, h, field(t0, y0))


# ---------------------------------------------------------------------------------------------
# order of convergence (local error of one step ~ h^(p+1)) against closed forms


def _local_order(tableau, f, exact, y0, t0=0.3, hs=(0.08, 0.04, 0.02, 0.01)) -> float:
    errors = [np.abs(_one_step(tableau, f, y0, t0, h).y_new - exact(t0 + h)).max() for h in hs]
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0]) - 1.0


def _nonautonomous(t, y):  # y' = y cos t, y(0.3) = exp(sin 0.3): y = exp(sin t); exercises ∂f/∂t
    return y * np.cos(t)


def _nonlinear(t, y):  # y' = -y^2, y(0.3) = 1/1.3: y = 1/(1 + t)
    return -y * y


CASES = [
    (_nonautonomous, lambda t: np.array([np.exp(np.sin(t))]), np.array([np.exp(np.sin(0.3))])),
    (_nonlinear, lambda t: np.array([1.0 / (1.0 + t)]), np.array([1.0 / 1.3])),
]


@pytest.mark.parametrize("tableau", ROSENBROCK, ids=lambda t: t.name)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_order_of_convergence(tableau, case):
    # observed order within 0.3 of the claimed one (log-log fit over h = 0.08 ... 0.01)
    f, exact, y0 = CASES[case]
    assert abs(_local_order(tableau, f, exact, y0) - tableau.order) < 0.3


def test_order_check_catches_a_wrong_coefficient():
    # planted: rodas4 with one solution weight off by 1e-2 is a first-order method
    wrong = RosenbrockTableau(
        **{**RODAS4.__dict__, "m": RODAS4.m + np.array([1e-2, 0, 0, 0, 0, 0])}
    )
    f, exact, y0 = CASES[1]
    assert abs(_local_order(wrong, f, exact, y0) - RODAS4.order) > 1.0


def test_error_estimate_has_the_embedded_order():
    # the embedded error estimate is O(h^(error_order + 1)) too
    f, exact, y0 = CASES[0]
    for tab in ROSENBROCK:
        hs = np.array([0.08, 0.04, 0.02])
        errs = [np.abs(_one_step(tab, f, y0, 0.3, h).error).max() for h in hs]
        slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
        assert abs(slope - (min(tab.order, tab.error_order) + 1)) < 0.35, (tab.name, slope)


# rosenbrock23 without its tolerance proportionality (θ = 1): the planted violation of the two
# checks below
ROSENBROCK23_PLAIN = dataclasses.replace(ROSENBROCK23, tolerance_proportionality=None)


def _rosenbrock23_error_in_tolerances(method, tols) -> list[float]:
    """y' = y cos t, y(0) = 1 on [0, 10] (y = e^{sin t}): the largest error at t = 0, 1, …, 10
    over ``tol``."""
    t = np.linspace(0.0, 10.0, 11)
    out = []
    for tol in tols:
        sol = dk.solve(
            lambda t, y: y * np.cos(t), np.array([1.0]), t, method=method, rtol=tol, atol=tol
        )
        out.append(float(np.abs(sol.ys[:, 0] - np.exp(np.sin(t))).max()) / tol)
    return out


def test_rosenbrock23_global_error_in_proportion_to_the_tolerance():
    # with θ = 0.5 rtol^{1/2} the global error of the 2nd-order solution falls like tol (measured
    # 0.57, 0.78, 0.87 tolerances); 3 tolerances leaves room for the accumulation of local errors
    # over the span
    assert max(_rosenbrock23_error_in_tolerances("rosenbrock23", [1e-3, 1e-5, 1e-7])) <= 3.0


def test_rosenbrock23_proportionality_check_fails_without_it():
    # planted: per-step control of the O(h^3) local error alone gives a global error ∝ tol^{2/3}: 8,
    # 42, 257 tolerances at 1e-3, 1e-5, 1e-7 (the check above can fail)
    assert max(_rosenbrock23_error_in_tolerances(ROSENBROCK23_PLAIN, [1e-3, 1e-5, 1e-7])) > 3.0


def _orego_error_in_tolerances(method, rtol: float) -> float:
    """OREGO at rtol = atol: ``max_i |y_i − r_i| / (atol + rtol |r_i|)`` at t = 360 against the
    test set's published reference."""
    p = TESTSET["orego"]
    sol = dk.solve(
        p.f, p.y0, [0.0, p.t_end], method=method, rtol=rtol, atol=rtol, max_steps=200_000
    )
    ref = np.asarray(p.reference, float)
    return float(np.max(np.abs(sol.ys[-1] - ref) / (rtol + rtol * np.abs(ref))))


@pytest.mark.parametrize("rtol", [1e-2, 1e-3])
def test_rosenbrock23_oregonator_within_ten_tolerances(rtol):
    # issue 33: rosenbrock23 returned OREGO 43 and 92 tolerances off as a success at rtol 1e-2, 1e-3
    # (its local errors were ~1e-3 of the tolerance: the oscillator amplifies them); with its
    # tolerance proportionality 5.6, 3.8 (10 tolerances: bench_stiff --wrong-as-success's line
    # between right and wrong)
    assert _orego_error_in_tolerances("rosenbrock23", rtol) <= 10.0


def test_rosenbrock23_oregonator_check_fails_without_proportionality():
    # planted: θ = 1 (as before) gives 43 tolerances at rtol 1e-2
    assert _orego_error_in_tolerances(ROSENBROCK23_PLAIN, 1e-2) > 10.0


# ---------------------------------------------------------------------------------------------
# L-stability


def _stability_function_at(tableau, z: float) -> float:
    """R(z): one step of y' = λ y with h λ = z, from y = 1."""
    lam = -1e6
    h = z / lam
    return float(
        _one_step(
            tableau,
            lambda t, y: lam * y,
            np.array([1.0]),
            0.0,
            h,
            jac=lambda t, y: np.array([[lam]]),
        ).y_new[0]
    )


def test_l_stable_stability_function_vanishes_at_infinity():
    # |R(z)| ≤ 1 on the negative axis and R(-1e12) ≈ 0 (L-stability); both methods are L-stable
    for tab in ROSENBROCK:
        values = [_stability_function_at(tab, -x) for x in np.logspace(-2, 12, 30)]
        assert max(abs(v) for v in values) <= 1.0 + 1e-12, tab.name
        assert abs(values[-1]) < 1e-6, (tab.name, values[-1])


def test_l_stability_check_catches_an_a_stable_method():
    # planted: the linearly implicit trapezoidal rule (γ = 1/2) is A- but not L-stable: R(∞) = -1
    trapezoid = RosenbrockTableau.from_classical(
        "trapezoid", 2, 2, [[0]], [[0.5]], [1.0], [0.0], [[1.0]]
    )
    assert abs(_stability_function_at(trapezoid, -1e12) + 1.0) < 1e-6


def _stiff_exact(t, lam):
    """y' = λ (y − cos t), y(0) = 0: y = A cos t + B sin t − A e^{λt}."""
    A, B = lam * lam / (1 + lam * lam), -lam / (1 + lam * lam)
    return A * np.cos(t) + B * np.sin(t) - A * np.exp(lam * t)


@pytest.mark.parametrize("method", ["rosenbrock23", "rodas4", "rodas5", "radau5", "bdf", "auto"])
def test_stiff_linear_problem_in_few_steps(method):
    # λ = -1e6: an explicit method needs ~1e6 steps; an L-stable one follows the slow solution with
    # steps set by accuracy. Error ≤ 10 rtol at the outputs (global error of a smooth problem).
    # rosenbrock23 at rtol 1e-4, its documented range. Its tolerance proportionality (θ = 0.5
    # rtol^{1/2}) is not applied to a component the step damps (|h J_ii| ≥ DAMPED_H_J), as this one
    # is on every step: its global error is its last local error, 1.05e-5 (0.15 tolerances; with θ
    # 5.7e-8 in 2192 steps), so its bound is the tolerance, rtol 1e-4
    lam = -1e6
    t = np.linspace(0.0, 2.0, 9)
    rtol = 1e-4 if method == "rosenbrock23" else 1e-6
    sol = dk.solve(
        lambda t, y: lam * (y - np.cos(t)),
        np.array([0.0]),
        t,
        method=method,
        rtol=rtol,
        atol=rtol * 1e-3,
    )
    bound = rtol if method == "rosenbrock23" else 1e-5
    assert np.abs(sol.ys[:, 0] - _stiff_exact(t, lam)).max() < bound
    assert sol.stats.n_steps < 3000  # explicit dopri5: ~|λ| T / 3.3 = 6e5 steps


# ---------------------------------------------------------------------------------------------
# Jacobian providers


def _torch_hires(t, y):
    r = 280.0 * y[..., 5] * y[..., 7]
    return torch.stack(
        [
            -1.71 * y[..., 0] + 0.43 * y[..., 1] + 8.32 * y[..., 2] + 0.0007,
            1.71 * y[..., 0] - 8.75 * y[..., 1],
            -10.03 * y[..., 2] + 0.43 * y[..., 3] + 0.035 * y[..., 4],
            8.32 * y[..., 1] + 1.71 * y[..., 2] - 1.12 * y[..., 3],
            -1.745 * y[..., 4] + 0.43 * y[..., 5] + 0.43 * y[..., 6],
            -r + 0.69 * y[..., 3] + 1.71 * y[..., 4] - 0.43 * y[..., 5] + 0.69 * y[..., 6],
            r - 1.81 * y[..., 6],
            -r + 1.81 * y[..., 6],
        ],
        dim=-1,
    ) * (1.0 + 0.0 * t)


def _providers_agree(problem_jac) -> float:
    """Largest relative disagreement between the analytic (or planted) Jacobian, forward differences
    (numpy) and autograd (torch) at a point of the HIRES trajectory."""
    p = TESTSET["hires"]
    y = p.y0 + np.linspace(1e-3, 4e-3, 8)  # every species present: every entry of J matters
    t = 5.0
    analytic = problem_jac(t, y)
    fd, _ = FiniteDifferenceJacobian(_Field(p.f, y), NumpyBackend(y), False)(t, y, p.f(t, y))
    yt = torch.tensor(y)
    auto, _ = AutogradJacobian(_Field(_torch_hires, yt), TorchBackend(yt), False)(
        t, yt, _torch_hires(t, yt)
    )
    scale = np.abs(analytic).max()
    return max(np.abs(fd - analytic).max(), np.abs(auto.numpy() - analytic).max()) / scale


def test_jacobian_providers_agree_with_the_analytic_jacobian():
    # forward differences: error ~ sqrt(eps) * |f''| relative: 1e-6 is ample; autograd: exact
    assert _providers_agree(TESTSET["hires"].jac) < 1e-6


def test_jacobian_agreement_check_catches_a_wrong_entry():
    def wrong(t, y):  # planted: one entry's sign flipped
        J = TESTSET["hires"].jac(t, y)
        J[5, 7] = -J[5, 7]
        return J

    assert _providers_agree(wrong) > 1e-3


def test_time_derivative_of_nonautonomous_field():
    # ∂f/∂t of f = y cos t + t^2 is -y sin t + 2t (numpy differences and torch autograd)
    y = np.array([0.7, -1.2])
    f = lambda t, y: y * np.cos(t) + t * t  # noqa: E731
    _, ft = FiniteDifferenceJacobian(_Field(f, y), NumpyBackend(y), False)(0.4, y, f(0.4, y))
    np.testing.assert_allclose(ft, -y * np.sin(0.4) + 0.8, rtol=1e-6)
    yt = torch.tensor(y)
    ftorch = lambda t, y: y * torch.cos(t) + t * t  # noqa: E731
    be = TorchBackend(yt)
    _, ft_t = AutogradJacobian(_Field(ftorch, yt), be, False)(0.4, yt, ftorch(be.time(0.4), yt))
    np.testing.assert_allclose(ft_t.numpy(), -y * np.sin(0.4) + 0.8, rtol=1e-12)


def test_user_jacobian_of_wrong_shape_is_refused():
    p = TESTSET["vdpol"]
    with pytest.raises(ValueError, match="jac must return"):
        dk.solve(p.f, p.y0, [0.0, 0.1], method="rodas4", jac=lambda t, y: np.zeros((3, 3)))
    with pytest.raises(TypeError, match="jac must be"):
        dk.solve(p.f, p.y0, [0.0, 0.1], method="rodas4", jac="analytic")


def test_counts_every_call_jacobians_and_factorisations():
    # nfe = every call of f (counted independently here), njev = one per accepted point (+ the
    # first), nlu = one per attempted step (every stage shares the LU)
    p = TESTSET["vdpol"]
    calls = []

    def f(t, y):
        calls.append(t)
        return p.f(t, y)

    for jac in (None, p.jac):
        calls.clear()
        sol = dk.solve(f, p.y0, [0.0, 0.5], method="rodas4", rtol=1e-5, atol=1e-8, jac=jac)
        s = sol.stats
        assert s.nfe == len(calls)
        assert s.nlu == s.n_steps
        assert s.n_accepted <= s.njev <= s.n_accepted + 1
        # per accepted step: 5 stages + f(t+h, y_new) + 1 for ∂f/∂t (+ 2 for the difference
        # Jacobian)
        per = 7 if jac is not None else 9
        assert s.nfe <= per * s.n_steps + 2 * per


# ---------------------------------------------------------------------------------------------
# the IVP test set: published references, rtol 1e-6


def _rel_error(y, ref):
    floor = 1e-6 * np.abs(ref).max()
    return np.max(np.abs(y - ref) / np.maximum(np.abs(ref), floor))


@pytest.mark.parametrize("name", list(TESTSET))
@pytest.mark.parametrize("method", ["rodas4", "rodas5", "radau5"])
@pytest.mark.parametrize("with_jac", [True, False], ids=["jac", "no-jac"])
def test_stiff_methods_reach_the_published_reference(name, method, with_jac):
    # goal of issues 13 and 23: relative error ≤ 1e-3 at rtol 1e-6 (atol 1e-10), with the analytic
    # Jacobian and with none (finite differences)
    p = TESTSET[name]
    sol = dk.solve(
        p.f,
        p.y0,
        [0.0, p.t_end],
        method=method,
        rtol=1e-6,
        atol=1e-10,
        jac=p.jac if with_jac else None,
        max_steps=50_000,
    )
    assert _rel_error(sol.ys[-1], p.reference) < 1e-3


@pytest.mark.parametrize("name", ["hires", "robertson"])
def test_published_reference_agrees_with_scipy_radau(name):
    # independent check of the data we carry: scipy Radau at rtol 1e-10 within 1e-6 (relative,
    # floored)
    p = TESTSET[name]
    res = scipy.integrate.solve_ivp(
        p.f, (0.0, p.t_end), p.y0, method="Radau", rtol=1e-10, atol=1e-16, jac=p.jac
    )
    assert _rel_error(res.y[:, -1], p.reference) < 1e-6


def test_analytic_jacobians_of_the_test_set_match_differences():
    # the hand-derived Jacobians against central differences at the initial state and a perturbed
    # one
    rng = np.random.default_rng(0)
    for p in TESTSET.values():
        for y in (p.y0, p.y0 * (1 + 0.1 * rng.random(p.y0.shape)) + 0.01):
            d = len(y)
            J = np.empty((d, d))
            for j in range(d):
                e = np.zeros(d)
                e[j] = 1e-6 * max(1.0, abs(y[j]))
                J[:, j] = (p.f(0.0, y + e) - p.f(0.0, y - e)) / (2 * e[j])
            np.testing.assert_allclose(
                p.jac(0.0, y), J, rtol=1e-5, atol=1e-6 * np.abs(J).max(), err_msg=p.name
            )


# ---------------------------------------------------------------------------------------------
# method="auto"


def test_auto_switches_on_van_der_pol_mu_1000():
    # stiff: at least one switch to rodas4, recorded with its time; accurate at the reference
    p = TESTSET["vdpol"]
    sol = dk.solve(p.f, p.y0, [0.0, p.t_end], method="auto", rtol=1e-6, atol=1e-10, jac=p.jac)
    assert sol.stats.switches >= 1 and len(sol.switch_log) == sol.stats.switches
    t, src, dst, why = sol.switch_log[0]
    assert (src, dst) == ("dopri5", "radau5") and 0.0 < t < p.t_end and "stability-limited" in why
    assert _rel_error(sol.ys[-1], p.reference) < 1e-3


def _vdp1000_auto(rtol: float) -> tuple[float, list[float]]:
    """Van der Pol μ = 1000 on [0, 3000] (two relaxation cycles), auto at rtol, atol = rtol / 100, no ``jac=``:
    ``max_i |y_i − r_i| / (atol + rtol |r_i|)`` against scipy's Radau at rtol 1e-12 (independent of dynkit), and
    the times at which auto switched back to the explicit method *into* a relaxation jump: where the reference's
    |x| < 1.5 (each slow branch runs |x| from 2 down to the fold at 1 over ~800 time units, the steps shrinking
    near its end; just after a jump |x| ≈ 2, where a switch back is right)."""  # noqa: E501
    mu = 1000.0
    f = lambda t, y: np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])  # noqa: E731
    jac = lambda t, y: np.array([[0.0, 1.0], [-2 * mu * y[0] * y[1] - 1, mu * (1 - y[0] ** 2)]])  # noqa: E731
    y0 = np.array([2.0, 0.0])
    ref = scipy.integrate.solve_ivp(
        f, (0.0, 3000.0), y0, method="Radau", rtol=1e-12, atol=1e-12, jac=jac, dense_output=True
    )
    atol = rtol / 100
    sol = dk.solve(f, y0, [0.0, 3000.0], method="auto", rtol=rtol, atol=atol)
    into_jumps = [
        switch.t
        for switch in sol.switch_log
        if switch.to_method == "dopri5" and abs(ref.sol(switch.t)[0]) < 1.5
    ]
    end = ref.y[:, -1]
    return float(np.max(np.abs(sol.ys[-1] - end) / (atol + rtol * np.abs(end)))), into_jumps


# Van der Pol μ = 1000's first relaxation jump, at (3/2 − ln 2) μ ≈ 807: up to it the solve is
# rodas4 on the slow branch, whose steps rounding does not reorder; after a jump crossed by dopri5
# the paths may differ
FIRST_JUMP = (1.5 - np.log(2.0)) * 1000.0


def _into_the_first_jump(into_jumps: list[float]) -> list[float]:
    return [t for t in into_jumps if abs(t - FIRST_JUMP) < 5.0]


def test_auto_does_not_switch_back_into_a_relaxation_jump():
    # issue 33: auto switched back to dopri5 as the steps shrank into each jump (no decaying
    # eigenvalue there) and returned 12.8 tolerances off as a success at rtol 1e-2; now 0.30 (10:
    # the bench's line), and no switch back into a jump (measured: none at all at this rtol)
    error, into_jumps = _vdp1000_auto(1e-2)
    assert error <= 10.0
    assert _into_the_first_jump(into_jumps) == [], into_jumps


def test_auto_jump_check_fails_when_shrinking_steps_count(monkeypatch):
    """Planted: every stiff step counts towards the switch back, shrinking or not (as before). The
    cost test after a switch back is left out too: it also sends dopri5 in a jump back to the stiff
    method, and this check is of the shrinking-steps rule alone.

    What the plant does is structural, not a matter of rounding: as the steps shrink into a jump,
    J's eigenvalues turn positive (h·ρ/r = 0 for the decaying part, far below the threshold), so
    the run qualifies on every step and auto hands the jump to dopri5 — measured at 806.8, where
    the reference's x = 1.009, well inside |x| < 1.5 (and 806.9-807.0 at rtol 0.7e-2, 1.4e-2 and
    1e-3), and at each later jump: a whole switch where the honest test asserts none. The error
    this causes is not asserted: dopri5 crossing a jump at its stability boundary lands 6.75 to
    12.8 tolerances off depending on the CPU's rounding (and on the output grid), either side of
    the honest test's line of 10."""
    monkeypatch.setattr(auto, "_steady", lambda h, h_run: True)
    monkeypatch.setattr(auto, "COST_STEPS", 10**9)
    _, into_jumps = _vdp1000_auto(1e-2)
    assert len(_into_the_first_jump(into_jumps)) == 1, (
        into_jumps
    )  # the honest test's check fails by a switch


def _torch_vdp1000_auto(method):
    """Van der Pol μ = 1000 as a torch state on [0, 1000] (through the first relaxation jump) at
    rtol 1e-7: the solution and its calls of ``f`` (autograd's Jacobian passes included)."""
    f = _torch_vdp(1000.0)
    sol = dk.solve(
        f,
        torch.tensor([2.0, 0.0], dtype=torch.float64),
        [0.0, 1000.0],
        method=method,
        rtol=1e-7,
        atol=1e-9,
    )
    return sol, sol.stats.nfe


def test_auto_takes_rodas5_for_torch_states_at_tight_tolerances():
    # issue 33: auto must not pick a method far above the best at the requested tolerance. For torch
    # states (radau5 takes numpy only) it used rodas4 at every rtol; at rtol 1e-7 here rodas4 alone
    # costs 7789 calls, rodas5 3647, auto with rodas5 3038 (measured). Reference: scipy's Radau at
    # rtol 1e-12, within 1e-4 relative
    sol, nfe = _torch_vdp1000_auto("auto")
    assert "rodas5" in sol.switch_log[0].reason and sol.switch_log[0].to_method == "rodas5"
    _, nfe_rodas5 = _torch_vdp1000_auto("rodas5")
    assert nfe <= nfe_rodas5
    mu = 1000.0
    ref = scipy.integrate.solve_ivp(
        lambda t, y: [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]],
        (0.0, 1000.0),
        [2.0, 0.0],
        method="Radau",
        rtol=1e-12,
        atol=1e-12,
        jac=lambda t, y: [[0.0, 1.0], [-2 * mu * y[0] * y[1] - 1, mu * (1 - y[0] ** 2)]],
    )
    assert _rel_error(sol.ys[-1].numpy(), ref.y[:, -1]) < 1e-4


def test_auto_torch_work_check_fails_with_rodas4():
    # planted: rodas4 for torch states at every rtol (as before): 4457 calls, above rodas5's 3647
    _, nfe = _torch_vdp1000_auto(auto.AutoSwitching(tight_torch=None))
    _, nfe_rodas5 = _torch_vdp1000_auto("rodas5")
    assert nfe > nfe_rodas5


@pytest.mark.parametrize("rtol", [1e-3, 1e-6, 1e-9])
def test_auto_does_not_switch_on_a_nonstiff_problem(rtol):
    # planted nonstiff: a damped oscillator and Lotka–Volterra: zero switches, dopri5's result
    problems = [
        (lambda t, y: np.array([y[1], -y[0] - 0.1 * y[1]]), np.array([1.0, 0.0]), 20.0),
        (
            lambda t, y: np.array([1.5 * y[0] - y[0] * y[1], -3.0 * y[1] + y[0] * y[1]]),
            np.array([1.0, 1.0]),
            15.0,
        ),
    ]
    for f, y0, T in problems:
        sol = dk.solve(f, y0, [0.0, T], method="auto", rtol=rtol, atol=rtol * 1e-2)
        ref = dk.solve(f, y0, [0.0, T], method="dopri5", rtol=rtol, atol=rtol * 1e-2)
        assert sol.stats.switches == 0 and sol.switch_log == []
        assert sol.stats.njev == 0 and sol.stats.nfe == ref.stats.nfe


# ---------------------------------------------------------------------------------------------
# numpy and torch, float32/float64, batch dimensions


def _torch_vdp(mu):
    def f(t, y):
        return torch.stack([y[..., 1], mu * (1 - y[..., 0] ** 2) * y[..., 1] - y[..., 0]], dim=-1)

    return f


@pytest.mark.parametrize("method", ["rosenbrock23", "rodas4", "auto"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_batched_per_sample_matches_numpy(method, dtype):
    # a batch of 3 Van der Pol oscillators (μ = 10, 100, 1000) solved at once with per-sample
    # Jacobian blocks (per_sample=True) against scipy Radau at rtol 1e-10 one by one: within 1e-3
    # (float64, rtol 1e-6) or 2e-2 (float32, rtol 1e-3: the state's own precision limits the
    # tolerance)
    mu = torch.tensor([10.0, 100.0, 1000.0], dtype=dtype)
    y0 = torch.tensor([[2.0, 0.0]] * 3, dtype=dtype)
    rtol = 1e-6 if dtype == torch.float64 else 1e-3
    t = [0.0, 3.0]
    sol = dk.solve(
        _torch_vdp(mu), y0, t, method=method, rtol=rtol, atol=rtol * 1e-2, per_sample=True
    )
    assert sol.ys.dtype == dtype and sol.ys.shape == (2, 3, 2)
    assert sol.stats.njev > 0
    for b, m in enumerate([10.0, 100.0, 1000.0]):
        ref = scipy.integrate.solve_ivp(
            lambda t, y: np.array([y[1], m * (1 - y[0] ** 2) * y[1] - y[0]]),
            t,
            [2.0, 0.0],
            method="Radau",
            rtol=1e-10,
            atol=1e-12,
        ).y[:, -1]
        err = np.abs(sol.ys[-1, b].double().numpy() - ref).max() / np.abs(ref).max()
        assert err < (1e-3 if dtype == torch.float64 else 2e-2), (b, err)


def test_torch_whole_state_jacobian_and_numpy_agree():
    # without per_sample the Jacobian is of the whole (flattened) state; the same steps as numpy's
    # with the analytic Jacobian: equal to 1e-6 relative (differences: round-off in J and ∂f/∂t
    # only)
    p = TESTSET["hires"]
    y0 = torch.tensor(p.y0)
    sol_t = dk.solve(_torch_hires, y0, [0.0, 1.0], method="rodas4", rtol=1e-6, atol=1e-10)
    sol_n = dk.solve(p.f, p.y0, [0.0, 1.0], method="rodas4", rtol=1e-6, atol=1e-10, jac=p.jac)
    np.testing.assert_allclose(sol_t.ys[-1].numpy(), sol_n.ys[-1], rtol=1e-6, atol=1e-12)


def test_torch_solve_is_differentiable_through_the_stages():
    # y' = -k y, y(1) = exp(-k): d y(1)/dk = -exp(-k) (the Jacobian is treated as a constant of the
    # step: the gradient of the discrete solution, accurate to the solve's tolerance)
    k = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    sol = dk.solve(
        lambda t, y: -k * y,
        torch.ones(1, dtype=torch.float64),
        [0.0, 1.0],
        method="rodas4",
        rtol=1e-9,
        atol=1e-12,
    )
    sol.ys[-1, 0].backward()
    assert abs(float(k.grad) + math.exp(-2.0)) < 1e-3


# ---------------------------------------------------------------------------------------------
# dense output on a stiff problem


@pytest.mark.parametrize("method", ["rosenbrock23", "rodas4"])
def test_dense_output_on_a_stiff_problem_within_3x_of_step_end_error(method):
    # interior points of λ = -1e6 against the closed form, compared with the error of solves that
    # end exactly there: 3x plus 1e-12 round-off (the dense-output goal)
    lam = -1e6
    f = lambda t, y: lam * (y - np.cos(t))  # noqa: E731
    tol = dict(rtol=1e-5, atol=1e-8) if method == "rosenbrock23" else dict(rtol=1e-7, atol=1e-10)
    sol = dk.solve(f, np.array([0.0]), [0.0, 2.0], method=method, dense=True, **tol)
    for tq in (0.3, 0.77, 1.41):
        dense_err = abs(float(sol.evaluate(np.array([tq]))[0, 0]) - _stiff_exact(tq, lam))
        end = dk.solve(f, np.array([0.0]), [0.0, tq], method=method, **tol)
        end_err = abs(float(end.ys[-1, 0]) - _stiff_exact(tq, lam))
        assert dense_err <= 3 * end_err + 1e-12, (tq, dense_err, end_err)


def test_user_time_derivative_saves_one_call_per_jacobian():
    # jac returning (J, ∂f/∂t): same steps, one call of f fewer per Jacobian; a wrong pair is
    # refused
    p = TESTSET["vdpol"]
    bare = dk.solve(p.f, p.y0, [0.0, 0.5], method="rodas4", rtol=1e-6, atol=1e-10, jac=p.jac)
    pair = dk.solve(
        p.f,
        p.y0,
        [0.0, 0.5],
        method="rodas4",
        rtol=1e-6,
        atol=1e-10,
        jac=lambda t, y: (p.jac(t, y), 0),
    )
    # (one njev is the check of jac before the first step, which estimates no ∂f/∂t)
    assert pair.stats.nfe == bare.stats.nfe - (bare.stats.njev - 1)
    assert pair.stats.n_steps == bare.stats.n_steps
    np.testing.assert_allclose(pair.ys[-1], bare.ys[-1], rtol=1e-6)
    # non-autonomous: the user's exact ∂f/∂t keeps the order (closed form exp(sin t), 1e-5 at rtol
    # 1e-7)
    f = lambda t, y: y * np.cos(t)  # noqa: E731
    sol = dk.solve(
        f,
        np.array([1.0]),
        [0.0, 3.0],
        method="rodas4",
        rtol=1e-7,
        atol=1e-9,
        jac=lambda t, y: (np.array([[np.cos(t)]]), -y * np.sin(t)),
    )
    assert abs(sol.ys[-1, 0] - np.exp(np.sin(3.0))) < 1e-5
    with pytest.raises(ValueError, match="∂f/∂t must have"):
        dk.solve(
            f,
            np.array([1.0]),
            [0.0, 1.0],
            method="rodas4",
            jac=lambda t, y: (np.eye(1), np.zeros(3)),
        )


# -- issue 33 (1): bdf's global error in proportion to the tolerance
# ----------------------------------------

# (problem, rtol, atol / rtol): cases where bdf returned 10-300 tolerances as a success before its
# tolerance transformation (bench_stiff --wrong-as-success: HIRES 32 at 1e-3, OREGO 56 at 1e-6,
# VDPOL 17 at 1e-9)
BDF_CASES = [
    ("hires", 1e-3, 1e-3),
    ("hires", 1e-6, 1e-3),
    ("orego", 1e-2, 1.0),
    ("orego", 1e-6, 1.0),
    ("vdpol", 1e-2, 1.0),
    ("vdpol", 1e-9, 1.0),
]


def _bdf_error_in_tolerances(name: str, rtol: float, ratio: float) -> float:
    """``max_i |y_i − r_i| / (atol + rtol |r_i|)`` at the final time against the test set's
    published reference."""
    p = TESTSET[name]
    atol = rtol * ratio
    sol = dk.solve(p.f, p.y0, [0.0, p.t_end], method="bdf", rtol=rtol, atol=atol, max_steps=200_000)
    ref = np.asarray(p.reference, float)
    return float(np.max(np.abs(sol.ys[-1] - ref) / (atol + rtol * np.abs(ref))))


@pytest.mark.parametrize("name, rtol, ratio", BDF_CASES)
def test_bdf_global_error_stays_within_ten_tolerances(name, rtol, ratio):
    """10 tolerances: the bench's line between a right answer and a wrong one reported as success
    (scipy's BDF exceeds it on these problems too); bdf now lands at 0.2-3 tolerances on them."""
    assert _bdf_error_in_tolerances(name, rtol, ratio) <= 10.0


def test_bdf_error_check_fails_without_the_tolerance_transformation(monkeypatch):
    """The planted violation: with θ = 1 (the local error held to the user's tolerance itself, as
    before) the same check fails on HIRES at rtol 1e-3 (32 tolerances) — the test above can fail."""
    import dynkit.solvers.bdf as bdf

    monkeypatch.setattr(bdf, "TOLERANCE_FACTOR", 1.0)
    monkeypatch.setattr(bdf, "TOLERANCE_EXPONENT", 0.0)
    assert _bdf_error_in_tolerances("hires", 1e-3, 1e-3) > 10.0
