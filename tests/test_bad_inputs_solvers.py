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
    "y0": [
        None,
        [1.0, 0.0],
        (1.0,),
        1.0,
        "y0",
        np.array([1, 2]),
        np.array([True, False]),
        np.array([1 + 1j]),
        np.array([np.nan, 1.0]),
        np.array([np.inf]),
        np.array(["a", "b"]),
        np.array([None, 1.0], dtype=object),
        torch.tensor([1, 2]),
        torch.tensor([1 + 1j]),
        torch.tensor([float("nan")]),
        {"y": 1},
    ],
    "t": [
        None,
        1.0,
        [0.0],
        [[0.0, 1.0]],
        [1.0, 1.0],
        [0.0, 2.0, 1.0],
        [0.0, np.nan],
        [0.0, np.inf],
        [0, 1j],
        ["0", "1"],
        "01",
        [True, False],
        {0: 1},
        [0.0, None],
        [[0.0], [1.0, 2.0]],
        np.array([]),
        [-1e308, 1e308],
        torch.tensor([0.0, float("nan")]),
    ],
    "method": ["rk5", "", None, 5, ("dopri5",), "DOPRI5"],
    "rtol": [0.0, -1e-6, np.nan, np.inf, "1e-6", 1j, None, [1e-6], np.array([1e-6, 1e-6]), True],
    "atol": [
        0.0,
        -1.0,
        np.nan,
        np.inf,
        "1e-8",
        1j,
        None,
        ["1e-8", "1e-8"],
        np.array([1e-8, -1.0]),
        np.ones(3),
        [[1e-8, 1e-8, 1e-8]],
        True,
        np.array([1e-8, 0.0]),
    ],
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
    err = expect_clear_error(
        lambda: dk.solve(BAD_FIELDS[kind], Y0, T, method=method, **kwargs),
        "f " if kind != "nan" else "NaN",
    )
    assert isinstance(err, dk.SolverError)  # carries t and the partial solution
    assert err.solution is not None and err.t is not None
    if kind.startswith("raises"):
        assert isinstance(err, dk.VectorFieldError) and isinstance(
            err.__cause__, (ZeroDivisionError, KeyError)
        )


def test_torch_state_with_numpy_field_and_dtype_contract():
    expect_clear_error(lambda: dk.solve(lambda t, y: y.numpy(), torch.ones(2), T), "f ")
    # float32 in, float64 from f: float32 out (the documented contract), numpy and torch
    sol = dk.solve(lambda t, y: -y.astype(np.float64), np.ones(2, dtype=np.float32), T)
    assert sol.ys.dtype == np.float32 and sol.ts.dtype == np.float32
    sol = dk.solve(lambda t, y: -y.double(), torch.ones(2), T, method="tsit5")
    assert sol.ys.dtype == torch.float32
    sol = dk.solve(
        lambda t, y: -y.astype(np.float64),
        np.ones(2, dtype=np.float32),
        T,
        method="rk4",
        step_size=0.1,
    )
    assert sol.ys.dtype == np.float32


@pytest.mark.parametrize(
    "y0,slope", [(np.zeros(1, np.float32), 1e12), (np.zeros(1), 1e147), (torch.zeros(1), 1e12)]
)
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
    expect_clear_error(
        lambda: dk.solve(good_f, Y0, [0.0, 1.0], method="rk4", step_size=1e-320), "step_size"
    )
    expect_clear_error(
        lambda: dk.solve(good_f, Y0, [0.0, 1e300], method="rk4", step_size=1e-300), "step_size"
    )
    # a MaxStepsExceeded message states the steps needed in 3 significant digits (a step of 1e-200,
    # which printed a 300-digit count, is now refused above as below the resolution of t)
    with pytest.raises(dk.MaxStepsExceeded) as info:
        dk.solve(good_f, Y0, [0.0, 1.0], method="euler", step_size=3e-14, max_steps=3)
    assert "3.33e+13 steps" in str(info.value) and len(str(info.value)) < 200
    with pytest.warns(dk.StepSizeWarning, match="larger than the whole span"):
        dk.solve(good_f, Y0, [0.0, 0.5], method="rk4", step_size=1.0)
    with (
        pytest.warns(dk.StepSizeWarning, match="outside the method.s stability region"),
        pytest.raises(dk.StepTooLarge, match="stability interval"),
    ):  # and the solve does not succeed
        dk.solve(lambda t, y: -100.0 * y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # a reasonable step is not warned about (the warning can fail)
        dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1)


def robertson(t, y):
    return np.array(
        [
            -0.04 * y[0] + 1e4 * y[1] * y[2],
            0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
            3e7 * y[1] ** 2,
        ]
    )


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
            warnings.simplefilter(
                "ignore", RuntimeWarning
            )  # atol = 1e-308: err / scale overflows, rejected
            sol = call()
        assert sol.result in ("success", "max_steps_exceeded", "step_size_underflow")
    else:
        expect_clear_error(call, "rtol" if not (rtol > 0 and math.isfinite(rtol)) else "atol")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    step=st.floats(allow_nan=True, allow_infinity=True),
    method=st.sampled_from(["euler", "rk4", "ark4"]),
)
def test_generated_fixed_steps(step, method):
    call = solve_with(step_size=step, method=method, max_steps=200)
    if math.isfinite(step) and step > 16 * np.spacing(1.0) and math.ceil(1.0 / step - 1e-9) <= 200:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore", dk.StepSizeWarning
            )  # steps beyond the span are warned about
            warnings.simplefilter(
                "ignore", RuntimeWarning
            )  # numpy's overflow notes on the way to NonFiniteState
            try:
                assert call().success
            except (
                dk.NonFiniteState
            ):  # a step of 1e77 on y'' = -y overflows: a solver error, not a crash
                assert step > 10
    elif math.isfinite(step) and step > 16 * np.spacing(1.0):
        with pytest.raises(dk.MaxStepsExceeded, match="max_steps=200"):
            call()
    else:
        expect_clear_error(call, "step_size")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    t=st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)), max_size=5
    )
)
def test_generated_output_times(t):
    arr = np.asarray(t, dtype=float) if t else np.array([])
    d = np.diff(arr)
    good = (
        len(arr) >= 2
        and np.isfinite(arr).all()
        and ((d > 0).all() or (d < 0).all())
        and np.isfinite(d).all()
        and np.abs(arr).max() < 1e6
        and np.abs(d).min() > 1e-9 * max(1, np.abs(arr).max())
    )
    if good:
        assert dk.solve(
            lambda t, y: -y, np.ones(1), t, rtol=1e-3, atol=1e-6, throw=False
        ).ys.shape == (len(t), 1)
    elif not (len(arr) >= 2 and np.isfinite(arr).all() and ((d > 0).all() or (d < 0).all())):
        expect_clear_error(lambda: dk.solve(lambda t, y: -y, np.ones(1), t), "t")


# --------------------------------------------------------------------------------------------------
# issue 25, section 2: solve never reports success with a wrong answer it could have noticed. Each
# of the audit's cases must end in a named error (or warning) that says what happened, or in a
# correct result checked against an independent reference; the ledger counts the outcomes: clear (as
# required), terse (the right kind of error, a message without the required words), raw (another
# exception type), accepted (a result where an error or warning was due), wrong (a result that fails
# its reference). ``pytest -s`` or ``python tests/test_bad_inputs_solvers.py`` prints them.

AUDIT: dict = {}


def error(types, *words):
    return ("error", types, words)


def warning(category, *words):
    return ("warning", category, words)


def correct(check):
    return ("result", check)


def classify(thunk, expect) -> tuple[str, str]:
    """What ``thunk()`` did against ``expect``: (outcome, detail)."""
    kind = expect[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = thunk()
        except Exception as err:  # noqa: BLE001 - classified below
            if kind == "error" and isinstance(err, expect[1]):
                missing = [w for w in expect[2] if w not in str(err)]
                return ("terse", f"missing {missing}: {err}") if missing else ("clear", str(err))
            if isinstance(err, ALLOWED) and kind == "error":
                return "terse", f"{type(err).__name__}: {err}"
            return "raw", f"{type(err).__name__}: {err}"
    if kind == "error":
        return "accepted", f"returned {getattr(result, 'result', result)!r:.80}"
    if kind == "warning":
        hits = [str(w.message) for w in caught if issubclass(w.category, expect[1])]
        if not hits:
            return "accepted", "no warning"
        missing = [w for w in expect[2] if not any(w in h for h in hits)]
        return ("terse", f"missing {missing}: {hits}") if missing else ("clear", hits[0])
    ok = expect[1](result)
    return (
        ("clear", "correct")
        if ok
        else ("wrong", f"result {getattr(result, 'result', '')} failed its reference")
    )


def audit_case(name: str, expect):
    def register(thunk):
        AUDIT[name] = (thunk, expect)
        return thunk

    return register


def y_squared(t, y):
    return y * y


def mutate(t, y):
    y += 1.0
    return -y


def jac_raises(t, y):
    return 1 / 0


def nan_event(t, y):
    return np.nan if t > 0.5 else 1.0


def g_sin40(t, y):
    return np.sin(40 * t)


def g_at_start(t, y):
    return y[0] - 1.0


g_at_start.terminal = True


def stiff_forced(t, y):
    return -1000 * (y - np.cos(t))


audit_case(
    "stiff problem, euler h=0.01", error(dk.StepTooLarge, "step_size=0.01", "stability interval")
)(
    lambda: dk.solve(
        stiff_forced, np.array([0.0]), np.array([0.0, 1.0]), method="euler", step_size=0.01
    )
)
audit_case(
    "stiff problem, euler, throw=False",
    correct(lambda s: s.result == "step_too_large" and not s.success),
)(
    lambda: dk.solve(
        stiff_forced,
        np.array([0.0]),
        np.array([0.0, 1.0]),
        method="euler",
        step_size=0.01,
        throw=False,
    )
)
audit_case(
    "y'=y^2 through the blow-up, euler h=0.25", error(dk.StepTooLarge, "step_size=0.25", "blow-up")
)(lambda: dk.solve(y_squared, np.array([1.0]), [0.0, 2.0], method="euler", step_size=0.25))
for _lib, _make in (
    ("numpy", lambda: np.array([1.0])),
    ("torch", lambda: torch.tensor([1.0], dtype=torch.float64)),
):

    def _mutation_case(make=_make):
        y0 = make()
        dk.solve(
            mutate if isinstance(y0, np.ndarray) else (lambda t, y: -y.add_(1.0)), y0, [0.0, 1.0]
        )
        return y0

    audit_case(f"f mutates y ({_lib})", correct(lambda y0: y0.tolist() == [1.0]))(_mutation_case)
audit_case("jac raises", error(dk.VectorFieldError, "jac raised ZeroDivisionError", "t="))(
    lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], method="rodas4", jac=jac_raises)
)
audit_case(
    "event function raises", error(dk.VectorFieldError, "events[0] raised ZeroDivisionError")
)(lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], events=[jac_raises]))
for _shape in ((0,), (0, 3), (2, 0)):
    audit_case(f"empty y0 {_shape}", error(ValueError, "y0", f"got shape {_shape}"))(
        lambda shape=_shape: dk.solve(lambda t, y: y, np.zeros(shape), [0.0, 1.0])
    )
audit_case("empty y0 (0,), torch", error(ValueError, "y0", "got shape (0,)"))(
    lambda: dk.solve(lambda t, y: y, torch.zeros(0), [0.0, 1.0])
)
audit_case(
    "rk4 beyond its stability interval",
    error(dk.StepTooLarge, "step_size=0.1", "stability interval"),
)(lambda: dk.solve(lambda t, y: -100.0 * y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1))
audit_case("masked y0", error(TypeError, "y0", "masked"))(
    lambda: dk.solve(lambda t, y: -y, np.ma.array([1.0, 2.0], mask=[0, 1]), [0.0, 1.0])
)
audit_case("jac with rk4", error(ValueError, "jac", "'rk4'"))(
    lambda: dk.solve(
        lambda t, y: -y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1, jac=jac_raises
    )
)
audit_case(
    "step_size with dopri5",
    warning(dk.StepSizeWarning, "step_size=0.1", "first step", "first_step="),
)(lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], step_size=0.1))
audit_case("jac with dopri5", error(ValueError, "jac", "'dopri5'"))(
    lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], jac=jac_raises)
)
audit_case("first_step with rk4", error(ValueError, "first_step", "'rk4'"))(
    lambda: dk.solve(
        lambda t, y: -y, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1, first_step=0.1
    )
)
audit_case("per_sample with rk4", error(ValueError, "per_sample", "'rk4'"))(
    lambda: dk.solve(
        lambda t, y: -y, np.ones((2, 1)), [0.0, 1.0], method="rk4", step_size=0.1, per_sample=True
    )
)
audit_case("rtol=1e-30", warning(dk.ToleranceWarning, "rtol=1e-30", "raised to"))(
    lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], rtol=1e-30)
)
audit_case("rtol=1e10", warning(dk.ToleranceWarning, "rtol=1e+10", "> 1"))(
    lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], rtol=1e10)
)
audit_case("event function returns NaN", error(dk.NonFiniteState, "events[0] returned NaN"))(
    lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 1.0], events=[nan_event])
)
audit_case(
    "sin(40 t) zeros, f = 0",
    correct(
        lambda s: (
            len(s.t_events[0]) == 13
            and np.abs(s.t_events[0] - np.arange(13) * np.pi / 40).max() < 1e-15
        )
    ),
)(  # closed form k pi / 40, k = 0..12
    lambda: dk.solve(lambda t, y: 0 * y, np.ones(1), [0.0, 1.0], events=[g_sin40])
)
audit_case(
    "terminal event zero at t0",
    correct(
        lambda s: s.result == "event" and s.ts.tolist() == [0.0] and s.t_events[0].tolist() == [0.0]
    ),
)(  # scipy: stops at t0
    lambda: dk.solve(lambda t, y: np.ones(1), np.array([1.0]), [0.0, 1.0], events=[g_at_start])
)
audit_case(
    "y' = -sign(y) chattering", error(dk.MaxStepsExceeded, "discontinuity/chattering suspected")
)(lambda: dk.solve(lambda t, y: -np.sign(y), np.ones(1), [0.0, 2.0], max_steps=500))
audit_case(
    "t = [1e16, 1e16 + 4]", error(dk.StepSizeUnderflow, "time resolution lost at this magnitude")
)(lambda: dk.solve(lambda t, y: -y, np.ones(1), [1e16, 1e16 + 4]))


def audit_counts() -> tuple[dict, list]:
    counts = dict.fromkeys(("cases", "clear", "terse", "raw", "accepted", "wrong"), 0)
    problems = []
    for name, (thunk, expect) in AUDIT.items():
        outcome, detail = classify(thunk, expect)
        counts["cases"] += 1
        counts[outcome] += 1
        if outcome != "clear":
            problems.append(f"{name}: {outcome}: {detail[:200]}")
    return counts, problems


def format_counts(counts: dict) -> str:
    return "issue-25 solver audit: " + "; ".join(f"{k} {v}" for k, v in counts.items())


def test_the_issue_25_audit_cases_end_clearly():
    counts, problems = audit_counts()
    print("\n" + format_counts(counts))
    assert counts["cases"] == len(AUDIT) >= 25
    assert not problems, problems


def test_the_audit_classifier_can_fail():
    # planted outcomes: each kind of failure is seen as such
    assert classify(lambda: [][1], error(ValueError, "x"))[0] == "raw"
    assert classify(lambda: 42, error(ValueError, "x"))[0] == "accepted"
    assert classify(lambda: int("x"), error(ValueError, "step_size"))[0] == "terse"
    assert classify(lambda: 42, correct(lambda r: r == 41))[0] == "wrong"
    assert classify(lambda: 42, warning(UserWarning, "x"))[0] == "accepted"
    # and the pre-issue behaviour of the audit's first case, a silent "success", is "accepted"
    assert (
        classify(
            lambda: dk.solve(
                stiff_forced, np.array([0.0]), [0.0, 0.01], method="euler", step_size=0.01
            ),
            error(dk.StepTooLarge, "stability"),
        )[0]
        == "accepted"
    )


# --------------------------------------------------------------------------------------------------
# StepTooLarge: fails exactly when the fixed step amplifies, never on a stable or resolved one

AMPLIFICATION = {  # R(z) of the methods' update for y' = λ y, z = h λ (closed forms, [HW] IV.2)
    "euler": lambda z: 1 + z,
    "heun": lambda z: 1 + z + z**2 / 2,
    "midpoint": lambda z: 1 + z + z**2 / 2,
    "rk4": lambda z: 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24,
}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(x=st.floats(0.05, 6.0), method=st.sampled_from(sorted(AMPLIFICATION)))
def test_a_decaying_mode_fails_exactly_when_the_step_amplifies_it(x, method):
    # y' = -y with h = x over 20 steps: y_n = R(-x)^n exactly. |R| >= 1.02: the states are the
    # method's growth, not the solution (which decays): StepTooLarge. |R| <= 1: success, and the
    # states are R^n (rounding: 1e-12 relative).
    r = AMPLIFICATION[method](-x)
    call = lambda: dk.solve(lambda t, y: -y, np.ones(1), [0.0, 20 * x], method=method, step_size=x)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dk.StepSizeWarning)
        if abs(r) >= 1.02:
            with pytest.raises(dk.StepTooLarge, match="stability interval"):
                call()
        elif abs(r) <= 1.0:
            sol = call()
            assert (
                sol.success
                and abs(sol.ys[-1, 0] - r**20) <= 1e-12 * max(1.0, abs(r) ** 20) + 1e-300
            )


@pytest.mark.parametrize("method", ["euler", "midpoint", "heun", "rk4", "ark3", "ark4"])
@pytest.mark.parametrize("h", [0.25, 0.1, 0.01, 0.001])
def test_a_step_across_a_finite_time_blow_up_never_succeeds(method, h):
    # y' = y^2, y(0) = 1: y = 1 / (1 - t) blows up at t = 1; integrating to t = 2 cannot succeed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow notes on the way to Inf
        with pytest.raises((dk.StepTooLarge, dk.NonFiniteState)):
            dk.solve(y_squared, np.array([1.0]), [0.0, 2.0], method=method, step_size=h)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_step_too_large_for_torch_states_and_gradients_unchanged_when_stable(dtype):
    # the monitor's torch path: h λ = 10 with rk4 (R(-10) = 291) fails; a stable solve keeps its
    # gradient (closed form: y(1) = R(-h λ)^n y0 with n = 10 steps, d y(1) / d y0 = R^n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dk.StepSizeWarning)
        with pytest.raises(dk.StepTooLarge):
            dk.solve(
                lambda t, y: -100.0 * y,
                torch.ones(3, dtype=dtype),
                [0.0, 1.0],
                method="rk4",
                step_size=0.1,
            )
    y0 = torch.ones(3, dtype=dtype, requires_grad=True)
    dk.solve(lambda t, y: -y, y0, [0.0, 1.0], method="rk4", step_size=0.1).ys[-1].sum().backward()
    r = AMPLIFICATION["rk4"](-0.1) ** 10
    assert torch.allclose(y0.grad, torch.full((3,), r, dtype=dtype), rtol=1e-6)


def test_the_last_step_is_checked_when_its_end_slope_was_computed():
    # [0, 1.6] with h = 0.25: the blow-up shows on steps 5-7, the 7th the last, past t = 1.6, whose
    # output is interpolated (cubic Hermite needs the end slope): that step completes the run of 3
    with pytest.raises(dk.StepTooLarge, match="blow-up") as info:
        dk.solve(y_squared, np.array([1.0]), [0.0, 1.6], method="euler", step_size=0.25)
    assert info.value.t == 1.5


STABLE_OR_RESOLVED = [  # (f, y0, span, method, h): legitimate fixed-step solves that must succeed
    (y_squared, [1.0], 0.9, "rk4", 0.01),  # before the blow-up
    (stiff_forced, [0.0], 1.0, "rk4", 0.0025),  # h λ = 2.5 < 2.79: stable, the fast mode decays
    (stiff_forced, [0.0], 1.0, "heun", 0.0019),  # h λ = 1.9 < 2, beside a slowly growing slow mode
    (stiff_forced, [0.0], 1.0, "euler", 0.0019),
    (lambda t, y: 5 * y * (1 - y), [1e-3], 5.0, "rk4", 0.3),  # fast logistic growth, 2 % per step
    (lambda t, y: y, [1.0], 10.0, "euler", 0.1),  # resolved exponential growth
    (lambda t, y: np.array([y[1], -y[0]]), [1.0, 0.0], 50.0, "rk4", 0.5),
    (
        lambda t, y: np.array(
            [10 * (y[1] - y[0]), y[0] * (28 - y[2]) - y[1], y[0] * y[1] - 8 / 3 * y[2]]
        ),
        [1.0, 1.0, 1.0],
        10.0,
        "rk4",
        0.02,
    ),  # chaotic (Lorenz), resolved
    (
        lambda t, y: np.array([y[1], 10 * (1 - y[0] ** 2) * y[1] - y[0]]),
        [2.0, 0.0],
        30.0,
        "rk4",
        0.01,
    ),
]


@pytest.mark.parametrize("case", range(len(STABLE_OR_RESOLVED)))
def test_stable_or_resolved_fixed_steps_are_not_flagged(case):
    f, y0, span, method, h = STABLE_OR_RESOLVED[case]
    sol = dk.solve(f, np.array(y0), [0.0, span], method=method, step_size=h)
    assert sol.success
    if (
        case == 0
    ):  # against the closed form 1 / (1 - t): RK4's error at h = 0.01 (C h^4, C ~ 1e4 near t = 0.9)
        assert abs(sol.ys[-1, 0] - 10.0) < 1e-3


def main() -> int:
    counts, problems = audit_counts()
    print(format_counts(counts))
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
