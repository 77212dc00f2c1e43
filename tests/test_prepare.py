"""dk.solvers.prepare: a compiled solve checked once and run again from other starts gives what
dk.solve(..., compile=True) gives, refuses what it refuses, and checks each new start."""

from __future__ import annotations

import numpy as np
import pytest

import dynkit as dk
from dynkit.solvers import prepare
from dynkit.solvers.compiled import KERNELS, kernel_names
from dynkit.solvers.errors import CompilationError

kernel_names()
T = np.linspace(0.0, 2.0, 5)
Y0 = np.array([2.0, 0.0])


def van_der_pol(t, y):
    return np.array([y[1], 5.0 * (1.0 - y[0] ** 2) * y[1] - y[0]])


def van_der_pol_jac(t, y):
    return np.array([[0.0, 1.0], [-10.0 * y[0] * y[1] - 1.0, 5.0 * (1.0 - y[0] ** 2)]])


def _same(a, b) -> bool:
    # one kernel on the same inputs: the same arithmetic, so equal arrays (not two code paths)
    return (
        a.stats == b.stats
        and a.result == b.result
        and np.array_equal(a.ts, b.ts)
        and np.array_equal(a.ys, b.ys)
    )


@pytest.mark.parametrize("method", sorted(KERNELS))
def test_a_run_is_the_compiled_solve_from_that_start(method):
    kw = dict(method=method, rtol=1e-6, atol=1e-9)
    run = prepare(van_der_pol, Y0, T, **kw)
    for start in (Y0, np.array([1.0, 0.5]), np.array([-2.0, 1.0])):
        assert _same(run(start), dk.solve(van_der_pol, start, T, compile=True, **kw))
    assert _same(run(), dk.solve(van_der_pol, Y0, T, compile=True, **kw))


def test_the_comparison_sees_another_start():
    """The planted counterpart: a run from another start is not the solve from the first."""
    run = prepare(van_der_pol, Y0, T, method="rodas5")
    assert not _same(
        run(np.array([1.0, 0.5])), dk.solve(van_der_pol, Y0, T, "rodas5", compile=True)
    )


def test_with_jac_the_check_runs_once_and_no_run_counts_it():
    kw = dict(method="radau5", jac=van_der_pol_jac)
    solved = dk.solve(van_der_pol, Y0, T, compile=True, **kw)
    ran = prepare(van_der_pol, Y0, T, **kw)()
    assert ran.stats.nfe == solved.stats.nfe - 2 and ran.stats.njev == solved.stats.njev - 1
    assert np.array_equal(ran.ys, solved.ys)

    def wrong_jac(t, y):
        return -van_der_pol_jac(t, y)

    with pytest.raises(ValueError, match="jac"):
        prepare(van_der_pol, Y0, T, method="radau5", jac=wrong_jac)


@pytest.mark.parametrize(
    "kwargs, error, says",
    [
        (dict(rtol=-1.0), ValueError, "rtol"),
        (dict(method="auto"), ValueError, "no compiled kernel"),
        (dict(method="rk4"), ValueError, "step_size is required"),  # as dk.solve says it
        (dict(method="no_such"), ValueError, "method"),
        (dict(max_steps=0), ValueError, "max_steps"),
    ],
)
def test_what_solve_refuses_prepare_refuses_before_any_work(kwargs, error, says):
    with pytest.raises(error, match=says):
        prepare(van_der_pol, Y0, T, **kwargs)


def test_a_field_numba_cannot_compile_is_refused():
    class Opaque:
        scale = 2.0

    opaque = Opaque()
    with pytest.raises(CompilationError):
        prepare(lambda t, y: -opaque.scale * y, Y0, T)


@pytest.mark.parametrize(
    "start, says",
    [
        (np.zeros(3), r"shape \(2,\)"),
        (np.zeros(2, dtype=np.float32), "float64"),
        (np.array([np.nan, 0.0]), "finite"),
    ],
)
def test_a_new_start_is_checked(start, says):
    run = prepare(van_der_pol, Y0, T, method="bdf")
    with pytest.raises(ValueError, match=says):
        run(start)


def test_a_failure_is_returned_or_raised_as_solve_does():
    run = prepare(van_der_pol, Y0, T, method="rodas5", max_steps=3, throw=False)
    assert (
        run().result
        == dk.solve(
            van_der_pol, Y0, T, method="rodas5", max_steps=3, throw=False, compile=True
        ).result
    )
    with pytest.raises(dk.MaxStepsExceeded):
        prepare(van_der_pol, Y0, T, method="rodas5", max_steps=3)()


def test_the_argument_warnings_name_the_callers_line():
    """solve's checks moved into a helper once and their warnings then named engine.py: each
    warning must point at the line that called dk.solve or prepare (this file)."""
    import warnings

    from dynkit.solvers._validation import RAISED_RTOLS

    field = lambda t, y: -y  # noqa: E731
    calls = [
        lambda: dk.solve(field, np.ones(2), [0.0, 1.0], rtol=5.0),
        lambda: dk.solve(field, np.ones(2), [0.0, 1.0], atol=50.0),
        lambda: dk.solve(field, np.ones(2), [0.0, 1.0], rtol=1e-300),
        lambda: dk.solve(field, np.ones(2), [0.0, 1.0], step_size=0.1),
        lambda: prepare(field, np.ones(2), [0.0, 1.0], rtol=7.0),
    ]
    for call in calls:
        RAISED_RTOLS.clear()  # the raise of a tiny rtol is said once per process
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and all(w.filename == __file__ for w in caught), [
            (w.filename, w.lineno) for w in caught
        ]
