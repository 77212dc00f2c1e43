"""The review's ODE-RNN hybrids on measured and simulated time series (Walker2D, plane vibration,
Silverbox).

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "time_series_hybrids",
    "variants",
    "recipe",
    "comparisons",
    "baselines",
)
