"""Image classification with the five ODE models (Figs. 6/10 of the review, on offline data).

Trains NODE, ANODE, SONODE, HBNODE and GHBNODE with the same budget on scikit-learn's 8x8 digits
(the CPU stand-in for MNIST; ``--task fashion_mnist`` runs the MNIST-size models of Table 5 on
Fashion-MNIST) and records per epoch the test accuracy, forward/backward NFE per batch (adjoint
method, as in the review) and the training time.

Its own models: every model its rows compare is trained here, from a seed of this experiment's own
stream (:func:`model_seed`), never the seed another experiment trains with. ``node_trained`` trains
HBNODE on the same digits with the same budget: with the run's seed passed through, its HBNODE was
the very model this experiment reported (identical numbers in every seed), so its rows were no
independent confirmation.

    python -m dynkit.experiments.node.node_images --out analysis/results/node_images
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from dynkit.io import save_figure, write_json
from dynkit.models.node_paper import PAPER_TOLERANCE
from dynkit.tasks.node_runs import SETTINGS, train_model

from ..arg_types import bounded
from ..scripting import COLORS, add_solver_option, parser, pyplot, register_script, setup


SEED_STREAM = "node_images"
"""The name this experiment's model seeds are derived from (:func:`model_seed`)."""


def model_seed(seed: int) -> int:
    """The seed the models of run ``seed`` train with (data split and initialisation): the first
    31 bits of SHA-256 of ``"node_images:<seed>"``, a stream of this experiment's own, disjoint
    in practice from the small seeds (0, 1, ...) the other experiments pass straight through
    (:func:`dynkit.tasks.node_runs.train_model`)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    digest = hashlib.sha256(f"{SEED_STREAM}:{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def build_parser():
    p = parser(__doc__.splitlines()[0], "results/node_images")
    p.add_argument("--task", default="digits", choices=("digits", "fashion_mnist"))
    p.add_argument(
        "--epochs", type=int, default=None, help="default: the task's CPU (or --full) budget"
    )
    p.add_argument(
        "--tol", type=float, default=None, help="rtol = atol (default: 1e-3, the review's code)"
    )
    p.add_argument(
        "--clip-norm",
        type=bounded(float, "a positive finite number", lambda v: 0 < v < math.inf),
        default=None,
        help="clip the gradients' global norm to this (the review authors' MNIST runs: 10); "
        "default none",
    )
    p.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        help="keep each model's checkpoint in DIR/<model>/ (for a later NFE-vs-tolerance sweep)",
    )
    add_solver_option(p)
    return p


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.node.recipe`): the command line's, with the task's budget
    (:data:`dynkit.tasks.node_runs.SETTINGS`: epochs, batch size, learning rate) and tolerance
    (:data:`dynkit.models.node_paper.PAPER_TOLERANCE`) where it gives none."""
    args = build_parser().parse_args(argv)
    task = SETTINGS[args.task]
    return {
        "task": args.task,
        "models": tuple(args.models),
        "full": args.full,
        "epochs": args.epochs or (task.epochs_full if args.full else task.epochs),
        "tol": PAPER_TOLERANCE[args.task] if args.tol is None else args.tol,
        "solver": args.solver,
        "method": "dopri5",
        "adjoint": True,
        "batch_size": task.batch_size,
        "lr": task.lr,
        "clip_norm": args.clip_norm,
    }


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    command = setup(args)
    seed = model_seed(args.seed)
    results = run(seed, args.quiet, args.checkpoints, **options(argv))
    summary = {
        name: {k: r["final"][k] for k in ("test_acc", "forward_nfe", "backward_nfe", "batch_time")}
        for name, r in results.items()
    }
    if not args.quiet:
        for name, s in summary.items():
            print(
                f"{name:8s} acc {s['test_acc']:.4f}  forward NFE {s['forward_nfe']:6.1f}  "
                f"backward NFE {s['backward_nfe']:6.1f}  s/batch {s['batch_time']:.3f}"
            )
    # the command line's values, as recorded before the options were resolved here (None: the task's
    # default)
    write_json(
        args.out / "node_images.json",
        {"summary": summary, "models": results},
        config={
            "task": args.task,
            "seed": args.seed,
            "model_seed": seed,
            "full": args.full,
            "epochs": args.epochs,
            "tol": args.tol,
            "solver": args.solver,
            "settings": SETTINGS[args.task].__dict__,
        },
        command=command,
    )
    plot(results, args.out / "node_images.png", args.task)
    return results


def run(
    seed: int,
    quiet: bool,
    checkpoints: Path | None,
    *,
    task: str,
    models: tuple[str, ...],
    full: bool,
    epochs: int,
    tol: float,
    solver: str,
    method: str,
    adjoint: bool,
    batch_size: int,
    lr: float,
    clip_norm: float | None,
) -> dict:
    """Train each of ``models`` on ``task`` from the model seed ``seed`` (:func:`model_seed`);
    per model its history, final metrics and config."""
    results = {}
    for name in models:
        ckpt = checkpoints / name if checkpoints is not None else None
        _, res = train_model(
            name,
            task,
            epochs=epochs,
            seed=seed,
            full=full,
            quiet=quiet,
            out=ckpt,
            tol=tol,
            solver=solver,
            method=method,
            adjoint=adjoint,
            batch_size=batch_size,
            lr=lr,
            clip_norm=clip_norm,
        )
        n_batches = (
            -(-res["config"]["settings"]["n_train"] // res["config"]["batch_size"])
            if res["config"]["settings"]["n_train"]
            else None
        )
        results[name] = {
            "n_parameters": res["n_parameters"],
            "history": res["history"],
            "final": res["final"],
            "config": res["config"],
            "batches_per_epoch": n_batches,
        }
    return results


def plot(results: dict, path, task: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for name, r in results.items():
        epochs = [e["epoch"] for e in r["history"]]
        for ax, key in zip(axes[:3], ("forward_nfe", "backward_nfe", "test_acc")):
            ax.plot(
                epochs,
                [e[key] for e in r["history"]],
                marker="o",
                color=COLORS[name],
                label=name.upper(),
            )
        time_per_epoch = [e["batch_time"] for e in r["history"]]
        axes[3].plot(epochs, time_per_epoch, marker="o", color=COLORS[name], label=name.upper())
    for ax, title in zip(
        axes,
        (
            "forward NFE per batch",
            "backward NFE per batch (adjoint)",
            "test accuracy",
            "training time per batch (s)",
        ),
    ):
        ax.set_title(title)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"{task}: the five ODE models, same budget")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _metrics(results: dict) -> dict:
    out = {}
    for name, r in results.items():
        first, last = r["history"][0], r["history"][-1]
        out.update(
            {
                f"{name}.test_acc": last["test_acc"],
                f"{name}.forward_nfe": last["forward_nfe"],
                f"{name}.backward_nfe": last["backward_nfe"],
                f"{name}.forward_nfe_growth": last["forward_nfe"]
                / max(first["forward_nfe"], 1e-12),
            }
        )
    return out


register_script(
    "node_images",
    main,
    metrics=_metrics,
    smoke=("--epochs", "1", "--models", "node", "hbnode", "--tol", "1e-2"),
    # cpu: 3 epochs at rtol 1e-5 (1 epoch at 1e-3 left every model on dopri5's floor of 20
    # evaluations per batch and ANODE/HBNODE below 50 % in one seed); the authors' clipping at 10
    # (until 2026-11-28 the cpu scale trained unclipped)
    cpu=(
        "--epochs",
        "3",
        "--tol",
        "1e-5",
        "--models",
        "anode",
        "sonode",
        "hbnode",
        "--clip-norm",
        "10",
    ),
    full=("--full", "--task", "fashion_mnist", "--clip-norm", "10"),
    options=options,
)


if __name__ == "__main__":
    main()
