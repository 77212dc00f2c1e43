"""The command line of the experiments that began as analysis scripts, and their registration.

Each such module keeps its ``main(argv)`` (``python -m dynkit.experiments.<name> --help``): its options
are its config. :func:`register_script` registers it with one :class:`ScriptConfig` (the options) per
scale and a ``metrics(result)`` function that turns what ``main`` returns into the shard's metrics.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..tasks.text import default_data_dir
from .registry import register

MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
COLORS = {"node": "tab:blue", "anode": "tab:orange", "sonode": "tab:green", "hbnode": "tab:red",
          "ghbnode": "tab:purple"}
DEFAULT_DATA = default_data_dir()


def experiment_parser(doc: str, default_out: str, full_help: str = "the paper's size (slow on a CPU)",
                      epochs: bool = False) -> argparse.ArgumentParser:
    """``--out``, ``--seed``, ``--quiet``, ``--full`` (and ``--epochs`` if asked), with the first line of ``doc``
    as description."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--out", type=Path, default=Path(default_out),
                        help=f"output folder for JSON + PNG (default {default_out})")
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
    return " ".join(["python -m", module, *(shlex.quote(str(a)) for a in args)])


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The neural-ODE experiments' options: the common ones and ``--models``."""
    p = experiment_parser(description, default_out)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    return p


def add_solver_option(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--solver``: the neural-ODE models' engine, ``dynkit`` (:func:`dynkit.solve`, the default) or
    ``torchdiffeq`` (the papers' code), to check that an outcome does not depend on it."""
    from ..models.ode_block import DEFAULT_SOLVER, SOLVERS

    p.add_argument("--solver", default=DEFAULT_SOLVER, choices=SOLVERS,
                   help=f"ODE solver of the models (default {DEFAULT_SOLVER})")
    return p


def csaode_parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The CSAODE experiments' options: the common ones and ``--data-dir``."""
    p = experiment_parser(description, default_out, full_help="the paper's size (d = 300, 300-d embeddings)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help=f"folder of the standard sentence-classification files (default {DEFAULT_DATA})")
    return p


def setup(args) -> str:
    """Single-threaded torch (shared CPUs), the output folder; returns the command line for the results."""
    import torch

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    return command_line()


def pyplot():
    from .plotting import pyplot as _pyplot

    return _pyplot()


@dataclass(frozen=True)
class ScriptConfig:
    """A migrated script's options at one scale (``--out``, ``--seed`` and ``--quiet`` are added per shard)."""

    args: tuple[str, ...] = ()
    checkpoints: bool = False  # pass --checkpoints <shard>/checkpoints (kept out of git: *.pt)


def register_script(name: str, main: Callable[[list[str]], dict], *, smoke: tuple[str, ...], cpu: tuple[str, ...],
                    full: tuple[str, ...], metrics: Callable[[dict], dict], checkpoints: bool = False,
                    summary: str = "") -> None:
    """Register ``main`` (an argparse entry point) as the experiment ``name``; see the module docstring.

    Run as ``python -m dynkit.experiments.<name>``, the module executes a second time as ``__main__`` after the
    package registered it: that copy only serves its command line and registers nothing.
    """
    if main.__module__ == "__main__":
        return
    def run(config: ScriptConfig, *, seed: int, out: Path, device: str) -> dict:
        argv = [*config.args, "--out", str(out), "--seed", str(seed), "--quiet"]
        if config.checkpoints:
            argv += ["--checkpoints", str(Path(out) / "checkpoints")]
        result = main(argv)
        return {"metrics": {k: float(v) for k, v in metrics(result).items()}}

    run.__doc__ = summary or (sys.modules[main.__module__].__doc__ or name).strip().splitlines()[0]
    register(name, smoke=ScriptConfig(tuple(smoke), checkpoints), cpu=ScriptConfig(tuple(cpu), checkpoints),
             full=ScriptConfig(tuple(full), checkpoints), module=main.__module__)(run)
