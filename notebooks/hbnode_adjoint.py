# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Deriving and checking the HBNODE adjoint
#
# This notebook derives the adjoint of the heavy-ball neural ODE (HBNODE) and checks it against
# autograd. The adjoint states along the backward solve (section 3), from their terminal values
# $a_h(T) = h(T)$, $a_m(T) = 1$ to the gradients at $t = 0$ (dots: autograd's gradients).

# %% tags=["hide-input"]
import os

import numpy as np
import sympy as sp
import torch

import dynkit as dk

torch.set_num_threads(1)
SMALL = os.environ.get("DYNKIT_NOTEBOOK_SMALL") == "1"

# %% tags=["hide-input"]
d, T, gamma_v = (3, 1.0, 0.4) if SMALL else (8, 2.0, 0.4)
g = torch.Generator().manual_seed(0)
W = torch.randn(d, d, generator=g, dtype=torch.float64) / d**0.5
b = torch.randn(d, generator=g, dtype=torch.float64) * 0.1
h0 = torch.randn(d, generator=g, dtype=torch.float64)
m0 = torch.zeros(d, dtype=torch.float64)


def f(h):
    return torch.tanh(h @ W.T + b)


def hbnode(t, z):
    h, m = z[:d], z[d:]
    return torch.cat([m, -gamma_v * m + f(h)])


z0 = torch.cat([h0, m0]).requires_grad_(True)
tol = dict(rtol=1e-10, atol=1e-12)
zT = dk.solve(hbnode, z0, torch.tensor([0.0, T], dtype=torch.float64), method="dopri5", **tol).ys[
    -1
]
loss = 0.5 * (zT[:d] ** 2).sum() + zT[d:].sum()
(grad_autograd,) = torch.autograd.grad(loss, z0)


def backward_system(t, y):
    # State (h, m) integrated backwards with the adjoint (a_h, a_m) of Eq. (41).
    h, m, ah, am = y[:d], y[d : 2 * d], y[2 * d : 3 * d], y[3 * d :]
    jac = (1 - torch.tanh(h @ W.T + b) ** 2)[:, None] * W  # ∂f/∂h
    return torch.cat([m, -gamma_v * m + f(h), -(am @ jac), -ah + gamma_v * am])


zT = zT.detach()
y_T = torch.cat([zT, zT[:d], torch.ones(d, dtype=torch.float64)])
sol = dk.solve(
    backward_system, y_T, torch.linspace(T, 0.0, 41, dtype=torch.float64), method="dopri5", **tol
)
grad_adjoint = sol.ys[-1][2 * d :]
rel = float((grad_adjoint - grad_autograd).norm() / grad_autograd.norm())

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

ts, ys = sol.ts.numpy(), sol.ys.numpy()
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharex=True)
for ax, (name, block) in zip(axes, (("a_h", slice(2 * d, 3 * d)), ("a_m", slice(3 * d, 4 * d)))):
    ax.plot(ts, ys[:, block], marker=".", markevery=5)
    ax.plot(
        np.zeros(d), grad_autograd.numpy()[:d] if name == "a_h" else grad_autograd.numpy()[d:], "ko"
    )
    ax.set(title=f"${name}(t)$", xlabel="t")
    ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()

# %% [markdown]
# The heavy-ball neural ODE (HBNODE, Eq. (24)-(25) of the review) is
#
# $$h' = m, \qquad m' = -\gamma m + f(h, t, \theta).$$
#
# Prop. 2 of the review (Eq. (41)) says its adjoint states $a_h = \partial L/\partial h(t)$,
# $a_m = \partial L/\partial m(t)$ satisfy
#
# $$a_h' = -a_m \frac{\partial f}{\partial h}, \qquad a_m' = -a_h + \gamma a_m,$$
#
# and Prop. 1 (Eq. (26)) that the adjoint is itself a heavy-ball ODE with the same damping:
# $a'' - \gamma a' = a\, \partial f/\partial h$. This notebook (1) shows dynkit's symbolic
# derivation, (2) re-derives the second-order form from (41) in a few lines of sympy, and (3) checks
# (41) numerically: integrating the adjoint system backwards must give the same gradients as
# autograd through the forward solve.

# %% [markdown]
# ## 1. The derivation in `dk.symbolic`

# %%
names = [k for k in dk.symbolic.DERIVATIONS if "hbnode" in k.lower() and "adjoint" in k.lower()]
assert names, f"no HBNODE adjoint derivation among {list(dk.symbolic.DERIVATIONS)}"
for name in names:
    derivation = dk.symbolic.DERIVATIONS[name]()
    print(
        f"{name}: derived result matches the paper ({derivation.equation}): "
        f"{derivation.check_passed}"
    )
    assert derivation.check_passed

# %% [markdown]
# A `Derivation` displays itself in a notebook (steps, result and the paper's form, typeset):

# %%
dk.symbolic.DERIVATIONS["hbnode_adjoint_first_order"]()

# %% [markdown]
# ## 2. From the first-order adjoint (41) to the second-order form (26)
#
# Scalar symbols stand for the row vectors and the Jacobian $J = \partial f/\partial h$ (the
# manipulation only uses linearity, so it carries over to the matrix case with $a J$ on the right).

# %%
t, gamma = sp.symbols("t gamma")
a_h, a_m, J = sp.Function("a_h")(t), sp.Function("a_m")(t), sp.Function("J")(t)
eq41 = {a_h.diff(t): -a_m * J, a_m.diff(t): -a_h + gamma * a_m}
# Differentiate a_m' = -a_h + γ a_m once more and substitute (41) for a_h' and a_m'.
second = sp.diff(eq41[a_m.diff(t)], t).subs(eq41)
residual = sp.simplify(second - gamma * eq41[a_m.diff(t)] - a_m * J)
second, residual

# %% [markdown]
# $a_m'' - \gamma a_m' - a_m J = 0$: $a_m$ satisfies (26), a heavy-ball ODE with the same $\gamma$
# (time-reversed, $\tau = T - t$, it is damped: Remark 5).

# %%
assert residual == 0

# %% [markdown]
# ## 3. Numerical check of (41) against autograd
#
# $f(h) = \tanh(W h + b)$, $\gamma = 0.4$, $L = \tfrac12 \|h(T)\|^2 + \sum m(T)$. Gradients of $L$
# with respect to $h(0)$ and $m(0)$: by autograd through `dk.solve` (discretise-then-optimise), and
# by integrating the state backwards together with the adjoint system (41) from
# $a_h(T) = h(T)$, $a_m(T) = 1$. Both are computed in the collapsed cell above the first figure,
# which shows the backward solve.

# %%
print(f"relative difference adjoint (41) vs autograd: {rel:.2e}  (backward NFE {sol.stats.nfe})")

# %% [markdown]
# Both gradients come from solves at rtol = 1e-10; they agree to about that accuracy (a bound of
# 1e-7 leaves room for the error amplification of the backward reintegration of the state).

# %%
assert rel < 1e-7, rel
