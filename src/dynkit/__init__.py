"""dynkit: the dynamics of momentum-based neural networks.

Derive continuous limits and adjoints symbolically (:mod:`dynkit.symbolic`), check the papers'
propositions numerically (:mod:`dynkit.theory`), integrate ODEs with counted function evaluations
(:mod:`dynkit.solvers`), measure stiffness and NFE (:mod:`dynkit.diagnostics`) and train heavy-ball
neural ODEs and discrete momentum architectures (:mod:`dynkit.models`, :mod:`dynkit.tasks`); the
papers' empirical claims are registered, seeded experiments with verdicts
(:mod:`dynkit.experiments`).
"""

from ._lazy import exports as _exports

__version__ = "0.1.0"

_LAZY = {
    "solvers": (
        "solve",
        "solve_ensemble",
        "in_place",
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
    ),
    "symbolic": (),
    "theory": (),
    "diagnostics": (),
    "models": (),
    "tasks": (),
    "experiments": (),
}
"""What each submodule provides, loaded on first use (:mod:`dynkit._lazy`): ``import dynkit`` is
fast, and a result's identity holds only the submodules its run uses."""

__all__ = [*_LAZY["solvers"], *_LAZY]

__getattr__, __dir__ = _exports(__name__, _LAZY)
