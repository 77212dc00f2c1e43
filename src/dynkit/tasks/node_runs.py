"""Training the five ODE models on the review's tasks, with NFE per batch and exact resume.

:func:`run_training` is what ``dynkit train`` calls: it builds the model with
:func:`dynkit.models.from_paper`, loads the task's data offline, and trains it with
:func:`dynkit.tasks.training.fit` (a checkpoint after every epoch; ``resume=True`` continues from it
and ends with exactly the metrics of an uninterrupted run with the same seed).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import _checks as check
from ..diagnostics.nfe import backward_nfe, forward_nfe, reset_nfe
from ..io import check_output_path, check_writable_dir, write_json
from ..models.node_paper import check_model_name, from_paper
from ..models.ode_block import DEFAULT_SOLVER, check_block_options
from .training import fit

__all__ = [
    "TRAINING_TASKS",
    "OBJECTIVES",
    "DESIGN_OBJECTIVES",
    "RESULT_NAME",
    "TaskSettings",
    "SETTINGS",
    "load_task",
    "loss_and_accuracy",
    "trivial_loss",
    "batches_of",
    "nfe_step",
    "evaluator",
    "run_training",
    "train_model",
]

TRAINING_TASKS = ("point_cloud", "digits", "fashion_mnist")
OBJECTIVES = ("cross_entropy", "mse")
"""``"cross_entropy"``: logits (one for two classes); ``"mse"``: one bounded output against the labels mapped to -1
and 1 (the review authors' point cloud, ``nn.MSELoss`` on a ``hardtanh(-1, 1)`` output), positive read as class 1."""  # noqa: E501
DESIGN_OBJECTIVES = {"dynkit": "cross_entropy", "authors": "mse"}
"""The objective each model design trains (``design="authors"`` exists for the point cloud only)."""
RESULT_NAME = "result.json"


@dataclass(frozen=True)
class TaskSettings:
    """Budget of one task: the review's batch size and learning rate (Table 4) and our epoch
    counts."""

    batch_size: int
    lr: float
    epochs: int
    epochs_full: int
    n_train: int | None = None  # None: all
    n_test: int | None = None
    n_train_full: int | None = None
    n_test_full: int | None = None

    def __post_init__(self):
        for name in ("batch_size", "epochs", "epochs_full"):
            check.integer(getattr(self, name), name, 1)
        check.real(self.lr, "lr", low=0.0, low_open=True)
        for name in ("n_train", "n_test", "n_train_full", "n_test_full"):
            if getattr(self, name) is not None:
                check.integer(getattr(self, name), name, 1)


SETTINGS = {
    # Point cloud: Table 4 gives batch 50, lr 0.01 (120 points: 3 batches an epoch).
    "point_cloud": TaskSettings(batch_size=50, lr=0.01, epochs=30, epochs_full=100),
    # Digits stand in for MNIST: MNIST's batch 64 and lr 1e-3 (Table 4), a few epochs on CPU.
    "digits": TaskSettings(batch_size=64, lr=1e-3, epochs=3, epochs_full=15),
    # Fashion-MNIST with the MNIST-size models: a subset on CPU, all 60000/10000 with full=True.
    "fashion_mnist": TaskSettings(
        batch_size=64, lr=1e-3, epochs=1, epochs_full=10, n_train=1024, n_test=512
    ),
}


def load_task(task: str, *, seed: int = 0, full: bool = False):
    """(x_train, y_train, x_test, y_test) of ``task`` (the point cloud is its own test set, as in
    the review)."""
    if task not in TRAINING_TASKS:
        raise ValueError(f"task must be one of {TRAINING_TASKS}, got {task!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not isinstance(full, bool):
        raise TypeError(f"full must be a bool, got {full!r}")
    if task == "point_cloud":
        from .point_cloud import point_cloud

        x, y = point_cloud(seed=seed)
        return x, y, x, y
    if task == "digits":
        from .images import load_digits_split

        return load_digits_split(seed=seed)
    if task == "fashion_mnist":
        from .images import fashion_mnist_available, load_idx_images

        if not fashion_mnist_available():
            raise ValueError(
                "task 'fashion_mnist' needs the IDX files of Fashion-MNIST in "
                "/usr/share/datasets/fashion-mnist (apt-get install -y dataset-fashion-mnist)"
            )
        s = SETTINGS[task]
        return load_idx_images(
            n_train=s.n_train_full if full else s.n_train,
            n_test=s.n_test_full if full else s.n_test,
        )
    raise ValueError(f"task must be one of {TRAINING_TASKS}, got {task!r}")


def _check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return objective


def loss_and_accuracy(
    logits: torch.Tensor, y: torch.Tensor, objective: str = "cross_entropy"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Binary (one logit, BCE) or multi-class (cross-entropy) loss and accuracy; with
    ``objective="mse"`` the mean squared error of one output against ``2 y - 1``
    (:data:`OBJECTIVES`)."""
    _check_objective(objective)
    check.tensor(
        logits, "logits", ndim=2, floating=True, finite=True, shape_hint="(batch, classes)"
    )
    if objective == "mse" and logits.shape[-1] != 1:
        raise ValueError(
            f"logits must have one output per row with objective 'mse', got shape "
            f"{tuple(logits.shape)}"
        )
    check.tensor(y, "y", ndim=1, shape_hint="(batch,)")
    if len(y) != len(logits):
        raise ValueError(f"y must have one label per row of logits ({len(logits)}), got {len(y)}")
    classes = max(logits.shape[-1], 2)
    if y.is_floating_point() and logits.shape[-1] > 1:
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= classes):
        raise ValueError(
            f"y must be labels in [0, {classes}), got values in [{int(y.min())}, {int(y.max())}]"
        )
    if logits.shape[-1] == 1:
        logits = logits.squeeze(-1)
        if objective == "mse":
            return F.mse_loss(logits, 2 * y.float() - 1), (
                (logits > 0).long() == y.long()
            ).float().mean()
        return F.binary_cross_entropy_with_logits(logits, y.float()), (
            (logits > 0).long() == y.long()
        ).float().mean()
    return F.cross_entropy(logits, y), (logits.argmax(-1) == y).float().mean()


def trivial_loss(y: torch.Tensor, objective: str = "cross_entropy") -> float:
    """The loss of the best constant predictor of the labels ``y``: the entropy of their
    frequencies (cross-entropy), or the variance of ``2 y - 1`` (``"mse"``, whose best constant
    is their mean)."""
    _check_objective(objective)
    check.tensor(y, "y", ndim=1, shape_hint="(batch,)")
    if len(y) == 0 or not bool(torch.all(y == y.round())) or float(y.min()) < 0:
        raise ValueError(
            f"y must be a non-empty tensor of class labels (whole numbers >= 0), got {y!r:.80}"
        )
    if objective == "mse":
        return float((2 * y.double() - 1).var(unbiased=False))
    freq = torch.bincount(y.long()).double() / len(y)
    freq = freq[freq > 0]
    return float(-(freq * freq.log()).sum())


def batches_of(x: torch.Tensor, y: torch.Tensor, batch_size: int):
    """``batches(generator)`` for :func:`fit`: a seeded shuffle, then consecutive batches."""
    _check_data(x, y)
    check.integer(batch_size, "batch_size", 1)

    def batches(generator: torch.Generator):
        order = torch.randperm(len(y), generator=generator, device=generator.device).to(y.device)
        for i in range(0, len(y), batch_size):
            idx = order[i : i + batch_size]
            yield x[idx], y[idx]

    batches.batches_per_epoch = -(-len(y) // batch_size)  # the progress bar's total (fit)
    return batches


def nfe_step(
    model: torch.nn.Module, batch, objective: str = "cross_entropy"
) -> tuple[torch.Tensor, dict]:
    """One training batch with its forward and backward NFE (the loss of ``objective``,
    :data:`OBJECTIVES`).

    The backward NFE has to be read right after ``loss.backward()``, so this step differentiates
    the loss itself: pass it to :func:`fit` with ``backward=False``.
    """
    check.module(model, "model")
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError(
            f"batch must be a pair (x, y), got {type(batch).__name__} of length "
            f"{len(batch) if hasattr(batch, '__len__') else '?'}"
        )
    x, y = batch
    start = time.perf_counter()
    reset_nfe(model)
    loss, acc = loss_and_accuracy(model(x), y, objective)
    nfe_forward = forward_nfe(model)
    loss.backward()
    metrics = {
        "train_acc": float(acc),
        "forward_nfe": nfe_forward,
        "backward_nfe": backward_nfe(model),
        "batch_time": time.perf_counter() - start,
    }
    return loss, metrics


def _clipped(step, max_norm: float):
    """``step`` (a :func:`fit` step that differentiates itself, such as :func:`nfe_step`), then
    the gradients' global norm clipped to ``max_norm`` (``torch.nn.utils.clip_grad_norm_``)
    before the optimiser's step."""

    def clipped_step(model: torch.nn.Module, batch):
        loss, metrics = step(model, batch)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        return loss, metrics

    return clipped_step


def _check_data(x, y) -> None:
    check.tensor(x, "x")
    check.tensor(y, "y", ndim=1)
    if len(x) != len(y) or len(y) == 0:
        raise ValueError(
            f"x and y must hold the same, positive number of samples, got {len(x)} and {len(y)}"
        )


def evaluator(
    x: torch.Tensor, y: torch.Tensor, batch_size: int = 256, objective: str = "cross_entropy"
):
    """``evaluate(model)`` for :func:`fit`: test loss (of ``objective``), accuracy and forward
    NFE over ``(x, y)``."""
    _check_data(x, y)
    _check_objective(objective)
    check.integer(batch_size, "batch_size", 1)

    def evaluate(model: torch.nn.Module) -> dict:
        total_loss = total_correct = nfe = 0.0
        n_batches = 0
        for i in range(0, len(y), batch_size):
            reset_nfe(model)
            loss, acc = loss_and_accuracy(
                model(x[i : i + batch_size]), y[i : i + batch_size], objective
            )
            n = len(y[i : i + batch_size])
            total_loss += float(loss) * n
            total_correct += float(acc) * n
            nfe += forward_nfe(model)
            n_batches += 1
        return {
            "test_loss": total_loss / len(y),
            "test_acc": total_correct / len(y),
            "test_nfe": nfe / n_batches,
        }

    return evaluate


def _one_step_over_interval(solver: str, method: str) -> dict:
    """``{"step_size": 1.0}`` for a fixed-step dynkit method, else ``{}``.

    The models integrate over [0, 1]. Given no step size, torchdiffeq's fixed-step methods take one
    step per output interval; :func:`dynkit.solve` asks for the step, so
    ``dynkit train --method rk4`` gets that same single step, recorded in the run's config.
    """
    from ..solvers import METHODS

    if solver == "dynkit" and method in METHODS and not METHODS[method].adaptive:
        return {"step_size": 1.0}
    return {}


def run_training(
    model: str,
    task: str,
    *,
    epochs: int | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    resume: bool = False,
    quiet: bool = False,
    method: str = "dopri5",
    tol: float | None = None,
    full: bool = False,
    solver: str = DEFAULT_SOLVER,
    adjoint: bool | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    clip_norm: float | None = None,
    device: str | torch.device = "cpu",
    design: str = "dynkit",
) -> dict:
    """Train ``model`` on ``task``; checkpoint each epoch under ``out``; return final metrics and
    history.

    Parameters
    ----------
    model : {"node", "anode", "sonode", "hbnode", "ghbnode"}
    task : {"point_cloud", "digits", "fashion_mnist"}
        ``fashion_mnist`` runs the MNIST-size models of Table 5 and needs the Debian package's IDX
        files.
    epochs : int, optional
        Defaults to the task's CPU budget (:data:`SETTINGS`), or its full budget with ``full=True``.
    out : path, optional
        Folder for ``checkpoint.pt`` (every epoch) and ``result.json``.
    seed : int
        Seeds the model's initialisation, the data split and every epoch's shuffle.
    resume : bool
        Continue from ``out/checkpoint.pt``.
    method, tol, solver, adjoint
        ODE solver settings (``rtol = atol = tol``, default: the review's for the task). ``solver``
        is ``"dynkit"`` (:func:`dynkit.solve`, the default) or ``"torchdiffeq"`` (the papers' code).
        The gradient and the backward NFE are the adjoint solve's with ``adjoint=True`` or ``None``
        (the review's setting, Sect. 3.4.2; :mod:`dynkit.solvers.adjoint` or torchdiffeq's
        ``odeint_adjoint``), else backpropagation through the solver's steps.
    full : bool
        The task's full budget (all of Fashion-MNIST, more epochs).
    clip_norm : float, optional
        Clip the gradients' global norm to this before each step (the review authors' MNIST runs:
        10.0); None: no clipping.
    device : str or torch.device
        Where the model and the data live while training: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``, one this machine has (else a ``ValueError`` naming what it has, before any data
        is loaded).
    design : {"dynkit", "authors"}
        The models (:func:`~dynkit.models.node_paper.from_paper`); ``"authors"`` (the point cloud
        only): the review authors' notebook models, trained by the mean squared error of their
        bounded output (:data:`DESIGN_OBJECTIVES`).

    Returns
    -------
    dict
        ``{"model", "task", "final": {...last epoch's metrics...}, "history": [...per epoch...],
        "n_parameters", "config"}``.
    """
    return train_model(
        model,
        task,
        epochs=epochs,
        out=out,
        seed=seed,
        resume=resume,
        quiet=quiet,
        method=method,
        tol=tol,
        full=full,
        solver=solver,
        adjoint=adjoint,
        lr=lr,
        batch_size=batch_size,
        clip_norm=clip_norm,
        device=device,
        design=design,
    )[1]


def train_model(
    model: str,
    task: str,
    *,
    epochs: int | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    resume: bool = False,
    quiet: bool = False,
    method: str = "dopri5",
    tol: float | None = None,
    full: bool = False,
    solver: str = DEFAULT_SOLVER,
    adjoint: bool | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    clip_norm: float | None = None,
    device: str | torch.device = "cpu",
    design: str = "dynkit",
) -> tuple[torch.nn.Module, dict]:
    """:func:`run_training`, returning the trained module too."""
    name = check_model_name(model)
    device = torch.device(check.device(device))
    if task not in TRAINING_TASKS:
        raise ValueError(f"task must be one of {TRAINING_TASKS}, got {task!r}")
    settings = SETTINGS[task]
    epochs = (settings.epochs_full if full else settings.epochs) if epochs is None else epochs
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    for flag, value in (("resume", resume), ("quiet", quiet), ("full", full)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    if adjoint is not None and not isinstance(adjoint, bool):
        raise TypeError(f"adjoint must be a bool or None, got {adjoint!r}")
    if resume and out is None:
        raise ValueError("resume=True needs out (the folder holding checkpoint.pt), got out=None")
    if tol is not None and (
        isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1
    ):
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    if lr is not None and (
        isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < math.inf
    ):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if clip_norm is not None and (
        isinstance(clip_norm, bool)
        or not isinstance(clip_norm, (int, float))
        or not 0 < clip_norm < math.inf
    ):
        raise ValueError(f"clip_norm must be a positive finite number or None, got {clip_norm!r}")
    if design not in DESIGN_OBJECTIVES or (design == "authors" and task != "point_cloud"):
        raise ValueError(
            f"design must be 'dynkit', or 'authors' for task 'point_cloud', got {design!r} "
            f"for task "
            f"{task!r}"
        )
    objective = DESIGN_OBJECTIVES[design]
    adjoint = (
        True if adjoint is None else adjoint
    )  # the review counts the adjoint solve's backward NFE
    options = {"solver": solver, "method": method, "adjoint": adjoint}
    if tol is not None:
        options.update(rtol=tol, atol=tol)
    check_block_options(
        **{**options, **_one_step_over_interval(solver, method)}
    )  # before any data or training
    options.update(_one_step_over_interval(solver, method))
    if out is not None:
        check_writable_dir(out, "out")
        check_output_path(Path(out) / RESULT_NAME, "out")
    config = {
        "model": name,
        "task": task,
        "epochs": epochs,
        "seed": seed,
        "method": method,
        "tol": tol,
        "solver": solver,
        "adjoint": adjoint,
        "full": full,
        **_one_step_over_interval(solver, method),
        "lr": lr or settings.lr,
        "batch_size": batch_size or settings.batch_size,
        "settings": asdict(settings),
        # recorded only when set: the manifests (and resumes) of runs from before the option stay
        # the same
        **({"clip_norm": float(clip_norm)} if clip_norm is not None else {}),
        **({"design": design} if design != "dynkit" else {}),
    }
    x_train, y_train, x_test, y_test = (a.to(device) for a in load_task(task, seed=seed, full=full))
    torch.manual_seed(seed)
    net = from_paper(name, task, design=design, **options).to(device)
    config["tol"] = net.ode.block.rtol
    if tuple(x_train.shape[1:]) != net.in_shape:
        raise ValueError(
            f"task {task!r} gives inputs of shape {tuple(x_train.shape[1:])}, "
            f"model expects {net.in_shape}"
        )
    # every option that changes the numbers, and the data it trains on: a resume must match all of
    # them
    manifest = {
        **{k: v for k, v in config.items() if k != "epochs"},
        "kind": "neural_ode",
        "n_train": len(y_train),
        "n_test": len(y_test),
    }
    optimizer = torch.optim.Adam(net.parameters(), lr=config["lr"])
    step = functools.partial(nfe_step, objective=objective)
    step = step if clip_norm is None else _clipped(step, clip_norm)
    history = fit(
        net,
        optimizer,
        batches_of(x_train, y_train, config["batch_size"]),
        step,
        epochs,
        seed=seed,
        evaluate=evaluator(x_test, y_test, objective=objective),
        checkpoint_dir=out,
        resume=resume,
        progress=not quiet,
        description=f"{name}/{task}",
        backward=False,  # nfe_step differentiates itself
        manifest=manifest,
    )
    from ..models.node_paper import count_parameters

    result = {
        "model": name,
        "task": task,
        "final": history.epochs[-1],
        "history": history.epochs,
        "n_parameters": count_parameters(net),
        "config": config,
        "trivial_train_loss": trivial_loss(y_train.cpu(), objective),
    }
    if out is not None:
        write_json(Path(out) / RESULT_NAME, result, option="out")
    if not quiet:
        final = result["final"]
        print(
            f"{name}/{task}: test_acc={final['test_acc']:.4f} "
            f"forward_nfe={final['forward_nfe']:.1f} "
            f"backward_nfe={final['backward_nfe']:.1f}"
        )
    return net, result
