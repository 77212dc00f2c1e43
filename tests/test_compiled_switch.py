"""dk.solve(compile=...): validation, refusals with the reason, the "auto" fallback, numba
hidden."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.solvers import StepControl

from test_bad_inputs_solvers import BAD_FIELDS as PYTHON_BAD_FIELDS
from compiled_problems import (
    DIAGNOSIS_SLACK,
    STATE_RTOL,
    lotka_volterra,
    spy_on_max_steps_diagnosis,
    state_bound,
    van_der_pol,
)

Y0 = np.array([2.0, 0.0])
T = np.linspace(0.0, 3.0, 4)


class _Opaque:  # an object numba cannot type: a field reading it does not compile
    scale = 2.0


OPAQUE = _Opaque()


def uses_a_python_object(t, y):
    return -OPAQUE.scale * y


def returns_too_few(t, y):
    return y[:1].copy()


def returns_integers(t, y):
    return np.array([1, 2])


@pytest.fixture
def numba_hidden(monkeypatch):
    """``import numba`` fails, as in an install without the jit extra."""
    monkeypatch.setitem(sys.modules, "numba", None)


def test_import_dynkit_does_not_import_numba():
    code = (
        "import sys, dynkit; dynkit.solve_ensemble; assert 'numba' not in sys.modules, 'numba "
        "imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("bad", ["yes", 1.5, None, "True", [True]])
def test_compile_must_be_false_true_or_auto(bad):
    with pytest.raises(ValueError, match="compile must be False, True or 'auto'"):
        dk.solve(van_der_pol, Y0, T, compile=bad)


def test_compile_true_and_auto_give_the_compiled_result():
    python = dk.solve(van_der_pol, Y0, T, rtol=1e-8)
    for mode in (True, "auto", np.bool_(True)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", dk.CompileWarning)  # "auto" compiles here: no warning
            sol = dk.solve(van_der_pol, Y0, T, rtol=1e-8, compile=mode)
        assert sol.stats == python.stats
        np.testing.assert_allclose(
            sol.ys, python.ys, rtol=0, atol=STATE_RTOL * np.abs(python.ys).max()
        )


def test_a_numba_function_is_used_as_it_is():
    jitted = numba.njit(lotka_volterra)
    python = dk.solve(lotka_volterra, np.array([10.0, 5.0]), T, rtol=1e-7)
    sol = dk.solve(jitted, np.array([10.0, 5.0]), T, rtol=1e-7, compile=True)
    assert sol.stats == python.stats


def test_a_read_only_state_is_accepted():
    y0 = Y0.copy()
    y0.flags.writeable = False
    assert dk.solve(van_der_pol, y0, T, compile=True).success


def test_without_numba_true_refuses_with_the_install_hint(numba_hidden):
    with pytest.raises(
        dk.CompilationError, match=r"numba.*not installed.*pip install dynkit\[jit\]"
    ):
        dk.solve(van_der_pol, Y0, T, compile=True)


def test_without_numba_auto_warns_and_runs_the_python_path(numba_hidden):
    with pytest.warns(dk.CompileWarning, match=r"pip install dynkit\[jit\]"):
        sol = dk.solve(van_der_pol, Y0, T, compile="auto")
    python = dk.solve(van_der_pol, Y0, T)
    assert sol.stats == python.stats
    np.testing.assert_array_equal(sol.ys, python.ys)  # the Python path itself: bit for bit


def test_a_hidden_numba_is_noticed_even_after_it_was_imported(numba_hidden):
    from dynkit.solvers.compiled import numba_available

    assert not numba_available()


@pytest.mark.parametrize(
    "field, reason",
    [
        (uses_a_python_object, r"f \(uses_a_python_object\) could not be compiled by numba"),
        (returns_too_few, r"must return a float64 array of shape \(2,\).*shape \(1,\)"),
        (returns_integers, r"must return a float64 array.*int64"),
    ],
)
def test_a_field_numba_cannot_compile_is_refused_or_falls_back_with_the_reason(field, reason):
    with pytest.raises(dk.CompilationError, match=reason) as info:
        dk.solve(field, Y0, T, compile=True)
    assert len(str(info.value)) < 600  # numba's page-long message, condensed
    with pytest.warns(dk.CompileWarning, match=reason):
        auto = _outcome(lambda: dk.solve(field, Y0, T, compile="auto"))
    assert auto == _outcome(lambda: dk.solve(field, Y0, T))  # the Python path's own result or error


def _outcome(run) -> tuple:
    """``(result code, stats)`` of a solve, or of the SolverError it raised."""
    try:
        sol = run()
    except dk.SolverError as err:
        return type(err).__name__, err.stats
    return sol.result, sol.stats


def test_the_condensed_message_names_what_numba_could_not_type():
    with pytest.raises(dk.CompilationError) as info:
        dk.solve(uses_a_python_object, Y0, T, compile=True)
    message = str(info.value)
    assert "OPAQUE" in message or "_Opaque" in message, message
    assert "During:" not in message and "\x1b[" not in message


def _event(t, y):
    return y[0]


@pytest.mark.parametrize(
    "options, named",
    [
        ({"events": _event}, "events"),
        ({"dense": True}, "dense"),
        ({"per_sample": True}, "per_sample"),
        ({"control": StepControl(max_step=0.5)}, "control"),
        ({"nonnegative": True, "y0": np.array([2.0, 1.0])}, "nonnegative"),
        (
            {"method": "rk4", "step_size": 0.1},
            r"method 'rk4' has no compiled kernel \(compiled methods: .*dopri5",
        ),
        ({"y0": np.array([2.0, 0.0], dtype=np.float32)}, "1-D float64 y0"),
        ({"y0": np.array([[2.0, 0.0]])}, r"1-D float64 y0, got shape \(1, 2\)"),
    ],
)
def test_what_the_compiled_path_lacks_is_named(options, named):
    options = dict(options)
    y0 = options.pop("y0", Y0)

    def field(t, y):
        return -y

    with pytest.raises(ValueError, match=named):
        dk.solve(field, y0, T, compile=True, **options)
    with pytest.warns(dk.CompileWarning, match=named):
        auto = dk.solve(field, y0, T, compile="auto", **options)
    python = dk.solve(field, y0, T, **options)
    assert auto.stats == python.stats


def test_torch_states_and_the_adjoint_are_refused_by_name():
    torch = pytest.importorskip("torch")
    y0 = torch.tensor([2.0, 0.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="numpy states"):
        dk.solve(lambda t, y: -y, y0, T, compile=True)
    with pytest.raises(ValueError, match="does not support adjoint"):
        dk.solve(lambda t, y: -y, y0, T, compile=True, adjoint=True, adjoint_params=())
    with pytest.warns(dk.CompileWarning, match="adjoint"):
        dk.solve(lambda t, y: -y, y0, T, compile="auto", adjoint=True, adjoint_params=())


def test_throw_false_returns_the_partial_solution_with_the_failure_code(monkeypatch):
    starts = spy_on_max_steps_diagnosis(monkeypatch)
    sol = dk.solve(
        van_der_pol, Y0, np.linspace(0.0, 20.0, 21), max_steps=20, throw=False, compile=True
    )
    python = dk.solve(van_der_pol, Y0, np.linspace(0.0, 20.0, 21), max_steps=20, throw=False)
    assert sol.result == python.result == "max_steps_exceeded" and not sol.success
    assert sol.message == python.message and starts[0] == starts[1]
    assert abs(sol.stats.nfe - python.stats.nfe) <= DIAGNOSIS_SLACK  # why: compiled_problems
    assert sol.stats.n_steps == python.stats.n_steps == 20
    np.testing.assert_array_equal(sol.ts, python.ts)


@settings(max_examples=15, deadline=None)
@given(
    rtol=st.floats(1e-10, 1e-3),
    x0=st.floats(-3.0, 3.0),
    v0=st.floats(-3.0, 3.0),
    method=st.sampled_from(["bosh3", "rkf45", "dopri5", "tsit5", "dop853"]),
)
def test_for_all_tolerances_and_starts_both_paths_count_the_same_work(rtol, x0, v0, method):
    """For any start in [-3, 3]² and rtol in [1e-10, 1e-3]: the same counters (the steps'
    equality is the subject of test_compiled_explicit; here its counters over a range of
    tolerances)."""
    y0 = np.array([x0, v0])
    python = dk.solve(van_der_pol, y0, T, method=method, rtol=rtol, atol=1e-3 * rtol)
    compiled = dk.solve(
        van_der_pol, y0, T, method=method, rtol=rtol, atol=1e-3 * rtol, compile=True
    )
    assert compiled.stats == python.stats
    scale = float(np.abs(python.ys).max())
    np.testing.assert_allclose(
        compiled.ys, python.ys, rtol=0, atol=state_bound(rtol) * scale
    )  # compiled_problems


# the bad fields of tests/test_bad_inputs_solvers.py that numba can be asked to compile (no torch,
# no dict lookup); its division by zero as array code, where numba keeps Python's ZeroDivisionError
BAD_FIELDS = {
    kind: field
    for kind, field in PYTHON_BAD_FIELDS.items()
    if kind not in ("torch for numpy", "raises later")
}
BAD_FIELDS["raises"] = lambda t, y: np.array([y[0] / 0.0, 1.0])


@pytest.mark.parametrize("kind", sorted(BAD_FIELDS))
def test_a_bad_field_with_compile_true_is_a_clear_error_naming_f(kind):
    """The fuzz suite's contract for compile=True: a ValueError, TypeError or SolverError naming
    f."""
    with pytest.raises((ValueError, TypeError, dk.SolverError)) as info:
        dk.solve(BAD_FIELDS[kind], Y0, T, compile=True)
    assert re.search(r"\bf\b", str(info.value)), info.value
    if kind == "raises":
        assert isinstance(info.value, dk.VectorFieldError) and isinstance(
            info.value.__cause__, ZeroDivisionError
        )
    elif kind == "nan":
        assert isinstance(info.value, dk.NonFiniteState)
    else:
        assert isinstance(info.value, dk.CompilationError)


def test_a_given_first_step_is_taken_as_on_the_python_path():
    """first_step= (and step_size= with an adaptive method, warned about) skips the initial-step
    probe on both."""
    python = dk.solve(van_der_pol, Y0, T, first_step=0.01)
    compiled = dk.solve(van_der_pol, Y0, T, first_step=0.01, compile=True)
    assert compiled.stats == python.stats
    automatic = dk.solve(van_der_pol, Y0, T, compile=True)
    assert (
        automatic.stats != compiled.stats
    )  # the planted difference: the probe and other first steps
    with pytest.warns(dk.StepSizeWarning, match="only its first step"):
        as_step_size = dk.solve(van_der_pol, Y0, T, step_size=0.01, compile=True)
    assert as_step_size.stats == python.stats


def strided_field(t, y):
    """A view with stride 2: not C-contiguous."""
    out = np.empty(4)
    out[0], out[1], out[2], out[3] = y[1], 99.0, -y[0], 99.0
    return out[::2]


def transposed_jacobian(t, y):
    """∂f/∂y of strided_field, returned Fortran-ordered (a transpose)."""
    return np.array([[0.0, -1.0], [1.0, 0.0]]).T


def test_compile_problem_hands_the_kernels_c_contiguous_arrays():
    """Kernels typed for C-ordered arrays would read a strided f or a transposed jac's data as it
    lies."""
    from dynkit.solvers.compiled import compile_problem

    problem = compile_problem(strided_field, Y0, 0.0, jac=transposed_jacobian)
    y = np.array([1.0, 2.0])
    np.testing.assert_array_equal(problem.field(0.0, y), strided_field(0.0, y))
    np.testing.assert_array_equal(problem.jac(0.0, y, problem.p), [[0.0, 1.0], [-1.0, 0.0]])
    python = dk.solve(strided_field, Y0, T)
    compiled = dk.solve(strided_field, Y0, T, compile=True)
    assert compiled.stats == python.stats
    np.testing.assert_allclose(compiled.ys, python.ys, rtol=0, atol=STATE_RTOL)
