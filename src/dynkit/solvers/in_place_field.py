"""A vector field that writes ``dy/dt`` into an array it is given, as numbalsoda's and SUNDIALS'
right-hand sides do.

``dk.solve(dk.in_place(f), y0, t, compile=True)`` with ``f(t, y, out)`` (``f(t, y, p, out)`` with
parameters) writing every component of ``out``: the compiled kernels then call ``f`` on their own
arrays, and no array is made per call of ``f``. On systems of 2-8 states that saves a tenth to a
quarter of a compiled stiff solve's time (``benchmarks.bench_stiff_peers``); on large ones, nothing
that shows.

Everywhere else (the Python path, ``compile="auto"`` falling back to it, the test calls) the marked
``f`` is an ordinary ``f(t, y)`` returning a new array, so that one problem runs on every path.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["InPlace", "in_place"]


class InPlace:
    """``f(t, y[, p], out)`` marked as writing ``dy/dt`` into ``out``; called as ``f(t, y[, p])`` it
    returns a new array (made like ``y``: numpy or torch, ``y``'s dtype).

    Attributes
    ----------
    f : callable
        The user's function, as given.
    """

    __slots__ = ("f", "__weakref__")

    def __init__(self, f: Callable):
        if isinstance(f, InPlace):
            f = f.f
        if not callable(f):
            raise TypeError(
                f"in_place: f must be a callable f(t, y, out) (or f(t, y, p, out)), "
                f"got {type(f).__name__}"
            )
        self.f = f

    def __call__(self, t: Any, y: Any, *p: Any):
        out = y.new_empty(y.shape) if hasattr(y, "new_empty") else np.empty_like(y)
        returned = self.f(t, y, *p, out)
        if returned is not None:
            raise TypeError(
                f"an in_place f writes into out and returns None, got {type(returned).__name__} "
                f"from {getattr(self.f, '__name__', type(self.f).__name__)}"
            )
        return out

    @property
    def __name__(self) -> str:  # messages name the user's function
        return getattr(self.f, "__name__", type(self.f).__name__)

    def __repr__(self) -> str:
        return f"in_place({self.__name__})"


def in_place(f: Callable) -> InPlace:
    """Mark ``f(t, y, out)`` (or ``f(t, y, p, out)``) as writing ``dy/dt`` into ``out``.

    Parameters
    ----------
    f : callable
        Writes every component of ``out`` (an array of ``y``'s shape and dtype) and returns None.
        On the compiled path (``compile=True``, :func:`~dynkit.solvers.solve_ensemble`) ``out`` is
        the kernel's own array, holding an earlier value: a component ``f`` leaves alone, or adds
        to, is refused at the test call (:class:`~dynkit.solvers.CompilationError`). ``jac``, when
        given, still returns its matrix.

    Returns
    -------
    InPlace
        Pass it as ``f`` to :func:`~dynkit.solvers.solve` or
        :func:`~dynkit.solvers.solve_ensemble`.

    Examples
    --------
    >>> import numpy as np, dynkit as dk
    >>> def decay(t, y, out):
    ...     out[0] = -y[0]
    >>> sol = dk.solve(dk.in_place(decay), np.array([1.0]), [0.0, 1.0])
    >>> bool(abs(sol.ys[-1, 0] - np.exp(-1.0)) < 1e-6)
    True
    """
    return InPlace(f)
