"""Problems and checks shared by the compiled-path tests (test_compiled_explicit, _switch,
test_ensemble).

The vector fields are module-level functions on purpose: numba compiles a kernel once per ``f`` and
process, so every test that reuses these pays the compile time once (about 2 s per ``f`` on one
core).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import dynkit as dk
from dynkit.solvers.compiled import KERNELS, compile_problem
from dynkit.solvers.compiled.common import STAT_FIELDS

# Accepted step times: the two paths sum the error estimate Σ e_i h k_i in different orders (numpy's
# BLAS dot, the kernel in index order), and that sum cancels: its terms are ~h|f|, the result
# ~rtol|y| or far less on the small first steps, so the norms agree to ~eps·h|f|/|err| (1e-8
# relative and worse on tiny norms, measured up to 3e-7) and the PI factor, norm^(-1/k), to a fifth
# of that. The controller does not amplify it (each factor depends on the current error only), so
# step times agree to ~1e-9 of the span: the bound is 1e-6 of each step (a perturbation of the
# controller's constants or of a tableau entry by 1e-4 moves them by far more,
# tests/test_compiled_explicit).
STEP_RTOL = 1e-6
# States: both paths compute the same formulas on steps that agree to ~1e-8 relative; the states at
# the outputs then differ by how the solution's error (~rtol, up to ~10 rtol over a span) moves with
# the steps, (p+1) times their relative change (norms up to 3e-7, the PI factor a fifth): up to
# ~1e-5 rtol. Measured at most 5e-13 of max|y| at rtol <= 1e-6, 2.5e-10 at rtol = 8.5e-4 (9 long
# steps) and 1.9e-10 = 1.8e-6 rtol at rtol = 1.07e-4 (dopri5, Van der Pol from (1.84, 0), found by
# hypothesis). Bound: the larger of 1e-10 and 2e-5 rtol, relative to max|y|.
STATE_RTOL = 1e-10
STATE_PER_RTOL = 2e-5


def state_bound(rtol: float) -> float:
    """The bound on |y_compiled - y_python| / max|y| for a solve at ``rtol`` (see above)."""
    return max(STATE_RTOL, STATE_PER_RTOL * rtol)


def decay(t, y):
    """A linear decaying system with three time scales (rates 1, 10, 0.1)."""
    return np.array([-y[0], -10.0 * y[1] + y[0], -0.1 * y[2]])


def lotka_volterra(t, y):
    return np.array([1.5 * y[0] - y[0] * y[1], y[0] * y[1] - 3.0 * y[1]])


def van_der_pol(t, y):
    """Van der Pol, mu = 1."""
    return np.array([y[1], (1.0 - y[0] ** 2) * y[1] - y[0]])


def stiff_cosine(t, y):
    """y' = -1000 (y - cos t): stiff for an explicit method (its steps are limited by stability)."""
    return -1000.0 * (y - np.cos(t))


def blow_up(t, y):
    """y' = y²: y(t) = 1 / (1 - t) from y(0) = 1, singular at t = 1."""
    return y * y


@dataclass(frozen=True)
class Case:
    name: str
    f: object
    y0: np.ndarray
    t: np.ndarray
    rtol: float
    atol: object


CASES = (
    # backward in time, an output grid that does not fall on the steps, a per-component atol
    Case(
        "decay_backward",
        decay,
        np.array([1.0, 0.5, 2.0]),
        np.linspace(2.0, 0.0, 9),
        1e-6,
        np.array([1e-8, 1e-9, 1e-8]),
    ),
    Case(
        "lotka_volterra",
        lotka_volterra,
        np.array([10.0, 5.0]),
        np.linspace(0.0, 10.0, 11),
        1e-8,
        1e-10,
    ),
    Case(
        "van_der_pol",
        van_der_pol,
        np.array([2.0, 0.0]),
        np.array([0.0, 0.3, 1.7, 4.0, 6.5, 10.0]),
        1e-6,
        1e-8,
    ),
)

ADAPTIVE_EXPLICIT = ("bosh3", "rkf45", "dopri5", "tsit5", "dop853")


def spy_on_max_steps_diagnosis(monkeypatch) -> list[int]:
    """Record ``nfe`` when each MaxStepsExceeded diagnosis (``_diagnosis.max_steps_failure``)
    starts, for both paths.

    The diagnosis bisects a slope reversal down to a few ulps: how many halvings (calls of ``f``)
    that takes depends on the last bits of the state where the solve stopped, which the two paths
    reach only to rounding. So the counts are compared where the step loops end, and the totals
    within the bisection's slack."""
    from dynkit.solvers import _diagnosis

    starts: list[int] = []
    original = _diagnosis.max_steps_failure

    def spy(field, *args):
        starts.append(field.stats.nfe)
        return original(field, *args)

    monkeypatch.setattr(_diagnosis, "max_steps_failure", spy)
    return starts


DIAGNOSIS_SLACK = 3  # calls of f: the bisection's count may differ by a halving or two (see above)


def python_path(case: Case, method: str, **options):
    """The Python path's solution and its accepted steps' end times (from its dense output's step
    list)."""
    sol = dk.solve(
        case.f,
        case.y0,
        case.t,
        method=method,
        rtol=case.rtol,
        atol=case.atol,
        dense=True,
        **options,
    )
    return sol, np.array(sol.dense.ends)


def compiled_run(case: Case, method: str, driver=None):
    """The compiled kernel's result with its accepted steps' end times (``driver``: another
    kernel, for a planted violation)."""
    problem = compile_problem(case.f, case.y0, float(case.t[0]))
    driver = KERNELS[method] if driver is None else driver
    atol = np.broadcast_to(np.asarray(case.atol, dtype=float), case.y0.shape).copy()
    result = driver(
        problem,
        float(case.t[0]),
        float(case.t[-1]),
        case.y0,
        case.t,
        case.rtol,
        atol,
        0.0,
        100_000,
        record_steps=True,
    )
    return result


def path_differences(python_sol, python_steps, result, rtol: float) -> list[str]:
    """What differs between the Python path and a compiled result beyond the tolerances above
    (empty: they agree)."""
    compiled_stats = dict(zip(STAT_FIELDS, map(int, result.stats)))
    compiled_ys, steps = result.ys[: result.n_filled], result.steps
    problems = []
    if python_sol.stats.as_dict() != compiled_stats:
        problems.append(f"stats differ: {python_sol.stats.as_dict()} vs {compiled_stats}")
    if len(python_steps) != len(steps):
        problems.append(f"{len(python_steps)} accepted steps vs {len(steps)}")
    else:
        sizes = np.abs(np.diff(np.concatenate(([python_sol.ts[0]], python_steps))))
        worst = float(np.max(np.abs(python_steps - steps) / sizes))
        if worst > STEP_RTOL:
            problems.append(f"step times differ by {worst:.3g} of a step (bound {STEP_RTOL:g})")
    if python_sol.ys.shape != compiled_ys.shape:
        problems.append(f"ys shapes {python_sol.ys.shape} vs {compiled_ys.shape}")
    else:
        scale = np.max(np.abs(python_sol.ys))
        worst = float(np.max(np.abs(python_sol.ys - compiled_ys)) / scale)
        bound = state_bound(rtol)
        if worst > bound:
            problems.append(f"states differ by {worst:.3g} of max|y| (bound {bound:g})")
    return problems
