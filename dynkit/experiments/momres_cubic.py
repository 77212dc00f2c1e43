"""Fig. 1 of the Momentum ResNets paper: learn x -> -x^3 in 1-D with tied weights, depth 15.

A ResNet (Eq. (1)) with tied weights approximates a first-order ODE flow, whose 1-D maps are
increasing, so it cannot fit the decreasing -x^3; a Momentum ResNet (Eq. (2), gamma = 0.9) can,
because its velocity lets trajectories cross. Both use f(x) = W2^T tanh(W1 x + b) with the same
parameters shared by all 15 layers.

    python -m dynkit.experiments.momres_cubic --out analysis/results/momres_cubic
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn

from .scripting import register_script, command_line, experiment_parser
from dynkit.io import save_figure, write_json
from dynkit.models.momentum_resnet import MomentumResNet


def make_model(kind: str, depth: int, hidden: int, gamma: float) -> tuple[nn.Module, MomentumResNet]:
    f = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    # gamma = 0 is exactly the ResNet x <- x + f(x) (v_{n+1} = f(x_n)): one code path for both
    net = MomentumResNet([f] * depth, gamma if kind == "momentum" else 0.0, exact=False, preserve_rng_state=False)
    return f, net


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them: :mod:`~dynkit.experiments.momres_recipes`)."""
    args = build_parser().parse_args(argv)
    return {"depth": 15, "hidden": 16, "gamma": 0.9, "tied_weights": True, "optimiser": "Adam", "lr": 1e-2,
            "train_points": 200, "iterations": args.iterations or (3000 if args.full else 1200)}


def run(seed: int, quiet: bool, *, depth: int, hidden: int, gamma: float, tied_weights: bool, optimiser: str,
        lr: float, train_points: int, iterations: int) -> dict:
    if not tied_weights or optimiser != "Adam":
        raise ValueError(f"tied_weights must be True and optimiser 'Adam' (the script builds nothing else), got "
                         f"{tied_weights!r}, {optimiser!r}")
    torch.manual_seed(seed)
    x_train = torch.linspace(-1, 1, train_points).unsqueeze(1)
    y_train = -x_train**3
    out = {}
    for kind in ("resnet", "momentum"):
        torch.manual_seed(seed)
        _, net = make_model(kind, depth, hidden, gamma)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        losses = []
        for it in range(iterations):
            opt.zero_grad()
            loss = ((net(x_train)[0] - y_train) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if not quiet and it % 300 == 0:
                print(f"{kind:9s} iteration {it:5d} mse {float(loss):.3e}", file=sys.stderr)
        x_show = torch.linspace(-1, 1, 11).unsqueeze(1)
        out[kind] = {"final_mse": losses[-1], "loss_curve": losses[::10],
                     "trajectories_x0": x_show.squeeze(1).tolist(),
                     "trajectories": net.trajectory(x_show)[0].squeeze(2).tolist()}
    out["config"] = {"depth": depth, "hidden": hidden, "gamma": gamma, "iterations": iterations, "seed": seed,
                     "optimizer": f"Adam lr {lr:g}", "train_points": train_points, "tied_weights": True}
    return out


def plot(result: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, kind, title in zip(axes, ("resnet", "momentum"), ("ResNet", "Momentum ResNet (gamma = 0.9)")):
        traj = np.array(result[kind]["trajectories"])
        for j in range(traj.shape[1]):
            ax.plot(range(traj.shape[0]), traj[:, j], "-o", ms=2)
            ax.plot([traj.shape[0] - 1], [-result[kind]["trajectories_x0"][j] ** 3], "kx")
        ax.set_title(f"{title}\nfinal MSE {result[kind]['final_mse']:.1e}")
        ax.set_xlabel("layer n")
    axes[0].set_ylabel("x_n  (crosses: target -x_0^3)")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def build_parser():
    parser = experiment_parser(__doc__, "runs/momres_cubic")
    parser.add_argument("--iterations", type=int, default=None,
                        help="training iterations (default 1200, 3000 with --full)")
    return parser


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    result = run(args.seed, args.quiet, **options(argv))
    command = command_line("dynkit.experiments.momres_cubic", argv)
    write_json(f"{args.out}/cubic.json", result, command=command)
    plot(result, f"{args.out}/cubic.png")
    print(f"final MSE fitting -x^3 with tied weights, depth 15: ResNet {result['resnet']['final_mse']:.3e}, "
          f"Momentum ResNet {result['momentum']['final_mse']:.3e}")
    return result


def _metrics(result: dict) -> dict:
    return {"resnet.final_mse": result["resnet"]["final_mse"], "momentum.final_mse": result["momentum"]["final_mse"]}


register_script("momres_cubic", main, metrics=_metrics, smoke=("--iterations", "5"), cpu=("--iterations", "600"),
                full=("--full",), options=options)


if __name__ == "__main__":
    main()
