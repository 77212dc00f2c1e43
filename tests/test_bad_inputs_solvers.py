"""Fuzz suite for dk.solve and dk.solvers: every bad input ends in a ValueError, TypeError or
dk.SolverError whose message names the argument — never another exception type, never a silent
result (issue 14, Sects. 4-6). Enumerated cases per argument plus hypothesis-generated values; the
number of cases is asserted (and printed with ``-s``) so that the closing note can report it."""
import math
import warnings
from fractions import Fraction as Fr

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.solvers import RungeKuttaTableau, TwoStepRK

ALLOWED = (ValueError, TypeError, dk.SolverError)
Y0, T = np.array([1.0, 0.0]), [0.0, 1.0]


def good_f(t, y):
    return np.array([y[1], -y[0]])


def expect_clear_error(call, name: str):
    """``call()`` must raise an allowed type whose message names ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call()
        except ALLOWED as err:
            assert name in str(err), f"message does not name {name!r}: {err}"
            return err
        except Exception as err:  # noqa: BLE001 - the point: no other type may escape
            pytest.fail(f"raw {type(err).__name__} for bad {name}: {err}")
    pytest.fail(f"bad {name} silently accepted: {result!r:.200}")


def solve_with(**overrides):
    kwargs = dict(f=good_f, y0=Y0, t=T)
    kwargs.update(overrides)
    return lambda: dk.solve(**kwargs)


BAD_ARGUMENTS = {
    "f": [None, 1, "f", [good_f], np.ones(2)],
    "y0": [None, [1.0, 0.0], (1.0,), 1.0, "y0", np.array([1, 2]), np.array([True, False]), np.array([1 + 1j]),
           np.array([np.nan, 1.0]), np.array([np.inf]), np.array(["a", "b"]), np.array([None, 1.0], dtype=object),
           torch.tensor([1, 2]), torch.tensor([1 + 1j]), torch.tensor([float("nan")]), {"y": 1}],
    "t": [None, 1.0, [0.0], [[0.0, 1.0]], [1.0, 1.0], [0.0, 2.0, 1.0], [0.0, np.nan], [0.0, np.inf], [0, 1j],
          ["0", "1"], "01", [True, False], {0: 1}, [0.0, None], [[0.0], [1.0, 2.0]], np.array([]),
          [-1e308, 1e308], torch.tensor([0.0, float("nan")])],
    "method": ["rk5", "", None, 5, ("dopri5",), "DOPRI5"],
    "rtol": [0.0, -1e-6, np.nan, np.inf, "1e-6", 1j, None, [1e-6], np.array([1e-6, 1e-6]), True],
    "atol": [0.0, -1.0, np.nan, np.inf, "1e-8", 1j, None, ["1e-8", "1e-8"], np.array([1e-8, -1.0]),
             np.ones(3), [[1e-8, 1e-8, 1e-8]], True, np.array([1e-8, 0.0])],
    "step_size": [0.0, -0.1, np.nan, np.inf, "0.1", 1j, [0.1], 1e-320, True],
    "max_steps": [0, -1, 1.5, "10", True, None, 10.0],
    "throw": ["no", None, 1],
    "dense": ["yes", 1, None],
    "per_sample": ["yes", 2],
    "events": [3, [good_f, 3], "event", {"g": good_f}],
}


def test_enumerated_bad_arguments_of_solve():
    count = 0
    for name, values in BAD_ARGUMENTS.items():
        for value in values:
            overrides = {name: value}
            if name == "step_size":
                overrides["method"] = "rk4"
            expect_clear_error(solve_with(**overrides), name)
            count += 1
    # the adaptive methods take step_size as a first step: the same checks apply
    for value in (0.0, -0.1, np.nan, 1e-320):
        expect_clear_error(solve_with(step_size=value), "step_size")
        count += 1
    print(f"\n{count} enumerated bad arguments")
    assert count >= 100


BAD_FIELDS = {
    "list": lambda t, y: [1.0, 2.0],
    "string": lambda t, y: "dy",
    "none": lambda t, y: None,
    "scalar": lambda t, y: 1.0,
    "complex": lambda t, y: y + 1j,
    "shape": lambda t, y: np.ones(3),
    "torch for numpy": lambda t, y: torch.ones(2, dtype=torch.float64),
    "object": lambda t, y: np.array([None, 1.0], dtype=object),
    "raises": lambda t, y: 1 / 0,
    "raises later": lambda t, y: y if t < 0.5 else {}["missing"],
    "nan": lambda t, y: y * np.nan,
}


@pytest.mark.parametrize("kind", sorted(BAD_FIELDS))
@pytest.mark.parametrize("method", ["dopri5", "rk4", "ark3", "dop853"])
def test_bad_vector_fields_end_in_a_solver_error_naming_f(kind, method):
    kwargs = {} if dk.solvers.METHODS[method].adaptive else {"step_size": 0.1}
    err = expect_clear_error(lambda: dk.solve(BAD_FIELDS[kind], Y0, T, method=method, **kwargs),
                             "f " if kind != "nan" else "NaN")
    assert isinstance(err, dk.SolverError)  # carries t and the partial solution
    assert err.solution is not None and err.t is not None
    if kind.startswith("raises"):
        assert isinstance(err, dk.VectorFieldError) and isinstance(err.__cause__, (ZeroDivisionError, KeyError))


def test_torch_state_with_numpy_field_and_dtype_contract():
    expect_clear_error(lambda: dk.solve(lambda t, y: y.numpy(), torch.ones(2), T), "f ")
    # float32 in, float64 from f: float32 out (the documented contract), numpy and torch
    sol = dk.solve(lambda t, y: -y.astype(np.float64), np.ones(2, dtype=np.float32), T)
    assert sol.ys.dtype == np.float32 and sol.ts.dtype == np.float32
    sol = dk.solve(lambda t, y: -y.double(), torch.ones(2), T, method="tsit5")
    assert sol.ys.dtype == torch.float32
    sol = dk.solve(lambda t, y: -y.astype(np.float64), np.ones(2, dtype=np.float32), T, method="rk4",
                   step_size=0.1)
    assert sol.ys.dtype == np.float32


@pytest.mark.parametrize("y0,slope", [(np.zeros(1, np.float32), 1e12), (np.zeros(1), 1e147),
                                      (torch.zeros(1), 1e12)])
def test_huge_slopes_start_small_instead_of_underflowing(y0, slope):
    # y' = c: the initial-step estimate overflows; the solve must still succeed (y(1) = c)
    if isinstance(y0, torch.Tensor):
        f = lambda t, y: torch.full_like(y, slope)  # noqa: E731
    else:
        f = lambda t, y: np.full_like(y, slope)  # noqa: E731
    sol = dk.solve(f, y0, [0.0, 1.0])
    assert sol.success and math.isclose(float(sol.ys[-1, 0]), slope, rel_tol=1e-6)
    assert sol.stats.nfe < 200


def test_messages_for_tiny_and_huge_fixed_steps():
    # "cannot convert float NaN to integer" was the message for a step that makes span / h overflow
    expect_clear_error(lambda: dk.solve(good_f, Y0, [0.0, 1.0], method="rk4", step_size=1e-320), "step_size")
    expect_clear_error(lambda: dk.solve(good_f, Y0, [0.0, 1e300], method="rk4", step_size=1e-300), "step_size")
    # a MaxStepsExceeded message states the steps needed in 3 significant digits (a step of 1e-200,
    # which printed a 300-digit count, is now refused above as below the resolution of t)
    with pytest.raises(dk.MaxStepsExceeded) as info:
        dk.solve(good_f, Y0, [0.0, 1.0], method="euler", step_size=3e-14, max_steps=3)
    assert "3.33e+13 steps" in str(info.value) and len(str(info.value)) < 200
    with pytest.warns(dk.StepSizeWarning, match="larger than the whole span"):
        dk.solve(good_f, Y0, [0.0, 0.5], method="rk4", step_size=1.0)
    with pytest.warns(dk.StepSizeWarning, match="looks too large for an explicit method"), \
            pytest.raises(dk.StepTooLarge, match="stability interval"):  # and the solve does not succeed
        dk.solve(lambda t, y: -100.0 * y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a reasonable step is not warned about (the warning can fail)
        dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1)


def robertson(t, y):
    return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                     3e7 * y[1] ** 2])


def test_max_steps_on_a_stiff_problem_says_it_looks_stiff():
    with pytest.raises(dk.MaxStepsExceeded, match=r"looks stiff.*method='auto'") as info:
        dk.solve(robertson, np.array([1.0, 0.0, 0.0]), [0.0, 1e5], max_steps=3000)
    assert info.value.solution.stats.n_steps == 3000
    # a non-stiff problem that simply needs more steps is not called stiff (the check can fail)
    with pytest.raises(dk.MaxStepsExceeded) as info:
        dk.solve(good_f, Y0, [0.0, 1e4], max_steps=50)
    assert "stiff" not in str(info.value) and "raise max_steps" in str(info.value)


def test_bad_evaluate_and_event_functions():
    sol = dk.solve(good_f, Y0, T, dense=True)
    for bad in ("0.5", [0.5j], [[0.1, 0.2]], [np.nan], [2.0], None, {"t": 1}):
        expect_clear_error(lambda: sol.evaluate(bad), "t")

    def two_d(t, y):
        return np.ones((2, 2))

    def sometimes_scalar(t, y):
        return y[0] if t == 0 else y

    def raises(t, y):
        raise RuntimeError("bad event")

    for g in (two_d, sometimes_scalar, raises):
        expect_clear_error(lambda: dk.solve(good_f, Y0, T, events=[g]), "events[0]")


def test_bad_tableaus_and_two_step_methods():
    z = Fr(0)
    cases = [
        lambda: RungeKuttaTableau("x", 1, A=((1,),), B=(1,), C=(1,)),  # implicit
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=("1",), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(float("nan"),), C=(z,)),
        lambda: RungeKuttaTableau("x", 0, A=((z,),), B=(1,), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=((z, z), (1, z)), B=(1,), C=(z, 1)),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(1,), C=(z,), E=(1, 2), error_order=1),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(1,), C=(z,), E=(z,)),
        lambda: RungeKuttaTableau("", 1, A=((z,),), B=(1,), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(1j,), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=5, B=(1,), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(True,), C=(z,)),
        lambda: RungeKuttaTableau("x", 1, A=((z,),), B=(1,), C=(z,), P=((1,), (1,), (1,))),
        lambda: TwoStepRK("y", 3, c=(0.5,), a=(0.5, 0.2), c0=1.0, c_m0=0.0, c1=1.0, c_m1=0.0),
    ]
    count = 0
    for make in cases:
        expect_clear_error(make, "")  # the message names the tableau and the offending field
        count += 1
    assert count == len(cases)


finite_or_not = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(rtol=finite_or_not, atol=finite_or_not)
def test_generated_tolerances_are_accepted_only_when_positive_and_finite(rtol, atol):
    # positive and finite is valid, however small (a tiny rtol leaves the accuracy to atol)
    good = rtol > 0 and atol > 0 and math.isfinite(rtol) and math.isfinite(atol)
    call = solve_with(rtol=rtol, atol=atol, max_steps=500, throw=False)
    if good:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # atol = 1e-308: err / scale overflows, rejected
            sol = call()
        assert sol.result in ("success", "max_steps_exceeded", "step_size_underflow")
    else:
        expect_clear_error(call, "rtol" if not (rtol > 0 and math.isfinite(rtol)) else "atol")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(step=st.floats(allow_nan=True, allow_infinity=True), method=st.sampled_from(["euler", "rk4", "ark4"]))
def test_generated_fixed_steps(step, method):
    call = solve_with(step_size=step, method=method, max_steps=200)
    if math.isfinite(step) and step > 16 * np.spacing(1.0) and math.ceil(1.0 / step - 1e-9) <= 200:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dk.StepSizeWarning)  # steps beyond the span are warned about
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow notes on the way to NonFiniteState
            try:
                assert call().success
            except dk.NonFiniteState:  # a step of 1e77 on y'' = -y overflows: a solver error, not a crash
                assert step > 10
    elif math.isfinite(step) and step > 16 * np.spacing(1.0):
        with pytest.raises(dk.MaxStepsExceeded, match="max_steps=200"):
            call()
    else:
        expect_clear_error(call, "step_size")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(t=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)), max_size=5))
def test_generated_output_times(t):
    arr = np.asarray(t, dtype=float) if t else np.array([])
    d = np.diff(arr)
    good = (len(arr) >= 2 and np.isfinite(arr).all() and ((d > 0).all() or (d < 0).all())
            and np.isfinite(d).all() and np.abs(arr).max() < 1e6 and np.abs(d).min() > 1e-9 * max(1, np.abs(arr).max()))
    if good:
        assert dk.solve(lambda t, y: -y, np.ones(1), t, rtol=1e-3, atol=1e-6, throw=False).ys.shape == (len(t), 1)
    elif not (len(arr) >= 2 and np.isfinite(arr).all() and ((d > 0).all() or (d < 0).all())):
        expect_clear_error(lambda: dk.solve(lambda t, y: -y, np.ones(1), t), "t")
