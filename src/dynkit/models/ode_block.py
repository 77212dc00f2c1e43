"""One ODE block: integrate a right-hand side over [t0, t1] with :func:`dynkit.solve` (default) or
torchdiffeq.

Every model and experiment of dynkit solves through :func:`dynkit.solve`, so the NFE they report are
dynkit's; ``solver="torchdiffeq"`` keeps the papers' own solver selectable (``torchdiffeq.odeint``,
or ``odeint_adjoint`` with ``adjoint=True``) to check that an outcome does not depend on the engine.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from ..diagnostics.nfe import NFECounter
from .engines import DEFAULT_SOLVER, SOLVERS

__all__ = [
    "SOLVERS",
    "DEFAULT_SOLVER",
    "solver_methods",
    "check_block_options",
    "ODEBlock",
    "ode_blocks",
    "set_tolerance",
]


def solver_methods(solver: str) -> tuple[str, ...]:
    """The method names ``solver`` can integrate with (torchdiffeq's own list, or
    :data:`dynkit.solvers.METHODS`)."""
    if solver == "torchdiffeq":
        try:
            from torchdiffeq._impl.odeint import SOLVERS as TORCHDIFFEQ_METHODS
        except ImportError:  # a torchdiffeq that moved its table: the names of torchdiffeq 0.2
            TORCHDIFFEQ_METHODS = (
                "dopri8",
                "dopri5",
                "bosh3",
                "fehlberg2",
                "adaptive_heun",
                "euler",
                "midpoint",
                "heun3",
                "rk4",
                "explicit_adams",
                "implicit_adams",
                "fixed_adams",
            )
        return tuple(
            m for m in TORCHDIFFEQ_METHODS if m != "scipy_solver"
        )  # scipy_solver needs its own options
    if solver == "dynkit":
        from ..solvers import METHODS

        return tuple(METHODS)
    raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")


def check_block_options(
    solver: str = DEFAULT_SOLVER,
    method: str = "dopri5",
    rtol: float = 1e-3,
    atol: float = 1e-3,
    step_size: float | None = None,
    t0: float = 0.0,
    t1: float = 1.0,
    adjoint: bool = False,
    **_,
) -> None:
    """Validate :class:`ODEBlock` options before anything is built or trained
    (``ValueError``/``TypeError``).

    ``method`` must be one the chosen ``solver`` knows (a dynkit fixed-step method needs
    ``step_size``); tolerances finite and positive; ``t0``, ``t1`` finite numbers.
    """
    if not isinstance(solver, str):
        raise TypeError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if not isinstance(adjoint, bool):
        raise TypeError(f"adjoint must be a bool, got {adjoint!r}")
    if solver == "torchdiffeq":
        import importlib.util

        if (
            importlib.util.find_spec("torchdiffeq") is None
        ):  # an optional extra since dk.solve is the default
            raise ImportError(
                "solver='torchdiffeq' needs torchdiffeq, which is not installed: "
                "pip install 'dynkit[torchdiffeq]' (or use the default solver='dynkit')"
            )
    if isinstance(method, str):
        allowed = solver_methods(solver)
        if method not in allowed:
            raise ValueError(
                f"method must be one of {allowed} with solver={solver!r}, got {method!r}"
            )
        if solver == "dynkit":
            from ..solvers import METHODS, AutoSwitching, RosenbrockTableau

            if step_size is None and not METHODS[method].adaptive:
                raise ValueError(
                    f"step_size is required by the fixed-step method {method!r} (solver='dynkit'), "
                    f"got None"
                )
            # the adjoint's Rosenbrock stages take Jacobians of the augmented field, which fails
            # inside a torch model's autograd (RuntimeError from torch.func): refused here, clearly,
            # before any solve
            if adjoint and isinstance(
                METHODS[method].implementation, (RosenbrockTableau, AutoSwitching)
            ):
                raise ValueError(
                    f"method must be an explicit method with adjoint=True (solver='dynkit'), got "
                    f"{method!r}; use adjoint=False to backpropagate through its steps"
                )
    elif solver == "torchdiffeq":
        raise TypeError(
            f"method must be a method name with solver='torchdiffeq', got {type(method).__name__}"
        )
    else:
        from .. import solvers

        kinds = tuple(
            getattr(solvers, k) for k in ("RungeKuttaTableau", "TwoStepRK") if hasattr(solvers, k)
        )
        if not isinstance(method, kinds):
            raise TypeError(
                f"method must be a method name or a {' / '.join(k.__name__ for k in kinds)}, "
                f"got {type(method).__name__}"
            )
        if step_size is None and not getattr(method, "adaptive", True):
            raise ValueError(
                f"step_size is required by the fixed-step method "
                f"{getattr(method, 'name', method)!r}, "
                f"got None"
            )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 < value < math.inf
        ):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    for name, value in (("t0", t0), ("t1", t1)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if step_size is not None and (
        isinstance(step_size, bool)
        or not isinstance(step_size, (int, float))
        or not 0 < abs(step_size) < math.inf
    ):
        raise ValueError(f"step_size must be a non-zero finite number or None, got {step_size!r}")


class ODEBlock(nn.Module):
    """Solve ``dz/dt = dynamics(t, z)`` from ``z(t0) = z0`` and return ``z(t1)`` (or ``z`` at given
    times).

    The right-hand side is wrapped in an :class:`~dynkit.diagnostics.NFECounter`, so every block
    counts its forward and backward function evaluations.

    Parameters
    ----------
    dynamics : nn.Module
        ``dynamics(t, z) -> dz/dt``, ``t`` a 0-d tensor.
    t0, t1 : float
        Integration interval (the review integrates over [0, 1] for classification).
    solver : {"dynkit", "torchdiffeq"}
        ``"dynkit"`` (the default) uses :func:`dynkit.solve` (discretise-then-optimise, or its
        continuous adjoint :mod:`dynkit.solvers.adjoint` when ``adjoint``); ``"torchdiffeq"`` uses
        ``torchdiffeq.odeint`` (or ``odeint_adjoint`` when ``adjoint``), the solver of the papers'
        code.
    method : str
        Integration method known to the chosen solver (``"dopri5"``, ``"rk4"``, ...).
    rtol, atol : float
        Tolerances of adaptive methods.
    adjoint : bool
        Backpropagate by the adjoint ODE, solved backward with the same method (memory flat in the
        number of steps); the block's parameters are those of ``dynamics``.
    adjoint_checkpoints : int
        With ``adjoint`` and ``solver="dynkit"``: ``N``, the forward keeps its states at ``N + 1``
        evenly spaced times and the backward restarts from each (memory ``O(N · dim)``; default 0);
        see :func:`dynkit.solvers.adjoint.check_adjoint_checkpoints`.
    step_size : float, optional
        Step of fixed-step methods.
    """

    def __init__(
        self,
        dynamics: nn.Module,
        t0: float = 0.0,
        t1: float = 1.0,
        *,
        solver: str = DEFAULT_SOLVER,
        method: str = "dopri5",
        rtol: float = 1e-3,
        atol: float = 1e-3,
        adjoint: bool = False,
        step_size: float | None = None,
        adjoint_checkpoints: int = 0,
    ):
        super().__init__()
        from ..solvers.adjoint import check_adjoint_checkpoints

        self.adjoint_checkpoints = check_adjoint_checkpoints(adjoint_checkpoints)
        if self.adjoint_checkpoints and not (adjoint and solver == "dynkit"):
            raise ValueError(
                f"adjoint_checkpoints needs adjoint=True and solver='dynkit', got "
                f"adjoint_checkpoints={adjoint_checkpoints!r} with adjoint={adjoint!r}, "
                f"solver={solver!r}"
            )
        if not isinstance(dynamics, nn.Module):
            raise TypeError(f"dynamics must be an nn.Module f(t, z), got {type(dynamics).__name__}")
        check_block_options(solver, method, rtol, atol, step_size, t0, t1, adjoint)
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
        check_block_options(self.solver, self.method, rtol, atol)
        self.rtol, self.atol = float(rtol), float(atol)

    def forward(
        self, z0: torch.Tensor, times: Sequence[float] | torch.Tensor | None = None
    ) -> torch.Tensor:
        """``z(t1)``, or when ``times`` is given (starting at ``t0``) the states at ``times``
        stacked on dim 0."""
        if not isinstance(z0, torch.Tensor) or not z0.is_floating_point():
            raise TypeError(
                f"z0 must be a floating-point torch.Tensor, got "
                f"{getattr(z0, 'dtype', type(z0).__name__)}"
            )
        if not bool(
            torch.isfinite(z0).all()
        ):  # an adaptive solver would fail obscurely ("underflow in dt nan")
            raise ValueError(
                f"z0 must be finite, got {int((~torch.isfinite(z0)).sum())} non-finite entries"
            )
        if times is None:
            t = torch.tensor([self.t0, self.t1], dtype=z0.dtype, device=z0.device)
        else:
            t = torch.as_tensor(times, dtype=z0.dtype, device=z0.device)
        if self.solver == "dynkit":
            from ..solvers import solve

            ys = solve(
                self.field,
                z0,
                t,
                method=self.method,
                rtol=self.rtol,
                atol=self.atol,
                step_size=self.step_size,
                adjoint=self.adjoint,
                **({"adjoint_checkpoints": self.adjoint_checkpoints} if self.adjoint else {}),
            ).ys
        else:
            import torchdiffeq

            options = {"step_size": self.step_size} if self.step_size is not None else None
            odeint = torchdiffeq.odeint_adjoint if self.adjoint else torchdiffeq.odeint
            ys = odeint(
                self.field,
                z0,
                t,
                method=self.method,
                rtol=self.rtol,
                atol=self.atol,
                options=options,
            )
        return ys[-1] if times is None else ys

    def extra_repr(self) -> str:
        return (
            f"t0={self.t0}, t1={self.t1}, solver={self.solver!r}, method={self.method!r}, "
            f"rtol={self.rtol:g}, atol={self.atol:g}, adjoint={self.adjoint}"
        )


def ode_blocks(module: nn.Module) -> list[ODEBlock]:
    """All :class:`ODEBlock` submodules of ``module``."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return [m for m in module.modules() if isinstance(m, ODEBlock)]


def set_tolerance(module: nn.Module, rtol: float, atol: float | None = None) -> None:
    """Set the tolerances of every ODE block inside ``module``."""
    blocks = ode_blocks(module)
    if not blocks:
        raise ValueError(
            f"module must contain an ODEBlock, got {type(module).__name__} without one"
        )
    for block in blocks:
        block.set_tolerance(rtol, atol)
