"""Fig. 1 of the Momentum ResNets paper: learn x -> -x^3 in 1-D with tied weights, depth 15.

A ResNet (Eq. (1)) with tied weights approximates a first-order ODE flow, whose 1-D maps are
increasing, so it cannot fit the decreasing -x^3; a Momentum ResNet (Eq. (2), gamma = 0.9) can,
because its velocity lets trajectories cross. Both use f(x) = W2^T tanh(W1 x + b) with the same
parameters shared by all 15 layers. By default both train with Adam on a fixed grid of points; the
options give the authors' example instead (plain SGD, fresh uniform points every iteration, fewer
iterations for the Momentum ResNet than for the ResNet; see
:mod:`~dynkit.experiments.momres.recipe`).

    python -m dynkit.experiments.momres.momres_cubic --out analysis/results/momres_cubic
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn

from ..arg_types import positive_float, positive_int
from ..scripting import experiment_parser, register_script, run_script
from .options import add_gamma_option, add_iterations_option, add_resnet_iterations_option
from dynkit.io import save_figure
from dynkit.models.momentum_resnet import MomentumResNet


def make_model(
    kind: str, depth: int, hidden: int, gamma: float
) -> tuple[nn.Module, MomentumResNet]:
    f = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    # gamma = 0 is exactly the ResNet x <- x + f(x) (v_{n+1} = f(x_n)): one code path for both
    net = MomentumResNet(
        [f] * depth, gamma if kind == "momentum" else 0.0, exact=False, preserve_rng_state=False
    )
    return f, net


OPTIMISERS = {
    "Adam": torch.optim.Adam,
    "SGD": torch.optim.SGD,
}  # SGD: plain, no momentum (the authors')
SAMPLINGS = ("grid", "uniform")


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.momres.recipe`)."""
    args = build_parser().parse_args(argv)
    iterations = args.iterations or (3000 if args.full else 1200)
    return {
        "depth": 15,
        "hidden": 16,
        "gamma": args.gamma,
        "tied_weights": True,
        "optimiser": args.optimiser,
        "lr": args.lr,
        "train_points": args.train_points,
        "sampling": args.sampling,
        "iterations": iterations,
        "resnet_iterations": args.resnet_iterations or iterations,
    }


def training_points(sampling: str, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` inputs on [-1, 1] as a column: the fixed ``grid`` (the same every call) or
    ``uniform`` draws."""
    if sampling == "grid":
        return torch.linspace(-1, 1, n).unsqueeze(1)
    draws = torch.rand(n, generator=generator, device=generator.device)  # the same on every device
    return (2 * draws.to(torch.get_default_device()) - 1).unsqueeze(1)


def run(
    seed: int,
    quiet: bool,
    *,
    depth: int,
    hidden: int,
    gamma: float,
    tied_weights: bool,
    optimiser: str,
    lr: float,
    train_points: int,
    sampling: str,
    iterations: int,
    resnet_iterations: int,
) -> dict:
    if not tied_weights or optimiser not in OPTIMISERS or sampling not in SAMPLINGS:
        raise ValueError(
            f"tied_weights must be True, optimiser one of {sorted(OPTIMISERS)} and sampling one of "
            f"{SAMPLINGS} (the script builds nothing else), got {tied_weights!r}, {optimiser!r}, "
            f"{sampling!r}"
        )
    torch.manual_seed(seed)
    out = {}
    for kind, steps in (("resnet", resnet_iterations), ("momentum", iterations)):
        torch.manual_seed(seed)
        draws = torch.Generator().manual_seed(
            seed
        )  # uniform sampling: both models see the same fresh points
        _, net = make_model(kind, depth, hidden, gamma)
        opt = OPTIMISERS[optimiser](net.parameters(), lr=lr)
        losses = []
        for it in range(steps):
            x_train = training_points(sampling, train_points, draws)
            y_train = -(x_train**3)
            opt.zero_grad()
            loss = ((net(x_train)[0] - y_train) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if not quiet and it % 300 == 0:
                print(f"{kind:9s} iteration {it:5d} mse {float(loss):.3e}", file=sys.stderr)
        x_show = torch.linspace(-1, 1, 11).unsqueeze(1)
        out[kind] = {
            "final_mse": losses[-1],
            "loss_curve": losses[::10],
            "trajectories_x0": x_show.squeeze(1).tolist(),
            "trajectories": net.trajectory(x_show)[0].squeeze(2).tolist(),
        }
    out["config"] = {
        "depth": depth,
        "hidden": hidden,
        "gamma": gamma,
        "iterations": iterations,
        "seed": seed,
        "optimizer": f"{optimiser} lr {lr:g}",
        "train_points": train_points,
        "tied_weights": True,
    }
    if (sampling, resnet_iterations) != (
        "grid",
        iterations,
    ):  # recorded where they leave the default
        out["config"].update(sampling=sampling, resnet_iterations=resnet_iterations)
    return out


def plot(result: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    momentum_title = f"Momentum ResNet (gamma = {result['config']['gamma']:g})"
    for ax, kind, title in zip(axes, ("resnet", "momentum"), ("ResNet", momentum_title)):
        traj = np.array(result[kind]["trajectories"])
        for j in range(traj.shape[1]):
            ax.plot(range(traj.shape[0]), traj[:, j], "-o", ms=2)
            ax.plot([traj.shape[0] - 1], [-(result[kind]["trajectories_x0"][j] ** 3)], "kx")
        ax.set_title(f"{title}\nfinal MSE {result[kind]['final_mse']:.1e}")
        ax.set_xlabel("layer n")
    axes[0].set_ylabel("x_n  (crosses: target -x_0^3)")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def build_parser():
    parser = experiment_parser(__doc__, "runs/momres_cubic")
    add_iterations_option(parser, 1200, 3000)
    add_resnet_iterations_option(parser)
    add_gamma_option(parser)
    parser.add_argument(
        "--optimiser", choices=sorted(OPTIMISERS), default="Adam", help="optimiser (default Adam)"
    )
    parser.add_argument(
        "--lr", type=positive_float, default=1e-2, help="learning rate (default 0.01)"
    )
    parser.add_argument(
        "--train-points",
        type=positive_int,
        default=200,
        help="training points per iteration (default 200)",
    )
    parser.add_argument(
        "--sampling",
        choices=SAMPLINGS,
        default="grid",
        help="training points: a fixed grid on [-1, 1] (default) or fresh uniform draws each "
        "iteration",
    )
    return parser


def main(argv: list[str] | None = None) -> dict:
    _, result = run_script(
        "dynkit.experiments.momres.momres_cubic", argv, build_parser, options, run, plot, "cubic"
    )
    print(
        f"final MSE fitting -x^3 with tied weights, depth 15: ResNet "
        f"{result['resnet']['final_mse']:.3e}, "
        f"Momentum ResNet {result['momentum']['final_mse']:.3e}"
    )
    return result


def _metrics(result: dict) -> dict:
    return {
        "resnet.final_mse": result["resnet"]["final_mse"],
        "momentum.final_mse": result["momentum"]["final_mse"],
    }


register_script(
    "momres_cubic",
    main,
    metrics=_metrics,
    smoke=("--iterations", "5"),
    cpu=(
        "--optimiser",
        "SGD",
        "--sampling",
        "uniform",
        "--iterations",
        "301",
        "--resnet-iterations",
        "2001",
    ),
    full=("--full",),
    options=options,
)


if __name__ == "__main__":
    main()
