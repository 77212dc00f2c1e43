"""Trivial predictors beside every trained model (issue 30 §1): what a model must beat to count as trained.

A trivial predictor depends only on the data, so its metric is computed from a shard's recorded config and seed
(the data are regenerated deterministically) without retraining anything: ``python -m analysis.baselines`` writes
``analysis/results/<experiment>/baselines.json`` (``{"seeds": {seed: {metric: value}}}``) and the ledger reads it
beside ``results.json``. A row whose experiment declares a trained bar (:func:`beats_baseline`) and has no
baseline for a seed is ``invalid`` (incomplete), never decided without it.

NFE floors (``node_trained``, ``node_images``, ``node_point_cloud``): each model's forward NFE as initialised,
untrained, at the tolerance a row reads (:func:`untrained_forward_nfe`); a trained model's NFE at or below it measures
the tolerance, not the model.

Forecasts and regression (the ODE-RNN hybrids): **persistence** (the next stamp is the last observed one) and
the **mean** (every stamp is the training targets' mean per channel), each scored with the model's own test
metric on the same test windows; ``baseline.best.test_mse`` is the better of the two.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .ledger import Check

BASELINES_FILE = "baselines.json"
BaselineFunction = Callable[[Mapping, int], dict]
"""``f(config as recorded in results.json, seed) -> {"baseline.<predictor>.<metric>": value}``."""
BASELINES: dict[str, BaselineFunction] = {}
"""The trivial-predictor function of each experiment that has one, by experiment name."""


def _forecast_baselines(config: Mapping, seed: int) -> dict:
    """Persistence and mean predictors on the test windows of one ODE-RNN task, scored like the models'
    ``test_mse`` (:data:`~dynkit.experiments.time_series_hybrids.TEST_METRIC`)."""
    from .time_series_hybrids import TEST_METRIC, _task, task_options

    # the data the shard trained on: a config recorded before the measured series is read as simulated
    task = _task(config["task"], task_options(dict(config)), seed)
    test, train = task.test, task.train
    out_idx = [task.inputs.index(c) for c in task.outputs]  # the outputs' channels among the inputs
    x = test.x.double().numpy()[..., out_idx]
    mean = train.targets.double().numpy().reshape(-1, len(out_idx)).mean(0)
    targets, future = test.targets.double().numpy(), test.future.double().numpy()
    if TEST_METRIC[config["task"]] == "test_one_step_mse":
        truth, persistence = (
            targets,
            x,
        )  # the stamp after each observation; persistence repeats the observation
    else:  # forecast: every future stamp predicted by the last observed one
        truth, persistence = future, np.repeat(x[:, -1:], future.shape[1], axis=1)
    values = {
        "persistence": float(np.mean((persistence - truth) ** 2)),
        "mean": float(np.mean((mean - truth) ** 2)),
    }
    values["best"] = min(values.values())
    return {f"baseline.{k}.test_mse": v for k, v in values.items()}


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
    """Mean forward NFE per batch of ``model`` as initialised (``torch.manual_seed(seed)``, no training) at
    ``rtol = atol = tol`` over ``n_batches`` test batches of ``batch_size``: the NFE the tolerance and the
    architecture cost before the model learned anything, the floor a trained model's NFE is held against.
    ``design``: :func:`~dynkit.models.node_paper.from_paper`'s (``"authors"``: the point-cloud notebooks' models)."""
    import torch

    from ..diagnostics.nfe import BatchNFE
    from ..models.node_paper import from_paper
    from ..models.ode_block import set_tolerance
    from ..tasks.node_runs import load_task

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
    """Each model's forward NFE as initialised at the training tolerance (training batch size: the per-epoch
    rows) and at 1e-7 (the sweep's batch size: the tolerance rows)."""
    from ..diagnostics.nfe import tolerance_key
    from ..tasks.node_runs import SETTINGS

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
    """node_images (a migrated script: its config is its argument list): each model's forward NFE as initialised at
    the training tolerance and batch size (the rows read the last epoch's forward NFE per batch), from the seed the
    models of run ``seed`` train with (:func:`dynkit.experiments.node_images.model_seed`)."""
    from ..tasks.node_runs import SETTINGS
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
    """node_point_cloud (a migrated script): each model's forward NFE as initialised at the training tolerance and
    batch size, in the design the script trains, mean over the seed's runs (run ``r`` draws its cloud and model from
    ``10_000 seed + r``, :func:`dynkit.experiments.node_point_cloud.run`); the rows read the mean forward NFE per
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


def _attention_pair_in_vocabulary(config: Mapping, seed: int) -> dict:
    """csaode_attention (a migrated script): ``data.pair_in_vocabulary``, 1 when both words of the pair the row reads
    (:data:`~dynkit.experiments.csaode_attention.PAIR`) are in the vocabulary the seed's model was trained with (TREC's
    training split, built as :func:`~dynkit.tasks.text.train_csaode` builds it), else 0: a word outside it is the
    unknown token, and its attention score is not the paper's."""
    from ..tasks.text import Vocabulary, load_dataset, training_split
    from .csaode_attention import PAIR, build_parser, options

    args = list(config["args"])
    settings, data_dir = options(args), build_parser().parse_args(args).data_dir
    data = load_dataset("trec", data_dir, seed=seed)
    train_idx, _ = training_split(data, 0, seed, settings["train_subset"])
    vocab = Vocabulary([data.sentences[i] for i in train_idx])
    return {"data.pair_in_vocabulary": float(all(w in vocab.index for w in PAIR))}


def _cubic_zero_predictor(config: Mapping, seed: int) -> dict:
    """momres_cubic: the zero predictor's MSE on the script's training points (200 on [-1, 1], target -x^3): the
    floor a fit must beat; it depends on neither the seed nor the model."""
    import torch

    x = torch.linspace(-1, 1, 200).unsqueeze(1)
    return {"baseline.zero.final_mse": float(((-(x**3)) ** 2).mean())}


def _rings_majority_class(config: Mapping, seed: int) -> dict:
    """momres_rings(_tied): the majority class's test accuracy on the seed's test points, from the
    labels the run scored (regenerated as :func:`dynkit.experiments.momres_rings.run` draws them:
    training points, then test points, from one generator seeded ``seed``): the rings' labels are
    ``ring % 2``, two classes, whatever the number of rings."""
    import torch

    from .momres_rings import make_rings, options

    o = options(list(config["args"]))
    g = torch.Generator().manual_seed(seed)
    make_rings(o["rings"], o["points_per_ring"], g)
    _, labels = make_rings(o["rings"], o["test_points_per_ring"], g)
    share = float(labels.mean())
    return {
        "baseline.majority.test_accuracy": max(share, 1.0 - share),
        "baseline.classes": float(len(torch.unique(labels))),
    }


def _lista_zero_code(config: Mapping, seed: int) -> dict:
    """momres_lista: the zero code's test Lasso loss minus the optimum on the seed's test samples
    (the loss of predicting x = 0: ``0.5 ||y||^2`` on average), the gap a trained LISTA-style
    network must close; the optimum by FISTA
    (:func:`~dynkit.experiments.momres_lista.lasso_optimum`), the data regenerated as the run draws
    them."""
    import torch

    from .momres_lista import lasso, lasso_optimum, make_problem, options

    o = options(list(config["args"]))
    g = torch.Generator().manual_seed(seed)
    D, _, y_test = make_problem(o["n_train"], o["n_test"], g, o["columns"])
    zero = float(lasso(D, y_test, torch.zeros(len(y_test), D.shape[1], dtype=D.dtype)))
    return {"baseline.zero.deepest_loss_gap": zero - float(lasso_optimum(D, y_test))}


BASELINES["momres_cubic"] = _cubic_zero_predictor
BASELINES["momres_rings"] = _rings_majority_class
BASELINES["momres_rings_tied"] = _rings_majority_class
BASELINES["momres_lista"] = _lista_zero_code
BASELINES["node_trained"] = _node_trained_floors
BASELINES["node_images"] = _node_images_floors
BASELINES["node_point_cloud"] = _node_point_cloud_floors
BASELINES["csaode_attention"] = _attention_pair_in_vocabulary


def above_measured_floor(
    metric_name: str, floor: str, why: str, subject: str | None = None, when: str | None = "nfe"
) -> Check:
    """Off the floor: valid when an NFE metric exceeds ``floor``, the same model's NFE as initialised at the same
    tolerance (:func:`untrained_forward_nfe`), so the check binds where a fixed solver count cannot."""
    return Check(
        "off floor",
        metric_name.split(".", 1)[0] if subject is None else subject,
        (metric_name, floor),
        lambda v, f: (v > f, (v, f)),
        f"{metric_name} > {floor} ({why})",
        when,
    )


for _task_name in ("walker2d", "plane_vibration", "silverbox"):
    BASELINES[f"ode_rnn_{_task_name}"] = _forecast_baselines
BASELINES["ode_rnn_walker2d_torchdiffeq"] = _forecast_baselines


def compute(experiment: str, results: Mapping) -> dict:
    """``{"experiment", "config", "seeds": {seed: {metric: value}}}`` for every seed of ``results`` (an
    aggregated ``results.json``), from its recorded ``config``."""
    if experiment not in BASELINES:
        raise ValueError(f"experiment must be one of {sorted(BASELINES)}, got {experiment!r}")
    config = results.get("config")
    if not isinstance(config, Mapping):
        raise ValueError(
            f"results of {experiment!r} must record their 'config' to regenerate the data"
        )
    seeds = sorted({int(s["seed"]) for s in results["shards"]})
    return {
        "experiment": experiment,
        "config": dict(config),
        "seeds": {str(s): BASELINES[experiment](config, s) for s in seeds},
    }


def load(folder: str | Path) -> dict[int, dict]:
    """``{seed: {metric: value}}`` from ``folder/baselines.json``; ``{}`` when there is none."""
    from ..io import read_regular_text

    path = Path(folder) / BASELINES_FILE
    if not os.path.lexists(path):
        return {}
    data = json.loads(read_regular_text(path, "baselines"))
    return {int(k): dict(v) for k, v in data["seeds"].items()}


def above_baseline(
    metric_name: str,
    baseline: str,
    margin: float,
    why: str,
    subject: str | None = None,
    when: str | None = None,
) -> Check:
    """A trained bar for a score (an accuracy): valid when ``metric >= baseline + margin`` (the
    trivial predictor's score on the same data, e.g. the majority class of the labels the run
    scored)."""
    if not 0 <= margin < 1:
        raise ValueError(f"margin must lie in [0, 1), got {margin!r}")

    def test(value, floor):
        return value >= floor + margin, (value, floor)

    about = metric_name.split(".", 1)[0] if subject is None else subject
    return Check(
        "trained bar",
        about,
        (metric_name, baseline),
        test,
        f"{metric_name} >= {baseline} + {margin:g} ({why})",
        when,
    )


def beats_baseline(
    metric_name: str,
    baseline: str,
    margin: float,
    why: str,
    subject: str | None = None,
    when: str | None = None,
) -> Check:
    """A trained bar: valid when ``metric <= (1 - margin) * baseline`` (a loss at least ``margin`` below the
    trivial predictor's on the same data).

    The reason of a failing seed names the model's metric and the baseline's value.
    """
    if not 0 <= margin < 1:
        raise ValueError(f"margin must lie in [0, 1), got {margin!r}")
    factor = 1 - margin

    def test(value, floor):
        return value <= factor * floor, (value, floor)

    return Check(
        "trained bar",
        metric_name.split(".", 1)[0] if subject is None else subject,
        (metric_name, baseline),
        test,
        f"{metric_name} <= {factor:g} x {baseline} ({why})",
        when,
    )
