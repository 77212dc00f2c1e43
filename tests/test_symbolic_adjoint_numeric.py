"""The derived HBNODE/GHBNODE adjoints, solved with dk.solve, against autograd through the
forward solve."""

import numpy as np
import pytest
import sympy as sp
import torch

import dynkit as dk
from dynkit.symbolic import adjoint, ghbnode_system, hbnode_system

N, HIDDEN, T = 2, 3, 1.0


def _mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(N, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, N)
    ).double()


def _sympy_mlp():
    W1, b1 = (
        sp.Matrix(HIDDEN, N, sp.symbols(f"w1_0:{HIDDEN * N}")),
        sp.Matrix(sp.symbols(f"b1_0:{HIDDEN}")),
    )
    W2, b2 = (
        sp.Matrix(N, HIDDEN, sp.symbols(f"w2_0:{HIDDEN * N}")),
        sp.Matrix(sp.symbols(f"b2_0:{N}")),
    )
    params = [*W1, *b1, *W2, *b2]  # row-major, like torch's weight.flatten()
    return (lambda h: W2 * (W1 * h + b1).applyfunc(sp.tanh) + b2), params


def _gradients(model, corrupt=False):
    torch.set_num_threads(1)
    mlp = _mlp(seed=3)
    f_sym, weights = _sympy_mlp()
    gamma, xi = sp.symbols("gamma xi", positive=True)
    if model == "hbnode":
        sys = hbnode_system(N, f=f_sym, gamma=gamma, params=[*weights, gamma])
    else:
        sys = ghbnode_system(
            N, f=f_sym, sigma=sp.tanh, gamma=gamma, xi=xi, params=[*weights, gamma, xi]
        )
    h = sys.state["h"]
    target = [0.3, -0.2]
    loss = sum((h[i] - target[i]) ** 2 for i in range(N)) / 2 + sys.state["m"][0] / 10
    adj = adjoint(sys, loss)
    if corrupt:  # flip the sign of the damping term in da_m/dt: a wrong adjoint must be caught
        adj.rhs["m"] = adj.rhs["m"].subs(gamma, -gamma)

    rng = np.random.default_rng(0)
    z0 = rng.normal(size=2 * N)
    g_val, xi_val = 0.6, 0.4
    w_vals = np.concatenate([p.detach().numpy().ravel() for p in mlp.parameters()])
    p_vals = [*w_vals, g_val] + ([xi_val] if model == "ghbnode" else [])
    dz0, dtheta = adj.gradient(z0, 0.0, T, p_vals, method="dopri5", rtol=1e-11, atol=1e-13)

    # autograd through the forward solve (discretise-then-optimise), same model in torch
    g_t = torch.tensor(g_val, dtype=torch.float64, requires_grad=True)
    xi_t = torch.tensor(xi_val, dtype=torch.float64, requires_grad=True)
    y0 = torch.tensor(z0, requires_grad=True)

    def rhs(t, y):
        hh, mm = y[:N], y[N:]
        if model == "hbnode":
            return torch.cat([mm, -g_t * mm + mlp(hh)])
        return torch.cat([torch.tanh(mm), -g_t * mm + mlp(hh) - xi_t * hh])

    sol = dk.solve(
        rhs,
        y0,
        torch.tensor([0.0, T], dtype=torch.float64),
        method="dopri5",
        rtol=1e-11,
        atol=1e-13,
    )
    yT = sol.ys[-1]
    L = ((yT[:N] - torch.tensor(target, dtype=torch.float64)) ** 2).sum() / 2 + yT[N] / 10
    params = [*mlp.parameters(), g_t] + ([xi_t] if model == "ghbnode" else [])
    grads = torch.autograd.grad(L, [y0, *params])
    ref_z0 = grads[0].numpy()
    ref_theta = np.concatenate([g.detach().numpy().ravel() for g in grads[1:]])

    return dz0, dtheta, ref_z0, ref_theta


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("model", ["hbnode", "ghbnode"])
def test_adjoint_gradient_matches_autograd(model):
    dz0, dtheta, ref_z0, ref_theta = _gradients(model)
    # both solves at rtol 1e-11: the continuous adjoint and discretise-then-optimise gradients
    # differ by O(tolerance), far below the 1e-6 the issue asks for
    assert _rel(dz0, ref_z0) < 1e-6
    assert _rel(dtheta, ref_theta) < 1e-6


def test_corrupted_adjoint_is_caught():
    dz0, dtheta, ref_z0, ref_theta = _gradients("hbnode", corrupt=True)
    assert _rel(dz0, ref_z0) > 1e-3 or _rel(dtheta, ref_theta) > 1e-3
