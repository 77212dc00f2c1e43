"""The contract of dk.solve: array libraries, NFE accounting, autograd, failures."""

import warnings

import numpy as np
import pytest
import torch

import dynkit as dk
from dynkit.solvers import METHODS


def kwargs_for(method, h=0.05):
    return dict(rtol=1e-6, atol=1e-8) if METHODS[method].adaptive else dict(step_size=h)


class CountingField:
    """An independent counter around f (the solver's own count must equal it)."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, t, y):
        self.calls += 1
        return self.f(t, y)


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("times", [[0.0, 1.0], [0.0, 0.33, 0.8, 2.0]])
def test_nfe_equals_an_independent_counter(method, times):
    f = CountingField(lambda t, y: -y + np.sin(t))
    sol = dk.solve(f, np.array([1.0, 2.0]), times, method=method, **kwargs_for(method))
    assert sol.stats.nfe == f.calls
    assert sol.stats.n_steps == sol.stats.n_accepted + sol.stats.n_rejected


def test_nfe_counts_rejected_steps_and_the_initial_probe():
    f = CountingField(lambda t, y: np.array([y[1], 1000 * (1 - y[0] ** 2) * y[1] - y[0]]))
    sol = dk.solve(f, np.array([2.0, 0.0]), [0.0, 0.5], method="dopri5", rtol=1e-6)
    assert sol.stats.n_rejected > 0
    # FSAL: 6 new evaluations per attempted step, plus f(t0, y0) and the initial-step probe
    assert sol.stats.nfe == f.calls == 6 * sol.stats.n_steps + 2


@pytest.mark.parametrize("method,per_step,starter", [("ark3", 2, 3), ("ark4", 3, 5)])
def test_ark_new_evaluations_per_step(method, per_step, starter):
    # ark3: SSPRK3 starter (3 calls) whose stages are the ARK chain; ark4: RK4 starter (4 calls) +
    # the one chain stage at t0 it does not share (a_3 = 7/8). Then 2 / 3 calls per step.
    f = CountingField(lambda t, y: -y)
    n = 40
    sol = dk.solve(f, np.array([1.0]), [0.0, 1.0], method=method, step_size=1.0 / n)
    assert sol.stats.n_steps == n
    assert f.calls == sol.stats.nfe == starter + per_step * (n - 1)
    assert METHODS[method].new_evaluations_per_step == per_step


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_in_numpy_out(dtype):
    y0 = np.ones((3, 2), dtype=dtype)
    sol = dk.solve(lambda t, y: -y, y0, np.linspace(0, 1, 4), method="dopri5", rtol=1e-5)
    assert isinstance(sol.ys, np.ndarray) and isinstance(sol.ts, np.ndarray)
    assert sol.ys.dtype == dtype and sol.ts.dtype == dtype and sol.ys.shape == (4, 3, 2)
    assert np.array_equal(sol.ys[0], y0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("method", ["dopri5", "rk4", "ark4"])
def test_torch_in_torch_out_with_batch_shape(dtype, method):
    y0 = torch.randn(5, 3, dtype=dtype)
    seen = []

    def f(t, y):
        seen.append(t)
        return -y * torch.cos(t)

    sol = dk.solve(f, y0, torch.linspace(0, 1, 3), method=method, **kwargs_for(method, 0.1))
    assert isinstance(sol.ys, torch.Tensor) and sol.ys.dtype == dtype and sol.ys.shape == (3, 5, 3)
    assert sol.ts.dtype == dtype and sol.ys.device == y0.device
    assert all(isinstance(t, torch.Tensor) and t.dtype == dtype and t.ndim == 0 for t in seen)
    expected = y0 * torch.exp(-torch.sin(torch.tensor(1.0, dtype=dtype)))
    # float32 round-off over ~20 steps: 1e-4 relative; float64: limited by the method (rtol 1e-6,
    # h=0.1)
    assert torch.allclose(sol.ys[-1], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none on CI)")
def test_torch_cuda_stays_on_device():
    y0 = torch.randn(4, device="cuda")
    sol = dk.solve(lambda t, y: -y, y0, [0.0, 1.0])
    assert sol.ys.device == y0.device and sol.ts.device == y0.device


@pytest.mark.parametrize("method", ["dopri5", "rkf45", "rk4", "ark3"])
def test_autograd_gradient_matches_finite_difference(method):
    # d y(1) / d(theta) for y' = -theta * y^3 + sin(t): autograd through dk.solve vs a central
    # finite difference of the same solve. Fixed steps: the discrete map is smooth in theta, so the
    # two agree to FD accuracy (1e-6 rel). Adaptive: tight tolerance makes step choices locally
    # constant (1e-5 rel).
    theta = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    y0 = torch.tensor([1.0, 0.5], dtype=torch.float64)
    kw = dict(rtol=1e-10, atol=1e-12) if METHODS[method].adaptive else dict(step_size=0.01)

    def final(th):
        return (
            dk.solve(lambda t, y: -th * y**3 + torch.sin(t), y0, [0.0, 1.0], method=method, **kw)
            .ys[-1]
            .sum()
        )

    final(theta).backward()
    eps = 1e-6
    with torch.no_grad():
        fd = (final(theta + eps) - final(theta - eps)) / (2 * eps)
    assert abs(theta.grad.item() - fd.item()) <= 1e-5 * abs(fd.item()), (
        theta.grad.item(),
        fd.item(),
    )


# --------------------------------------------------------------------------------------------------
# failures: each provoked, its type, message and partial solution checked


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="method must be one of .*dopri5.*rk4"):
        dk.solve(lambda t, y: y, np.ones(1), [0, 1], method="rk45")


@pytest.mark.parametrize(
    "t,match",
    [
        ([0.0], "at least 2"),
        ([0.0, 1.0, 0.5], "strictly increasing or"),
        ([0.0, 0.0], "strictly"),
        ([[0.0, 1.0]], "1-D"),
        ([0.0, np.nan], "finite"),
    ],
)
def test_bad_times(t, match):
    with pytest.raises(ValueError, match=match):
        dk.solve(lambda t, y: y, np.ones(1), t)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(rtol=0.0), "rtol must be a positive"),
        (dict(rtol=-1e-3), "rtol"),
        (dict(atol=0.0), "atol must be a positive"),
        (dict(max_steps=0), "max_steps must be a positive"),
    ],
)
def test_bad_tolerances(kw, match):
    with pytest.raises(ValueError, match=match):
        dk.solve(lambda t, y: y, np.ones(1), [0, 1], **kw)


def test_step_size_required_and_signed():
    with pytest.raises(ValueError, match="step_size is required for the fixed-step method 'rk4'"):
        dk.solve(lambda t, y: y, np.ones(1), [0, 1], method="rk4")
    with pytest.raises(ValueError, match="step_size must be positive"):
        dk.solve(lambda t, y: y, np.ones(1), [0, 1], method="rk4", step_size=-0.1)
    with pytest.raises(ValueError, match="step_size must be negative"):
        dk.solve(lambda t, y: y, np.ones(1), [1, 0], method="dopri5", step_size=0.1)


@pytest.mark.parametrize(
    "y0,match",
    [
        (np.array([1, 2]), "float32 or float64 array, got dtype int64"),
        ([1.0, 2.0], "numpy array or torch tensor"),
        (torch.tensor([1, 2]), "float32 or float64 tensor"),
        (np.array([1.0, np.inf]), "finite"),
    ],
)
def test_bad_initial_state(y0, match):
    with pytest.raises(ValueError, match=match):
        dk.solve(lambda t, y: y, y0, [0, 1])


@pytest.mark.parametrize("method", ["dopri5", "rk4", "ark4"])
def test_wrong_shape_from_f_is_a_value_error_with_partial_solution(method):
    def f(t, y):
        return np.zeros(3) if t > 0.5 else -y

    with pytest.raises(
        ValueError, match=r"f returned shape \(3,\) at t=.*expected the state's shape \(2,\)"
    ) as info:
        dk.solve(f, np.ones(2), np.linspace(0, 1, 11), method=method, **kwargs_for(method))
    err = info.value
    assert isinstance(err, dk.SolverError) and err.solution is not None
    assert len(err.solution.ts) == len(err.solution.ys) >= 2 and err.stats.nfe > 0


def test_max_steps_exceeded_keeps_partial_solution():
    with pytest.raises(dk.MaxStepsExceeded, match="max_steps=5 reached at t=") as info:
        dk.solve(
            lambda t, y: np.cos(10 * t) * y,
            np.ones(1),
            np.linspace(0, 10, 21),
            rtol=1e-10,
            max_steps=5,
        )
    sol = info.value.solution
    assert sol.stats.n_steps == 5 and sol.result == "max_steps_exceeded"
    assert 1 <= len(sol.ys) < 21 and np.allclose(sol.ts, np.linspace(0, 10, 21)[: len(sol.ys)])
    with pytest.raises(dk.MaxStepsExceeded, match="100 steps of 0.01 are needed"):
        dk.solve(lambda t, y: y, np.ones(1), [0, 1], method="rk4", step_size=0.01, max_steps=10)


def test_step_size_underflow_names_time_and_step():
    # y' = y^2, y(0) = 1 blows up at t = 1: the controller must give up just before, and say where.
    with pytest.raises(
        dk.StepSizeUnderflow, match=r"step size .* underflowed at t=(0\.99|1\.00)"
    ) as info:
        dk.solve(lambda t, y: y**2, np.ones(1), [0.0, 2.0], rtol=1e-8)
    assert info.value.t == pytest.approx(1.0, abs=1e-2)
    assert info.value.solution.stats.nfe > 0


@pytest.mark.parametrize("method", ["dopri5", "bosh3", "rk4", "ark3"])
def test_non_finite_state_raises_with_time(method):
    def f(t, y):
        return np.full_like(y, np.nan) if t > 0.5 else -y

    with pytest.raises(dk.NonFiniteState, match=r"NaN/Inf .*t=0\.(5|4999)") as info:
        dk.solve(f, np.ones(2), np.linspace(0, 1, 5), method=method, **kwargs_for(method))
    t_fail = info.value.t
    assert 0.5 - 1e-9 <= t_fail <= 0.6
    # outputs reached: t = 0, 0.25, and 0.5 unless the failure came just short of it
    assert len(info.value.solution.ys) == (3 if t_fail >= 0.5 else 2)


def test_throw_false_returns_partial_solution_with_result_code():
    sol = dk.solve(lambda t, y: y**2, np.ones(1), [0.0, 0.5, 2.0], rtol=1e-8, throw=False)
    assert sol.result == "step_size_underflow" and not sol.success and len(sol.ys) == 2


def test_solution_displays_a_summary_not_its_arrays():
    # 10,001 outputs: the repr and the notebook table say what was solved and the work done, in one
    # short line
    sol = dk.solve(lambda t, y: -y, np.ones(2), np.linspace(0, 1, 10_001), "dopri5")
    text = repr(sol)
    assert len(text) < 300 and "dopri5" in text and "10001 times in [0, 1]" in text
    assert f"nfe={sol.stats.nfe}" in text and "(10001, 2) float64" in text
    html = sol._repr_html_()
    assert html.startswith("<table>") and f"nfe={sol.stats.nfe}" in html
    failed = dk.solve(lambda t, y: y * y, np.ones(1), np.linspace(0, 2, 5), "dopri5", throw=False)
    assert "step_size_underflow" in repr(failed) and failed.message[:20] in repr(failed)


# --------------------------------------------------------------------------------------------------
# issue 25, section 2: no silent reinterpretation, no change to the caller's arrays, messages that
# say what happened


def mutating_numpy(t, y):
    y += 1.0  # the bug of a user's f that writes into its argument
    return -y


def mutating_torch(t, y):
    y.add_(1.0)
    return -y


@pytest.mark.parametrize(
    "make,f",
    [
        (lambda: np.array([1.0, 2.0]), mutating_numpy),
        (lambda: torch.tensor([1.0, 2.0], dtype=torch.float64), mutating_torch),
    ],
)
@pytest.mark.parametrize("method", ["dopri5", "rk4", "adjoint"])
def test_an_f_that_mutates_its_argument_leaves_the_callers_y0_alone(make, f, method):
    y0 = make()
    if method == "adjoint":
        if isinstance(y0, np.ndarray):
            return  # the adjoint is for torch states
        dk.solve(f, y0, [0.0, 0.1], adjoint=True, adjoint_params=())
    else:
        dk.solve(f, y0, [0.0, 0.1], method=method, **kwargs_for(method))
    assert y0.tolist() == [1.0, 2.0]  # scipy copies y0 too


def test_the_private_copy_of_a_torch_y0_keeps_the_gradient():
    # dy/dy0 of y' = -y over [0, 1] is e^{-1} (closed form): the copy stays in y0's autograd graph
    y0 = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    dk.solve(lambda t, y: -y, y0, [0.0, 1.0], rtol=1e-10, atol=1e-12).ys[-1, 0].backward()
    assert abs(float(y0.grad[0]) - np.exp(-1.0)) < 1e-8


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)])
@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_an_empty_state_is_refused_before_f_is_called(shape, library):
    # chosen over scipy's trivial success (nfe 1): an empty state is almost always an empty batch or
    # slice upstream, and a "success" would hide it
    f = CountingField(lambda t, y: y)
    y0 = np.zeros(shape) if library == "numpy" else torch.zeros(shape, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"y0 must have at least one component, got shape \(" + str(shape[0])
    ):
        dk.solve(f, y0, [0.0, 1.0])
    assert f.calls == 0


def test_a_masked_y0_is_refused_instead_of_losing_its_mask():
    with pytest.raises(TypeError, match="y0 must be a plain numpy array, got a masked array"):
        dk.solve(lambda t, y: -y, np.ma.array([1.0, 2.0], mask=[False, True]), [0.0, 1.0])


@pytest.mark.parametrize("method", ["rk4", "euler", "ark4", "dopri5", "dop853"])
def test_jac_with_an_explicit_method_is_refused(method):
    with pytest.raises(
        ValueError, match=rf"jac is only used by the stiff.*{method!r} never evaluates"
    ):
        dk.solve(
            lambda t, y: -y,
            np.ones(1),
            [0.0, 1.0],
            method=method,
            jac=lambda t, y: -np.eye(1),
            **kwargs_for(method),
        )


@pytest.mark.parametrize("method", ["rk4", "ark3"])
def test_per_sample_with_a_fixed_step_is_refused(method):
    with pytest.raises(ValueError, match=r"per_sample=True .*fixed-step method .*got True"):
        dk.solve(
            lambda t, y: -y,
            np.ones((2, 1)),
            [0.0, 1.0],
            method=method,
            step_size=0.1,
            per_sample=True,
        )


def test_step_size_with_an_adaptive_method_is_warned_and_first_step_says_it():
    f = lambda t, y: -y  # noqa: E731
    with pytest.warns(
        dk.StepSizeWarning,
        match=r"step_size=0\.01 with the adaptive method 'dopri5' is only its "
        r"first step.*first_step=",
    ):
        warned = dk.solve(f, np.ones(1), [0.0, 1.0], step_size=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # first_step= is the same solve, without a warning
        quiet = dk.solve(f, np.ones(1), [0.0, 1.0], first_step=0.01)
    assert quiet.ys.tolist() == warned.ys.tolist() and quiet.stats == warned.stats
    with pytest.raises(
        ValueError, match="first_step is for adaptive methods; the fixed-step method 'rk4'"
    ):
        dk.solve(f, np.ones(1), [0.0, 1.0], method="rk4", step_size=0.1, first_step=0.1)
    with pytest.raises(ValueError, match="give first_step or step_size, not both"):
        dk.solve(f, np.ones(1), [0.0, 1.0], step_size=0.1, first_step=0.1)
    with pytest.raises(ValueError, match="first_step must be positive"):
        dk.solve(f, np.ones(1), [0.0, 1.0], first_step=-0.1)


def test_rtol_out_of_range_is_warned_and_a_tiny_one_raised_as_in_scipy():
    f = lambda t, y: -y  # noqa: E731
    with pytest.warns(
        dk.ToleranceWarning, match=r"rtol=1e-30 is below the precision .* raised to rtol=2\.22e-14"
    ):
        tiny = dk.solve(f, np.ones(1), [0.0, 1.0], rtol=1e-30)
    floor = dk.solve(
        f, np.ones(1), [0.0, 1.0], rtol=100 * np.finfo(np.float64).eps
    )  # scipy's floor
    assert tiny.ys.tolist() == floor.ys.tolist()
    with pytest.warns(dk.ToleranceWarning, match=r"rtol=1e\+10 > 1 .* no correct digit"):
        dk.solve(f, np.ones(1), [0.0, 1.0], rtol=1e10)
    with pytest.warns(
        dk.ToleranceWarning, match=r"below the precision of the state \(torch.float32\)"
    ):
        dk.solve(f, torch.ones(1), [0.0, 1.0], rtol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sane values are not warned about (the warning can fail)
        for rtol, y0 in (
            (1e-6, np.ones(1)),
            (1.0, np.ones(1)),
            (1e-13, np.ones(1)),
            (1e-6, torch.ones(1)),
        ):
            dk.solve(f, y0, [0.0, 1.0], rtol=rtol)


def jacobian_that_divides_by_zero(t, y):
    return np.array([[-1.0 / 0.0]])


def torch_jacobian_that_raises(t, y):
    raise KeyError("no Jacobian here")


def test_an_exception_in_jac_is_wrapped_for_torch_states_too():
    with pytest.raises(dk.VectorFieldError, match=r"rodas4: jac raised KeyError at t=0") as info:
        dk.solve(
            lambda t, y: -y,
            torch.ones(2, dtype=torch.float64),
            [0.0, 1.0],
            method="rodas4",
            jac=torch_jacobian_that_raises,
        )
    assert isinstance(info.value.__cause__, KeyError) and info.value.t == 0.0


@pytest.mark.parametrize("method", ["rodas4", "rosenbrock23"])
def test_an_exception_in_jac_is_wrapped_like_one_in_f(method):
    with pytest.raises(dk.VectorFieldError, match=r"jac raised ZeroDivisionError at t=0") as info:
        dk.solve(
            lambda t, y: -y,
            np.ones(1),
            [0.0, 1.0],
            method=method,
            jac=jacobian_that_divides_by_zero,
        )
    err = info.value
    assert isinstance(err.__cause__, ZeroDivisionError) and err.t == 0.0
    assert err.solution is not None and err.solution.result == "vector_field_error"
    sol = dk.solve(
        lambda t, y: -y,
        np.ones(1),
        [0.0, 1.0],
        method=method,
        jac=jacobian_that_divides_by_zero,
        throw=False,
    )
    assert sol.result == "vector_field_error" and "jac raised" in sol.message


def test_chattering_on_a_discontinuity_is_named():
    # y' = -sign(y) reaches 0 at t = 1 and then slides: every step crosses the discontinuity
    with pytest.raises(dk.MaxStepsExceeded, match=r"discontinuity/chattering suspected.*sign\(y\)"):
        dk.solve(lambda t, y: -np.sign(y), np.ones(1), [0.0, 2.0], max_steps=500)
    # planted: a smooth problem that runs out of steps, and a stiff one (whose explicit steps also
    # reverse the motion, smoothly), are not called discontinuous
    with pytest.raises(dk.MaxStepsExceeded) as info:
        dk.solve(
            lambda t, y: np.array([y[1], -y[0]]), np.array([1.0, 0.0]), [0.0, 1e4], max_steps=50
        )
    assert "chattering" not in str(info.value)
    with pytest.raises(dk.MaxStepsExceeded, match="looks stiff") as info:
        dk.solve(lambda t, y: -1e4 * (y - np.cos(t)), np.zeros(1), [0.0, 10.0], max_steps=300)
    assert "chattering" not in str(info.value)


def test_times_beyond_the_resolution_of_float64_are_named():
    with pytest.raises(
        dk.StepSizeUnderflow,
        match=r"time resolution lost at this magnitude.*2 apart.*Shift the times",
    ):
        dk.solve(lambda t, y: -y, np.ones(1), [1e16, 1e16 + 4])
    sol = dk.solve(lambda t, y: -y, np.ones(1), [0.0, 4.0])  # the same problem, shifted: fine
    assert abs(sol.ys[-1, 0] - np.exp(-4.0)) < 1e-6
    # planted: an underflow at a singularity (y' = y^2 blows up at t = 1) is not blamed on the time
    # variable
    with pytest.raises(dk.StepSizeUnderflow, match="a singularity") as info:
        dk.solve(lambda t, y: y * y, np.ones(1), [0.0, 2.0])
    assert "time resolution" not in str(info.value)


def test_first_step_with_the_adjoint_starts_the_forward_and_the_reversed_backward_solves():
    y0 = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # no reinterpretation warning on the forward or the backward solves
        sol = dk.solve(
            lambda t, y: -y,
            y0,
            [0.0, 1.0],
            rtol=1e-10,
            atol=1e-12,
            first_step=0.01,
            adjoint=True,
            adjoint_params=(),
        )
        sol.ys[-1, 0].backward()
    assert abs(float(y0.grad[0]) - np.exp(-1.0)) < 1e-8  # closed form d y(1) / d y0 = e^{-1}


def test_a_raised_rtol_is_said_once_per_process_for_each_rtol_and_dtype():
    """torchdiffeq's defaults (rtol 1e-7) with a float32 state: one warning for a training loop,
    not one per call (forward, adjoint and every backward interval would each say it)."""
    f = lambda t, y: -y  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            dk.odeint(f, torch.ones(2), torch.linspace(0.0, 1.0, 3))
        dk.solve(
            f, torch.ones(2, dtype=torch.float64), [0.0, 1.0], rtol=1e-20
        )  # another dtype and rtol: said
    raised = [w for w in caught if issubclass(w.category, dk.ToleranceWarning)]
    assert len(raised) == 2, [str(w.message) for w in raised]
    assert "torch.float32" in str(raised[0].message) and "once per process" in str(
        raised[0].message
    )
