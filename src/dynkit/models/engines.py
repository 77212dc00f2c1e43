"""The engines an ODE block integrates with: names only, so that a script can offer the choice
without loading a model or a solver."""

__all__ = ["SOLVERS", "DEFAULT_SOLVER"]

SOLVERS = ("torchdiffeq", "dynkit")
DEFAULT_SOLVER = "dynkit"
"""The engine of every :class:`~dynkit.models.ode_block.ODEBlock` unless ``solver`` says
otherwise."""
