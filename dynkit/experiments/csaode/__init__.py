"""CSAODE (Zhang et al.): TREC, the sensitivity to its settings, the attention it learns, Table 1 on
four cross-validated sets.

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "csaode_trec",
    "csaode_sensitivity",
    "csaode_attention",
    "csaode_cv",
    "recipe",
    "comparisons",
    "baselines",
)
