"""The neural ODEs' NFE floors: each model's forward NFE as initialised, untrained, at the
tolerance a row reads (:mod:`dynkit.experiments.judging.baselines` reads them beside the
results)."""

from __future__ import annotations

import itertools
from typing import Mapping

import numpy as np

from ..judging.baselines import BASELINES


def untrained_forward_nfe(
    model: str,
    task: str,
    tol: float,
    seed: int,
    batch_size: int,
    n_batches: int = 3,
    solver: str = "dynkit",
    design: str = "dynkit",
) -> float:
    """Mean forward NFE per batch of ``model`` as initialised (``torch.manual_seed(seed)``, no
    training) at ``rtol = atol = tol`` over ``n_batches`` test batches of ``batch_size``: the NFE
    the tolerance and the architecture cost before the model learned anything, the floor a
    trained model's NFE is held against. ``design``:
    :func:`~dynkit.models.node_paper.from_paper`'s (``"authors"``: the point-cloud notebooks'
    models)."""
    import torch

    from ...diagnostics.nfe import BatchNFE
    from ...models.node_paper import from_paper
    from ...models.ode_block import set_tolerance
    from ...tasks.node_runs import load_task

    torch.manual_seed(seed)
    net = from_paper(model, task, solver=solver, design=design)
    set_tolerance(net, tol)
    _, _, x, _ = load_task(task, seed=seed)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed), device="cpu")
    counts = []
    with torch.no_grad():
        for i in range(n_batches):
            with BatchNFE(net) as nfe:
                net(x[order[i * batch_size : (i + 1) * batch_size]])
                nfe.mark_forward()
            counts.append(nfe.forward)
    return float(np.mean(counts))


def _node_trained_floors(config: Mapping, seed: int) -> dict:
    """Each model's forward NFE as initialised at the training tolerance (training batch size:
    the per-epoch rows) and at 1e-7 (the sweep's batch size: the tolerance rows)."""
    from ...diagnostics.nfe import tolerance_key
    from ...tasks.node_runs import SETTINGS

    out = {}
    for model in config["models"]:
        for key, tol, batch in (
            ("train", config["train_tol"], SETTINGS[config["task"]].batch_size),
            (tolerance_key(1e-7), 1e-7, config["batch_size"]),
        ):
            out[f"floor.{model}.forward_nfe@{key}"] = untrained_forward_nfe(
                model, config["task"], tol, seed, batch, config["n_batches"], config["solver"]
            )
    return out


def _node_images_floors(config: Mapping, seed: int) -> dict:
    """node_images (a migrated script: its config is its argument list): each model's forward NFE
    as initialised at the training tolerance and batch size (the rows read the last epoch's
    forward NFE per batch), from the seed the models of run ``seed`` train with
    (:func:`dynkit.experiments.node.node_images.model_seed`)."""
    from ...tasks.node_runs import SETTINGS
    from .node_images import model_seed

    args = list(config["args"])
    opt = lambda flag, default: args[args.index(flag) + 1] if flag in args else default  # noqa: E731
    models = (
        list(
            itertools.takewhile(
                lambda a: not a.startswith("--"), args[args.index("--models") + 1 :]
            )
        )
        if "--models" in args
        else ["node", "anode", "sonode", "hbnode", "ghbnode"]
    )
    task, tol = opt("--task", "digits"), float(opt("--tol", 1e-3))
    return {
        f"floor.{m}.forward_nfe@train": untrained_forward_nfe(
            m,
            task,
            tol,
            model_seed(seed),
            SETTINGS[task].batch_size,
            solver=opt("--solver", "dynkit"),
        )
        for m in models
    }


def _node_point_cloud_floors(config: Mapping, seed: int) -> dict:
    """node_point_cloud (a migrated script): each model's forward NFE as initialised at the
    training tolerance and batch size, in the design the script trains, mean over the seed's runs
    (run ``r`` draws its cloud and model from ``10_000 seed + r``,
    :func:`dynkit.experiments.node.node_point_cloud.run`); the rows read the mean forward NFE per
    batch over training."""
    from .node_point_cloud import options

    o = options(list(config["args"]))
    return {
        f"floor.{m}.forward_nfe@train": float(
            np.mean(
                [
                    untrained_forward_nfe(
                        m,
                        "point_cloud",
                        o["tol"],
                        seed * 10_000 + r,
                        o["batch_size"],
                        2,
                        o["solver"],
                        o["design"],
                    )
                    for r in range(o["runs"])
                ]
            )
        )
        for m in o["models"]
    }


BASELINES["node_trained"] = _node_trained_floors
BASELINES["node_images"] = _node_images_floors
BASELINES["node_point_cloud"] = _node_point_cloud_floors
