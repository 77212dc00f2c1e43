"""The shortcuts that keep a small solve's fixed cost low decide what the full checks decide:
the times' check in Python floats, the scalar ``atol``'s, and the compiled path's test call of
``f`` made once per function and shape (a later solve whose ``f`` fails still fails clearly)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.solvers import _validation as V


def _full_check(times: np.ndarray) -> bool:
    """The times' rule written out with numpy, independently of the shortcut."""
    if times.ndim != 1 or times.size < 2 or not np.isfinite(times).all():
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.diff(times)
    return bool(np.isfinite(steps).all() and ((steps > 0).all() or (steps < 0).all()))


floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, 5e-324]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(floats, min_size=0, max_size=70))
def test_the_times_shortcut_accepts_exactly_what_the_full_rule_accepts(values):
    times = np.array(values, dtype=np.float64)
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # the full check's np.diff
            V.validate_times(times)
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == _full_check(times)


def test_the_times_shortcut_is_not_taken_for_long_grids_and_still_refuses_them():
    long = np.linspace(0.0, 1.0, 200)
    long[150] = long[149]  # a repeated time beyond the shortcut's length
    with pytest.raises(ValueError, match="index 150"):
        V.validate_times(long)
    assert V.validate_times(np.linspace(0, 1, 200)).shape == (200,)


@pytest.mark.parametrize("atol", [1e-12, 1.0, 3.0, math.inf, math.nan, -1e-3, 0.0])
def test_a_scalar_atol_is_judged_as_before(atol):
    y0 = np.array([0.5, 2.0])
    if atol > 0 and math.isfinite(atol):
        if atol > 2.0:  # larger than max(1, max|y0|): the warning, as for an array atol
            with pytest.warns(dk.ToleranceWarning):
                assert V.validate_tolerances(1e-6, atol, y0)[1] == atol
        else:
            assert V.validate_tolerances(1e-6, atol, y0)[1] == atol
    else:
        with pytest.raises(ValueError, match="atol"):
            V.validate_tolerances(1e-6, atol, y0)


def test_the_compiled_test_call_is_kept_per_shape_and_a_later_failure_of_f_is_still_clear():
    pytest.importorskip("numba")
    from dynkit.solvers.compiled import _WRAPPERS

    def f(t, y):  # fails for a negative first component only
        if y[0] < 0:
            raise ValueError("negative state")
        return -y

    y0 = np.array([1.0, 2.0])
    first = dk.solve(f, y0, [0.0, 1.0], method="rodas5", compile=True)
    again = dk.solve(f, y0, [0.0, 1.0], method="rodas5", compile=True)
    np.testing.assert_array_equal(first.ys, again.ys)  # same kernel, same inputs
    assert ("f", False, (2,)) in _WRAPPERS[f]  # the checked shape, which the next solve skips
    assert first.stats.nfe == again.stats.nfe
    # a new y0 on which f raises: no test call now, the kernel's first call raises it
    with pytest.raises(dk.VectorFieldError, match="f raised ValueError") as info:
        dk.solve(f, np.array([-1.0, 2.0]), [0.0, 1.0], method="rodas5", compile=True)
    assert "negative state" in str(info.value)

    # another shape is another check: a wrong return shape is still a CompilationError
    def wrong(t, y):
        return np.zeros(3)

    dk.solve(wrong, np.zeros(3), [0.0, 1.0], method="rodas5", compile=True)
    with pytest.raises(dk.CompilationError, match="shape"):
        dk.solve(wrong, np.zeros(2), [0.0, 1.0], method="rodas5", compile=True)
