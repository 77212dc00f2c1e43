"""What a solve returns: :class:`Solution`, its :class:`SolverStats` and the result codes.

``Solution.result`` is :data:`SUCCESS`, :data:`EVENT` (a terminal event ended the solve) or, for a
failure returned with ``throw=False``, the failing error's code: the ``result`` attribute of the
:class:`~dynkit.solvers.SolverError` subclass raised otherwise (:data:`FAILURES` maps each code to
its class). The Python loops (:mod:`dynkit.solvers.engine`) and the compiled ones
(:mod:`dynkit.solvers.compiled`) build the same objects.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, fields
from typing import Any

from .backend import is_torch
from .dense import DenseOutput
from .errors import (
    MaxStepsExceeded,
    NonFiniteState,
    StepSizeUnderflow,
    StepTooLarge,
    VectorFieldError,
    VectorFieldShapeError,
)

__all__ = ["EVENT", "FAILURES", "SUCCESS", "STAT_FIELDS", "Solution", "SolverStats"]

SUCCESS = "success"  # every output time reached
EVENT = "event"  # a terminal event ended the solve
# failure code -> the SolverError subclass that carries it (VectorFieldTypeError shares its code
# with VectorFieldShapeError)
FAILURES = {
    cls.result: cls
    for cls in (
        StepSizeUnderflow,
        MaxStepsExceeded,
        NonFiniteState,
        StepTooLarge,
        VectorFieldError,
        VectorFieldShapeError,
    )
}


@dataclass
class SolverStats:
    """Work done by a solve. ``nfe`` counts every call of ``f``, whatever it was for.

    ``njev`` (Jacobian evaluations), ``nlu`` (LU factorisations), ``switches`` (explicit ↔ stiff
    switches of ``method="auto"``), ``newton_iterations`` and ``newton_failures`` (steps rejected
    because Newton did not converge; implicit methods such as ``radau5``) stay 0 for the explicit
    methods.
    """

    nfe: int = 0
    n_steps: int = 0
    n_accepted: int = 0
    n_rejected: int = 0
    njev: int = 0
    nlu: int = 0
    switches: int = 0
    newton_iterations: int = 0
    newton_failures: int = 0

    def as_dict(self) -> dict:
        return dict(
            nfe=self.nfe,
            n_steps=self.n_steps,
            n_accepted=self.n_accepted,
            n_rejected=self.n_rejected,
            njev=self.njev,
            nlu=self.nlu,
            switches=self.switches,
            newton_iterations=self.newton_iterations,
            newton_failures=self.newton_failures,
        )


# the counters' names in SolverStats' order (the compiled kernels count into a vector in this order)
STAT_FIELDS = tuple(field.name for field in fields(SolverStats))


@dataclass
class Solution:
    """Result of :func:`~dynkit.solvers.solve`.

    Attributes
    ----------
    ts : array
        The requested output times reached, in the library, dtype and device of ``y0``.
    ys : array
        ``ys[i]`` is the state at ``ts[i]``; shape ``(len(ts), *y0.shape)``.
    stats : SolverStats
    result : str
        ``"success"``, ``"event"`` (a terminal event ended the solve), or on a failure returned with
        ``throw=False`` the failure's code (``"step_size_underflow"``, ``"max_steps_exceeded"``,
        ``"step_too_large"``, …).
    message : str
    method : str
    t_events, y_events : list or None
        With ``events=[g, ...]``: for each ``g`` the times of its zeros (1-D numpy float64 array)
        and the states there (stacked like ``ys``); ``event_indices[i]`` holds, for an event
        function returning one value per sample, the sample index of each zero (``None`` for scalar
        ``g``).
    dense : DenseOutput or None
        With ``dense=True``: the piecewise continuous extension over the steps taken.
    switch_log : list or None
        ``method="auto"``: each switch as ``Switch(t, from_method, to_method, reason)``
        (``stats.switches`` counts them; ``reason`` names the stiffness count that fired and its
        numbers).
    """

    ts: Any
    ys: Any
    stats: SolverStats
    result: str = SUCCESS
    message: str = ""
    method: str = ""
    t_events: list | None = None
    y_events: list | None = None
    event_indices: list | None = None
    dense: DenseOutput | None = None
    switch_log: list | None = None

    @property
    def success(self) -> bool:
        return self.result in (SUCCESS, EVENT)

    def _summary(self) -> list[tuple[str, str]]:
        """``(label, value)`` lines shared by ``repr`` and the notebook display: never the arrays
        themselves."""
        n = len(self.ts)
        span = f"[{float(self.ts[0]):.6g}, {float(self.ts[-1]):.6g}]" if n else "[]"
        lib = "torch" if is_torch(self.ys) else "numpy"
        s = self.stats
        lines = [
            ("method", self.method),
            (
                "result",
                self.result + (f": {self.message}" if self.message and not self.success else ""),
            ),
            ("outputs", f"{n} times in {span}, ys {tuple(self.ys.shape)} {self.ys.dtype} ({lib})"),
            (
                "work",
                f"nfe={s.nfe}, steps={s.n_steps} ({s.n_accepted} accepted, {s.n_rejected} rejected)"
                + (f", njev={s.njev}, nlu={s.nlu}" if s.njev or s.nlu else "")
                + (f", switches={s.switches}" if s.switches else "")
                + (f", newton={s.newton_iterations}" if s.newton_iterations else ""),
            ),
        ]
        if self.t_events is not None:
            lines.append(
                (
                    "events",
                    ", ".join(str(len(te)) for te in self.t_events) + " zero(s) per event function",
                )
            )
        if self.dense is not None:
            lines.append(("dense", "evaluate(t) available"))
        return lines

    def __repr__(self) -> str:
        return "Solution(" + ", ".join(f"{k}: {v}" for k, v in self._summary()) + ")"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
            f"{html.escape(v)}</td></tr>"
            for k, v in self._summary()
        )
        return f"<table><caption>dynkit Solution</caption>{rows}</table>"

    def evaluate(self, t: Any):
        """States at the times ``t`` (any order, within the span integrated) from the dense output.

        Needs ``dense=True`` in :func:`solve`. Returns an array ``(len(t), *y0.shape)`` (or
        ``y0.shape`` for a scalar ``t``) in the library, dtype and device of ``y0``.
        """
        if self.dense is None:
            raise ValueError("evaluate needs dense output: call dk.solve(..., dense=True)")
        return self.dense(t)
