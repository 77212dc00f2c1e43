"""The heavy-ball ODE x'' + γ x' = -∇F(x) with F(x) = 1 - cos x, solved by ``dynkit.odeint`` for
three frictions: the README's first example and the figure beside it
(``docs/_static/heavy_ball.png``).

    python examples/heavy_ball.py [OUT.png]
"""

import sys

import torch

from dynkit import odeint


def heavy_ball(gamma: float):
    """The first-order form (x, m)' = (m, -γ m - ∇F(x)) of the heavy-ball ODE (HBODE, Eq. (23) of
    the review)."""

    def f(t, z):
        x, m = z
        return torch.stack([m, -gamma * m - torch.sin(x)])

    return f


def main(out: str = "docs/_static/heavy_ball.png") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = torch.linspace(0.0, 30.0, 601)
    fig, ax = plt.subplots(figsize=(6.4, 2.6), dpi=110, constrained_layout=True)
    for gamma in (0.05, 0.3, 1.5):
        z = odeint(heavy_ball(gamma), torch.tensor([3.0, 0.0]), t, rtol=1e-6, atol=1e-8)
        ax.plot(t, z[:, 0], label=f"γ = {gamma}")
    ax.set(
        xlabel="t",
        ylabel="x(t)",
        title="Heavy-ball ODE  x'' + γx' = -sin x,  x(0) = 3  (dynkit.odeint)",
    )
    ax.axhline(0.0, color="0.8", lw=0.8, zorder=0)
    ax.legend(frameon=False, ncol=3, loc="upper right")
    fig.savefig(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
