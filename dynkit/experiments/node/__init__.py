"""The neural ODEs of the momentum review (Wang et al.): NODE, ANODE, SONODE, HBNODE and GHBNODE
trained on digits, a point cloud and images; their blow-up, adjoint and NFE against the tolerance.

:data:`MODULES` are the modules that register this family's experiments, recipes, ledger
comparisons, validity checks and trivial predictors, in the order they are imported
(:func:`dynkit.experiments.load_all`). This file binds nothing else: a shard's code identity leaves
it out (:mod:`dynkit.experiments.code_closure`).
"""

MODULES = (
    "node_trained",
    "node_point_cloud",
    "node_images",
    "node_adjoint_norm",
    "node_blowup",
    "variants",
    "recipe",
    "comparisons",
    "baselines",
)
