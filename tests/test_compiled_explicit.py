"""The compiled explicit loop against the Python path: same accepted steps, same counters, same
states.

Every adaptive explicit method of METHODS runs the shared problem set (tests/compiled_problems.py)
through both paths; the tolerances and why are stated there. Planted violations (a tableau entry, a
controller constant perturbed by 1e-4 of itself) must make the same comparison fail.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

import dynkit as dk
from dynkit.solvers import METHODS, RungeKuttaTableau
from dynkit.solvers.compiled import KERNELS, kernel_names
from dynkit.solvers.compiled.explicit import ExplicitCoefficients, ExplicitDriver

from compiled_problems import (
    ADAPTIVE_EXPLICIT,
    CASES,
    DIAGNOSIS_SLACK,
    blow_up,
    compiled_run,
    path_differences,
    python_path,
    spy_on_max_steps_diagnosis,
    stiff_cosine,
    STEP_RTOL,
)


def test_every_adaptive_explicit_method_has_a_kernel():
    adaptive = {
        name
        for name, info in METHODS.items()
        if isinstance(info.implementation, RungeKuttaTableau) and info.implementation.adaptive
    }
    assert adaptive == set(ADAPTIVE_EXPLICIT)
    assert adaptive <= set(kernel_names())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("method", ADAPTIVE_EXPLICIT)
def test_both_paths_take_the_same_steps(method, case):
    python_sol, python_steps = python_path(case, method)
    result = compiled_run(case, method)
    assert path_differences(python_sol, python_steps, result, case.rtol) == []
    # and dk.solve(compile=True) returns that result as a Solution
    sol = dk.solve(
        case.f, case.y0, case.t, method=method, rtol=case.rtol, atol=case.atol, compile=True
    )
    assert sol.stats == python_sol.stats and sol.result == "success" and sol.method == method
    np.testing.assert_array_equal(sol.ts, python_sol.ts)
    np.testing.assert_array_equal(sol.ys, result.ys)


def _perturbed(coefficients: ExplicitCoefficients, **changes) -> ExplicitDriver:
    return ExplicitDriver(dataclasses.replace(coefficients, **changes))


@pytest.mark.parametrize(
    "plant", ["error_weight", "controller_beta", "controller_safety", "stage_weight"]
)
def test_a_planted_violation_fails_the_equivalence_check(plant):
    """The comparison sees a kernel whose data or controller differs from the Python path's by
    1e-4 of itself."""
    case, method = CASES[1], "dopri5"
    coefficients = KERNELS[method].coefficients
    if plant == "error_weight":
        e = coefficients.e.copy()
        e[0] *= 1 + 1e-4
        driver = _perturbed(coefficients, e=e)
    elif (
        plant == "controller_beta"
    ):  # dopri5's β = 0.2 / 5 = 0.04, the engine's PI_BETA_TIMES_K / k
        driver = _perturbed(coefficients, control=np.array([0.04 * (1 + 1e-4), np.nan]))
    elif plant == "controller_safety":
        driver = _perturbed(coefficients, control=np.array([np.nan, 0.9 * (1 + 1e-4)]))
    else:
        a = coefficients.a.copy()
        a[2, 1] *= 1 + 1e-4
        driver = _perturbed(coefficients, a=a)
    python_sol, python_steps = python_path(case, method)
    assert (
        path_differences(python_sol, python_steps, compiled_run(case, method), case.rtol) == []
    )  # the honest kernel
    assert (
        path_differences(python_sol, python_steps, compiled_run(case, method, driver), case.rtol)
        != []
    )


def test_the_kernel_reads_the_controller_defaults_of_the_engine():
    """NaN in the control vector means the engine's β = 0.2/k and safety 0.9: spelled out, the
    same steps."""
    case, method = CASES[2], "tsit5"
    coefficients = KERNELS[method].coefficients
    explicit = _perturbed(coefficients, control=np.array([0.2 / 5, 0.9]))
    python_sol, python_steps = python_path(case, method)
    assert (
        path_differences(python_sol, python_steps, compiled_run(case, method, explicit), case.rtol)
        == []
    )


def _both(f, y0, t, method="dopri5", **options):
    python = dk.solve(f, y0, t, method=method, throw=False, **options)
    compiled = dk.solve(f, y0, t, method=method, throw=False, compile=True, **options)
    return python, compiled


def test_max_steps_failure_matches_the_python_path_with_its_diagnosis(monkeypatch):
    """MaxStepsExceeded: the same partial solution, counters and message (which diagnoses the
    stiffness: the Python path's diagnosis runs on the compiled state, its calls of f counted)."""
    starts = spy_on_max_steps_diagnosis(monkeypatch)
    python, compiled = _both(stiff_cosine, np.array([0.0]), np.linspace(0.0, 1.0, 5), max_steps=60)
    assert python.result == compiled.result == "max_steps_exceeded"
    assert compiled.message == python.message and "looks stiff" in compiled.message
    assert starts[0] == starts[1]  # the step loops' evaluations
    assert abs(compiled.stats.nfe - python.stats.nfe) <= DIAGNOSIS_SLACK
    assert dataclasses.replace(compiled.stats, nfe=0) == dataclasses.replace(python.stats, nfe=0)
    np.testing.assert_array_equal(compiled.ts, python.ts)
    with pytest.raises(dk.MaxStepsExceeded, match="looks stiff") as info:
        dk.solve(stiff_cosine, np.array([0.0]), [0.0, 1.0], max_steps=60, compile=True)
    assert info.value.solution.stats.n_steps == 60 and info.value.t > 0


_NUMBER = r"([-+0-9.eE]+)"


def _message_numbers(message: str) -> tuple[str, dict[str, float]]:
    """A failure message with its time (``t=...``) and shrunken step (``shrank to ...``) taken
    out as numbers: the two paths round differently, so these are compared to a stated bound, the
    rest of the text exactly."""
    numbers = {}
    for key, pattern in (("t", rf"t={_NUMBER}"), ("h", rf"shrank to {_NUMBER}")):
        found = re.search(pattern, message)
        if found:
            numbers[key] = float(found.group(1))
            message = message[: found.start(1)] + "<" + key + ">" + message[found.end(1) :]
    return message, numbers


def test_step_size_underflow_matches_the_python_path():
    """Both paths take the same steps (counters, output times) into y' = y²'s singularity and
    underflow there.

    The failure time is the end of the last accepted step, a sum of the same steps' sizes, which
    the two paths compute to ~1e-9 of the span (compiled_problems.STEP_RTOL's argument: the error
    sums cancel in different orders); the bound is STEP_RTOL of the span, 500 times that. The
    messages' digits beyond it are rounding."""
    python, compiled = _both(blow_up, np.array([1.0]), np.array([0.0, 0.5, 2.0]))
    assert python.result == compiled.result == "step_size_underflow"
    assert compiled.stats == python.stats
    np.testing.assert_array_equal(compiled.ts, python.ts)
    np.testing.assert_allclose(
        compiled.ys, python.ys, rtol=1e-10
    )  # y(0.5) = 2, reached on matching steps
    (python_text, python_at), (compiled_text, compiled_at) = map(
        _message_numbers, (python.message, compiled.message)
    )
    assert compiled_text == python_text and "underflowed at t=<t>" in compiled_text
    assert python_at["t"] > 1.0 - 1e-3  # at the singularity, not before it
    assert abs(compiled_at["t"] - python_at["t"]) <= STEP_RTOL * abs(python_at["t"] - 0.0)


def test_a_planted_time_difference_fails_the_message_comparison():
    """The bound above sees a failure time one step (1e-5 of the span) away."""
    message = "dopri5: step size 3.55e-15 underflowed at t=1.0000002 (a singularity)"
    _, ours = _message_numbers(message)
    _, planted = _message_numbers(message.replace("1.0000002", "1.0000102"))
    assert abs(planted["t"] - ours["t"]) > STEP_RTOL * ours["t"]


@pytest.mark.filterwarnings(
    "ignore:.*encountered in dot:RuntimeWarning"
)  # the Python path's overflow, the subject
def test_leaving_float64s_range_is_the_same_non_finite_state():
    """y' = y from 1e308 leaves float64's range at T = ln(max/1e308) ≈ 0.5865: both paths stop
    there, every trial step beyond it overflowing down to the smallest step, with the same message.

    Where a trial first overflows is not portable: a stage sums h a_ij k_j terms of ~|y| each,
    and whether a partial sum passes the largest float64 depends on the summation order and on
    fused multiply-adds (numpy's BLAS dot, the kernel's loop in index order, the CPU): the paths
    may reject different trials and take different steps from there (counters are not compared).
    Each path then stops where its own solution reaches the largest float64 (trials down to 16
    ulps of t overflow only within ~1e-13 of it), so its stop time is T less its solution's
    relative error there. dopri5's controller keeps each accepted step's local error within rtol
    |y| and y' = y carries relative errors unamplified, so that error is at most n_accepted rtol
    (measured: 3e-9, n_accepted rtol = 1.8e-4; a path stopping at its first overflowed trial, t ≈
    0.14, is 2500 times beyond the bound). The same bound holds at the output t = 0.3 against the
    exact 1e308 e^0.3."""

    def growth(t, y):
        return y

    rtol = 1e-6
    python, compiled = _both(growth, np.array([1e308]), np.array([0.0, 0.3, 1.0]), rtol=rtol)
    assert python.result == compiled.result == "non_finite_state"
    (python_text, python_at), (compiled_text, compiled_at) = map(
        _message_numbers, (python.message, compiled.message)
    )
    assert compiled_text == python_text and "every trial step beyond t=<t>" in compiled_text
    edge = math.log(np.finfo(np.float64).max / 1e308)
    for sol, at in ((python, python_at), (compiled, compiled_at)):
        bound = sol.stats.n_accepted * rtol
        assert abs(at["t"] - edge) <= bound, (at, edge, bound)
        assert at["h"] < 16 * np.spacing(
            at["t"]
        )  # the step shrank below the smallest step: no step was possible
        np.testing.assert_array_equal(sol.ts, [0.0, 0.3])
        np.testing.assert_allclose(sol.ys[-1], 1e308 * math.exp(0.3), rtol=bound)


def test_non_finite_slope_at_the_start_is_a_non_finite_state():
    def nan_field(t, y):
        return y * np.nan

    python, compiled = _both(nan_field, np.array([1.0, 2.0]), [0.0, 1.0])
    assert python.result == compiled.result == "non_finite_state"
    assert compiled.message == python.message and compiled.stats == python.stats


def test_an_exception_in_compiled_f_is_a_vector_field_error():
    def raises_past_one(t, y):
        if t > 1.0:
            raise ValueError("t beyond 1")
        return -y

    with pytest.raises(dk.VectorFieldError, match="t beyond 1"):
        dk.solve(raises_past_one, np.array([1.0]), [0.0, 2.0], compile=True)


def test_the_disk_cache_is_keyed_on_every_source_the_kernels_compile_in():
    """numba alone would reuse a cached kernel after an edit of common.py (it stamps a function
    with its own file); the package's locator stamps it with a hash of all
    (test_compiled_cache.py edits them)."""
    from dynkit.solvers.compiled import cache, common, explicit

    assert common.CACHE
    locator = explicit.march_kernel()._cache._impl._locator
    assert type(locator).__name__ == "KernelCacheLocator"
    assert locator.get_source_stamp() == cache.kernel_stamp()
    assert locator.get_cache_path() == str(common.CACHE_FOLDER)
