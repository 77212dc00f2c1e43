"""Where :func:`dynkit.solvers.solve` finds the two paths that sit above the engine.

``solve(adjoint=True)`` hands over to :mod:`dynkit.solvers.adjoint` and ``solve(compile=...)`` to
:mod:`dynkit.solvers.compiled`; both import the engine (the adjoint solves with it, the compiled
ensembles fall back to it), so the engine cannot import them. Each registers its entry points here
when it is imported (the package's ``__init__`` imports both), and the engine looks them up here at
call time: the imports run one way, ``adjoint``/``compiled`` → ``engine`` → ``_seam``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = [
    "CompiledEntry",
    "adjoint_entry",
    "compiled_entry",
    "register_adjoint",
    "register_compiled",
]


class CompiledEntry(NamedTuple):
    """What the engine calls of :mod:`dynkit.solvers.compiled`.

    Attributes
    ----------
    validate : callable
        ``validate(compile) -> False | True | "auto"``: the ``compile`` argument checked.
    refuse_or_warn : callable
        ``refuse_or_warn(compile, reason)``: raise for ``compile=True``, warn for ``"auto"``.
    solve_or_fallback : callable
        The compiled solve: a :class:`~dynkit.solvers.Solution`, or None to run the Python path.
    """

    validate: Callable
    refuse_or_warn: Callable
    solve_or_fallback: Callable


_ADJOINT: list[Callable] = []
_COMPILED: list[CompiledEntry] = []


def register_adjoint(entry: Callable) -> None:
    """Set the function ``solve(adjoint=True)`` calls (``adjoint.validated_adjoint_call``)."""
    _ADJOINT[:] = [entry]


def register_compiled(entry: CompiledEntry) -> None:
    """Set what ``solve(compile=...)`` calls (registered by :mod:`dynkit.solvers.compiled`)."""
    _COMPILED[:] = [entry]


def adjoint_entry() -> Callable:
    """The registered adjoint entry point."""
    if not _ADJOINT:
        raise RuntimeError("adjoint=True needs dynkit.solvers.adjoint, which was not imported")
    return _ADJOINT[0]


def compiled_entry() -> CompiledEntry:
    """The registered compiled path."""
    if not _COMPILED:
        raise RuntimeError("compile= needs dynkit.solvers.compiled, which was not imported")
    return _COMPILED[0]
