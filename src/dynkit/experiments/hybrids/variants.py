"""The ODE-RNN hybrids behind the ledger's NFE rows, once more with torchdiffeq (review Figs. 12,
13): see :mod:`dynkit.experiments.solver_variants`."""

from __future__ import annotations

from ..solver_variants import register_twin

register_twin("ode_rnn_walker2d", models=("node", "hbnode"))  # the models its rows compare
for _name in ("ode_rnn_plane_vibration", "ode_rnn_silverbox"):
    register_twin(_name)
