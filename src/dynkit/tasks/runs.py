"""One entry point for every training experiment: ``run_training(model, task, ...)``.

Heavy-ball neural ODEs train on ``point_cloud``, ``digits`` and ``fashion_mnist``
(:mod:`dynkit.tasks.node_runs`); the CSAODE variants ``csark``, ``csarkf``, ``csaark`` train on the
sentence-classification sets (:mod:`dynkit.tasks.text`).
"""

from __future__ import annotations

from pathlib import Path

from .. import _checks
from . import node_runs, text

__all__ = ["CSAODE_SOLVERS", "TASKS", "run_training"]

CSAODE_SOLVERS = {"csark": "rk", "csarkf": "rkf", "csaark": "ark"}
TASKS = (*node_runs.TRAINING_TASKS, *text.DATASETS)


def run_training(
    model: str,
    task: str,
    *,
    epochs: int | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    resume: bool = False,
    quiet: bool = False,
    method: str | None = None,
    tol: float | None = None,
    full: bool = False,
    data_dir: str | Path | None = None,
    solver: str | None = None,
    device: str = "cpu",
    **options,
) -> dict:
    """Train ``model`` on ``task`` with checkpoints every epoch (``resume`` continues); return the
    metrics.

    ``method`` and ``tol`` set the ODE solver of the neural-ODE models (default ``"dopri5"`` and the
    task's tolerance); a CSAODE model's solver is its name (CSARK: RK4, CSARKF: RKF45, CSAARK:
    ARK4), so ``method``, ``tol`` and a ``solver`` other than ``"dynkit"`` are refused there, and
    ``data_dir`` is the folder of the standard sentence-classification files. ``solver`` is the
    neural-ODE models' engine (``"dynkit"``, the default, or ``"torchdiffeq"``). ``device`` is where
    the model and its data train (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``): one this machine
    lacks is a ``ValueError`` naming it and what the machine has, before any data is loaded. Other
    ``options`` go to the task's own trainer.
    """
    device = _checks.device(device)
    if not isinstance(task, str):
        raise TypeError(f"task must be one of {TASKS}, got {task!r}")
    if task in text.DATASETS:
        variant = CSAODE_SOLVERS.get(str(model).lower())
        if variant is None:
            raise ValueError(
                f"model for the text task {task!r} must be one of {sorted(CSAODE_SOLVERS)}, "
                f"got {model!r}"
            )
        if tol is not None:
            raise ValueError(
                "tol does not apply to CSAODE models: their solver is chosen by the model name"
            )
        if solver not in (
            None,
            "dynkit",
        ):  # CSAODE integrates with dk.solve's RK4 / RKF45 / ARK4 only
            raise ValueError(
                f"solver must be 'dynkit' for the CSAODE models (they solve with dk.solve), "
                f"got {solver!r}"
            )
        # "dopri5" is let through as the command line's default, which the user did not choose
        if method not in (None, "dopri5"):
            raise ValueError(
                f"method does not apply to CSAODE models (their solver is the model name: "
                f"{', '.join(f'{k}: {v}' for k, v in CSAODE_SOLVERS.items())}), got {method!r}"
            )
        kwargs = {} if data_dir is None else {"data_dir": data_dir}
        return text.train_csaode(
            dataset=task,
            solver=variant,
            epochs=epochs,
            out=out,
            seed=seed,
            resume=resume,
            quiet=quiet,
            full=full,
            device=device,
            **kwargs,
            **options,
        )
    if task in node_runs.TRAINING_TASKS:
        if data_dir is not None:
            raise ValueError(f"data_dir applies to the text tasks {text.DATASETS}, not to {task!r}")
        return node_runs.run_training(
            model,
            task,
            epochs=epochs,
            out=out,
            seed=seed,
            resume=resume,
            quiet=quiet,
            method=method or "dopri5",
            tol=tol,
            full=full,
            device=device,
            **({} if solver is None else {"solver": solver}),
            **options,
        )
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")
