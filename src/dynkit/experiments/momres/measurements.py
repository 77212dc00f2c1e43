"""What the two measurement scripts of the Momentum ResNets family share
(:mod:`~dynkit.experiments.momres.momres_buffer_bits` and
:mod:`~dynkit.experiments.momres.momres_reference_accuracy`): their residual function, their
command line and the table of rows they print.

It registers nothing: each script registers its own experiment.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from torch import nn

from ..arg_types import positive_int
from ..scripting import experiment_parser, register_script, run_script

__all__ = [
    "residual_function",
    "measurement_parser",
    "Column",
    "print_table",
    "measurement_main",
    "register_measurement",
]


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


class Column(NamedTuple):
    """One column of a measurement's printed table: its ``title``, the row's ``key`` it shows, its
    ``width`` (right-aligned) and the format ``spec`` of the value (none: ``str``'s)."""

    title: str
    key: str
    width: int
    spec: str = ""


def print_table(columns: Sequence[Column], rows: Iterable[Mapping[str, Any]]) -> None:
    """Print a measurement's rows to stdout: a line of the columns' titles, then a line a row.

    Parameters
    ----------
    columns : sequence of Column
        What each column shows and how.
    rows : iterable of mapping
        The rows a script's ``run`` measured.
    """
    print(" ".join(f"{c.title:>{c.width}}" for c in columns))
    for row in rows:
        print(" ".join(f"{row[c.key]:>{c.width}{c.spec}}" for c in columns))


def measurement_main(columns: Sequence[Column], *script: Any) -> dict:
    """The body of a measurement script's ``main(argv)``:
    :func:`~dynkit.experiments.scripting.run_script` with the arguments ``script``, then the rows
    it ran printed as ``columns`` (:func:`print_table`).

    Returns
    -------
    dict
        What the script's ``run`` returned.
    """
    _, result = run_script(*script)
    print_table(columns, result["rows"])
    return result


def register_measurement(
    name: str,
    main: Callable[[list[str]], dict],
    metrics: Callable[[dict], dict],
    options: Callable[[list[str]], Mapping[str, Any]],
) -> None:
    """Register a measurement script's ``main`` as the experiment ``name``
    (:func:`~dynkit.experiments.scripting.register_script`): its smoke and cpu scales run the
    defaults, its full scale ``--full``."""
    register_script(
        name, main, metrics=metrics, smoke=(), cpu=(), full=("--full",), options=options
    )
