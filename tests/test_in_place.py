"""dk.in_place: a vector field that writes dy/dt into the kernel's array takes the same steps,
makes the same calls and reaches the same states as the same field returning its value, on every
compiled kernel and on the Python path; one that does not overwrite out is refused before any
step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dynkit as dk
from dynkit.solvers.compiled import KERNELS, kernel_names
from dynkit.solvers.errors import CompilationError

from compiled_problems import state_bound

kernel_names()
METHODS = sorted(KERNELS)
Y0 = np.array([2.0, 0.0])
T = np.linspace(0.0, 2.0, 5)
RTOL = 1e-6


def van_der_pol(t, y):
    """Van der Pol, mu = 5: stiff enough that the stiff methods' Jacobians matter."""
    return np.array([y[1], 5.0 * (1.0 - y[0] ** 2) * y[1] - y[0]])


def van_der_pol_into(t, y, out):
    out[0] = y[1]
    out[1] = 5.0 * (1.0 - y[0] ** 2) * y[1] - y[0]


def scaled(t, y, p):
    return -p[0] * y


def scaled_into(t, y, p, out):
    for i in range(y.shape[0]):
        out[i] = -p[0] * y[i]


@pytest.mark.parametrize("compile", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("method", METHODS)
def test_same_steps_calls_and_states_as_the_returning_field(method, compile):
    """The same formulas, written into ``out`` or returned: the kernel sees the same values, so
    the counters are equal and the states agree within the compiled-path bound
    (:func:`compiled_problems.state_bound`, the two functions being compiled apart)."""
    kw = dict(method=method, rtol=RTOL, atol=1e-9, compile=compile)
    returned = dk.solve(van_der_pol, Y0, T, **kw)
    assert _agrees(dk.solve(dk.in_place(van_der_pol_into), Y0, T, **kw), returned)


def _agrees(written, returned) -> bool:
    scale = np.max(np.abs(returned.ys))
    close = np.max(np.abs(written.ys - returned.ys)) <= state_bound(RTOL) * scale
    return written.stats == returned.stats and bool(close)


def test_a_field_that_adds_to_out_is_refused():
    """The kernel hands ``f`` arrays holding earlier values: ``out += ...`` would add up across
    calls, so the test call refuses a field whose result depends on what ``out`` held."""

    def adds(t, y, out):
        out += -y  # noqa: B023 - reads out

    with pytest.raises(CompilationError, match=r"component\(s\) 0, 1 kept \(or added to\)"):
        dk.solve(dk.in_place(adds), Y0, T, compile=True)


def test_a_component_left_unwritten_is_refused_naming_it():
    def leaves_one(t, y, out):
        out[0] = y[1]

    with pytest.raises(CompilationError, match=r"component\(s\) 1 kept"):
        dk.solve(dk.in_place(leaves_one), Y0, T, method="rodas5", compile=True)


def test_every_component_written_passes_the_test_call():
    """The check's other side: a field writing every component (here a NaN one: the solve then
    fails as non-finite, which is the field's, not the check's)."""

    def nan_field(t, y, out):
        out[0] = np.nan
        out[1] = y[0]

    sol = dk.solve(dk.in_place(nan_field), Y0, T, compile=True, throw=False)
    assert sol.result == "non_finite_state"


def test_a_field_that_returns_its_value_is_refused():
    def returns(t, y, out):
        out[:] = -y
        return out

    with pytest.raises(CompilationError, match="return None"):
        dk.solve(dk.in_place(returns), Y0, T, compile=True)
    with pytest.raises(dk.VectorFieldError, match="returns None") as raised:
        dk.solve(dk.in_place(returns), Y0, T)
    assert isinstance(raised.value.__cause__, TypeError)


def test_in_place_refuses_what_is_not_callable():
    with pytest.raises(TypeError, match=r"in_place: f must be a callable f\(t, y, out\)"):
        dk.in_place(3.0)


def test_an_ensemble_with_parameters_takes_an_in_place_field():
    Y = np.ones((3, 2))
    P = np.array([[0.5], [1.0], [2.0]])
    kw = dict(method="dopri5", rtol=RTOL, compile=True)
    returned = dk.solve_ensemble(scaled, Y, T, P, **kw)
    written = dk.solve_ensemble(dk.in_place(scaled_into), Y, T, P, **kw)
    for name, counts in returned.stats.items():
        np.testing.assert_array_equal(written.stats[name], counts)
    assert np.max(np.abs(written.ys - returned.ys)) <= state_bound(RTOL)


def test_the_python_path_hands_a_torch_field_a_torch_array():
    seen = []

    def into(t, y, out):
        seen.append(type(out))
        out.copy_(-y)

    y0 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    sol = dk.solve(dk.in_place(into), y0, torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert set(seen) == {torch.Tensor}
    torch.testing.assert_close(sol.ys[-1], y0 * np.exp(-1.0), rtol=1e-5, atol=0.0)


def test_marking_twice_is_marking_once_and_messages_name_the_users_function():
    marked = dk.in_place(dk.in_place(van_der_pol_into))
    assert marked.f is van_der_pol_into and repr(marked) == "in_place(van_der_pol_into)"


def test_the_comparison_sees_a_field_that_differs():
    """The planted counterpart of the equivalence test: a field differing in its fourth digit
    does not pass for the same one."""

    def other_into(t, y, out):
        out[0] = y[1]
        out[1] = 5.001 * (1.0 - y[0] ** 2) * y[1] - y[0]

    kw = dict(method="rodas5", rtol=RTOL, atol=1e-9, compile=True)
    returned = dk.solve(van_der_pol, Y0, T, **kw)
    assert not _agrees(dk.solve(dk.in_place(other_into), Y0, T, **kw), returned)
