"""The command-line options that the two trained scripts of the Momentum ResNets family share
(:mod:`~dynkit.experiments.momres.momres_cubic` and :mod:`~dynkit.experiments.momres.momres_rings`):
the training iterations of both models and the Momentum ResNet's gamma.

It registers nothing: each script registers its own experiment.
"""

from __future__ import annotations

import argparse

from ..arg_types import momentum_float, positive_int

__all__ = ["add_iterations_option", "add_resnet_iterations_option", "add_gamma_option"]


def add_iterations_option(parser: argparse.ArgumentParser, default: int, full: int) -> None:
    """Add ``--iterations``: the training iterations, ``default`` (``full`` with ``--full``) when
    not given (the script resolves ``None``)."""
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help=f"training iterations (default {default}, {full} with --full)",
    )


def add_resnet_iterations_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--resnet-iterations``: the ResNet's training iterations when they differ from the
    Momentum ResNet's (``None``: ``--iterations``)."""
    parser.add_argument(
        "--resnet-iterations",
        type=positive_int,
        default=None,
        help="the ResNet's training iterations (default: --iterations)",
    )


def add_gamma_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--gamma``: the Momentum ResNet's momentum term, 0.9 (the paper's) by default."""
    parser.add_argument(
        "--gamma",
        type=momentum_float,
        default=0.9,
        help="the Momentum ResNet's gamma (default 0.9, the paper's)",
    )
