"""The CSAODE scripts' shared options: the data folder, the schedule and weight normalization
over the base training configuration of :mod:`dynkit.tasks.text`, and the command line and settings
of the scripts that train CSAARK on TREC (:mod:`~dynkit.experiments.csaode.csaode_attention`,
:mod:`~dynkit.experiments.csaode.csaode_sensitivity`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...tasks.text import CPU_CONFIG, FULL_CONFIG, SCHEDULES, default_data_dir
from ..scripting import experiment_parser

__all__ = [
    "DEFAULT_DATA",
    "csaode_parser",
    "csaode_training",
    "trec_parser",
    "trec_settings",
]

DEFAULT_DATA = default_data_dir()


def csaode_parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The CSAODE experiments' options: the common ones, ``--data-dir`` and the training's
    ``--schedule`` and ``--weight-norm`` (read by :func:`csaode_training`)."""
    p = experiment_parser(
        description, default_out, full_help="the paper's size (d = 300, 300-d embeddings)"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA,
        help=f"folder of the standard sentence-classification files (default {DEFAULT_DATA})",
    )
    p.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default=None,
        help="the learning-rate schedule (default: the base configuration's, constant)",
    )
    p.add_argument(
        "--weight-norm",
        action="store_true",
        help="weight normalization of every weight matrix (the paper's training setup)",
    )
    return p


def csaode_training(args: argparse.Namespace) -> dict:
    """The training settings of a CSAODE script: its base configuration
    (:data:`dynkit.tasks.text.CPU_CONFIG`, ``FULL_CONFIG`` with ``--full``) but the epochs, with
    ``--schedule`` and ``--weight-norm`` applied."""
    base = {k: v for k, v in (FULL_CONFIG if args.full else CPU_CONFIG).items() if k != "epochs"}
    if args.schedule is not None:
        base["schedule"] = args.schedule
    return {**base, "weight_norm": args.weight_norm}


def trec_parser(doc: str, name: str, epochs: int) -> argparse.ArgumentParser:
    """The command line of the script ``name`` that trains CSAARK on TREC: the options of
    :func:`csaode_parser` (the first line of ``doc`` as description, results under
    ``analysis/results/<name>``), ``--epochs`` (default ``epochs``), ``--checkpoints`` (default
    ``runs/<name>``) and ``--resume``."""
    p = csaode_parser(doc.splitlines()[0], f"analysis/results/{name}")
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--checkpoints", type=Path, default=Path(f"runs/{name}"))
    p.add_argument("--resume", action="store_true")
    return p


def trec_settings(args: argparse.Namespace) -> dict:
    """The settings a :func:`trec_parser` command line trains with: CSAARK (``"solver": "ark"``),
    its epochs and scale, and the training settings of :func:`csaode_training`."""
    return {"solver": "ark", "epochs": args.epochs, "full": args.full, **csaode_training(args)}
