"""Trivial predictors beside every trained model: what a model must beat to count as trained.

A trivial predictor depends only on the data, so its metric is computed from a shard's recorded
config and seed (the data are regenerated deterministically) without retraining anything:
``python -m analysis.baselines`` writes ``analysis/results/<experiment>/baselines.json``
(``{"seeds": {seed: {metric: value}}}``) and the ledger reads it beside ``results.json``. A row
whose experiment declares a trained bar (:func:`beats_baseline`) and has no baseline for a seed is
``invalid`` (incomplete), never decided without it.

Each family registers its experiments' predictors in :data:`BASELINES` beside its comparisons
(``<family>/baselines.py``), e.g. the NFE floors of the neural ODEs (``node``: each model's forward
NFE as initialised, untrained, at the tolerance a row reads; a trained model's NFE at or below it
measures the tolerance, not the model) and the forecasts of the ODE-RNN hybrids (``hybrids``:
**persistence** and the training **mean**, scored with the model's own test metric on the same test
windows).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping

from .checks import Check

__all__ = [
    "BASELINES_FILE",
    "BASELINES",
    "above_measured_floor",
    "baseline_of",
    "compute",
    "load",
    "above_baseline",
    "beats_baseline",
]

BASELINES_FILE = "baselines.json"
BaselineFunction = Callable[[Mapping, int], dict]
"""``f(config as recorded in results.json, seed) -> {"baseline.<predictor>.<metric>": value}``."""
BASELINES: dict[str, BaselineFunction] = {}
"""The trivial-predictor function of each experiment that has one, by experiment name."""


def above_measured_floor(
    metric_name: str, floor: str, why: str, subject: str | None = None, when: str | None = "nfe"
) -> Check:
    """Off the floor: valid when an NFE metric exceeds ``floor``, the same model's NFE as
    initialised at the same tolerance (:func:`untrained_forward_nfe`), so the check binds where a
    fixed solver count cannot."""
    return Check(
        "off floor",
        metric_name.split(".", 1)[0] if subject is None else subject,
        (metric_name, floor),
        lambda v, f: (v > f, (v, f)),
        f"{metric_name} > {floor} ({why})",
        when,
    )


def baseline_of(experiment: str) -> BaselineFunction:
    """The trivial-predictor function of ``experiment`` (the families registered first); a
    ValueError lists the experiments that have one otherwise."""
    from .. import load_all

    load_all()
    if experiment not in BASELINES:
        raise ValueError(f"experiment must be one of {sorted(BASELINES)}, got {experiment!r}")
    return BASELINES[experiment]


def compute(experiment: str, results: Mapping) -> dict:
    """``{"experiment", "config", "seeds": {seed: {metric: value}}}`` for every seed of
    ``results`` (an aggregated ``results.json``), from its recorded ``config``."""
    predict = baseline_of(experiment)
    config = results.get("config")
    if not isinstance(config, Mapping):
        raise ValueError(
            f"results of {experiment!r} must record their 'config' to regenerate the data"
        )
    seeds = sorted({int(s["seed"]) for s in results["shards"]})
    return {
        "experiment": experiment,
        "config": dict(config),
        "seeds": {str(s): predict(config, s) for s in seeds},
    }


def load(folder: str | Path) -> dict[int, dict]:
    """``{seed: {metric: value}}`` from ``folder/baselines.json``; ``{}`` when there is none."""
    from ...io import read_regular_text

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
    """A trained bar: valid when ``metric <= (1 - margin) * baseline`` (a loss at least ``margin``
    below the trivial predictor's on the same data).

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
