"""Experiments: what to train, sweep and conclude; every empirical claim of the papers with an
outcome.

Layer: ``experiments`` imports ``models``, ``tasks``, ``diagnostics``, ``solvers`` and ``io``; only
``cli`` and ``report`` import it (the import-linter contract in ``pyproject.toml``).

One experiment, one folder: a *family* (:data:`FAMILIES`: ``node``, ``hybrids``, ``momres``,
``momseq``, ``momentum_rnn``, ``csaode``) holds its experiments, their recipes (``recipe.py``),
their ledger rows and validity checks (``comparisons.py``) and their trivial predictors
(``baselines.py``) side by side; the catalogue :data:`FAMILIES` lists each family's modules. Judging
the results (the ledger, the outcome rule, plans, evidence) is :mod:`.judging`; what runs every
experiment (:mod:`.registry`, :mod:`.runner`, :mod:`.recipes`, :mod:`.code_closure`,
:mod:`.scripting`) sits here.

* :data:`EXPERIMENTS` maps a name to an :class:`Experiment`: a frozen config dataclass at three
  scales (``smoke``: seconds, the tests; ``cpu``: minutes on 2 cores, the results of record;
  ``full``: the paper's size, for a GPU), the config points of its sweep, and a run function.
* :func:`run` runs one shard per (seed, config point) under ``out/shards/`` (a finished shard is
  reused, so an interrupted sweep resumes), locally or through Ray (``backend="ray"``), on
  ``device="cpu"`` or ``"cuda"``, and aggregates ``out/results.json`` (mean ± 95 % CI per metric).
* :func:`ledger` evaluates every registered :class:`Comparison` on the committed results under
  ``analysis/results/<experiment>/results.json``: validity checks first (:func:`declare_validity`),
  then the paired per-seed effect on its scale, its 95 % CI, and one of :data:`OUTCOMES` (see
  :mod:`.judging.ledger`).

Importing this package imports no experiment: the families are imported when a registry
(:data:`EXPERIMENTS`, :data:`COMPARISONS`, :data:`RECIPES`) or a function that looks a name up in
one (:func:`get`, :func:`run`, :func:`shards`) is first read from it, and by :func:`ledger`.

Registering an experiment and its ledger rows
---------------------------------------------
In a module of a family (then add it to the family's entry of :data:`FAMILIES`), e.g.
``momentum_rnn/mine.py``::

    from dataclasses import dataclass
    from pathlib import Path
    from dynkit.experiments.registry import register

    @dataclass(frozen=True)
    class MyConfig:
        models: tuple[str, ...] = ("rnn", "momentum_rnn")
        model: str = "rnn"           # the config point
        epochs: int = 5

    @register("my_experiment", smoke=MyConfig(epochs=1), cpu=MyConfig(), full=MyConfig(epochs=50),
              points=lambda c: [{"model": m} for m in c.models])
    def my_experiment(config: MyConfig, *, seed: int, out: Path, device: str) -> dict:
        '''One line: what it measures (paper, figure).'''
        ...                          # train on `device`, write figures/JSON under `out`
        return {"metrics": {f"{config.model}.test_acc": acc}, "anything": "JSON-able"}

and its rows in the family's ``comparisons.py``::

    from dynkit.experiments.judging.ledger import (
        add_comparison, at_least, declare_validity, difference, greater,
    )

    add_comparison("my_paper.momentum_helps", paper="MomentumRNN (Nguyen et al. 2020)",
                   claim="MomentumRNN beats the RNN", paper_figure="Table 1: +2 points",
                   experiment="my_experiment", metric="test accuracy MomentumRNN - RNN",
                   value=difference("momentum_rnn.test_acc", "rnn.test_acc"),
                   rule=greater(0.02, null=0.0))
    declare_validity("my_experiment", at_least("rnn.test_acc", 0.5, "10 classes, chance 0.1"))

Rules: the metric names must be unique across one seed's config points (put the point in the name);
a comparison's ``value`` is an :class:`Effect` (:func:`ratio`: log10 of a paired ratio;
:func:`difference`; :func:`metric`: one model's number against an absolute criterion); its
:class:`Rule` gives the paper's effect, no effect and (where the paper gives no size) the smallest
effect of interest; the outcome needs ≥ :data:`MIN_SEEDS` seeds. Write its plan from a pilot before
the main runs (``python -m analysis.plans my_experiment --pilot PILOT/results.json``), then run it
with ``dynkit run my_experiment --scale cpu --planned --out analysis/results/my_experiment``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

FAMILIES: dict[str, tuple[str, ...]] = {
    "node": (
        "node_trained",
        "node_point_cloud",
        "node_images",
        "node_adjoint_norm",
        "node_blowup",
        "variants",
        "recipe",
        "comparisons",
        "baselines",
    ),
    "hybrids": (
        "time_series_hybrids",
        "variants",
        "recipe",
        "comparisons",
        "baselines",
    ),
    "momres": (
        "momres_cubic",
        "momres_rings",
        "momres_lista",
        "momres_buffer_bits",
        "momres_reference_accuracy",
        "recipe",
        "comparisons",
        "baselines",
    ),
    "momseq": (
        "momseq_copy",
        "momseq_vanishing",
        "momseq_attention_scaling",
        "recipe",
        "comparisons",
    ),
    "momentum_rnn": (
        "momentum_lstm",
        "recipe",
        "comparisons",
    ),
    "csaode": (
        "csaode_trec",
        "csaode_sensitivity",
        "csaode_attention",
        "csaode_cv",
        "recipe",
        "comparisons",
        "baselines",
    ),
}
"""The catalogue: each family (a subpackage) and its modules that register experiments, recipes,
ledger comparisons, validity checks and trivial predictors, in the order they are imported."""

_NAMES = {  # public name -> the module defining it (imported on first use)
    **dict.fromkeys(
        ("EXPERIMENTS", "RUN_SCALES", "SCALES", "Experiment", "get", "register"), ".registry"
    ),
    **dict.fromkeys(
        ("BACKENDS", "Shard", "ShardRecomputed", "aggregate", "mean_ci", "run", "shards"), ".runner"
    ),
    **dict.fromkeys(("RECIPES", "Recipe", "RecipeError", "Setting", "setup_table"), ".recipes"),
    **dict.fromkeys(("Plan", "load_plans"), ".judging.plans"),
    **dict.fromkeys(
        ("nfe_vs_tolerance", "plot_nfe_vs_tolerance", "write_nfe_sweep"), ".node.nfe_tolerance"
    ),
    **dict.fromkeys(
        (
            "COMPARISONS",
            "MAX_SEEDS",
            "MIN_SEEDS",
            "OUTCOMES",
            "VALIDITY",
            "Check",
            "Comparison",
            "Effect",
            "Ledger",
            "LedgerError",
            "LedgerRow",
            "Rule",
            "add_comparison",
            "at_least",
            "at_most",
            "declare_validity",
            "difference",
            "family_of",
            "greater",
            "judge",
            "ledger",
            "less",
            "metric",
            "off_floor",
            "plateau",
            "ratio",
            "ratio_of_ratios",
        ),
        ".judging.ledger",
    ),
}
_LOADING = (
    "EXPERIMENTS",
    "COMPARISONS",
    "VALIDITY",
    "RECIPES",
    "get",
    "run",
    "shards",
    "setup_table",
)
"""The registries the families fill, and the functions that look a name up in them: reading one
imports the families first (:func:`load_all`)."""

__all__ = ["FAMILIES", *_NAMES]


def load_all() -> dict:
    """Import every module of every family of :data:`FAMILIES` (registering their experiments,
    recipes and comparisons); return the registry of experiments."""
    for family, modules in FAMILIES.items():
        for name in modules:
            import_module(f"{__name__}.{family}.{name}")
    from .registry import EXPERIMENTS

    return EXPERIMENTS


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _LOADING:
        load_all()
    value = getattr(import_module(_NAMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
