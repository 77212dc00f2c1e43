"""Accuracy of memory-free training: our exact mode vs the reference package ``momentumnet``.

For a tied-weight Momentum ResNet (f = W2^T tanh(W1 x + b), width 4, hidden 16, float64, batch 8) of
depth k, we compare the output x_k and the gradient of ||x_k||^2 w.r.t. W1 from (a) plain autograd
(``momentumnet.MomentumNet(use_backprop=True)``), (b) momentumnet's memory-free mode
(``use_backprop=False``) and (c) ours (``MomentumResNet(exact=True)``), which both reconstruct the
activations in the backward pass instead of storing them. Reported: max |forward difference| and the
relative gradient error ||g - g_autograd|| / ||g_autograd||.

    python -m dynkit.experiments.momres.momres_reference_accuracy --out
    analysis/results/momres_reference_accuracy
"""

from __future__ import annotations

import argparse
import sys

import torch

from .measurements import (
    Column,
    measurement_main,
    measurement_parser,
    register_measurement,
    residual_function,
)
from dynkit.io import save_figure
from dynkit.models.momentum_resnet import MomentumResNet

MODULE = "dynkit.experiments.momres.momres_reference_accuracy"
TABLE = (
    Column("gamma", "gamma", 6),
    Column("depth", "depth", 6),
    Column("momentumnet fwd", "momentumnet_forward_max_abs_diff", 16, ".2e"),
    Column("ours fwd", "ours_forward_max_abs_diff", 10, ".2e"),
    Column("momentumnet grad", "momentumnet_grad_rel_error", 17, ".2e"),
    Column("ours grad", "ours_grad_rel_error", 10, ".2e"),
)
"""What ``main`` prints of each row."""


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.momres.recipe`)."""
    args = build_parser().parse_args(argv)
    return {
        "width": 4,
        "hidden": 16,
        "batch": args.batch,
        "dtype": "float64",
        "tied_weights": True,
        "gammas": (0.9, 0.99),
        "depths": (10, 30, 100, 300, 1000) if args.full else (10, 100, 300),
    }


def run(
    seed: int,
    quiet: bool,
    *,
    width: int,
    hidden: int,
    batch: int,
    dtype: str,
    tied_weights: bool,
    gammas: tuple[float, ...],
    depths: tuple[int, ...],
) -> dict:
    if dtype != "float64" or not tied_weights:
        raise ValueError(
            f"dtype must be 'float64' and tied_weights True (the script builds nothing else), got "
            f"{dtype!r}, {tied_weights!r}"
        )
    from momentumnet import MomentumNet, __version__ as momentumnet_version

    depths = list(depths)
    rows = []
    for gamma in gammas:
        for depth in depths:
            torch.manual_seed(seed)
            f = residual_function(width, hidden)
            x = torch.randn(batch, width, dtype=torch.float64)
            results = {}
            for name, net in (
                ("autograd", MomentumNet([f] * depth, gamma, use_backprop=True)),
                ("momentumnet", MomentumNet([f] * depth, gamma, use_backprop=False)),
                ("ours", lambda x: MomentumResNet([f] * depth, gamma)(x)[0]),
            ):
                f.zero_grad()
                out = net(x)
                out.pow(2).sum().backward()
                results[name] = (out.detach(), f[0].weight.grad.clone())
            ref_out, ref_grad = results["autograd"]
            row = {"gamma": gamma, "depth": depth}
            for name in ("momentumnet", "ours"):
                out, grad = results[name]
                row[f"{name}_forward_max_abs_diff"] = float((out - ref_out).abs().max())
                row[f"{name}_grad_rel_error"] = float((grad - ref_grad).norm() / ref_grad.norm())
            rows.append(row)
            if not quiet:
                print(row, file=sys.stderr)
    return {
        "rows": rows,
        "config": {
            "depths": depths,
            "seed": seed,
            "width": width,
            "hidden": hidden,
            "batch": batch,
            "dtype": "float64",
            "momentumnet": momentumnet_version,
        },
    }


def plot(result: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for gamma, style in ((0.9, "-"), (0.99, "--")):
        rows = [r for r in result["rows"] if r["gamma"] == gamma]
        depths = [r["depth"] for r in rows]
        for name, colour in (("momentumnet", "C1"), ("ours", "C0")):
            ax.loglog(
                depths,
                [max(r[f"{name}_grad_rel_error"], 1e-17) for r in rows],
                style,
                color=colour,
                marker="o",
                ms=3,
                label=f"{name}, gamma={gamma}",
            )
    ax.set_xlabel("depth")
    ax.set_ylabel("relative gradient error vs autograd")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def build_parser() -> argparse.ArgumentParser:
    return measurement_parser(__doc__, "runs/momres_reference_accuracy", batch=8)


def main(argv: list[str] | None = None) -> dict:
    return measurement_main(
        TABLE, MODULE, argv, build_parser, options, run, plot, "reference_accuracy"
    )


def _metrics(result: dict) -> dict:
    deepest = max(r["depth"] for r in result["rows"])
    rows = [r for r in result["rows"] if r["depth"] == deepest]
    return {
        "ours.grad_rel_error": max(r["ours_grad_rel_error"] for r in rows),
        "momentumnet.grad_rel_error": max(r["momentumnet_grad_rel_error"] for r in rows),
        "ours.forward_max_abs_diff": max(r["ours_forward_max_abs_diff"] for r in rows),
    }


register_measurement("momres_reference_accuracy", main, _metrics, options)


if __name__ == "__main__":
    main()
