"""The recipes (:mod:`~dynkit.experiments.recipes`) of the Momentum ResNets experiments (Sander, Ablin, Blondel,
Peyré, ``shared/papers/003``): ``momres_cubic`` (Fig. 1).

The paper's values are read from the paper and from its authors' public code, github.com/michaelsdr/momentumnet
(read, never copied). Our values are read from each script's ``options`` (what its command line runs with).
Kept apart from the experiment modules so that a recipe's wording is not part of the shards' code identity.
"""
from __future__ import annotations

from .recipes import NOT_STATED, Recipe, Setting, add_recipe

PAPER = "Momentum ResNets"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}
FIG1 = f"{PAPER}, Fig. 1"

add_recipe(Recipe("momres_cubic", FIG1, (
    Setting("depth", 15, f"{FIG1} (depth 15)", field="depth"),
    Setting("momentum gamma", 0.9, f"{FIG1} (gamma = 0.9)", field="gamma"),
    Setting("tied weights", True, f"{FIG1} (theta_n = theta for all n)", field="tied_weights"),
    Setting("residual function width", NOT_STATED, f"{FIG1} (not stated)", field="hidden"),
    Setting("optimiser", NOT_STATED, f"{FIG1} (not stated)", field="optimiser"),
    Setting("learning rate", NOT_STATED, f"{FIG1} (not stated)", field="lr"),
    Setting("training points", NOT_STATED, f"{FIG1} (not stated)", field="train_points"),
    Setting("iterations", NOT_STATED, f"{FIG1} (not stated)", field="iterations"),
), default_reasons=SMOKE))
