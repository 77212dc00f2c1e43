"""MomentumRNN (Nguyen et al.) Table 1: the momentum LSTM on pixel-by-pixel digits and Fashion-MNIST.

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "momentum_lstm",
    "recipe",
    "comparisons",
)
