"""dynkit: the dynamics of momentum-based neural networks.

Derive continuous limits and adjoints symbolically (:mod:`dynkit.symbolic`), check the papers'
propositions numerically (:mod:`dynkit.theory`), integrate ODEs with counted function evaluations
(:mod:`dynkit.solvers`), measure stiffness and NFE (:mod:`dynkit.diagnostics`) and train heavy-ball
neural ODEs and discrete momentum architectures (:mod:`dynkit.models`, :mod:`dynkit.tasks`); the
papers' empirical claims are registered, seeded experiments with verdicts
(:mod:`dynkit.experiments`).
"""

from importlib import import_module as _import_module

from .solvers import (
    CompilationError,
    CompileWarning,
    MaxStepsExceeded,
    NonFiniteState,
    Solution,
    SolverError,
    SolverStats,
    StepSizeUnderflow,
    StepSizeWarning,
    StepTooLarge,
    ToleranceWarning,
    VectorFieldError,
    odeint,
    odeint_adjoint,
    solve,
    solve_ensemble,
)

__version__ = "0.1.0"

__all__ = [
    "solve",
    "solve_ensemble",
    "odeint",
    "odeint_adjoint",
    "Solution",
    "SolverStats",
    "CompilationError",
    "CompileWarning",
    "SolverError",
    "StepSizeUnderflow",
    "MaxStepsExceeded",
    "NonFiniteState",
    "VectorFieldError",
    "StepSizeWarning",
    "StepTooLarge",
    "ToleranceWarning",
    "solvers",
    "symbolic",
    "theory",
    "diagnostics",
    "models",
    "tasks",
    "experiments",
]

_LAZY_SUBMODULES = {"symbolic", "theory", "diagnostics", "models", "tasks", "experiments"}


def __getattr__(name: str):
    # Heavy submodules (sympy, torch models) load on first use: `import dynkit` stays fast.
    if name in _LAZY_SUBMODULES:
        module = _import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'dynkit' has no attribute {name!r}")
