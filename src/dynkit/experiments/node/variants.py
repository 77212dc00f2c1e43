"""The neural-ODE experiments behind the ledger's NFE rows, once more with torchdiffeq (review
Figs. 6, 9, 10, 11): see :mod:`dynkit.experiments.solver_variants`."""

from __future__ import annotations

from ..solver_variants import register_twin

for _name in ("node_trained", "node_point_cloud", "node_images"):
    register_twin(_name)
