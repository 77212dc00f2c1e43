"""Dense output (sol.evaluate), events, per-sample error control, block-filled outputs and the
stepper protocol, against closed forms and independent references (scipy DOP853 at 1e-13)."""

import functools

import numpy as np
import pytest
import torch

from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.solvers import METHODS
from dynkit.solvers.explicit import Slope, Trial, hermite

ADAPTIVE = sorted(name for name, info in METHODS.items() if info.adaptive)


def lotka_volterra(t, y):
    return np.array([1.5 * y[0] - y[0] * y[1], -3.0 * y[1] + y[0] * y[1]])


def rigid_body(t, y):
    return np.array([-2.0 * y[1] * y[2], 1.25 * y[0] * y[2], -0.5 * y[0] * y[1]])


def oscillator(t, y):
    return np.array([y[1], -y[0]])


PROBLEMS = {
    "lotka_volterra": (lotka_volterra, [1.0, 1.0], 12.0),
    "rigid_body": (rigid_body, [1.0, 0.0, 0.9], 20.0),
    "oscillator": (oscillator, [1.0, 0.0], 10.0),
}


@functools.lru_cache(maxsize=None)
def reference(name):
    from scipy.integrate import solve_ivp

    f, y0, t_end = PROBLEMS[name]
    return solve_ivp(
        f, [0, t_end], y0, method="DOP853", rtol=1e-13, atol=1e-14, dense_output=True
    ).sol


@pytest.mark.parametrize("method", ADAPTIVE)
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_dense_output_within_3x_of_the_step_end_error(method, problem):
    # The method's own continuous extension at 2001 interior points vs the same solve's error at its
    # step ends (reference: scipy DOP853 at rtol 1e-13, 1e4 below the errors compared). Allowed 3x:
    # the interpolants are one order below the step (dop853: 7 vs 8, dopri5/tsit5: 4 vs 5).
    f, y0, t_end = PROBLEMS[problem]
    ref = reference(problem)
    tq = np.linspace(0, t_end, 2001)
    # a 2nd-order method at 1e-8 takes ~5x the steps of 1e-6 (a minute a problem in Python); two
    # tolerances a decade apart still test its interpolant at two step sizes
    tols = (1e-5, 1e-6) if METHODS[method].order <= 2 else (1e-6, 1e-8)
    for tol in tols:
        sol = dk.solve(f, np.array(y0), [0.0, t_end], method=method, rtol=tol, atol=tol, dense=True)
        ends = np.array(sol.dense.ends)
        end_error = np.abs(sol.evaluate(ends) - ref(ends).T).max()
        interior_error = np.abs(sol.evaluate(tq) - ref(tq).T).max()
        assert interior_error <= 3 * end_error, (method, problem, tol, interior_error, end_error)


def test_a_wrong_interpolant_fails_the_dense_check():
    # the check can fail: dop853 with its 7th-order extension replaced by cubic Hermite
    import dataclasses

    from dynkit.solvers.tableaus import DOP853

    hermite_dop853 = dataclasses.replace(
        DOP853, P=None, A_dense=(), C_dense=(), name="dop853-hermite"
    )
    f, y0, t_end = PROBLEMS["rigid_body"]
    ref, tq = reference("rigid_body"), np.linspace(0, t_end, 2001)
    sol = dk.solve(
        f, np.array(y0), [0.0, t_end], method=hermite_dop853, rtol=1e-8, atol=1e-8, dense=True
    )
    ends = np.array(sol.dense.ends)
    assert (
        np.abs(sol.evaluate(tq) - ref(tq).T).max()
        > 3 * np.abs(sol.evaluate(ends) - ref(ends).T).max()
    )


@pytest.mark.parametrize("method", ["dopri5", "dop853", "rk4", "ark4"])
def test_evaluate_any_order_scalar_backward_and_equal_to_outputs(method):
    kwargs = dict(rtol=1e-9, atol=1e-9) if METHODS[method].adaptive else dict(step_size=-0.01)
    t = np.linspace(5.0, 0.0, 41)  # backward in time
    sol = dk.solve(
        oscillator, np.array([np.cos(5.0), -np.sin(5.0)]), t, method=method, dense=True, **kwargs
    )
    # the outputs are the same interpolants, filled in blocks: identical to evaluate at the same
    # times
    assert np.array_equal(sol.evaluate(t[1:-1]), sol.ys[1:-1])
    tq = np.array([3.3, 0.2, 4.9, 1.7])  # any order
    assert np.abs(sol.evaluate(tq)[:, 0] - np.cos(tq)).max() < 1e-6
    assert sol.evaluate(2.5).shape == (2,) and abs(sol.evaluate(2.5)[0] - np.cos(2.5)) < 1e-6
    with pytest.raises(ValueError, match=r"t must lie within the integrated span"):
        sol.evaluate([6.0])
    with pytest.raises(ValueError, match="dense=True"):
        dk.solve(oscillator, np.array([1.0, 0.0]), [0, 1]).evaluate(0.5)


def test_evaluate_torch_keeps_library_dtype_and_gradient():
    y0 = torch.tensor([[1.0, 0.0], [2.0, 0.0]], dtype=torch.float64, requires_grad=True)
    sol = dk.solve(
        lambda t, y: torch.stack([y[:, 1], -y[:, 0]], 1),
        y0,
        [0.0, 2.0],
        method="tsit5",
        rtol=1e-10,
        atol=1e-10,
        dense=True,
    )
    out = sol.evaluate(torch.tensor([0.5, 1.5]))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64 and out.shape == (2, 2, 2)
    out[:, :, 0].sum().backward()  # d/dy0 of Σ_t y(t)[:, 0] = cos(0.5) + cos(1.5) per sample
    assert torch.allclose(
        y0.grad[:, 0], torch.full((2,), np.cos(0.5) + np.cos(1.5), dtype=torch.float64), atol=1e-8
    )


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    times=st.lists(st.floats(0.0, 7.0), min_size=1, max_size=30, unique=True),
    method=st.sampled_from(["dopri5", "tsit5", "dop853", "bosh3"]),
)
def test_outputs_requested_anywhere_equal_the_dense_output(times, method):
    # for all output grids: the outputs filled in blocks are the dense output at the same times, and
    # asking for outputs does not change the steps taken (same NFE as without them)
    t = np.unique(np.concatenate([[0.0, 7.0], times]))
    y0 = np.array([1.0, 0.0, 0.9])
    dense = dk.solve(rigid_body, y0, [0.0, 7.0], method=method, rtol=1e-7, atol=1e-9, dense=True)
    sol = dk.solve(rigid_body, y0, t, method=method, rtol=1e-7, atol=1e-9)
    assert np.allclose(sol.ys, dense.evaluate(t), rtol=0, atol=1e-14)
    assert sol.stats.n_steps == dense.stats.n_steps
    if (
        method != "dop853"
    ):  # dop853's three extra stages are spent (and counted) only in steps with outputs
        assert sol.stats.nfe == dense.stats.nfe


# --------------------------------------------------------------------------------------------------
# events


def ballistic(t, y):
    return np.array([y[1], -9.81])


def height(t, y):
    return y[0]


height.terminal, height.direction = True, -1


# bdf starts at order 1 (implicit Euler), which does not reproduce a quadratic: its zero is as
# accurate as its solution (1.7e-7 at rtol 1e-6), checked separately below
@pytest.mark.parametrize("method", [m for m in ADAPTIVE if m != "bdf"] + ["rk4", "heun"])
def test_terminal_event_at_the_closed_form_time_to_machine_precision(method):
    # y'' = -g from rest at 10 m: lands at t* = sqrt(20 / g). The solution is quadratic, every
    # interpolant here reproduces it exactly, so the zero is limited only by rounding (a few ulps).
    t_star = np.sqrt(2 * 10.0 / 9.81)
    kwargs = dict(rtol=1e-6, atol=1e-8) if METHODS[method].adaptive else dict(step_size=0.1)
    sol = dk.solve(
        ballistic,
        np.array([10.0, 0.0]),
        np.linspace(0, 5, 11),
        method=method,
        events=[height],
        **kwargs,
    )
    assert sol.result == "event" and sol.success
    assert abs(sol.t_events[0][0] - t_star) <= 8 * np.spacing(t_star), sol.t_events[0][0] - t_star
    assert abs(sol.y_events[0][0, 0]) < 1e-12
    assert sol.ts[-1] <= t_star and len(sol.ts) == 3  # outputs 0, 0.5, 1.0 only
    assert sol.event_indices[0] is None
    if method == "dopri5":  # the dense output's span ends at the event too
        sol = dk.solve(ballistic, np.array([10.0, 0.0]), [0, 5], events=[height], dense=True)
        assert abs(sol.evaluate(t_star - 1e-3)[0] - (10 - 9.81 / 2 * (t_star - 1e-3) ** 2)) < 1e-12
        with pytest.raises(ValueError, match="integrated span"):
            sol.evaluate(t_star + 0.1)


def test_bdf_terminal_event_as_accurate_as_its_solution():
    # the ballistic zero with bdf: within 1e-5 of t* (its state at rtol 1e-6 is good to ~1e-7
    # relative)
    t_star = np.sqrt(2 * 10.0 / 9.81)
    sol = dk.solve(
        ballistic,
        np.array([10.0, 0.0]),
        np.linspace(0, 5, 11),
        method="bdf",
        events=[height],
        rtol=1e-6,
        atol=1e-8,
    )
    assert sol.result == "event" and abs(sol.t_events[0][0] - t_star) < 1e-5


def test_harmonic_crossings_direction_and_terminal_count():
    # y = cos t: zeros at π/2 + kπ; upward ones (direction +1) at 3π/2 + 2kπ
    def g(t, y):
        return y[0]

    sol = dk.solve(
        oscillator, np.array([1.0, 0.0]), [0, 10], method="dop853", rtol=1e-12, atol=1e-12, events=g
    )
    assert np.abs(sol.t_events[0] - (np.pi / 2 + np.pi * np.arange(3))).max() < 1e-10
    assert np.abs(sol.y_events[0][:, 0]).max() < 1e-10
    g.direction = 1
    sol = dk.solve(
        oscillator,
        np.array([1.0, 0.0]),
        [0, 10],
        method="tsit5",
        rtol=1e-12,
        atol=1e-12,
        events=[g],
    )
    assert np.abs(sol.t_events[0] - np.array([1.5 * np.pi])).max() < 1e-10
    g.direction, g.terminal = 0, 2  # stop at the second zero
    sol = dk.solve(
        oscillator,
        np.array([1.0, 0.0]),
        np.linspace(0, 10, 101),
        rtol=1e-12,
        atol=1e-12,
        events=[g],
    )
    assert (
        sol.result == "event"
        and len(sol.t_events[0]) == 2
        and abs(sol.t_events[0][-1] - 1.5 * np.pi) < 1e-10
    )
    assert sol.ts[-1] <= 1.5 * np.pi < sol.ts[-1] + 0.1 + 1e-12


def test_torch_batched_terminal_event_stops_when_every_sample_fired():
    g0 = 9.81
    heights = torch.tensor([1.0, 5.0, 20.0], dtype=torch.float64)

    def f(t, y):
        return torch.stack([y[:, 1], torch.full_like(y[:, 1], -g0)], 1)

    def ground(t, y):
        return y[:, 0]

    ground.terminal = True
    y0 = torch.stack([heights, torch.zeros(3, dtype=torch.float64)], 1)
    sol = dk.solve(f, y0, torch.linspace(0, 5, 6), method="dopri5", events=[ground])
    expected = np.sqrt(2 * heights.numpy() / g0)
    assert sol.result == "event"
    order = np.argsort(sol.event_indices[0])
    assert np.array_equal(sol.event_indices[0][order], [0, 1, 2])
    assert np.abs(sol.t_events[0][order] - expected).max() < 1e-13
    assert isinstance(sol.y_events[0], torch.Tensor) and sol.y_events[0].shape == (3, 3, 2)
    assert float(sol.ts[-1]) <= expected.max()  # stopped at the last sample's landing


def test_event_arguments_are_validated():
    def g(t, y):
        return y[0]

    y0, t = np.array([1.0, 0.0]), [0, 1]
    with pytest.raises(TypeError, match=r"events\[1\] must be a callable"):
        dk.solve(oscillator, y0, t, events=[g, 3])
    g.direction = 2
    with pytest.raises(ValueError, match=r"events\[0\]\.direction must be -1, 0 or \+1, got 2"):
        dk.solve(oscillator, y0, t, events=[g])
    g.direction, g.terminal = 0, -1
    with pytest.raises(
        ValueError, match=r"events\[0\]\.terminal must be a bool or a non-negative int"
    ):
        dk.solve(oscillator, y0, t, events=g)

    def returns_text(t, y):
        return "up"

    with pytest.raises(TypeError, match=r"events\[0\] must return a real number"):
        dk.solve(oscillator, y0, t, events=[returns_text])

    def raises(t, y):
        raise KeyError("boom")

    with pytest.raises(dk.VectorFieldError, match=r"events\[0\] raised KeyError") as info:
        dk.solve(oscillator, y0, t, events=[raises])
    assert isinstance(info.value.__cause__, KeyError)


def test_every_zero_inside_long_steps_is_found():
    # issue 25: f = 0 lets dopri5's steps grow to most of the span; g = sin(40 t) has its zeros at k
    # pi / 40, k = 0..12 in [0, 1] (k = 0 at t0 counts, scipy's convention): all 13, to a few ulps.
    # Reference: the closed form (scipy's solve_ivp finds 3, checking signs at the step ends only).
    sol = dk.solve(lambda t, y: 0 * y, np.ones(1), [0.0, 1.0], events=[lambda t, y: np.sin(40 * t)])
    assert sol.stats.n_accepted < 13  # fewer steps than zeros: some step holds several
    exact = np.arange(13) * np.pi / 40
    assert len(sol.t_events[0]) == len(exact)
    assert np.abs(sol.t_events[0] - exact).max() < 8 * np.spacing(1.0)

    def upward(t, y):
        return np.sin(40 * t)

    upward.direction = 1  # sin(40 t) rises through its zeros at even k (and leaves 0 upward at t0)
    sol = dk.solve(lambda t, y: 0 * y, np.ones(1), [0.0, 1.0], events=[upward])
    assert np.abs(sol.t_events[0] - exact[::2]).max() < 8 * np.spacing(1.0)


def test_several_zeros_per_step_of_a_per_sample_event_function():
    # one value per sample: sample 0 crosses at k pi / 40 (13 zeros in [0, 1]), sample 1 at k pi /
    # 30 (10)
    freq = np.array([40.0, 30.0])
    sol = dk.solve(
        lambda t, y: 0 * y, np.ones((2, 1)), [0.0, 1.0], events=[lambda t, y: np.sin(freq * t)]
    )
    for sample, n in ((0, 13), (1, 10)):
        times = np.sort(sol.t_events[0][sol.event_indices[0] == sample])
        assert np.abs(times - np.arange(n) * np.pi / freq[sample]).max() < 8 * np.spacing(1.0)


@pytest.mark.parametrize("slope", [1.0, -1.0])
@pytest.mark.parametrize("direction", [-1, 0, 1])
@pytest.mark.parametrize("terminal", [True, False])
def test_a_zero_at_t0_counts_as_in_scipy(slope, direction, terminal):
    # g(t0) = 0 exactly: scipy's solve_ivp (the reference) counts it when g leaves 0 in an allowed
    # direction during the first step, and a terminal one stops the solve at t0
    from scipy.integrate import solve_ivp

    def g(t, y):
        return y[0] - 1.0

    g.terminal, g.direction = terminal, direction

    def f(t, y):
        return np.full(1, slope)

    ref = solve_ivp(f, [0.0, 1.0], [1.0], events=g)
    sol = dk.solve(f, np.array([1.0]), [0.0, 1.0], events=[g])
    assert (sol.result == "event") == (ref.status == 1)
    np.testing.assert_array_equal(sol.t_events[0], ref.t_events[0])
    if sol.result == "event":  # stopped at t0: the outputs end there
        assert sol.ts.tolist() == [0.0] and sol.ys.tolist() == [[1.0]]


def test_a_zero_on_a_step_end_counts_once():
    # g = t - 0.5 is 0 exactly at the end of the second Euler step (and the start of the third)
    sol = dk.solve(
        lambda t, y: -y,
        np.ones(1),
        [0.0, 1.0],
        method="euler",
        step_size=0.25,
        events=[lambda t, y: t - 0.5],
    )
    assert sol.t_events[0].tolist() == [0.5]


@pytest.mark.parametrize("nan_from", [0.0, 0.5])
def test_an_event_function_returning_nan_fails_naming_it(nan_from):
    def g(t, y):
        return np.nan if t >= nan_from else 1.0

    with pytest.raises(dk.NonFiniteState, match=r"events\[0\] returned NaN at t=") as info:
        dk.solve(oscillator, np.array([1.0, 0.0]), [0.0, 1.0], events=[g])
    assert info.value.t >= nan_from and info.value.solution is not None
    # planted: the same function without NaN is accepted (the check can fail)
    sol = dk.solve(oscillator, np.array([1.0, 0.0]), [0.0, 1.0], events=[lambda t, y: 1.0])
    assert sol.success and len(sol.t_events[0]) == 0


# --------------------------------------------------------------------------------------------------
# per-sample error control


def oscillators(omegas):
    def f(t, y):
        return np.stack([y[:, 1], -(omegas**2) * y[:, 0]], 1)

    return f


def test_per_sample_error_control_keeps_every_sample_as_accurate_as_alone():
    # 64 harmonic oscillators: sample 0 of amplitude 1 at ω = 1, sample 1 of amplitude 1e-3 at ω =
    # 5, the rest at rest. One RMS over the batch lets sample 1 (small, fast) drift to 10x the error
    # it has when solved alone; per-sample control keeps each within 2x of its own solve (same
    # rtol).
    n = 64
    omegas, amp = np.ones(n), np.zeros(n)
    amp[0], omegas[1], amp[1] = 1.0, 5.0, 1e-3
    y0 = np.stack([amp, np.zeros(n)], 1)
    t_end = 10.0
    exact = np.stack([amp * np.cos(omegas * t_end), -amp * omegas * np.sin(omegas * t_end)], 1)
    kwargs = dict(rtol=1e-6, atol=1e-9)
    alone = [
        np.abs(
            dk.solve(oscillators(omegas[i : i + 1]), y0[i : i + 1], [0, t_end], **kwargs).ys[-1]
            - exact[i]
        ).max()
        for i in (0, 1)
    ]
    per_sample = np.abs(
        dk.solve(oscillators(omegas), y0, [0, t_end], per_sample=True, **kwargs).ys[-1] - exact
    )
    whole = np.abs(dk.solve(oscillators(omegas), y0, [0, t_end], **kwargs).ys[-1] - exact)
    for i in (0, 1):
        assert per_sample[i].max() <= 2 * alone[i], (i, per_sample[i].max(), alone[i])
    assert whole[1].max() > 5 * alone[1]  # the failure per-sample control exists for (can fail)
    assert per_sample[2:].max() == 0.0


def test_per_sample_torch_matches_numpy_and_validates():
    omegas = np.array([1.0, 5.0])
    y0 = np.array([[1.0, 0.0], [1e-3, 0.0]])
    a = dk.solve(oscillators(omegas), y0, [0, 3.0], per_sample=True, method="tsit5")
    om = torch.tensor(omegas)
    b = dk.solve(
        lambda t, y: torch.stack([y[:, 1], -(om**2) * y[:, 0]], 1),
        torch.tensor(y0),
        [0, 3.0],
        per_sample=True,
        method="tsit5",
    )
    assert a.stats.nfe == b.stats.nfe and np.allclose(a.ys, b.ys.numpy(), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="per_sample=True needs a leading sample axis"):
        dk.solve(lambda t, y: -y, np.array(1.0), [0, 1], per_sample=True)
    with pytest.raises(TypeError, match="per_sample must be True or False"):
        dk.solve(lambda t, y: -y, np.ones(2), [0, 1], per_sample="yes")


# --------------------------------------------------------------------------------------------------
# many outputs, and the stepper protocol


def test_many_output_times_filled_in_blocks_match_one_by_one():
    t = np.linspace(0, 20, 20001)
    sol = dk.solve(rigid_body, np.array([1.0, 0.0, 0.9]), t, method="dopri5", rtol=1e-8, atol=1e-8)
    assert sol.ys.shape == (20001, 3) and sol.ys.flags["C_CONTIGUOUS"]
    ref = reference("rigid_body")(t).T
    assert np.abs(sol.ys - ref).max() < 1e-5
    # the same solve with only the step ends requested: outputs change nothing in the steps taken
    assert (
        dk.solve(rigid_body, np.array([1.0, 0.0, 0.9]), [0, 20], rtol=1e-8, atol=1e-8).stats.nfe
        == sol.stats.nfe
    )


class HeunEuler:
    """A user method through the stepper protocol: Heun 2 with Euler 1 as its error estimate."""

    adaptive, name = True, "heun-euler"

    def make_stepper(self, field, backend):
        return _HeunEulerStepper(field, backend)


class _HeunEulerStepper:
    k = 2

    def __init__(self, field, backend):
        self.field, self.backend = field, backend
        self.accepted_count = 0

    def attempt(self, t, y, h, k1):
        k2 = self.field(t + h, self.backend.lincomb(y, (k1,), (h,)))
        y_new = self.backend.lincomb(y, (k1, k2), (h / 2, h / 2))
        slope = Slope(self.field, t + h, y_new)
        return Trial(
            y_new,
            self.backend.lincomb(None, (k1, k2), (-h / 2, h / 2)),
            hermite(self.backend, h, y, k1, y_new, slope),
            slope,
        )

    def accepted(self, trial):
        self.accepted_count += 1


def test_a_user_stepper_plugs_into_the_controller():
    sol = dk.solve(
        lambda t, y: -y,
        np.array([1.0]),
        np.linspace(0, 2, 5),
        method=HeunEuler(),
        rtol=1e-6,
        atol=1e-9,
        dense=True,
    )
    assert sol.method == "heun-euler" and sol.stats.n_rejected >= 0
    assert abs(sol.ys[-1, 0] - np.exp(-2)) < 1e-4
    assert abs(sol.evaluate(1.3)[0] - np.exp(-1.3)) < 1e-4
    assert sol.stats.njev == sol.stats.nlu == sol.stats.switches == 0
    assert set(sol.stats.as_dict()) >= {"njev", "nlu", "switches"}
