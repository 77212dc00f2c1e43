"""dk.solve_ensemble: each trajectory as its own dk.solve, validated inputs, the Python loop
without numba."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dynkit as dk
from dynkit.solvers.compiled import KERNELS
from dynkit.solvers.compiled.explicit import ExplicitDriver

from compiled_problems import STATE_RTOL, spy_on_max_steps_diagnosis

T = np.linspace(0.0, 4.0, 5)


def van_der_pol_mu(t, y, p):
    """Van der Pol with mu = p[0]."""
    return np.array([y[1], p[0] * (1.0 - y[0] ** 2) * y[1] - y[0]])


def oscillator(t, y):
    return np.array([y[1], -y[0]])


# six trajectories: different starts and mu, one (mu = 1e3, stiff) that runs out of steps
STARTS = np.array([[2.0, 0.0], [0.5, -1.0], [-1.5, 2.0], [0.0, 0.1], [1.0, 1.0], [2.0, 0.0]])
MUS = np.array([[1.0], [0.5], [2.0], [1.0], [0.1], [1e3]])
MAX_STEPS = 3000


@pytest.fixture(scope="module")
def compiled():
    return dk.solve_ensemble(
        van_der_pol_mu,
        STARTS,
        T,
        params=MUS,
        method="tsit5",
        rtol=1e-7,
        atol=1e-9,
        max_steps=MAX_STEPS,
        compile=True,
    )


def _individual(i: int, **options):
    mu = MUS[i]
    return dk.solve(
        lambda t, y: van_der_pol_mu(t, y, mu),
        STARTS[i],
        T,
        method="tsit5",
        rtol=1e-7,
        atol=1e-9,
        max_steps=MAX_STEPS,
        throw=False,
        **options,
    )


def test_each_trajectory_is_its_own_solve(compiled, monkeypatch):
    assert compiled.compiled and compiled.ys.shape == (6, len(T), 2)
    diagnosis_starts = spy_on_max_steps_diagnosis(monkeypatch)
    for i in range(len(STARTS)):
        alone = _individual(i)
        assert compiled.results[i] == alone.result
        counts = alone.stats.as_dict()
        # the ensemble counts the step loop's calls: no MaxStepsExceeded diagnosis per trajectory
        if not alone.success:
            counts["nfe"] = diagnosis_starts[-1]
        assert {k: int(v[i]) for k, v in compiled.stats.items()} == counts
        n = len(alone.ts)
        scale = np.abs(alone.ys).max()
        np.testing.assert_allclose(compiled.ys[i, :n], alone.ys, rtol=0, atol=STATE_RTOL * scale)
        assert np.isnan(compiled.ys[i, n:]).all()  # past a failure: NaN
    assert list(compiled.success) == [True] * 5 + [False]
    assert compiled.results[5] == "max_steps_exceeded" and 0 < compiled.t_stop[5] < T[-1]
    np.testing.assert_array_equal(compiled.t_stop[:5], T[-1])


def test_the_compiled_ensemble_and_the_python_loop_agree(compiled):
    loop = dk.solve_ensemble(
        van_der_pol_mu,
        STARTS,
        T,
        params=MUS,
        method="tsit5",
        rtol=1e-7,
        atol=1e-9,
        max_steps=MAX_STEPS,
        compile=False,
    )
    assert not loop.compiled
    np.testing.assert_array_equal(loop.results, compiled.results)
    for key in compiled.stats:
        if key != "nfe":
            np.testing.assert_array_equal(loop.stats[key], compiled.stats[key])
    # nfe: equal where the trajectory succeeded; a MaxStepsExceeded in the loop adds the Python
    # path's stiffness diagnosis (the ensemble kernel reports the step loop's own count, no
    # diagnosis)
    np.testing.assert_array_equal(loop.stats["nfe"][:5], compiled.stats["nfe"][:5])
    assert loop.stats["nfe"][5] > compiled.stats["nfe"][5]
    np.testing.assert_allclose(loop.t_stop, compiled.t_stop, rtol=1e-9)


def test_solution_gives_one_trajectory_as_a_solution(compiled):
    one = compiled.solution(1)
    alone = _individual(1)
    assert isinstance(one, dk.Solution) and one.stats == alone.stats and one.success
    failed = compiled.solution(5)
    assert (
        failed.result == "max_steps_exceeded"
        and not failed.success
        and "max_steps_exceeded" in failed.message
    )
    with pytest.raises(IndexError, match="trajectory index"):
        compiled.solution(6)
    assert "6 trajectories" in repr(compiled) and "1 failed" in repr(compiled)


def test_a_planted_kernel_difference_is_seen(monkeypatch, compiled):
    """The comparison above fails for an ensemble whose kernel has one tableau entry off by 1e-4
    of itself."""
    honest = KERNELS["tsit5"]
    e = honest.coefficients.e.copy()
    e[3] *= 1 + 1e-4
    import dataclasses

    monkeypatch.setitem(
        KERNELS, "tsit5", ExplicitDriver(dataclasses.replace(honest.coefficients, e=e))
    )
    planted = dk.solve_ensemble(
        van_der_pol_mu,
        STARTS[:5],
        T,
        params=MUS[:5],
        method="tsit5",
        rtol=1e-7,
        atol=1e-9,
        compile=True,
    )
    differs = [
        planted.stats["nfe"][i] != _individual(i).stats.nfe
        or np.abs(planted.ys[i] - _individual(i).ys).max()
        > STATE_RTOL * np.abs(planted.ys[i]).max()
        for i in range(5)
    ]
    assert any(differs)


def test_one_state_shared_by_parameter_sets_and_one_parameter_set_shared_by_states():
    by_params = dk.solve_ensemble(van_der_pol_mu, STARTS[0], T, params=MUS[:3], compile=True)
    by_states = dk.solve_ensemble(van_der_pol_mu, STARTS[:3], T, params=MUS[0], compile=True)
    assert by_params.ys.shape == by_states.ys.shape == (3, len(T), 2)
    np.testing.assert_array_equal(
        by_params.ys[0], by_states.ys[0]
    )  # the same problem: start 0, mu 1
    no_params = dk.solve_ensemble(oscillator, STARTS[:2], T, compile=True)
    exact = np.stack([np.cos(T) * y[0] + np.sin(T) * y[1] for y in STARTS[:2]])
    np.testing.assert_allclose(
        no_params.ys[:, :, 0], exact, atol=1e-5
    )  # rtol 1e-6 over 4 time units: ~1e-6


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"y0s": np.zeros((2, 2, 2))}, ValueError, r"y0s must be a non-empty \(m, n\) array"),
        ({"y0s": np.array([[1.0, np.nan]])}, ValueError, "y0s must be finite"),
        ({"y0s": "ab"}, TypeError, "y0s must be"),
        ({"y0s": STARTS[0], "params": None}, ValueError, "give several initial states"),
        ({"params": MUS[:4]}, ValueError, "6 initial states and 4 parameter sets"),
        ({"params": np.zeros((6, 0))}, ValueError, "n_p >= 1"),
        (
            {"method": "rk4"},
            ValueError,
            "method must be one of bosh3, dop853, dopri5, rkf45, tsit5",
        ),
        ({"t": [0.0]}, ValueError, "t must be a 1-D array of at least 2 times"),
        (
            {"atol": np.ones(3) * 1e-8},
            ValueError,
            r"atol must broadcast|atol must be a float or a \(2,\) array",
        ),
        ({"max_steps": 0}, ValueError, "max_steps must be a positive integer"),
        ({"threads": 0}, ValueError, "threads must be None"),
        ({"first_step": -0.1}, ValueError, "first_step must be positive"),
        ({"compile": "always"}, ValueError, "compile must be False, True or 'auto'"),
        ({"f": 3}, TypeError, "f must be a callable"),
    ],
)
def test_bad_inputs_are_refused_before_any_work(kwargs, error, match):
    arguments = dict(f=van_der_pol_mu, y0s=STARTS, t=T, params=MUS)
    arguments.update(kwargs)
    f, y0s, t = arguments.pop("f"), arguments.pop("y0s"), arguments.pop("t")
    with pytest.raises(error, match=match):
        dk.solve_ensemble(f, y0s, t, **arguments)


def test_without_numba_auto_runs_the_python_loop_and_true_refuses(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.warns(dk.CompileWarning, match=r"pip install dynkit\[jit\]"):
        loop = dk.solve_ensemble(oscillator, STARTS[:2], T)
    assert not loop.compiled and loop.success.all()
    with pytest.raises(dk.CompilationError, match=r"pip install dynkit\[jit\]"):
        dk.solve_ensemble(oscillator, STARTS[:2], T, compile=True)


def test_a_field_numba_cannot_compile_falls_back_with_the_reason():
    class Scale:  # an object numba cannot type
        value = 2.0

    scale = Scale()

    def uses_an_object(t, y):
        return -scale.value * y

    with pytest.warns(dk.CompileWarning, match="could not be compiled by numba"):
        loop = dk.solve_ensemble(uses_an_object, STARTS[:2], T)
    assert not loop.compiled


def test_threads_do_not_change_the_results(compiled):
    one = dk.solve_ensemble(
        van_der_pol_mu,
        STARTS,
        T,
        params=MUS,
        method="tsit5",
        rtol=1e-7,
        atol=1e-9,
        max_steps=MAX_STEPS,
        compile=True,
        threads=1,
    )
    np.testing.assert_array_equal(one.ys, compiled.ys)
    for key in one.stats:
        np.testing.assert_array_equal(one.stats[key], compiled.stats[key])


def test_a_trajectory_whose_f_raises_is_marked_and_the_others_go_on():
    """numba drops an exception raised inside its parallel loop: the trajectory must not pass for
    a success."""

    def fails_for_large_p(t, y, p):
        if p[0] > 5.0:
            raise ValueError("p too large")
        return -p[0] * y

    ens = dk.solve_ensemble(
        fails_for_large_p, np.ones(2), T, params=[[1.0], [10.0], [2.0]], compile=True
    )
    assert list(ens.results) == ["success", "vector_field_error", "success"]
    np.testing.assert_allclose(
        ens.ys[0, :, 0], np.exp(-T), rtol=1e-5
    )  # rtol 1e-6 per step, 4 time units
    assert np.isnan(ens.ys[1, 1:]).all()
    loop = dk.solve_ensemble(
        fails_for_large_p, np.ones(2), T, params=[[1.0], [10.0], [2.0]], compile=False
    )
    assert list(loop.results) == list(
        ens.results
    )  # the Python loop says the same (with the message)
