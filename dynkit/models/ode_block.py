"""One ODE block: integrate a right-hand side over [t0, t1] with torchdiffeq or :func:`dynkit.solve`."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from ..diagnostics.nfe import NFECounter

SOLVERS = ("torchdiffeq", "dynkit")


class ODEBlock(nn.Module):
    """Solve ``dz/dt = dynamics(t, z)`` from ``z(t0) = z0`` and return ``z(t1)`` (or ``z`` at given times).

    The right-hand side is wrapped in an :class:`~dynkit.diagnostics.NFECounter`, so every block
    counts its forward and backward function evaluations.

    Parameters
    ----------
    dynamics : nn.Module
        ``dynamics(t, z) -> dz/dt``, ``t`` a 0-d tensor.
    t0, t1 : float
        Integration interval (the review integrates over [0, 1] for classification).
    solver : {"torchdiffeq", "dynkit"}
        ``"torchdiffeq"`` uses ``torchdiffeq.odeint`` (or ``odeint_adjoint`` when ``adjoint``);
        ``"dynkit"`` uses :func:`dynkit.solve` (discretise-then-optimise, or its continuous adjoint
        :mod:`dynkit.solvers.adjoint` when ``adjoint``).
    method : str
        Integration method known to the chosen solver (``"dopri5"``, ``"rk4"``, ...).
    rtol, atol : float
        Tolerances of adaptive methods.
    adjoint : bool
        Backpropagate by the adjoint ODE, solved backward with the same method (memory flat in the
        number of steps); the block's parameters are those of ``dynamics``.
    step_size : float, optional
        Step of fixed-step methods.
    """

    def __init__(self, dynamics: nn.Module, t0: float = 0.0, t1: float = 1.0, *, solver: str = "torchdiffeq",
                 method: str = "dopri5", rtol: float = 1e-3, atol: float = 1e-3, adjoint: bool = False,
                 step_size: float | None = None):
        super().__init__()
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
        if not float(t1) != float(t0):
            raise ValueError(f"t1 must differ from t0, got t0={t0!r}, t1={t1!r}")
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if not tol > 0:
                raise ValueError(f"{name} must be positive, got {tol!r}")
        self.field = dynamics if isinstance(dynamics, NFECounter) else NFECounter(dynamics)
        self.t0, self.t1 = float(t0), float(t1)
        self.solver, self.method, self.adjoint = solver, method, bool(adjoint)
        self.rtol, self.atol, self.step_size = float(rtol), float(atol), step_size

    def set_tolerance(self, rtol: float, atol: float | None = None) -> None:
        """Set ``rtol`` and ``atol`` (``atol = rtol`` when omitted, as in Fig. 11 of the review)."""
        atol = rtol if atol is None else atol
        if not (rtol > 0 and atol > 0):
            raise ValueError(f"rtol and atol must be positive, got rtol={rtol!r}, atol={atol!r}")
        self.rtol, self.atol = float(rtol), float(atol)

    def forward(self, z0: torch.Tensor, times: Sequence[float] | torch.Tensor | None = None) -> torch.Tensor:
        """``z(t1)``, or when ``times`` is given (starting at ``t0``) the states at ``times`` stacked on dim 0."""
        if times is None:
            t = torch.tensor([self.t0, self.t1], dtype=z0.dtype, device=z0.device)
        else:
            t = torch.as_tensor(times, dtype=z0.dtype, device=z0.device)
        if self.solver == "dynkit":
            from ..solvers import solve

            ys = solve(self.field, z0, t, method=self.method, rtol=self.rtol, atol=self.atol,
                       step_size=self.step_size, adjoint=self.adjoint).ys
        else:
            import torchdiffeq

            options = {"step_size": self.step_size} if self.step_size is not None else None
            if self.adjoint:
                ys = torchdiffeq.odeint_adjoint(self.field, z0, t, method=self.method, rtol=self.rtol,
                                                atol=self.atol, options=options)
            else:
                ys = torchdiffeq.odeint(self.field, z0, t, method=self.method, rtol=self.rtol, atol=self.atol,
                                        options=options)
        return ys[-1] if times is None else ys

    def extra_repr(self) -> str:
        return (f"t0={self.t0}, t1={self.t1}, solver={self.solver!r}, method={self.method!r}, "
                f"rtol={self.rtol:g}, atol={self.atol:g}, adjoint={self.adjoint}")


def ode_blocks(module: nn.Module) -> list[ODEBlock]:
    """All :class:`ODEBlock` submodules of ``module``."""
    return [m for m in module.modules() if isinstance(m, ODEBlock)]


def set_tolerance(module: nn.Module, rtol: float, atol: float | None = None) -> None:
    """Set the tolerances of every ODE block inside ``module``."""
    blocks = ode_blocks(module)
    if not blocks:
        raise ValueError(f"module must contain an ODEBlock, got {type(module).__name__} without one")
    for block in blocks:
        block.set_tolerance(rtol, atol)
