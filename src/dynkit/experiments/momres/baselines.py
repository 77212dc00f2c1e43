"""The Momentum ResNets' trivial predictors: the zero predictor, the majority class, the zero code
(:mod:`dynkit.experiments.judging.baselines` reads them beside the results)."""

from __future__ import annotations

from typing import Mapping

from ..judging.baselines import BASELINES


def _cubic_zero_predictor(config: Mapping, seed: int) -> dict:
    """momres_cubic: the zero predictor's MSE on the script's training points (200 on [-1, 1],
    target -x^3): the floor a fit must beat; it depends on neither the seed nor the model."""
    import torch

    x = torch.linspace(-1, 1, 200).unsqueeze(1)
    return {"baseline.zero.final_mse": float(((-(x**3)) ** 2).mean())}


def _rings_majority_class(config: Mapping, seed: int) -> dict:
    """momres_rings(_tied): the majority class's test accuracy on the seed's test points, from
    the labels the run scored (regenerated as :func:`dynkit.experiments.momres.momres_rings.run`
    draws them: training points, then test points, from one generator seeded ``seed``): the
    rings' labels are ``ring % 2``, two classes, whatever the number of rings."""
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
    (:func:`~dynkit.experiments.momres.momres_lista.lasso_optimum`), the data regenerated as the
    run draws them."""
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
