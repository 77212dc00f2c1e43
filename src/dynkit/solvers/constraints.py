"""``nonnegative=``: components of the solution kept at or above zero, after Shampine et al. [STKB].

Concentrations, populations and probabilities cannot be negative, but a tolerance lets a computed
component that is smaller than its ``atol`` take either sign, and some equations are unstable once a
component is negative. Robertson's kinetics at ``rtol = 1e-3``, ``atol = 1e-4`` is the classic case
(``y_2`` never exceeds 3.6e-5): ``y_1`` (~2e-12 at t = 3e10, below ``atol``) goes negative by a
tolerated amount, and from there the equations carry the solution onto a branch where ``y_1`` falls
linearly, to ``−1.7e7`` at t = 1e11 (``radau5``): an accurate solution of the equations from a wrong
(tolerated) state, returned as a success.

With ``nonnegative=`` the adaptive loop ([STKB] Sect. 3, for any method):

* the vector field is modified where a constrained component is at or below 0 (exactly 0 for the
  Rosenbrock methods): ``f_i`` becomes ``max(f_i, 0)`` there (see :meth:`NonNegative.wrap`);
* a step whose constrained components come out negative counts their negative parts as error
  (the norm of ``min(y_new, 0)`` over the error scale, the same RMS as the error estimate): a step
  that goes negative by more than the tolerance is rejected and retried smaller;
* an accepted step's negative parts (within the tolerance) are set to zero, in the state the next
  step starts from, in the outputs and in the dense output and event search (the interpolant is
  clipped as well); a stepper that keeps the state itself (``bdf``'s difference table) is told
  (``stepper.projected(y)``), and the slope at the new state is evaluated afresh (one call of
  ``f``, counted) instead of reusing the end-of-step slope of the unclipped state.

Numpy states and adaptive methods only (ValueError otherwise), and not with ``adjoint=True``: the
clipping is not differentiable in the sense the adjoint assumes.

References
----------
.. [STKB] L. F. Shampine, S. Thompson, J. A. Kierzenka, G. D. Byrne, "Non-negative solutions of ODEs",
   Applied Mathematics and Computation 170 (2005) 556-569.
"""  # noqa: E501

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NonNegative"]


class NonNegative:
    """The constrained components of a state (a boolean mask of the state's shape)."""

    def __init__(self, mask: np.ndarray):
        self.mask = mask

    @classmethod
    def from_argument(cls, nonnegative: Any, y0) -> "NonNegative | None":
        """Validate ``solve``'s ``nonnegative=``: None/False, True (every component), a boolean
        mask of ``y0``'s shape, or indices into ``y0.ravel()``."""
        if nonnegative is None or nonnegative is False:
            return None
        if not isinstance(y0, np.ndarray):
            raise ValueError(
                f"nonnegative= takes numpy states (expected nonnegative=None for a "
                f"{type(y0).__module__}.{type(y0).__name__} y0)"
            )
        if nonnegative is True:
            return cls(np.ones(y0.shape, bool))
        expected = (
            f"nonnegative must be None, True, a boolean mask of y0's shape, or a non-empty "
            f"1-D sequence of "
            f"indices into y0.ravel(); got {nonnegative!r:.80}"
        )
        try:
            arr = np.asarray(nonnegative)
        except ValueError:  # a ragged list
            raise ValueError(expected) from None
        if arr.dtype == bool:
            if arr.shape != y0.shape:
                raise ValueError(
                    f"nonnegative as a boolean mask must have y0's shape {y0.shape}, got shape "
                    f"{arr.shape}"
                )
            return cls(arr.copy()) if arr.any() else None
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or arr.size == 0:
            raise ValueError(expected)
        if (
            arr.min() < 0 or arr.max() >= y0.size
        ):  # a negative index is refused, as the message says
            raise ValueError(
                f"nonnegative indices must lie in [0, {y0.size}) (y0 has {y0.size} "
                f"components), got "
                f"{arr.tolist()!r:.80}"
            )
        mask = np.zeros(y0.size, bool)
        mask[arr] = True
        return cls(mask.reshape(y0.shape))

    def check_initial(self, y0: np.ndarray) -> None:
        bad = self.mask & (y0 < 0)
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise ValueError(
                f"nonnegative: y0 must be >= 0 in the constrained components, got "
                f"y0.ravel()[{i}] = "
                f"{y0.ravel()[i]!r}"
            )

    def wrap(self, f, at_zero_only: bool = False):
        """``f`` with the constrained components at or below 0 kept from falling further: ``f_i`` is
        replaced by ``max(f_i, 0)`` where ``y_i ≤ 0`` ([STKB] Sect. 3; MATLAB's ``odenonnegative``
        does the same). Without it a component driven down (``y' = −1``) is rejected on every step
        once at 0.

        ``at_zero_only`` (the Rosenbrock methods, whose order needs a smooth ``f`` and ``J``; MATLAB
        offers no ``NonNegative`` for its Rosenbrock solver ``ode23s``): only where ``y_i = 0``
        exactly, as a clipped component is. With the kink at every negative stage value rodas4 ran
        out of steps on Robertson at rtol 1e-2, atol 1e-3 (100,000 steps by t = 2.4e4); the implicit
        methods need ``y_i ≤ 0``: their predictors and Newton iterates start below 0 (radau5 and bdf
        ran out of steps on ``y' = −1`` with ``y_i = 0`` only).
        """
        mask = self.mask

        def constrained(t, y):
            out = f(t, y)
            if not isinstance(out, np.ndarray) or out.shape != y.shape:
                return out  # the solver's own check of f's output reports it
            at_zero = mask & ((y == 0) if at_zero_only else (y <= 0)) & (out < 0)
            return (
                np.where(at_zero, 0.0, out).astype(out.dtype, copy=False) if at_zero.any() else out
            )

        return constrained

    def violation(self, y_new: np.ndarray, norm) -> float:
        """The error norm of the constrained components' negative parts (0 if none is negative)."""
        negative = np.where(self.mask, np.minimum(y_new, 0.0), 0.0)
        if not negative.any():
            return 0.0
        return float(np.max(norm(negative)))

    def project(self, y: np.ndarray) -> np.ndarray:
        """``y`` with its constrained negative components set to 0 (``y`` itself if there are
        none)."""
        below = self.mask & (y < 0)
        return np.where(below, 0.0, y).astype(y.dtype, copy=False) if below.any() else y

    def interpolant(self, interp):
        """The step's interpolant, clipped the same way (a dense output between two clipped
        states)."""
        mask = self.mask

        def clipped(theta):
            values = interp(theta)
            return np.where(mask & (values < 0), 0.0, values).astype(values.dtype, copy=False)

        return clipped
