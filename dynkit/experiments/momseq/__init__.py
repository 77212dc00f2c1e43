"""Momentum sequence models: the Momentum Transformer's copy task and attention scaling, the
MomentumRNN's vanishing gradient.

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "momseq_copy",
    "momseq_vanishing",
    "momseq_attention_scaling",
    "recipe",
    "comparisons",
)
