"""``dk.solve(..., nonnegative=)``: constrained components kept at or above 0
(dynkit.solvers.constraints)."""

from __future__ import annotations

import numpy as np
import pytest

import dynkit as dk
from dynkit.diagnostics.testset import TESTSET
from dynkit.solvers import constraints

STIFF_METHODS = ["radau5", "bdf", "rodas4", "rodas5", "rosenbrock23", "auto"]
# atol at or above y2's largest value (3.6e-5): the tolerance lets y1 and y2 take either sign late
# in the solve
CRUDE = [(1e-2, 1e-3), (1e-5, 1e-3), (1e-3, 1e-5), (1e-2, 1e-4)]


def _robertson(method, rtol, atol, nonnegative):
    p = TESTSET["robertson"]
    sol = dk.solve(
        p.f,
        p.y0,
        [0.0, p.t_end],
        method=method,
        rtol=rtol,
        atol=atol,
        throw=False,
        nonnegative=nonnegative,
    )
    ref = np.asarray(p.reference, float)
    return sol, float(np.max(np.abs(np.asarray(sol.ys[-1]) - ref) / (atol + rtol * np.abs(ref))))


@pytest.mark.parametrize("rtol, atol", CRUDE)
@pytest.mark.parametrize("method", STIFF_METHODS)
def test_robertson_at_crude_atol_right_with_nonnegative(method, rtol, atol):
    # without the constraint radau5, bdf and auto return y1 ~ -1e7 here (a negative y1 the tolerance
    # allowed, carried by the equations onto a branch where y1 falls linearly), or fail; with it
    # every method is within 10 tolerances of the reference (measured at most 3.2, auto at rtol
    # 1e-5, atol 1e-3; 0.034 for the others)
    sol, err = _robertson(method, rtol, atol, True)
    assert sol.success and err <= 10.0, (sol.result, err)
    assert (np.asarray(sol.ys) >= 0).all()


@pytest.mark.parametrize("method", ["radau5", "bdf"])
def test_robertson_crude_check_fails_without_the_constraint(method):
    # the check above on the unconstrained solve: wrong by ~1e11 tolerances, returned as a success
    sol, err = _robertson(method, 1e-2, 1e-4, None)
    assert sol.success and err > 1e6


def test_robertson_crude_check_fails_without_clipping(monkeypatch):
    # planted: negative parts counted as error but never set to 0 (and the field not modified at 0)
    monkeypatch.setattr(constraints.NonNegative, "project", lambda self, y: y)
    monkeypatch.setattr(constraints.NonNegative, "wrap", lambda self, f, at_zero_only=False: f)
    sol, err = _robertson("bdf", 1e-2, 1e-4, True)
    assert not (sol.success and err <= 10.0)


@pytest.mark.parametrize(
    "method", ["dopri5", "tsit5", "radau5", "bdf", "rodas4", "rosenbrock23", "auto"]
)
def test_a_component_driven_down_stops_at_zero(method):
    # y' = -1 from 1 with component 0 constrained: it reaches 0 at t = 1 and stays there (the
    # modified field max(f, 0) at 0); component 1 is free and follows 1 - t. Outputs, dense output:
    # exact to 1e-9 (the solution is piecewise linear; every method integrates a linear solution
    # exactly up to rounding)
    sol = dk.solve(
        lambda t, y: -np.ones_like(y),
        np.array([1.0, 1.0]),
        [0.0, 0.5, 1.5, 2.0],
        method=method,
        nonnegative=[0],
        dense=True,
    )
    expected = np.array([[1.0, 1.0], [0.5, 0.5], [0.0, -0.5], [0.0, -1.0]])
    assert np.allclose(sol.ys, expected, atol=1e-9)
    tq = np.linspace(0.0, 2.0, 41)
    dense = sol.evaluate(tq)
    assert (dense[:, 0] >= 0).all() and np.allclose(dense[:, 1], 1 - tq, atol=1e-9)


def test_without_the_modified_field_a_driven_component_stalls(monkeypatch):
    # planted: the field left as it is: every step from 0 goes negative and is rejected, so the
    # solve runs out
    monkeypatch.setattr(constraints.NonNegative, "wrap", lambda self, f, at_zero_only=False: f)
    sol = dk.solve(
        lambda t, y: -np.ones_like(y),
        np.array([1.0]),
        [0.0, 2.0],
        method="dopri5",
        nonnegative=True,
        max_steps=5_000,
        throw=False,
    )
    assert not sol.success


def test_masks_and_indices_select_the_same_components():
    f = lambda t, y: -np.ones_like(y)  # noqa: E731
    y0 = np.ones((2, 2))
    by_mask = dk.solve(
        f, y0, [0.0, 2.0], method="dopri5", nonnegative=np.array([[True, False], [False, True]])
    )
    by_index = dk.solve(f, y0, [0.0, 2.0], method="dopri5", nonnegative=[0, 3])
    assert np.allclose(by_mask.ys, by_index.ys, atol=1e-12)
    assert np.allclose(by_mask.ys[-1], [[0.0, -1.0], [-1.0, 0.0]], atol=1e-9)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(nonnegative=[5]), "nonnegative indices must lie in"),
        (dict(nonnegative=np.array([True])), "boolean mask must have y0's shape"),
        (dict(nonnegative=[0.5]), "nonnegative must be None, True"),
        (dict(nonnegative="yes"), "nonnegative must be None, True"),
        (dict(nonnegative=True, method="rk4", step_size=0.1), "needs an adaptive method"),
        (dict(nonnegative=True, y0=np.array([-1.0, 1.0])), r"y0 must be >= 0"),
    ],
)
def test_bad_nonnegative_arguments_are_refused(kwargs, message):
    args = dict(y0=np.array([1.0, 1.0]), method="dopri5")
    args.update(kwargs)
    y0 = args.pop("y0")
    with pytest.raises(ValueError, match=message):
        dk.solve(lambda t, y: -y, y0, [0.0, 1.0], **args)


def test_nonnegative_refused_for_torch_and_the_adjoint():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="nonnegative= takes numpy states"):
        dk.solve(lambda t, y: -y, torch.ones(2), [0.0, 1.0], nonnegative=True)
    with pytest.raises(ValueError, match="adjoint=True does not combine with nonnegative"):
        dk.solve(
            lambda t, y: -y,
            torch.ones(2),
            [0.0, 1.0],
            nonnegative=True,
            adjoint=True,
            adjoint_params=(),
        )


def test_robertson_grid_tells_right_from_silently_wrong():
    # the bench's grid (32 cases) for bdf: silently wrong cases without the constraint (measured 9),
    # none with it
    from benchmarks.bench_stiff import robertson_grid

    grid = robertson_grid(methods=("bdf",), peers=())
    assert grid["bdf"][0].count("X") > 0
    assert set(grid["bdf nonnegative"][0]) == {"."}
