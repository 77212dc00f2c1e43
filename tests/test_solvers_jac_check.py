"""A user's ``jac`` is checked against a central difference of ``f`` before the first step.

The rule and its tolerance are :func:`dynkit.solvers.jacobian.check_jacobian`'s: a row fails when
the jac's prediction along one probe misses the difference by more than 1e-3 of the larger of the
two, above 1e3 units of f's rounding. A right Jacobian misses by ε^{2/3} relative (4e-11 in float64,
2e-5 in float32: 25 to 1e7 times below the share, whatever the CPU's rounding), a Jacobian off by a
factor c by |1 − c| / max(|c|, 1) (1 for a flipped sign or zero, 0.9 for ×10: 900 times above it).
The reference Jacobians here are written by hand from ``f``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.diagnostics.testset import TESTSET
from dynkit.solvers.jacobian import check_jacobian

STIFF_METHODS = ["rosenbrock23", "rodas4", "rodas5", "radau5", "bdf", "auto"]
TORCH_METHODS = ["rosenbrock23", "rodas4", "rodas5", "auto"]  # radau5 and bdf take numpy states
A = np.array([[-1000.0, 1.0], [0.0, -1.0]])  # stiff, not symmetric: a transposed jac is wrong too
PLANTED = {"sign flipped": -A, "times 10": 10 * A, "zero": 0 * A, "transposed": A.T}
MISMATCH = "jac does not match f"


def linear(t, y):
    return A @ y


@pytest.mark.parametrize("method", STIFF_METHODS)
@pytest.mark.parametrize("planted", PLANTED)
def test_a_wrong_jac_is_refused_before_any_step(method, planted):
    J = PLANTED[planted]
    with pytest.raises(ValueError, match=MISMATCH):
        dk.solve(
            linear, np.ones(2), [0.0, 1.0], method=method, rtol=1e-6, atol=1e-9, jac=lambda t, y: J
        )


@pytest.mark.parametrize("method", TORCH_METHODS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_states_are_checked_too(method, dtype):
    At = torch.tensor(A, dtype=dtype)
    f = lambda t, y: At @ y  # noqa: E731
    y0 = torch.ones(2, dtype=dtype)
    for J in (-At, 10 * At, 0 * At):
        with pytest.raises(ValueError, match=MISMATCH):
            dk.solve(
                f,
                y0,
                torch.tensor([0.0, 1.0]),
                method=method,
                rtol=1e-5,
                atol=1e-7,
                jac=lambda t, y: J,
            )
    sol = dk.solve(
        f, y0, torch.tensor([0.0, 1.0]), method=method, rtol=1e-5, atol=1e-7, jac=lambda t, y: At
    )
    exact = torch.linalg.matrix_exp(At.double()) @ y0.double()
    # rtol 1e-5: the global error stays within 100 tolerances for these methods on a linear problem
    assert torch.allclose(sol.ys[-1].double(), exact, rtol=1e-3, atol=1e-6)


def test_jac_check_false_skips_the_check_and_its_calls():
    # planted: the wrong sign that the check refuses; without the check the calls of f are two fewer
    wrong = lambda t, y: -A  # noqa: E731
    skipped = dk.solve(linear, np.ones(2), [0.0, 1.0], method="radau5", jac=wrong, jac_check=False)
    assert skipped.result == "success"
    right = dict(method="rodas5", rtol=1e-6, atol=1e-9, jac=lambda t, y: A)
    checked, unchecked = (
        dk.solve(linear, np.ones(2), [0.0, 1.0], **right),
        dk.solve(linear, np.ones(2), [0.0, 1.0], jac_check=False, **right),
    )
    assert checked.stats.nfe == unchecked.stats.nfe + 2
    assert checked.stats.njev == unchecked.stats.njev + 1
    with pytest.raises(TypeError, match="jac_check must be True or False"):
        dk.solve(
            linear, np.ones(2), [0.0, 1.0], method="rodas5", jac=lambda t, y: A, jac_check="yes"
        )


@pytest.mark.parametrize("method", STIFF_METHODS)
@pytest.mark.parametrize("name", ["vdpol", "robertson", "hires"])
def test_right_analytic_jacobians_of_nonlinear_problems_pass(method, name):
    p = TESTSET[name]
    sol = dk.solve(
        p.f, p.y0, [0.0, 1e-3 * p.t_end], method=method, rtol=1e-6, atol=1e-10, jac=p.jac
    )
    assert sol.result == "success"


@pytest.mark.parametrize("method", ["rosenbrock23", "rodas4", "rodas5", "radau5", "bdf"])
def test_a_sparse_jac_is_checked(method):
    # 1-D diffusion with decay, tridiagonal: the right sparse jac passes, its negative is refused
    n = 50
    bands = [np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)]
    L = scipy.sparse.diags(bands, [-1, 0, 1], format="csc") * 1e3
    f = lambda t, y: L @ y - y  # noqa: E731
    J = (L - scipy.sparse.identity(n)).tocsc()
    y0 = np.sin(np.linspace(0, np.pi, n))
    sol = dk.solve(f, y0, [0.0, 0.01], method=method, rtol=1e-6, atol=1e-9, jac=lambda t, y: J)
    assert sol.result == "success"
    with pytest.raises(ValueError, match=MISMATCH):
        dk.solve(f, y0, [0.0, 0.01], method=method, rtol=1e-6, atol=1e-9, jac=lambda t, y: -J)


def test_a_badly_scaled_problem_passes_and_its_wrong_jac_does_not():
    # components of size 1e-8 and 1e8, coupled both ways: each component's probe is scaled to its
    # own size, so the tiny one's column is seen in its row and the large one's rounding does not
    # swamp it
    B = np.array([[-1e3, 1e-13], [1e13, -1.0]])
    f = lambda t, y: B @ y  # noqa: E731
    y0, atol = np.array([1e-8, 1e8]), np.array([1e-16, 1e0])
    for method in STIFF_METHODS:
        sol = dk.solve(f, y0, [0.0, 1.0], method=method, rtol=1e-6, atol=atol, jac=lambda t, y: B)
        assert sol.result == "success"
        wrong = B.copy()
        wrong[0, 0] *= 10  # only the tiny component's own rate
        with pytest.raises(ValueError, match=MISMATCH):
            dk.solve(f, y0, [0.0, 1.0], method=method, rtol=1e-6, atol=atol, jac=lambda t, y: wrong)


def compiled_linear(t, y):
    return np.array([-1000.0 * y[0] + y[1], -y[1]])


@pytest.mark.parametrize("factor", [-1.0, 10.0, 0.0])
def test_the_compiled_path_checks_jac_before_its_kernel(factor):
    pytest.importorskip("numba")

    def wrong(t, y):
        return factor * np.array([[-1000.0, 1.0], [0.0, -1.0]])

    for method in ("rodas4", "radau5", "bdf"):
        with pytest.raises(ValueError, match=MISMATCH):
            dk.solve(
                compiled_linear, np.ones(2), [0.0, 1.0], method=method, jac=wrong, compile=True
            )


def test_per_sample_blocks_are_checked():
    y0 = np.ones((3, 2))
    f = lambda t, y: y @ A.T  # noqa: E731
    blocks = np.broadcast_to(A, (3, 2, 2))
    sol = dk.solve(f, y0, [0.0, 1.0], method="rodas4", per_sample=True, jac=lambda t, y: blocks)
    assert sol.result == "success"
    wrong = blocks.copy()
    wrong[1] = -A  # one sample's block
    with pytest.raises(ValueError, match=MISMATCH + r".* 2 of 6 rows"):
        dk.solve(f, y0, [0.0, 1.0], method="rodas4", per_sample=True, jac=lambda t, y: wrong)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 12),
    factor=st.sampled_from([-1.0, 0.0, 0.5, 2.0, 10.0]),
)
def test_the_rule_passes_every_right_jacobian_and_refuses_scaled_ones(seed, d, factor):
    # f(y) = M tanh(y) + c with random M spread over 6 decades: J = M diag(1 - tanh²); the rule in
    # float64
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(d, d)) * 10.0 ** rng.uniform(-3, 3, (d, 1))
    c = rng.normal(size=d)
    # |y| ≤ 3.2: beyond, tanh' < 1e-2 can put J's effect along the probe below f's rounding, where
    # no difference can tell a wrong J (the rule then rightly says nothing: seed 2003, d = 1 at |y|
    # ≈ 10)
    y = rng.normal(size=d) * 10.0 ** rng.uniform(-2, 0.5, d)
    f = lambda t, x: np.tanh(x) @ M.T + c  # noqa: E731  (rows (1, d))
    J = M * (1 - np.tanh(y) ** 2)
    atol = np.full((1, d), 1e-9)
    check_jacobian(f, J, 0.0, y[None], atol)  # the right one: no error
    with pytest.raises(ValueError, match=MISMATCH):
        check_jacobian(f, factor * J, 0.0, y[None], atol)
