"""Events: zeros of user functions ``g(t, y)`` located on each step's interpolant.

As in scipy's ``solve_ivp``: ``g.terminal`` (bool, or the number of zeros after which to stop) and
``g.direction`` (+1 upward crossings only, -1 downward only, 0 both) are optional attributes. On
every accepted step each ``g`` is sampled at :data:`SAMPLES_PER_STEP` + 1 equally spaced points of
the step (the method's continuous extension ``y(t)`` between the ends, [HNW] II.6 "event location");
every sign change between neighbouring samples is refined by Brent's method on ``g(t, y(t))`` to a
few ulps of ``t``. So several zeros inside one step are all found as long as no two of them fall
within one sixteenth of the step (two zeros closer than that, a tangency, or a zero pair between
samples can be missed: that is the limit of any sampling, scipy samples only the step ends).
An event function may return one value per sample (shape ``(B,)``): each sample's zeros are
located separately, and a terminal one stops the solve when every sample has reached its count.

Conventions (scipy's): a zero exactly at ``t[0]`` counts, at ``t[0]``, when ``g`` moves away from it
in an allowed direction during the first step (a terminal event there stops the solve at ``t[0]``
with ``result == "event"``); a zero exactly at a step end or sample point counts once. An event
function returning NaN fails the solve (:class:`~dynkit.solvers.errors.NonFiniteState` naming
``events[i]``): a NaN has no sign, and ignoring it would silently lose events.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import NonFiniteState, VectorFieldError

__all__ = ["EPS", "SAMPLES_PER_STEP", "EventTracker"]

EPS = float(np.finfo(np.float64).eps)
# Each event function is sampled at this many equal parts of every accepted step (plus the ends).
SAMPLES_PER_STEP = 16


def _terminal_count(g, i: int) -> int:
    terminal = getattr(g, "terminal", False)
    if isinstance(terminal, (bool, np.bool_)):
        return int(terminal)
    if isinstance(terminal, (int, np.integer)) and terminal >= 0:
        return int(terminal)
    raise ValueError(f"events[{i}].terminal must be a bool or a non-negative int, got {terminal!r}")


def _direction(g, i: int) -> float:
    direction = getattr(g, "direction", 0)
    if isinstance(direction, (bool, str, bytes)) or direction not in (-1, 0, 1):
        raise ValueError(f"events[{i}].direction must be -1, 0 or +1, got {direction!r}")
    return float(direction)


class EventTracker:
    """Watches the event functions over the accepted steps of one solve."""

    def __init__(self, events: Any, backend, t0: float, y0, recorder):
        if callable(events):
            events = [events]
        if not isinstance(events, (list, tuple)):
            raise TypeError(
                f"events must be a callable g(t, y) or a list of them, got {type(events).__name__}"
            )
        for i, g in enumerate(events):
            if not callable(g):
                raise TypeError(f"events[{i}] must be a callable g(t, y), got {type(g).__name__}")
        self.events, self.backend, self.recorder = list(events), backend, recorder
        self.terminal = [_terminal_count(g, i) for i, g in enumerate(self.events)]
        self.direction = [_direction(g, i) for i, g in enumerate(self.events)]
        self.shapes: list[tuple] = [()] * len(self.events)
        self.prev = []
        for i in range(len(self.events)):
            value = self._value(i, t0, y0, first=True)
            self.prev.append(value)
        self.counts = [np.zeros(v.shape, dtype=np.int64) for v in self.prev]
        self.times: list[list[float]] = [[] for _ in self.events]
        self.states: list[list] = [[] for _ in self.events]
        self.indices: list[list[int]] = [[] for _ in self.events]
        self.stopped: str | None = None
        self.at_start = (
            True  # before the first step: a zero exactly at t0 may count (scipy's convention)
        )
        self.empty_state = y0[:0] if y0.ndim else y0[None][:0]
        self.y0_shape = tuple(y0.shape)

    def _value(self, i: int, t: float, y, first: bool = False) -> np.ndarray:
        g = self.events[i]
        try:
            raw = g(self.backend.time(t), y)
        except Exception as exc:
            raise self.recorder.failure(
                VectorFieldError, f"events[{i}] raised {type(exc).__name__} at t={t:.6g}: {exc}", t
            ) from exc
        try:
            value = self.backend.to_numpy(raw)
        except (TypeError, ValueError):
            raise TypeError(
                f"events[{i}] must return a real number or a 1-D array (one value per sample), "
                f"got {type(raw).__name__}"
            ) from None
        if np.iscomplexobj(value) or value.ndim > 1:
            raise TypeError(
                f"events[{i}] must return a real number or a 1-D array (one value per sample), "
                f"got {'complex values' if np.iscomplexobj(value) else f'shape {value.shape}'}"
            )
        if np.isnan(value).any():
            raise self.recorder.failure(
                NonFiniteState,
                f"events[{i}] returned NaN at t={t:.6g}: an event function must return real "
                f"numbers (the sign of g locates the event; a NaN has none, so its zeros "
                f"would be lost)",
                t,
            )
        if first:
            self.shapes[i] = value.shape
        elif value.shape != self.shapes[i]:
            raise ValueError(
                f"events[{i}] returned shape {value.shape} at t={t:.6g}, "
                f"but shape {self.shapes[i]} at the start"
            )
        return np.atleast_1d(value)

    def step(self, t: float, t_new: float, y_new, interpolate) -> float | None:
        """Record the zeros in ``(t, t_new]`` (and at ``t0`` on the first step); return the time a
        terminal event stops at, else None."""
        h = t_new - t
        theta = np.linspace(0.0, 1.0, SAMPLES_PER_STEP + 1)
        inner = self._states_between(interpolate, theta[1:-1])
        found = []
        for i in range(len(self.events)):
            g = np.stack(
                [self.prev[i]]
                + [self._value(i, t + th * h, state) for th, state in zip(theta[1:-1], inner)]
                + [self._value(i, t_new, y_new)]
            )  # (samples, components)
            a, b = g[:-1], g[1:]
            up, down = (a < 0) & (b >= 0), (a > 0) & (b <= 0)
            active = (
                up | down if self.direction[i] == 0 else (up if self.direction[i] > 0 else down)
            )
            for j, comp in zip(*np.nonzero(active)):
                t_a, t_b = (
                    t + theta[j] * h,
                    (t_new if j + 1 == SAMPLES_PER_STEP else t + theta[j + 1] * h),
                )
                root = (
                    t_b
                    if b[j, comp] == 0
                    else self._root(i, int(comp), t, t_a, t_b, h, interpolate)
                )
                found.append((root, i, int(comp)))
            if self.at_start:
                for comp in self._zeros_at_start(g, i):
                    found.append((t, i, comp))
            self.prev[i] = g[-1]
        self.at_start = False
        found.sort(key=lambda item: item[0] * math.copysign(1.0, h))
        for root, i, comp in found:
            state = y_new if root == t_new else interpolate(np.array([(root - t) / h]))[0]
            self.times[i].append(root)
            self.states[i].append(state)
            self.indices[i].append(comp)
            self.counts[i][comp] += 1
            if self.terminal[i] and bool((self.counts[i] >= self.terminal[i]).all()):
                self.stopped = f"terminal event events[{i}] at t={root:.17g}"
                return root
        return None

    def _states_between(self, interpolate, theta: np.ndarray):
        """The interpolated states at the inner sample points, outside autograd (only their sign
        is used)."""
        if self.backend.name == "torch":
            import torch

            with torch.no_grad():
                return interpolate(theta)
        return interpolate(theta)

    def _zeros_at_start(self, g: np.ndarray, i: int) -> list[int]:
        """Components with ``g(t0) == 0`` that count as a zero at ``t0``: ``g`` leaves 0 in an
        allowed direction (its first non-zero sample's sign: upward if positive), or stays 0 over
        the step."""
        zeros = []
        for comp in np.flatnonzero(g[0] == 0):
            moved = g[1:, comp][g[1:, comp] != 0]
            if not len(moved) or self.direction[i] == 0 or np.sign(moved[0]) == self.direction[i]:
                zeros.append(int(comp))
        return zeros

    def _root(
        self, i: int, comp: int, t: float, t_a: float, t_b: float, h: float, interpolate
    ) -> float:
        """The zero of component ``comp`` of ``events[i]`` in the sample interval ``[t_a, t_b]``
        of the step from ``t`` with step ``h``."""
        from scipy.optimize import brentq

        def g_at(s: float) -> float:
            return float(self._value(i, s, interpolate(np.array([(s - t) / h]))[0])[comp])

        a, b = (t_a, t_b) if h > 0 else (t_b, t_a)
        try:
            return float(
                brentq(g_at, a, b, xtol=max(1e-300, 2 * EPS * abs(h)), rtol=4 * EPS, maxiter=200)
            )
        # rounding in the interpolant flipped the sign at the interval's start: the zero is there
        except ValueError:
            return t_a

    def results(self):
        t_events = [np.asarray(ts, dtype=np.float64) for ts in self.times]
        y_events = [
            self.backend.stack(ys) if ys else self.empty_state.reshape((0, *self.y0_shape))
            for ys in self.states
        ]
        indices = [
            np.asarray(ix, dtype=np.int64) if shape else None
            for ix, shape in zip(self.indices, self.shapes)
        ]
        return t_events, y_events, indices
