"""Sect. 3.2 of the Momentum ResNets paper: size of the information buffer vs k log2(1/gamma).

A Momentum ResNet of depth k with random untied layers f_n(x) = W2_n^T tanh(W1_n x + b_n) (width 8,
hidden 16) runs in the exact mode on a batch of 256 inputs of both signs; we read the buffer's mean
information per element (log2 of its content, see ``InformationBuffer.information_bits``) and the
bits it allocates (64 per int64 limb), against the k log2(1/gamma) bits per element of Sect. 3.2.
(Layers whose iterates converge to a fixed point lose fewer bits: the remainders stop being random.)

    python -m dynkit.experiments.momres.momres_buffer_bits --out analysis/results/momres_buffer_bits
"""

from __future__ import annotations

import argparse
import math
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

MODULE = "dynkit.experiments.momres.momres_buffer_bits"
GAMMAS = (0.1, 0.5, 0.9, 0.99, 1 - 1 / 50000)
TABLE = (
    Column("gamma", "gamma", 10, ".6g"),
    Column("depth", "depth", 6, "d"),
    Column("k log2(1/g)", "expected_bits", 12, ".2f"),
    Column("measured", "information_bits", 10, ".2f"),
    Column("allocated", "allocated_bits", 10, "d"),
)
"""What ``main`` prints of each row."""


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.momres.recipe`)."""
    args = build_parser().parse_args(argv)
    return {
        "width": 8,
        "hidden": 16,
        "batch": args.batch,
        "gammas": GAMMAS,
        "dtype": "float64",
        "depths": (10, 100, 1000) if args.full else (10, 100, 300),
    }


def run(
    seed: int,
    quiet: bool,
    *,
    width: int,
    hidden: int,
    batch: int,
    gammas: tuple[float, ...],
    dtype: str,
    depths: tuple[int, ...],
) -> dict:
    if dtype != "float64":
        raise ValueError(f"dtype must be 'float64' (the script builds nothing else), got {dtype!r}")
    depths = list(depths)
    torch.manual_seed(seed)
    layers = [residual_function(width, hidden) for _ in range(max(depths))]
    x = 2 * torch.randn(batch, width, dtype=torch.float64)
    rows = []
    for gamma in gammas:
        for depth in depths:
            net = MomentumResNet(layers[:depth], gamma)
            with torch.no_grad():
                net(x)
            b = net.buffer
            row = {
                "gamma": gamma,
                "gamma_ratio": f"{net.gamma_ratio}",
                "depth": depth,
                "expected_bits": depth * math.log2(1 / float(net.gamma_ratio)),
                "information_bits": b.information_bits(),
                "allocated_bits": b.allocated_bits(),
            }
            rows.append(row)
            if not quiet:
                print(row, file=sys.stderr)
    return {
        "rows": rows,
        "config": {
            "depths": depths,
            "gammas": gammas,
            "width": width,
            "hidden": hidden,
            "batch": batch,
            "seed": seed,
        },
    }


def plot(result: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    rows = result["rows"]
    ax.loglog(
        [r["expected_bits"] for r in rows],
        [max(r["information_bits"], 1e-3) for r in rows],
        "o",
        label="measured information",
    )
    ax.loglog(
        [r["expected_bits"] for r in rows],
        [r["allocated_bits"] for r in rows],
        "s",
        mfc="none",
        label="allocated (64-bit limbs)",
    )
    lim = [min(r["expected_bits"] for r in rows), max(r["expected_bits"] for r in rows)]
    ax.loglog(lim, lim, "k--", lw=1, label="k log2(1/gamma)")
    ax.set_xlabel("k log2(1/gamma)  [bits per element]")
    ax.set_ylabel("buffer bits per element")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def build_parser() -> argparse.ArgumentParser:
    return measurement_parser(__doc__, "runs/momres_buffer_bits", batch=256)


def main(argv: list[str] | None = None) -> dict:
    return measurement_main(TABLE, MODULE, argv, build_parser, options, run, plot, "buffer_bits")


def _metrics(result: dict) -> dict:
    # Sect. 3.2 predicts the rate, k log2(1/gamma) bits: compare the bits gained between the two
    # deepest depths with (k2 - k1) log2(1/gamma), which removes the O(1) offset of log2 of the
    # buffer's content; gammas that gain less than one bit over that span are too close to 1 to
    # measure a rate
    rates = []
    for gamma in sorted({r["gamma"] for r in result["rows"]}):
        rows = sorted((r for r in result["rows"] if r["gamma"] == gamma), key=lambda r: r["depth"])
        lo, hi = rows[-2], rows[-1]
        expected = hi["expected_bits"] - lo["expected_bits"]
        if expected >= 1.0:
            rates.append((hi["information_bits"] - lo["information_bits"]) / expected)
    return {
        "max_rate_error": max(abs(r - 1) for r in rates),
        "allocated_at_least_measured": float(
            all(r["allocated_bits"] >= r["information_bits"] for r in result["rows"])
        ),
    }


register_measurement("momres_buffer_bits", main, _metrics, options)


if __name__ == "__main__":
    main()
