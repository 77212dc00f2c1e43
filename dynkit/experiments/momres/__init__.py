"""Momentum ResNets (Sander et al.): the cubic, the rings, LISTA, the buffer's bits, the reference
accuracy.

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "momres_cubic",
    "momres_rings",
    "momres_lista",
    "momres_buffer_bits",
    "momres_reference_accuracy",
    "recipe",
    "comparisons",
    "baselines",
)
