"""The NFE experiments once more with torchdiffeq: does an outcome depend on the ODE engine?

Every model solves with :func:`dynkit.solve` by default
(:data:`dynkit.models.ode_block.DEFAULT_SOLVER`), so the ledger's NFE rows count dynkit's
evaluations. The papers' code solves with torchdiffeq, whose step-size controller differs, so each
experiment behind an NFE claim group is registered a second time as ``<name>_torchdiffeq``: the same
run function, config points and scales, with the models' ``solver`` set to ``"torchdiffeq"`` (the
config key ``solver`` of a dataclass config, the option ``--solver`` of a migrated script). A ledger
row comparing the two results checks that the outcome is the same with both engines::

    dynkit run node_trained_torchdiffeq --scale cpu --out analysis/results/node_trained_torchdiffeq

Each family registers the twins of its experiments (``node/variants.py``, ``hybrids/variants.py``)
with :func:`register_twin`; :data:`TWINS` lists them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .registry import Experiment, register_variant
from .scripting import ScriptConfig

__all__ = ["SUFFIX", "TWINS", "register_twin", "with_solver"]

SUFFIX = "_torchdiffeq"
"""A twin's name is its base's with this suffix."""

TWINS: dict[str, tuple[str, ...] | None] = {}
"""Every experiment with a torchdiffeq twin, by name: the models the twin trains where it trains
only those its ledger rows compare (a cheaper run that decides the same rows), else None (the
base's)."""


def with_solver(config: Any, solver: str) -> Any:
    """``config`` with the models' ODE solver set to ``solver`` (a script's ``--solver`` option,
    put last in place of any earlier one; the script's ``options`` ride along, so the twin's
    recipe reads what it runs with)."""
    if isinstance(config, ScriptConfig):
        return config.with_option("solver", solver)
    if not any(f.name == "solver" for f in dataclasses.fields(config)):
        raise TypeError(
            f"config must have a 'solver' field, got {type(config).__name__} without one"
        )
    return dataclasses.replace(config, solver=solver)


def register_twin(base: str, models: tuple[str, ...] | None = None) -> Experiment:
    """Register ``base + SUFFIX``: the experiment ``base`` with its models solved by torchdiffeq
    (the papers' solver) instead of ``dk.solve``, training only ``models`` where given."""

    def change(config: Any) -> Any:
        config = with_solver(config, "torchdiffeq")
        if models is not None and not isinstance(config, ScriptConfig):
            config = dataclasses.replace(config, models=models)
        return config

    twin = register_variant(
        base,
        base + SUFFIX,
        change,
        summary=f"{base} with the models solved by torchdiffeq (the papers' solver) instead of "
        f"dk.solve: same outcome with both?",
    )
    TWINS[base] = models
    return twin
