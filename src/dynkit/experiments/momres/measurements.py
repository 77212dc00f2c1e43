"""What the two measurement scripts of the Momentum ResNets family share
(:mod:`~dynkit.experiments.momres.momres_buffer_bits` and
:mod:`~dynkit.experiments.momres.momres_reference_accuracy`): their residual function, their
command line and the table of rows they print.

It registers nothing: each script registers its own experiment.
"""

from __future__ import annotations

import argparse
from typing import Callable, Iterable

from torch import nn

from ..arg_types import positive_int
from ..scripting import experiment_parser

__all__ = ["residual_function", "measurement_parser", "print_table"]


def residual_function(width: int, hidden: int) -> nn.Sequential:
    """The residual function ``f(x) = W2^T tanh(W1 x + b)`` in float64, freshly initialised.

    Parameters
    ----------
    width : int
        The state's size (the input and output of ``f``).
    hidden : int
        Hidden units of ``f``.

    Returns
    -------
    torch.nn.Sequential
        ``Linear(width, hidden)``, ``Tanh``, ``Linear(hidden, width)``, in float64.
    """
    return nn.Sequential(nn.Linear(width, hidden), nn.Tanh(), nn.Linear(hidden, width)).double()


def measurement_parser(doc: str, default_out: str, batch: int) -> argparse.ArgumentParser:
    """The command line of a measurement script: the options of
    :func:`~dynkit.experiments.scripting.experiment_parser` and ``--batch``.

    Parameters
    ----------
    doc : str
        The script's docstring (its first line describes the command).
    default_out : str
        The output folder when ``--out`` is not given.
    batch : int
        The default of ``--batch``, the inputs per forward pass.

    Returns
    -------
    argparse.ArgumentParser
        The parser.
    """
    parser = experiment_parser(doc, default_out)
    parser.add_argument(
        "--batch",
        type=positive_int,
        default=batch,
        help=f"inputs per forward pass (default {batch})",
    )
    return parser


def print_table(header: str, rows: Iterable[dict], row_text: Callable[[dict], str]) -> None:
    """Print a measurement's rows to stdout: ``header``, then ``row_text(row)`` for each row.

    Parameters
    ----------
    header : str
        The table's first line (the columns' names).
    rows : iterable of dict
        The rows a script's ``run`` measured.
    row_text : callable
        One row's line of the table.
    """
    print(header)
    for row in rows:
        print(row_text(row))
