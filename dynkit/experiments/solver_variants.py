"""The NFE experiments once more with torchdiffeq: does an outcome depend on the ODE engine?

Every model solves with :func:`dynkit.solve` by default (:data:`dynkit.models.ode_block.DEFAULT_SOLVER`),
so the ledger's NFE rows count dynkit's evaluations. The papers' code solves with torchdiffeq, whose
step-size controller differs, so each experiment behind an NFE claim group is registered a second
time as ``<name>_torchdiffeq``: the same run function, config points and scales, with the models'
``solver`` set to ``"torchdiffeq"`` (the config key ``solver`` of a dataclass config, the option
``--solver`` of a migrated script). A ledger row comparing the two results checks that the outcome
is the same with both engines::

    dynkit run node_trained_torchdiffeq --scale cpu --out analysis/results/node_trained_torchdiffeq
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .registry import register_variant
from .scripting import ScriptConfig

NFE_EXPERIMENTS = (
    "node_trained",
    "node_point_cloud",
    "node_images",
    "ode_rnn_walker2d",
    "ode_rnn_plane_vibration",
    "ode_rnn_silverbox",
)
"""The experiments whose metrics feed the ledger's NFE rows (review Figs. 6, 9, 10, 11, 12, 13)."""

SUFFIX = "_torchdiffeq"

TWIN_MODELS = {"ode_rnn_walker2d": ("node", "hbnode")}
"""Where the twin trains only the models its ledger rows compare (a cheaper run that decides the same rows)."""


def with_solver(config: Any, solver: str) -> Any:
    """``config`` with the models' ODE solver set to ``solver`` (a script's ``--solver`` option, put last in place
    of any earlier one; the script's ``options`` ride along, so the twin's recipe reads what it runs with)."""
    if isinstance(config, ScriptConfig):
        return config.with_option("solver", solver)
    if not any(f.name == "solver" for f in dataclasses.fields(config)):
        raise TypeError(
            f"config must have a 'solver' field, got {type(config).__name__} without one"
        )
    return dataclasses.replace(config, solver=solver)


def _twin(name: str):
    def change(config: Any) -> Any:
        config = with_solver(config, "torchdiffeq")
        if name in TWIN_MODELS and not isinstance(config, ScriptConfig):
            config = dataclasses.replace(config, models=TWIN_MODELS[name])
        return config

    return change


for _name in NFE_EXPERIMENTS:
    register_variant(
        _name,
        _name + SUFFIX,
        _twin(_name),
        summary=f"{_name} with the models solved by torchdiffeq (the papers' solver) instead of "
        f"dk.solve: same outcome with both?",
    )
