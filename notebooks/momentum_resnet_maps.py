# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Ψ_ε and the linear maps a Momentum ResNet can represent
#
# The continuous Momentum ResNet with a linear residual function (Eq. (7) of the Momentum ResNet
# paper) is $\varepsilon \ddot x + \dot x = \theta x$, $x(0) = x_0$, $\dot x(0) = 0$. Prop. 4: at
# time 1 it maps $x_0 \mapsto \Psi_\varepsilon(\theta) x_0$ with
#
# $$\Psi_\varepsilon(\theta) = e^{-\frac{1}{2\varepsilon}} \sum_{n\ge 0}\Big(\frac{1}{(2n)!} +
# \frac{1}{2\varepsilon(2n+1)!}\Big)\Big(\frac{\theta}{\varepsilon} +
# \frac{I}{4\varepsilon^2}\Big)^n .$$
#
# Over the reals $\Psi_\varepsilon(\mathbb R) = [\lambda_\varepsilon, \infty)$ with
# $\lambda_\varepsilon = \min_\alpha e^{-1/(2\varepsilon)}(\cos\alpha + \sin\alpha /
# (2\varepsilon\alpha))$, drawn against $\varepsilon$ below (Fig. 4, left; section 2 checks it).

# %% tags=["hide-input"]
import math
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import brentq, minimize_scalar

import dynkit as dk

SMALL = os.environ.get("DYNKIT_NOTEBOOK_SMALL") == "1"
rng = np.random.default_rng(0)


def psi(theta, eps, terms=60):
    """Ψ_ε(θ) by the series of Prop. 4 (θ a square matrix)."""
    d = theta.shape[0]
    m = theta / eps + np.eye(d) / (4 * eps**2)
    total, power = np.zeros((d, d)), np.eye(d)
    for n in range(terms):
        total += (1 / math.factorial(2 * n) + 1 / (2 * eps * math.factorial(2 * n + 1))) * power
        power = power @ m
    return math.exp(-1 / (2 * eps)) * total


def flow(theta, eps, x0):
    """x(1) of ε x'' + x' = θ x, x(0) = x0, x'(0) = 0, integrated by dk.solve."""
    d = len(x0)

    def f(t, z):
        x, v = z[:d], z[d:]
        return np.concatenate([v, (theta @ x - v) / eps])

    return dk.solve(f, np.concatenate([x0, np.zeros(d)]), [0.0, 1.0], rtol=1e-11, atol=1e-12).ys[
        -1, :d
    ]


def argmin_alpha(eps):
    """α minimising G_ε(α) = e^{-1/(2ε)}(cos α + sin α / (2εα)); λ_ε = G_ε(α)."""
    g = lambda a: math.exp(-1 / (2 * eps)) * (math.cos(a) + math.sin(a) / (2 * eps * a))
    grid = np.linspace(1e-3, 4 * math.pi, 4000)  # the minimum lies in the first period past 0
    a0 = grid[np.argmin([g(a) for a in grid])]
    res = minimize_scalar(g, bracket=(a0 - 0.01, a0, a0 + 0.01))
    return res.x, res.fun


def lam(eps):
    return argmin_alpha(eps)[1]


epsilons = np.linspace(0.02, 3, 40 if SMALL else 150)
lams = np.array([lam(e) for e in epsilons])

# %% tags=["hide-input"]
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(epsilons, lams)
ax.set_xlabel("ε")
ax.set_ylabel("λ_ε")
ax.set_title("λ_ε = min Ψ_ε(ℝ)")
ax.grid(alpha=0.3)
plt.show()

# %% [markdown] Theorem 1: a real matrix diagonalisable over $\mathbb C$ is representable iff each
# of its eigenvalues below $\lambda_\varepsilon$ has even multiplicity. We (1) check Prop. 4 against
# `dk.solve`, (2) check $\lambda_\varepsilon$ against $\varepsilon$ (Fig. 4, left, above), (3) draw
# the representable eigenvalue regions for $d = 2$ (Fig. 4, right) and (4) represent a map with a
# single negative eigenvalue, which no first-order model ($\varepsilon = 0$) can.

# %% [markdown]
# ## 1. Prop. 4 against the ODE solver

# %%
worst = 0.0
for eps in (0.3, 1.0, 2.0):
    for _ in range(2 if SMALL else 5):
        theta, x0 = rng.normal(size=(2, 2)), rng.normal(size=2)
        exact = psi(theta, eps) @ x0
        worst = max(
            worst, float(np.max(np.abs(flow(theta, eps, x0) - exact)) / np.max(np.abs(exact)))
        )
print(f"worst relative difference series vs dk.solve: {worst:.1e}")
assert worst < 1e-8  # solves at rtol 1e-11; the series is summed to machine precision

# %% [markdown]
# ## 2. λ_ε against ε

# %%
for e in (0.1, 0.5, 1.0, 2.0, 3.0):
    print(f"lambda_eps at eps = {e}: {lam(e):+.4f}")

# Cross-check λ_ε at ε = 1 as the minimum of the scalar flow's map θ ↦ Ψ_ε(θ), by dk.solve on a
# grid.
thetas = np.linspace(-12, 0, 25 if SMALL else 121)
by_flow = min(flow(np.array([[th]]), 1.0, np.array([1.0]))[0] for th in thetas)
print(
    f"min over the theta grid of the flow map at eps = 1: {by_flow:+.4f} (lambda_1 = "
    f"{lam(1.0):+.4f})"
)
assert lam(1.0) <= by_flow < lam(1.0) + 0.01  # the grid minimum sits just above the true minimum

# %% [markdown] λ_ε is non-increasing, near 0 for small ε and tends to -1 as ε grows (Fig. 4, left;
# the figure at the top).

# %%
assert np.all(np.diff(lams) <= 1e-12) and -1 < lams[-1] < lams[0] <= 0 and abs(lams[0]) < 1e-6

# %% [markdown]
# ## 3. Representable eigenvalues for d = 2
#
# A real $2\times 2$ matrix with real eigenvalues $\lambda_1, \lambda_2$ is representable iff both
# are $\ge \lambda_\varepsilon$, or $\lambda_1 = \lambda_2$ (a pair) — grey below.

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), sharey=True)
grid = np.linspace(-1.5, 1.5, 301)
L1, L2 = np.meshgrid(grid, grid)
for ax, eps in zip(axes, (0.0, 0.5, 2.0)):
    lam_eps = 0.0 if eps == 0 else lam(eps)
    region = (L1 > lam_eps) & (L2 > lam_eps)
    ax.contourf(L1, L2, region, levels=[0.5, 1.5], colors=["0.75"])
    ax.plot(grid, grid, color="0.4", lw=2)  # the pairs λ1 = λ2
    ax.axvline(0, color="k", lw=0.5)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_title(f"ε = {eps}, λ_ε = {lam_eps:+.3f}")
    ax.set_xlabel("λ1")
axes[0].set_ylabel("λ2")
plt.show()

# %% [markdown]
# ## 4. A single negative eigenvalue
#
# $D = \mathrm{diag}(-0.3, 0.8)$ has one negative eigenvalue, so no first-order model represents it.
# With $\varepsilon = 2$ ($\lambda_\varepsilon < -0.3$) solve $\Psi_\varepsilon(\theta_i) =
# \lambda_i$ for real $\theta_i$ and check with `dk.solve` that $\theta = \mathrm{diag}(\theta_1,
# \theta_2)$ maps $x_0 \mapsto D x_0$.

# %%
eps, D = 2.0, np.array([-0.3, 0.8])
assert lam(eps) < D.min()
psi_scalar = lambda th: psi(np.array([[th]]), eps)[0, 0]
# Ψ_ε reaches λ_ε at θ* with θ*/ε + 1/(4ε²) = -α*², and increases on [θ*, ∞): search there.
theta_star = -eps * (argmin_alpha(eps)[0] ** 2 + 1 / (4 * eps**2))
assert abs(psi_scalar(theta_star) - lam(eps)) < 1e-10
thetas = np.array([brentq(lambda th, l=l: psi_scalar(th) - l, theta_star, 20.0) for l in D])
x0 = np.array([1.0, -2.0])
x1 = flow(np.diag(thetas), eps, x0)
print(f"theta = {thetas}, x(1) = {x1}, D x0 = {D * x0}")
assert np.allclose(x1, D * x0, rtol=1e-8, atol=1e-9)
