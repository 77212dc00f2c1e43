"""What every analysis script shares: its command-line options and the command recorded with its results."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def experiment_parser(doc: str, default_out: str, full_help: str = "the paper's size (slow on a CPU)",
                      epochs: bool = False) -> argparse.ArgumentParser:
    """``--out``, ``--seed``, ``--quiet``, ``--full`` (and ``--epochs`` if asked), with the first line of ``doc``
    as description."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--out", type=Path, default=Path(default_out), help=f"output folder for JSON + PNG (default {default_out})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same numbers)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--full", action="store_true", help=full_help)
    if epochs:
        parser.add_argument("--epochs", type=int, default=None, help="override the number of epochs")
    return parser


def experiment_config(args: argparse.Namespace, quick: dict, full: dict) -> dict:
    """The run's configuration: ``full`` with ``--full``, else ``quick``; ``--epochs`` overrides."""
    config = dict(full if args.full else quick)
    if getattr(args, "epochs", None) is not None:
        config["epochs"] = args.epochs
    return config


def command_line(module: str | None = None, argv: list[str] | None = None) -> str:
    """The exact command that reproduces this run, for the results' provenance (``module`` defaults to the
    one run with ``python -m``)."""
    if module is None:
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else Path(sys.argv[0]).stem
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *(shlex.quote(a) for a in args)])
