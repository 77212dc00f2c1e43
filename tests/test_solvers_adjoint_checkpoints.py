"""``adjoint_checkpoints=N``: the backward restarts ``y`` from the forward's states at N + 1 times.

References, independent of dynkit's solvers: for the linear field ``y' = A y`` the closed form
``y(t) = expm(A (t - t0)) y0`` differentiated by autograd through ``torch.linalg.matrix_exp``;
for an MLP field, backprop through a tight solve. All in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import dynkit as dk
from dynkit.models import ODEBlock
from dynkit.solvers import adjoint as adjoint_module

DIM = 4


def dissipative_matrix(seed: int = 0) -> torch.Tensor:
    # eigenvalues with real parts near -2: the forward damps its error, the backward reconstruction
    # of y from the final state amplifies it by about e^{2 T}
    g = torch.Generator().manual_seed(seed)
    return 0.5 * torch.randn(DIM, DIM, generator=g, dtype=torch.float64) - 2.0 * torch.eye(
        DIM, dtype=torch.float64
    )


def closed_form_gradients(A0, y0, t, weights):
    """``dL/dA``, ``dL/dy0``, ``dL/dt`` of ``L = Σ_i w_i · expm(A (t_i − t_0)) y0``."""
    A = A0.clone().requires_grad_(True)
    y = y0.clone().requires_grad_(True)
    tt = t.clone().requires_grad_(True)
    ys = torch.stack([torch.linalg.matrix_exp(A * (ti - tt[0])) @ y for ti in tt])
    return torch.autograd.grad((weights * ys).sum(), (A, y, tt))


def adjoint_gradients(A0, y0, t, weights, n_checkpoints, **options):
    A = A0.clone().requires_grad_(True)
    y = y0.clone().requires_grad_(True)
    tt = t.clone().requires_grad_(True)
    sol = dk.solve(
        lambda s, x: A @ x,
        y,
        tt,
        adjoint=True,
        adjoint_params=(A,),
        adjoint_checkpoints=n_checkpoints,
        **options,
    )
    return torch.autograd.grad((weights * sol.ys).sum(), (A, y, tt)), sol


def rel(a, b) -> float:
    return float((a - b).norm() / b.norm())


SPAN = torch.tensor([0.0, 5.0], dtype=torch.float64)
Y0 = torch.linspace(-1.0, 1.5, DIM, dtype=torch.float64)
WEIGHTS = torch.stack([torch.zeros(DIM), torch.linspace(1.0, -0.5, DIM)]).double()

# dopri5 at rtol 1e-5 over [0, 5]: the error of dL/dA is 4.6e-5 without checkpoints (the forward's
# final error carried back over the span) and 3.7e-6, 2.7e-6, 1.9e-6 with N = 4, 8, 16; the bound
# 1e-5 sits between, 4× from each side
CHECKPOINT_GRADIENT_BOUND = 1e-5


def parameter_gradient_error(n_checkpoints: int) -> float:
    (gA, _, _), _ = adjoint_gradients(
        dissipative_matrix(), Y0, SPAN, WEIGHTS, n_checkpoints, rtol=1e-5, atol=1e-8
    )
    exact, _, _ = closed_form_gradients(dissipative_matrix(), Y0, SPAN, WEIGHTS)
    return rel(gA, exact)


@pytest.mark.parametrize("n_checkpoints", [8, 16])
def test_checkpoints_bring_the_gradient_close_to_the_closed_form(n_checkpoints):
    assert parameter_gradient_error(n_checkpoints) <= CHECKPOINT_GRADIENT_BOUND


def test_the_accuracy_check_fails_when_the_checkpoints_are_ignored(monkeypatch):
    # planted: the forward keeps the output states only, whatever N (as without checkpoints)
    monkeypatch.setattr(adjoint_module, "_checkpoint_grid", lambda t, n: (t, np.arange(len(t))))
    assert parameter_gradient_error(8) > CHECKPOINT_GRADIENT_BOUND


@pytest.mark.parametrize("direction", [1.0, -1.0], ids=["forward", "reversed"])
def test_gradients_of_y0_params_and_times_with_several_outputs(direction):
    # outputs between checkpoints and one on a checkpoint (2.5 with N = 4 on [0, 5]): the jumps of a
    # and dL/dt belong to the outputs only. rtol 1e-9: the solve's error is far below the bound 1e-6
    t = direction * torch.tensor([0.0, 1.3, 2.5, 5.0], dtype=torch.float64)
    weights = torch.randn(4, DIM, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    A0 = dissipative_matrix(1)
    if direction < 0:
        A0 = -A0  # decaying in the direction of integration
    exact = closed_form_gradients(A0, Y0, t, weights)
    got, sol = adjoint_gradients(A0, Y0, t, weights, 4, rtol=1e-9, atol=1e-12)
    assert torch.equal(sol.ts, t)
    assert sol.ys.shape == (4, DIM)
    for g, e in zip(got, exact):
        assert rel(g, e) <= 1e-6


class TimeMLP(nn.Module):
    def __init__(self, dim: int = 3, hidden: int = 10):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(
            nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, dim)
        ).double()

    def forward(self, t, y):
        return self.net(torch.cat([y, t.expand(y.shape[0], 1)], dim=1))


@pytest.mark.parametrize(
    "method, options",
    [("dopri5", dict(rtol=1e-10, atol=1e-10)), ("rk4", dict(step_size=0.01))],
)
def test_mlp_gradients_match_backprop_through_a_tight_solve(method, options):
    # both gradients converge to the exact one; at these settings they agree to 1e-6 (measured 1e-9)
    f = TimeMLP()
    y0 = torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    t = torch.tensor([0.0, 0.7, 1.0], dtype=torch.float64)
    weights = torch.randn(3, 5, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)

    def gradients(**kwargs):
        y = y0.clone().requires_grad_(True)
        sol = dk.solve(f, y, t, method=method, **options, **kwargs)
        return torch.autograd.grad((weights * sol.ys).sum(), (y, *f.parameters()))

    reference = gradients()
    for got, ref in zip(gradients(adjoint=True, adjoint_checkpoints=6), reference):
        assert rel(got, ref) <= 1e-6


@pytest.mark.parametrize("n_checkpoints", [0, 1])
def test_zero_or_one_checkpoint_span_is_the_solve_without_checkpoints(n_checkpoints):
    # N = 1's two states are the first and last outputs: no state is added, the same code path runs
    f = TimeMLP()
    y0 = torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    t = [0.0, 0.4, 1.0]

    def run(**kwargs):
        y = y0.clone().requires_grad_(True)
        sol = dk.solve(f, y, t, rtol=1e-6, atol=1e-8, adjoint=True, **kwargs)
        grads = torch.autograd.grad(sol.ys.sum(), (y, *f.parameters()))
        return grads, sol

    plain, plain_sol = run()
    got, sol = run(adjoint_checkpoints=n_checkpoints)
    assert all(torch.equal(a, b) for a, b in zip(got, plain))
    assert sol.stats == plain_sol.stats and sol.backward_stats == plain_sol.backward_stats


def test_odeint_adjoint_and_odeblock_forward_the_checkpoints(monkeypatch):
    seen = []
    grid = adjoint_module._checkpoint_grid
    monkeypatch.setattr(
        adjoint_module, "_checkpoint_grid", lambda t, n: seen.append(n) or grid(t, n)
    )
    f = TimeMLP()
    y0 = torch.randn(5, 3, dtype=torch.float64)
    t = torch.tensor([0.0, 1.0], dtype=torch.float64)
    ys = dk.odeint_adjoint(f, y0, t, adjoint_checkpoints=5)
    ys[-1].sum().backward()
    block = ODEBlock(f, adjoint=True, adjoint_checkpoints=3)
    block(y0).sum().backward()
    assert seen == [5, 3]


BAD = [(-1, ValueError), (True, TypeError), (2.5, TypeError), ("4", TypeError), (None, TypeError)]


@pytest.mark.parametrize("value, error", BAD, ids=[repr(v) for v, _ in BAD])
def test_bad_checkpoint_counts_are_refused_naming_the_argument(value, error):
    f = TimeMLP()
    y0 = torch.randn(2, 3, dtype=torch.float64)
    calls = [
        lambda: dk.solve(f, y0, [0.0, 1.0], adjoint=True, adjoint_checkpoints=value),
        lambda: dk.odeint_adjoint(f, y0, torch.tensor([0.0, 1.0]), adjoint_checkpoints=value),
        lambda: ODEBlock(f, adjoint=True, adjoint_checkpoints=value),
    ]
    for call in calls:
        with pytest.raises(error, match="adjoint_checkpoints must be a non-negative integer"):
            call()


def test_checkpoints_without_the_adjoint_are_refused():
    f = TimeMLP()
    y0 = torch.randn(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="adjoint_checkpoints is only used with adjoint=True"):
        dk.solve(f, y0, [0.0, 1.0], adjoint_checkpoints=4)
    with pytest.raises(ValueError, match="adjoint_checkpoints needs adjoint=True"):
        ODEBlock(f, adjoint_checkpoints=4)


def test_a_failed_forward_returns_the_outputs_reached_only():
    # throw=False and too few steps: the partial solution holds output times, never checkpoint times
    A = dissipative_matrix()
    t = torch.tensor([0.0, 0.01, 5.0], dtype=torch.float64)
    sol = dk.solve(
        lambda s, x: A @ x,
        Y0.clone().requires_grad_(True),
        t,
        adjoint=True,
        adjoint_params=(),
        adjoint_checkpoints=8,
        max_steps=10,
        throw=False,
    )
    assert sol.result == "max_steps_exceeded"
    assert torch.equal(sol.ts, t[: len(sol.ts)]) and len(sol.ts) == len(sol.ys) == 2


def test_float32_outputs_next_to_a_checkpoint_time():
    # 0.2500001 is a float32 output 4 ulps from the checkpoint 0.25: both kept, in order, and the
    # gradient of y0 matches the closed form to float32's solve error (rtol 1e-6: bound 1e-4)
    A0 = dissipative_matrix().float()
    t = torch.tensor([0.0, 0.2500001, 1.0])
    y0 = Y0.float().requires_grad_(True)
    sol = dk.solve(
        lambda s, x: A0 @ x, y0, t, adjoint=True, adjoint_params=(), adjoint_checkpoints=4
    )
    assert torch.equal(sol.ts, t)
    (grad,) = torch.autograd.grad(sol.ys.sum(), y0)
    exact = sum(torch.linalg.matrix_exp(A0.double() * float(ti)).sum(0) for ti in t)
    assert rel(grad.double(), exact) <= 1e-4
