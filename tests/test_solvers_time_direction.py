"""The fixed-step stability monitor reads the direction of time.

A mode ``y' = λy`` solved backward (``h < 0``) is stepped by ``R(hλ)``: it decays along the steps
when ``Re(hλ) < 0``, i.e. when ``λ > 0``. ``y' = −2y`` from ``t = 1`` to ``0`` grows along the steps
(the solution ``e^{2(1 − t)}``), which no step size makes unstable; ``y' = +50y`` from 1 to 0 decays
along them and is unstable for ``|h| > 2.79 / 50`` with rk4, exactly as ``y' = −50y`` forward.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk

FIXED = ["euler", "midpoint", "heun", "rk4", "ark3", "ark4"]


def outcome(f, y0, t, method, h):
    """(result or exception type, the StepSizeWarnings' texts) of a fixed-step solve."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = dk.solve(f, y0, t, method=method, step_size=h).result
        except dk.SolverError as err:
            result = type(err).__name__
    return result, [
        str(w.message).replace(f"{h:.6g}", "h")
        for w in caught
        if issubclass(w.category, dk.solvers.StepSizeWarning)
    ]


@pytest.mark.parametrize("method", FIXED)
@pytest.mark.parametrize("h", [0.5, 0.1, 0.01])
def test_a_backward_solve_of_a_decaying_problem_does_not_warn(method, h):
    with warnings.catch_warnings():
        warnings.simplefilter("error", dk.solvers.StepSizeWarning)
        sol = dk.solve(
            lambda t, y: -2.0 * y, np.array([1.0]), [1.0, 0.0], method=method, step_size=-h
        )
        tsol = dk.solve(
            lambda t, y: -2.0 * y,
            torch.ones(1, dtype=torch.float64),
            torch.tensor([1.0, 0.0]),
            method=method,
            step_size=-h,
        )
    assert sol.result == tsol.result == "success"
    if method == "rk4" and h == 0.01:  # e^2 to rk4's global error C h^4, C ≈ e^2 / 30
        assert abs(sol.ys[-1, 0] - math.e**2) < 1e-8 * math.e**2


def test_torchdiffeq_style_reverse_time_solves_do_not_warn():
    # a rotating, decaying 2-D linear system (torchdiffeq's reverse-time tests solve such problems
    # with t decreasing)
    A = torch.tensor([[-0.1, -2.0], [2.0, -0.1]], dtype=torch.float64)
    t = torch.linspace(2.0, 0.0, 11, dtype=torch.float64)
    y0 = torch.tensor([1.0, 0.5], dtype=torch.float64)
    exact = torch.stack([torch.linalg.matrix_exp(A * (ti - t[0])) @ y0 for ti in t])
    # global error bounds at h = 0.01 over the span 2 (|A| ≈ 2, |y| ≤ 1.4): euler h|A|²T|y|/2 ≈
    # 0.06, the second-order ones h²|A|³T|y|/6 ≈ 4e-4, rk4 far below
    for method, bound in (("euler", 0.1), ("midpoint", 2e-3), ("heun", 2e-3), ("rk4", 1e-6)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", dk.solvers.StepSizeWarning)
            ys = dk.odeint(lambda t, y: A @ y, y0, t, method=method, options={"step_size": 0.01})
        assert float((ys - exact).abs().max()) < bound, method


def test_a_backward_step_beyond_the_stability_interval_still_fails():
    # y' = 50 y decays backward; rk4 with |h| = 0.1 has h·λ = −5, outside its interval (−2.79, 0]
    with (
        pytest.warns(dk.solvers.StepSizeWarning, match="outside the method's stability region"),
        pytest.raises(dk.StepTooLarge),
    ):
        dk.solve(lambda t, y: 50.0 * y, np.array([1.0]), [1.0, 0.0], method="rk4", step_size=-0.1)


@settings(max_examples=60, deadline=None)
@given(
    lam=st.floats(-60.0, 60.0),
    h=st.sampled_from([0.01, 0.05, 0.1, 0.25]),
    method=st.sampled_from(FIXED),
)
def test_time_reversal_gives_the_forward_verdict(lam, h, method):
    # y' = λy forward with step h and y' = −λy backward with −h take bit-identical steps (h·k is the
    # same product): the monitor must say the same of both
    forward = outcome(lambda t, y: lam * y, np.array([1.0]), [0.0, 1.0], method, h)
    backward = outcome(lambda t, y: -lam * y, np.array([1.0]), [1.0, 0.0], method, -h)
    assert forward[0] == backward[0]
    assert len(forward[1]) == len(backward[1])
