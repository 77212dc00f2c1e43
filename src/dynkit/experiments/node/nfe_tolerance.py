"""NFE vs solver tolerance of trained neural ODEs (Fig. 11 of the review): an experiment, since it
trains.

The counting itself is :mod:`dynkit.diagnostics.nfe` (pure measurement); this module builds or
trains the models (:mod:`dynkit.models`, :mod:`dynkit.tasks`) and sweeps the tolerance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
from torch import nn

from ...diagnostics.nfe import BatchNFE, counters, tolerance_key
from ...models.node_paper import check_model_name, from_paper
from ...models.ode_block import DEFAULT_SOLVER, set_tolerance
from ...tasks.node_runs import load_task, loss_and_accuracy, train_model

UNTRAINED = "UNTRAINED"
"""The label of a model measured as initialised (``train_epochs=0``): in the table, the JSON and the figure."""  # noqa: E501
GIVEN_MODULES = "unknown (given trained modules)"
"""The epochs recorded for modules passed in without ``trained_epochs``: never 0, which they need not be."""  # noqa: E501


class SweepResults(dict):
    """:func:`nfe_vs_tolerance`'s results, ``{model: {tolerance_key: {...}}}``, with
    :attr:`training`: ``{model: {"epochs": int or GIVEN_MODULES, "state": str}}`` (``state``
    starts with ``UNTRAINED`` for a model measured as initialised)."""

    def __init__(self, results: dict, training: dict):
        super().__init__(results)
        self.training = training


def training_record(epochs: int | str) -> dict:
    """What is recorded of a model's training: its epochs and, in words, its state."""
    if epochs == 0:
        return {
            "epochs": 0,
            "state": f"{UNTRAINED} (as initialised: the sweep measures the initial vector field)",
        }
    if isinstance(epochs, int):
        return {"epochs": epochs, "state": f"trained for {epochs} epoch{'s' * (epochs != 1)}"}
    return {
        "epochs": GIVEN_MODULES,
        "state": "given as a module (its training not known to the sweep)",
    }


def is_untrained(record: dict | None) -> bool:
    return bool(record) and str(record.get("state", "")).startswith(UNTRAINED)


def _named_models(
    models,
    task: str,
    adjoint: bool,
    solver: str,
    method: str,
    seed: int,
    train_epochs: int,
    quiet: bool,
    trained_epochs=None,
) -> tuple[dict[str, nn.Module], dict]:
    if isinstance(models, (str, nn.Module)):
        models = (models,)
    items = models.items() if isinstance(models, dict) else [(None, m) for m in models]
    named, training, modules = {}, {}, []
    for key, model in items:
        if isinstance(model, nn.Module):
            if not counters(model):
                raise ValueError(
                    f"models must be names or modules holding an NFECounter, got "
                    f"{type(model).__name__} without one"
                )
            key = key or type(model).__name__.lower()
            key = key if key not in named else f"{key}_{len(named)}"
            named[key], modules = model, [*modules, key]
            continue
        name = check_model_name(model)
        if train_epochs:
            named[key or name] = train_model(
                name,
                task,
                epochs=train_epochs,
                seed=seed,
                quiet=quiet,
                solver=solver,
                method=method,
                adjoint=adjoint,
            )[0]
        else:
            torch.manual_seed(seed)
            named[key or name] = from_paper(
                name, task, solver=solver, method=method, adjoint=adjoint
            )
        training[key or name] = training_record(train_epochs)
    for key in modules:
        given = trained_epochs.get(key) if isinstance(trained_epochs, dict) else trained_epochs
        training[key] = training_record(GIVEN_MODULES if given is None else given)
    return named, {key: training[key] for key in named}


def _epochs(value, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{name} must be an integer >= 0{' or None' if allow_none else ''}, got {value!r:.60}"
        )


def nfe_vs_tolerance(
    models: Sequence | dict = ("node", "anode", "sonode", "hbnode", "ghbnode"),
    task: str = "digits",
    tolerances: Iterable[float] = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7),
    *,
    n_batches: int = 2,
    batch_size: int = 16,
    seed: int = 0,
    out: str | Path | None = None,
    quiet: bool = False,
    adjoint: bool | None = None,
    solver: str = DEFAULT_SOLVER,
    method: str = "dopri5",
    train_epochs: int = 0,
    trained_epochs: int | dict | None = None,
) -> SweepResults:
    """Forward and backward NFE per batch against the solver tolerance ``rtol = atol`` (Fig. 11 of
    the review).

    Parameters
    ----------
    models : sequence or dict
        Model names (built by :func:`dynkit.models.from_paper` for ``task``, as initialised, or
        trained for ``train_epochs`` epochs first) or modules holding an :class:`NFECounter`
        (their tolerance is changed in place); a dict gives the result names.
    task : str
        Whose test inputs feed the models (``"digits"``, ``"point_cloud"``, ``"fashion_mnist"``).
    tolerances : iterable of float
    n_batches, batch_size : int
        Batches of the test set measured at each tolerance (the same batches for every model).
    out : path, optional
        Writes ``nfe_vs_tolerance.json`` and ``nfe_vs_tolerance.png`` there.
    adjoint : bool, optional
        Backward NFE of the adjoint solve (``True`` or ``None``: the review's setting) or of
        backpropagation through the steps (``False``); for models given by name.
    solver : {"dynkit", "torchdiffeq"}
        The engine of the models given by name (:class:`~dynkit.models.ODEBlock`'s ``solver``).
    train_epochs : int
        Epochs to train the models given by name first; 0 (default): measured as initialised,
        labelled :data:`UNTRAINED` in the results' ``training``, the JSON and the figure.
    trained_epochs : int or dict, optional
        The epochs the modules given were trained for (one number, or by result name), recorded as
        given; default: recorded as :data:`GIVEN_MODULES` (never 0).

    Returns
    -------
    SweepResults
        A dict, ``results[model][tolerance_key(tol)] = {"forward_nfe": {"mean", "std"}, "backward_nfe": {...},
        "per_batch": {"forward": [...], "backward": [...]}}``, keys like ``"1e-05"``, whose ``training`` says
        how each model was trained. ``out`` gets them through :func:`write_nfe_sweep` (one layout for this
        function and ``dynkit nfe-sweep``).
    """  # noqa: E501
    tolerances = [float(t) for t in tolerances]
    if not tolerances or not all(t > 0 for t in tolerances):
        raise ValueError(f"tolerances must be positive numbers, got {tolerances!r}")
    for label, value in (("n_batches", n_batches), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    _epochs(train_epochs, "train_epochs")
    for key, value in (
        trained_epochs.items() if isinstance(trained_epochs, dict) else [(None, trained_epochs)]
    ):
        _epochs(
            value, "trained_epochs" if key is None else f"trained_epochs[{key!r}]", allow_none=True
        )
    adjoint = True if adjoint is None else adjoint
    named, training = _named_models(
        models, task, adjoint, solver, method, seed, train_epochs, quiet, trained_epochs
    )
    _, _, x, y = load_task(task, seed=seed)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed), device="cpu")
    batches = [order[i * batch_size : (i + 1) * batch_size] for i in range(n_batches)]
    if any(len(b) == 0 for b in batches):
        raise ValueError(
            f"n_batches * batch_size must be at most the {len(y)} test inputs of {task!r}, "
            f"got {n_batches} * {batch_size}"
        )
    results: dict = {}
    progress = None if quiet else _progress(len(named) * len(tolerances) * n_batches)
    for name, model in named.items():
        model.train()
        device = next(model.parameters()).device  # the data follow the model
        results[name] = {}
        for tol in tolerances:
            set_tolerance(model, tol)
            fwd, bwd = [], []
            for idx in batches:
                model.zero_grad(set_to_none=True)
                with BatchNFE(model) as nfe:
                    loss, _ = loss_and_accuracy(model(x[idx].to(device)), y[idx].to(device))
                    nfe.mark_forward()
                    loss.backward()
                fwd.append(nfe.forward)
                bwd.append(nfe.backward)
                if progress is not None:
                    progress.update(1)
            results[name][tolerance_key(tol)] = {
                "forward_nfe": {"mean": float(np.mean(fwd)), "std": float(np.std(fwd))},
                "backward_nfe": {"mean": float(np.mean(bwd)), "std": float(np.std(bwd))},
                "per_batch": {"forward": fwd, "backward": bwd},
            }
        model.zero_grad(set_to_none=True)
    if progress is not None:
        progress.close()
    results = SweepResults(results, training)
    if out is not None:
        config = {
            "models": list(named),
            "task": task,
            "tolerances": tolerances,
            "n_batches": n_batches,
            "batch_size": batch_size,
            "seed": seed,
            "adjoint": adjoint,
            "solver": solver,
            "method": method,
            "train_epochs": train_epochs,
        }
        write_nfe_sweep(results, out, config=config)
    return results


def sweep_training(results: dict, config: dict | None = None) -> dict:
    """Each model's training record: the results' own (:class:`SweepResults`, or a loaded
    JSON's), else from ``config["train_epochs"]`` (results of a sweep of named models)."""
    training = getattr(results, "training", None) or (
        results.get("training") if isinstance(results, dict) else None
    )
    if isinstance(training, dict) and training:
        return training
    epochs = (config or {}).get("train_epochs", 0)
    return {name: training_record(epochs) for name in _model_entries(results)}


def write_nfe_sweep(
    results: dict,
    out: str | Path,
    stem: str = "nfe_vs_tolerance",
    *,
    config: dict,
    command: str | None = None,
) -> tuple[Path, Path]:
    """Write a sweep's ``OUT/STEM.json`` and ``OUT/STEM.png``: the one layout of :func:`nfe_vs_tolerance` and
    ``dynkit nfe-sweep``, ``{"results": {model: {tol: ...}}, "training": {model: {"epochs", "state"}}, "config",
    "versions", "command"}``; the figure's title says when the models are UNTRAINED."""  # noqa: E501
    from ...io import jsonable, write_json

    entries = _model_entries(results)
    training = sweep_training(results, config)
    json_path, png_path = Path(out) / f"{stem}.json", Path(out) / f"{stem}.png"
    write_json(
        json_path,
        {"results": jsonable(entries), "training": training},
        config=jsonable(config),
        command=command,
    )
    plot_nfe_vs_tolerance(SweepResults(entries, training), png_path)
    return json_path, png_path


def _progress(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="nfe vs tolerance", leave=False)


def _model_entries(results: dict) -> dict:
    # results loaded from JSON hold them under "results", beside "training", "config", "versions",
    # "command"
    if isinstance(results.get("results"), dict):
        results = results["results"]
    return {
        k: v
        for k, v in results.items()
        if isinstance(v, dict)
        and v
        and all(isinstance(e, dict) and "forward_nfe" in e for e in v.values())
    }


def plot_nfe_vs_tolerance(results: dict, path: str | Path | None = None):
    """Forward and backward NFE against tolerance, one line per model, as in Fig. 11 of the
    review."""
    # no matplotlib.use(): the caller's backend (Jupyter, a script) is kept
    import matplotlib.pyplot as plt

    entries = _model_entries(results)
    training = sweep_training(results)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharex=True)
    untrained = [name for name in entries if is_untrained(training.get(name))]
    if untrained and len(untrained) == len(entries):
        fig.suptitle(f"{UNTRAINED} models (as initialised): the NFE of their initial vector fields")
    for name, per_tol in entries.items():
        tols = sorted(per_tol, key=float, reverse=True)
        xs = [float(t) for t in tols]
        for ax, key in zip(axes, ("forward_nfe", "backward_nfe")):
            mean = np.array([per_tol[t][key]["mean"] for t in tols])
            std = np.array([per_tol[t][key]["std"] for t in tols])
            label = name.upper() + (
                f" ({UNTRAINED})" if name in untrained and len(untrained) < len(entries) else ""
            )
            ax.errorbar(xs, mean, yerr=std, marker="o", capsize=3, label=label)
    axes[
        0
        # loose to tight tolerance, left to right; once: the two panels share their x axis
    ].invert_xaxis()
    for ax, title in zip(axes, ("forward NFE", "backward NFE")):
        ax.set_xscale("log")
        ax.set_xlabel("tolerance (rtol = atol)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    if path is not None:
        from ...io import save_figure

        save_figure(fig, path, dpi=120)
        plt.close(fig)
    return fig


__all__ = [
    "GIVEN_MODULES",
    "SweepResults",
    "UNTRAINED",
    "nfe_vs_tolerance",
    "plot_nfe_vs_tolerance",
    "sweep_training",
    "tolerance_key",
    "training_record",
    "write_nfe_sweep",
]
