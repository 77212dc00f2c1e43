"""Issue 33: no solver reports a wrong answer as success, and no solve hangs.

Each numbered case of the issue: (2) a wrong ``jac_sparsity`` raises naming the entries it misses,
bad values and ``jac=`` beside it are refused; (3) a fixed step just outside the stability region is
warned about; (4) ``t`` gradients on the autograd path agree with finite differences; (7) an event
that never fires, a float32 overflow and a float32-precision limit end promptly with the right error
and message (each run in a subprocess under a timeout, so that a regression fails instead of hanging
the suite). The bdf accuracy (1) is in ``test_solvers_stiff.py``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse
import torch

import dynkit as dk

# a hang regressed: the runs below finish in well under a second; 120 s leaves room for a loaded
# machine and the import of torch, and still fails (TimeoutExpired) instead of blocking the suite
HANG_GUARD_S = 120


def _run_guarded(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        env={"PYTHONPATH": ":".join(sys.path), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )


# -- (7) hangs
# ----------------------------------------------------------------------------------------------


def test_an_event_that_never_fires_ends_the_solve_at_the_last_time():
    """y' = -y never reaches y_0 = -10: the search ends at t[0] + 1023 (t[1] - t[0]) with a
    warning (it ran past 150 s before: torchdiffeq's search has no end), returning the state
    there (e^{-1023} underflows to ~0)."""
    out = _run_guarded(
        "import warnings, torch, dynkit as dk\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    t_end, ys = dk.odeint(lambda t, y: -y, torch.tensor([1.0, 2.0], "
        "dtype=torch.float64),\n"
        "                          torch.tensor([0.0, 1.0], dtype=torch.float64), "
        "event_fn=lambda t, y: y[0] + 10)\n"
        "print(float(t_end), float(ys[-1].abs().max()), any('no sign change' in "
        "str(x.message) for x in w))\n"
    )
    assert out.returncode == 0, out.stderr
    t_end, size, warned = out.stdout.split()
    assert float(t_end) == 1023.0 and float(size) < 1e-6 and warned == "True"


def test_an_event_beyond_the_first_horizon_is_still_found():
    """The bound on the search keeps torchdiffeq's convention that t[1] only sets the direction:
    y = 1 - t/100 crosses 0 at t = 100, far beyond t[1] = 1 (exact for any Runge–Kutta method: y
    is linear)."""
    y0 = torch.tensor([1.0], dtype=torch.float64)
    event_t, ys = dk.odeint(
        lambda t, y: -torch.ones_like(y) / 100,
        y0,
        torch.tensor([0.0, 1.0], dtype=torch.float64),
        event_fn=lambda t, y: y[0],
    )
    assert float(event_t) == pytest.approx(100.0, rel=1e-10)


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_float32_overflow_raises_non_finite_state(library):
    """y' = y from 3e38 leaves float32's range (3.4e38) at t = ln(3.4/3) ≈ 0.125: NonFiniteState
    as in float64 (the torch run did not finish before, the numpy one stopped after 62 s with a
    MaxStepsExceeded saying "stiff")."""
    y0 = "torch.tensor([3e38])" if library == "torch" else "np.array([3e38], dtype=np.float32)"
    out = _run_guarded(
        "import numpy as np, torch, dynkit as dk\n"
        "try:\n"
        f"    dk.solve(lambda t, y: y, {y0}, np.array([0.0, 1.0]))\n"
        "except dk.SolverError as err:\n"
        "    print(type(err).__name__, err.t, 'float32' in str(err), 'looks stiff' in str(err))\n"
    )
    assert out.returncode == 0, out.stderr
    name, t, says_float32, says_stiff = out.stdout.split()
    assert name == "NonFiniteState" and 0.12 < float(t) < 0.13
    assert says_float32 == "True" and says_stiff == "False"


def test_a_float32_overflow_stall_is_not_confused_with_a_small_change():
    """The stall test needs an overflowed trial: a float32 state whose steps change nothing for
    another reason (f tiny against y) is not declared out of range."""
    sol = dk.solve(
        lambda t, y: np.full_like(y, 1e-30), np.array([1.0], dtype=np.float32), [0.0, 1.0]
    )
    assert sol.success and float(sol.ys[-1, 0]) == 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float32_precision_limit_says_so_not_stiff(dtype):
    """A step far below the state's precision (1e-9 on y = 1: 1/100 of a float32 ulp) ends at
    max_steps: the message blames float32 precision, never stiffness; in float64 the same step
    changes y, and float32 is not blamed (the planted case that makes the message's condition
    fail)."""
    with pytest.raises(dk.MaxStepsExceeded) as info:
        dk.solve(
            lambda t, y: np.cos(50 * t) * np.ones_like(y),
            np.ones(1, dtype=dtype),
            [0.0, 1.0],
            first_step=1e-9,
            max_steps=3,
        )
    message = str(info.value)
    assert ("float32 precision" in message) == (dtype == np.float32)
    assert "looks stiff" not in message and "stiff method" not in message


# -- (4) t gradients on the autograd path
# -------------------------------------------------------------------

A_T = torch.tensor([[-0.5, 1.0], [-1.0, -0.2]], dtype=torch.float64)
WEIGHTS = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=torch.float64)


def _loss(t, method, **kwargs):
    """L = Σ_i w_i · y(t_i) for y' = A y + (sin t, 0) (non-autonomous: f depends on t itself)."""
    field = lambda s, y: A_T @ y + torch.stack([torch.sin(s), 0 * s])  # noqa: E731
    sol = dk.solve(
        field,
        torch.tensor([1.0, 0.3], dtype=torch.float64),
        t,
        method=method,
        rtol=1e-10,
        atol=1e-12,
        **kwargs,
    )
    return (sol.ys[1:] * WEIGHTS).sum()


@pytest.mark.parametrize(
    "method, kwargs", [("dopri5", {}), ("rk4", {"step_size": 0.01}), ("rodas4", {})]
)
def test_time_gradients_on_the_autograd_path_match_finite_differences(method, kwargs):
    """∂L/∂t_i by autograd against central differences (step 1e-5: truncation ~1e-10, the solves'
    error at rtol 1e-10 divided by the step ~1e-6 relative); rk4's fixed grid moves with t_0, so
    its differences are of the same discrete map. Tolerance 1e-5 relative to the largest
    component."""
    t = torch.tensor([0.1, 0.7, 1.3], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(_loss(t, method, **kwargs), t)
    step = 1e-5
    fd = []
    for i in range(3):
        e = torch.zeros(3, dtype=torch.float64)
        e[i] = step
        fd.append(
            float(_loss(t.detach() + e, method, **kwargs) - _loss(t.detach() - e, method, **kwargs))
            / (2 * step)
        )
    fd = np.array(fd)
    assert np.abs(grad.numpy() - fd).max() <= 1e-5 * np.abs(fd).max()
    assert np.abs(fd).min() > 0.1  # every t_i matters here: a None or zero gradient would fail


def test_time_gradients_do_not_change_the_values():
    """The gradient terms are exact zeros in value: the outputs are bit-identical with and
    without t.requires_grad."""
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    field = lambda s, y: A_T @ y  # noqa: E731
    plain = dk.solve(field, torch.ones(2, dtype=torch.float64), t).ys
    tracked = dk.solve(field, torch.ones(2, dtype=torch.float64), t.clone().requires_grad_(True)).ys
    assert torch.equal(plain, tracked.detach()) and tracked.requires_grad


# -- (2) jac_sparsity
# ---------------------------------------------------------------------------------------

COUPLED = np.array([[-1000.0, 999.0], [999.0, -1000.0]])


@pytest.mark.parametrize("method", ["bdf", "rodas4", "radau5"])
def test_a_wrong_sparsity_pattern_raises_naming_the_missing_entries(method):
    """jac_sparsity = I for a coupled 2x2 system: bdf returned an error of 2.3e7 as a success,
    rodas4 1.8e-4 after 70,007 calls. Now the first Jacobian's check names (0, 1) and (1, 0)."""
    with pytest.raises(ValueError, match=r"jac_sparsity misses .*\(0, 1\), \(1, 0\)"):
        dk.solve(
            lambda t, y: COUPLED @ y,
            np.array([1.0, 0.0]),
            [0.0, 10.0],
            method=method,
            rtol=1e-6,
            jac_sparsity=np.eye(2),
        )


@pytest.mark.parametrize("method", ["bdf", "rodas4"])
def test_a_right_sparsity_pattern_passes_the_check(method):
    """A nonlinear tridiagonal field with its exact pattern (and the full pattern, a superset):
    no false alarm, and the answer agrees with the dense-Jacobian solve to 1e-6 (the tolerances'
    scale)."""
    n = 12

    def f(t, y):
        out = -2.0 * y**3 - 50.0 * y
        out[1:] += 25.0 * np.sin(y[:-1])
        out[:-1] += 25.0 * y[1:] ** 2
        return out

    pattern = scipy.sparse.diags([1, 1, 1], [-1, 0, 1], shape=(n, n))
    y0 = np.linspace(0.1, 1.0, n)
    dense = dk.solve(f, y0, [0.0, 1.0], method=method, rtol=1e-8, atol=1e-10)
    for p in (pattern, np.ones((n, n), bool)):
        sol = dk.solve(f, y0, [0.0, 1.0], method=method, rtol=1e-8, atol=1e-10, jac_sparsity=p)
        assert np.abs(sol.ys[-1] - dense.ys[-1]).max() <= 1e-6


@pytest.mark.parametrize(
    "bad",
    [
        np.full((2, 2), 0.5),
        np.array([[1.0, np.nan], [0.0, 1.0]]),
        2 * np.eye(2),
        scipy.sparse.csr_matrix(2 * np.eye(2)),
    ],
    ids=["half", "nan", "two", "sparse-two"],
)
def test_sparsity_values_other_than_zero_one_are_refused(bad):
    calls = []
    with pytest.raises(ValueError, match="jac_sparsity must hold only 0/1 or booleans"):
        dk.solve(
            lambda t, y: calls.append(1) or -y,
            np.ones(2),
            [0.0, 1.0],
            method="bdf",
            jac_sparsity=bad,
        )
    assert not calls  # refused before any work


def test_jac_with_jac_sparsity_is_refused():
    with pytest.raises(ValueError, match="give jac or jac_sparsity, not both"):
        dk.solve(
            lambda t, y: COUPLED @ y,
            np.ones(2),
            [0.0, 1.0],
            method="rodas4",
            jac=lambda t, y: COUPLED,
            jac_sparsity=np.ones((2, 2)),
        )


# -- (3) fixed-step stability
# -------------------------------------------------------------------------------


def test_rk4_just_outside_its_stability_interval_is_warned_about():
    """y' = -y with h = 2.79 > 2.785 (RK4's interval): |R(-2.79)| = 1.0071, the answer 2.03 where
    the exact one is e^{-279} ≈ 0 — returned as a success before, without a word."""
    with pytest.warns(
        dk.StepSizeWarning, match=r"outside the method's stability region.*\|R\(hλ\)\| ≈ 1\.0071"
    ):
        dk.solve(
            lambda t, y: -y, np.array([1.0]), np.array([0.0, 279.0]), method="rk4", step_size=2.79
        )


def test_a_step_just_inside_the_stability_interval_is_not_warned_about():
    """The planted counterpart: h = 2.7 (|R| = 0.8) decays as it should; no warning of any kind."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = dk.solve(
            lambda t, y: -y, np.array([1.0]), np.array([0.0, 270.0]), method="rk4", step_size=2.7
        )
    assert abs(float(sol.ys[-1, 0])) < 1e-3


def test_a_complex_pair_outside_the_region_is_warned_about_and_growth_is_not():
    """Euler on a damped oscillator (λ = -0.1 ± 3i), h = 0.05: |1 + hλ| = 1.0054 > 1, the
    oscillation grows where it decays (a complex pair, found by the 2x2 projection); y' = +y with
    rk4 grows as it should: no warning."""
    A = np.array([[-0.1, 3.0], [-3.0, -0.1]])
    with pytest.warns(dk.StepSizeWarning, match="-0.1[+-]3"):
        dk.solve(
            lambda t, y: A @ y, np.array([1.0, 0.0]), [0.0, 50.0], method="euler", step_size=0.05
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dk.solve(lambda t, y: y, np.array([1.0]), [0.0, 5.0], method="rk4", step_size=0.1)
