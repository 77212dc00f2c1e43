"""The command line of the experiments that began as analysis scripts, and their registration.

Each such module keeps its ``main(argv)`` (``python -m dynkit.experiments.<name> --help``): its
options are its config. :func:`register_script` registers it with one :class:`ScriptConfig` (the
options) per scale and a ``metrics(result)`` function that turns what ``main`` returns into the
shard's metrics.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..models.engines import DEFAULT_SOLVER, SOLVERS
from .registry import WORK_DIR, register

__all__ = [
    "MODELS",
    "COLORS",
    "experiment_parser",
    "experiment_config",
    "command_line",
    "run_script",
    "parser",
    "add_solver_option",
    "setup",
    "pyplot",
    "ScriptConfig",
    "register_script",
]

MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
COLORS = {
    "node": "tab:blue",
    "anode": "tab:orange",
    "sonode": "tab:green",
    "hbnode": "tab:red",
    "ghbnode": "tab:purple",
}


def experiment_parser(
    doc: str,
    default_out: str,
    full_help: str = "the paper's size (slow on a CPU)",
    epochs: bool = False,
) -> argparse.ArgumentParser:
    """``--out``, ``--seed``, ``--quiet``, ``--full`` (and ``--epochs`` if asked), with the first
    line of ``doc`` as description."""
    parser = argparse.ArgumentParser(
        description=(doc or "").strip().splitlines()[0] if doc else None
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(default_out),
        help=f"output folder for JSON + PNG (default {default_out})",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same numbers)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--full", action="store_true", help=full_help)
    if epochs:
        parser.add_argument(
            "--epochs", type=int, default=None, help="override the number of epochs"
        )
    return parser


def experiment_config(args: argparse.Namespace, quick: dict, full: dict) -> dict:
    """The run's configuration: ``full`` with ``--full``, else ``quick``; ``--epochs`` overrides."""
    config = dict(full if args.full else quick)
    if getattr(args, "epochs", None) is not None:
        config["epochs"] = args.epochs
    return config


def command_line(module: str | None = None, argv: list[str] | None = None) -> str:
    """The exact command that reproduces this run, for the results' provenance (``module``
    defaults to the one run with ``python -m``)."""
    if module is None:
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else Path(sys.argv[0]).stem
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *(shlex.quote(str(a)) for a in args)])


def run_script(
    module: str,
    argv: list[str] | None,
    build_parser: Callable[[], argparse.ArgumentParser],
    options: Callable[[list[str] | None], Mapping[str, Any]],
    run: Callable[..., dict],
    plot: Callable[[dict, str], None],
    stem: str,
) -> tuple[argparse.Namespace, dict]:
    """The body of ``main(argv)`` of a script whose work is ``run(seed, quiet, **options(argv))``:
    single-threaded torch (shared CPUs), the result written to ``OUT/<stem>.json`` with the
    command that reproduces it (``module``: the script's dotted path) and its figure to
    ``OUT/<stem>.png``.

    Returns
    -------
    (args, result)
        The parsed command line and what ``run`` returned, for the script's printed summary.
    """
    import torch

    from ..io import write_json

    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    result = run(args.seed, args.quiet, **options(argv))
    write_json(f"{args.out}/{stem}.json", result, command=command_line(module, argv))
    plot(result, f"{args.out}/{stem}.png")
    return args, result


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The neural-ODE experiments' options: the common ones and ``--models``."""
    p = experiment_parser(description, default_out)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    return p


def add_solver_option(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--solver``: the neural-ODE models' engine, ``dynkit`` (:func:`dynkit.solve`, the
    default) or ``torchdiffeq`` (the papers' code), to check that an outcome does not depend on
    it."""
    p.add_argument(
        "--solver",
        default=DEFAULT_SOLVER,
        choices=SOLVERS,
        help=f"ODE solver of the models (default {DEFAULT_SOLVER})",
    )
    return p


def setup(args) -> str:
    """Single-threaded torch (shared CPUs), the output folder; returns the command line for the
    results."""
    import torch

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    return command_line()


def pyplot():
    from .plotting import pyplot as _pyplot

    return _pyplot()


@dataclass(frozen=True)
class ScriptConfig:
    """A migrated script's options at one scale (``--out``, ``--seed`` and ``--quiet`` are added
    per shard)."""

    args: tuple[str, ...] = ()
    checkpoints: bool = False  # pass --checkpoints <shard>/work/checkpoints (state of its identity)

    # The script's ``options(argv)`` (what its ``main`` would run with) rides on the instance, not
    # as a field: the config's JSON (a shard's identity) stays the command line alone.
    def options(self) -> Mapping[str, Any]:
        """The settings this config's command line runs with, as the script resolves them (its
        defaults and scale rules applied), e.g. ``{"iterations": 600, "lr": 0.01, ...}``; empty
        for a script registered without ``options``."""
        resolve = getattr(self, "_options", None)
        if resolve is None:
            return {}
        return {
            k: tuple(v) if isinstance(v, list) else v for k, v in resolve(list(self.args)).items()
        }

    def with_option(self, name: str, value: Any) -> "ScriptConfig":
        """This config with ``--name value`` on its command line (``name``'s underscores as
        dashes; ``True`` a bare flag, ``False`` none), replacing an earlier value of that option."""
        flag = "--" + name.replace("_", "-")
        args, i = [], 0
        while i < len(self.args):
            if self.args[i] == flag:
                i += 1 if i + 1 >= len(self.args) or self.args[i + 1].startswith("--") else 2
                continue
            args.append(self.args[i])
            i += 1
        if value is True:
            args.append(flag)
        elif value is not False:
            args += [
                flag,
                *(map(str, value) if isinstance(value, (tuple, list)) else (str(value),)),
            ]
        return _with_options(
            ScriptConfig(tuple(args), self.checkpoints), getattr(self, "_options", None)
        )


def _with_options(
    config: ScriptConfig, options: Callable[[list[str]], Mapping[str, Any]] | None
) -> ScriptConfig:
    if options is not None:
        object.__setattr__(config, "_options", options)
    return config


def register_script(
    name: str,
    main: Callable[[list[str]], dict],
    *,
    smoke: tuple[str, ...],
    cpu: tuple[str, ...],
    full: tuple[str, ...],
    metrics: Callable[[dict], dict],
    checkpoints: bool = False,
    summary: str = "",
    options: Callable[[list[str]], Mapping[str, Any]] | None = None,
) -> None:
    """Register ``main`` (an argparse entry point) as the experiment ``name``; see the module
    docstring.

    ``options(argv)``, when given, returns the settings ``main(argv)`` would run with (its parser's
    defaults and the scale rules it applies): :meth:`ScriptConfig.options`, which the experiment's
    recipe reads its values from (:mod:`~dynkit.experiments.recipes`).

    Run as ``python -m dynkit.experiments.<name>``, the module executes a second time as
    ``__main__`` after the package registered it: that copy only serves its command line and
    registers nothing.
    """
    if main.__module__ == "__main__":
        return

    def run(config: ScriptConfig, *, seed: int, out: Path, device: str) -> dict:
        argv = [*config.args, "--out", str(out), "--seed", str(seed), "--quiet"]
        if config.checkpoints:
            # in the runner's work folder: emptied when the shard's identity changes, so a run
            # never resumes from another code's or config's state, and removed with the record
            argv += ["--checkpoints", str(Path(out) / WORK_DIR / "checkpoints")]
        result = main(argv)
        return {"metrics": {k: float(v) for k, v in metrics(result).items()}}

    run.__doc__ = summary or (sys.modules[main.__module__].__doc__ or name).strip().splitlines()[0]
    scales = {
        scale: _with_options(ScriptConfig(tuple(args), checkpoints), options)
        for scale, args in (("smoke", smoke), ("cpu", cpu), ("full", full))
    }
    register(name, **scales, module=main.__module__)(run)
