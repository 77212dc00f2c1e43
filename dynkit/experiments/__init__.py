"""Experiments: what to train, sweep and conclude; every empirical claim of the papers with a verdict.

Layer: ``experiments`` imports ``models``, ``tasks``, ``diagnostics``, ``solvers`` and ``io``; only
``cli`` and ``report`` import it (the import-linter contract in ``pyproject.toml``).

* :data:`EXPERIMENTS` maps a name to an :class:`Experiment`: a frozen config dataclass at three
  scales (``smoke``: seconds, the tests; ``cpu``: minutes on 2 cores, the results of record;
  ``full``: the paper's size, for a GPU), the config points of its sweep, and a run function.
* :func:`run` runs one shard per (seed, config point) under ``out/shards/`` (a finished shard is
  reused, so an interrupted sweep resumes), locally or through Ray (``backend="ray"``), on
  ``device="cpu"`` or ``"cuda"``, and aggregates ``out/results.json`` (mean ± 95 % CI per metric).
* :func:`ledger` evaluates every registered :class:`Claim` on the committed results under
  ``analysis/results/<experiment>/results.json``: validity checks first (:func:`declare_validity`), then the
  paired per-seed effect on its scale, its 95 % CI, and one of :data:`OUTCOMES` (see :mod:`.ledger`).

Registering an experiment and its ledger rows
---------------------------------------------
In a module of this package (then add it to :data:`MODULES`)::

    from dataclasses import dataclass
    from pathlib import Path
    from dynkit.experiments.registry import register
    from dynkit.experiments.ledger import add_claim, at_least, declare_validity, greater, difference

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

    add_claim("my_paper.momentum_helps", paper="MomentumRNN (Nguyen et al. 2020)",
              claim="MomentumRNN beats the RNN", paper_figure="Table 1: +2 points", experiment="my_experiment",
              metric="test accuracy MomentumRNN - RNN", value=difference("momentum_rnn.test_acc", "rnn.test_acc"),
              rule=greater(0.02, null=0.0))
    declare_validity("my_experiment", at_least("rnn.test_acc", 0.5, "10 classes, chance 0.1"))

Rules: the metric names must be unique across one seed's config points (put the point in the name);
a claim's ``value`` is an :class:`Effect` (:func:`ratio`: log10 of a paired ratio; :func:`difference`;
:func:`metric`: one model's number against an absolute criterion); its :class:`Rule` gives the paper's
effect, no effect and (where the paper gives no size) the smallest effect of interest; the outcome needs
≥ :data:`MIN_SEEDS` seeds. Write its plan from a pilot before the main runs (``python -m analysis.plans
my_experiment --pilot PILOT/results.json``), then run it with ``dynkit run my_experiment --scale cpu --planned --out
analysis/results/my_experiment``.
"""

from __future__ import annotations

from importlib import import_module

from .ledger import (
    CLAIMS,
    MAX_SEEDS,
    MIN_SEEDS,
    OUTCOMES,
    VALIDITY,
    VERDICTS,
    Check,
    Claim,
    Effect,
    Ledger,
    LedgerError,
    LedgerRow,
    Rule,
    add_claim,
    at_least,
    at_most,
    declare_validity,
    difference,
    greater,
    family_of,
    judge,
    ledger,
    less,
    metric,
    off_floor,
    plateau,
    ratio,
    ratio_of_ratios,
)
from .plans import Plan, load_plans
from .nfe_tolerance import nfe_vs_tolerance, plot_nfe_vs_tolerance, write_nfe_sweep
from .recipes import RECIPES, Recipe, RecipeError, Setting, setup_table
from .registry import EXPERIMENTS, RUN_SCALES, SCALES, Experiment, get, register
from .runner import BACKENDS, Shard, ShardRecomputed, aggregate, mean_ci, run, shards

MODULES = [
    "node_trained",
    "node_point_cloud",
    "node_images",
    "node_adjoint_norm",
    "node_blowup",
    "momres_cubic",
    "momres_rings",
    "momres_lista",
    "momres_buffer_bits",
    "momres_reference_accuracy",
    "momseq_copy",
    "momseq_vanishing",
    "momseq_attention_scaling",
    "csaode_trec",
    "csaode_sensitivity",
    "csaode_attention",
    "claims",
    "time_series_hybrids",
    "csaode_cv",
    "momentum_lstm",
    "missing_claims",
    "solver_variants",
    "hybrid_recipes",
    "node_recipes",
    "csaode_recipes",
    "momentum_recipes",
    "momres_recipes",
    "momseq_recipes",
]
"""The modules that register experiments and claims (imported by :func:`load_all`)."""


def load_all() -> dict:
    """Import every module of :data:`MODULES` (registering their experiments and claims); return EXPERIMENTS."""
    for name in MODULES:
        import_module(f"{__name__}.{name}")
    return EXPERIMENTS


load_all()

__all__ = [
    "EXPERIMENTS",
    "SCALES",
    "Experiment",
    "register",
    "get",
    "run",
    "shards",
    "Shard",
    "ShardRecomputed",
    "aggregate",
    "mean_ci",
    "BACKENDS",
    "ledger",
    "Ledger",
    "LedgerRow",
    "LedgerError",
    "Claim",
    "CLAIMS",
    "Rule",
    "OUTCOMES",
    "VERDICTS",
    "MIN_SEEDS",
    "MAX_SEEDS",
    "Effect",
    "Check",
    "VALIDITY",
    "declare_validity",
    "at_least",
    "at_most",
    "off_floor",
    "plateau",
    "add_claim",
    "greater",
    "less",
    "metric",
    "ratio",
    "ratio_of_ratios",
    "difference",
    "family_of",
    "judge",
    "Plan",
    "load_plans",
    "nfe_vs_tolerance",
    "plot_nfe_vs_tolerance",
    "write_nfe_sweep",
    "load_all",
    "MODULES",
    "RECIPES",
    "Recipe",
    "RecipeError",
    "Setting",
    "setup_table",
    "RUN_SCALES",
]
