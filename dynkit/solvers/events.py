"""Events: zeros of user functions ``g(t, y)`` located on each step's interpolant.

As in scipy's ``solve_ivp``: ``g.terminal`` (bool, or the number of zeros after which to stop) and
``g.direction`` (+1 upward crossings only, -1 downward only, 0 both) are optional attributes. A
sign change of ``g`` between two step ends is refined by Brent's method on ``g(t, y(t))`` with
``y(t)`` the method's continuous extension ([HNW] II.6, "event location"), to a few ulps of ``t``.
An event function may return one value per sample (shape ``(B,)``): each sample's zeros are
located separately, and a terminal one stops the solve when every sample has reached its count.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import VectorFieldError

EPS = float(np.finfo(np.float64).eps)


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
            raise TypeError(f"events must be a callable g(t, y) or a list of them, got {type(events).__name__}")
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
        self.empty_state = y0[:0] if y0.ndim else y0[None][:0]
        self.y0_shape = tuple(y0.shape)

    def _value(self, i: int, t: float, y, first: bool = False) -> np.ndarray:
        g = self.events[i]
        try:
            raw = g(self.backend.time(t), y)
        except Exception as exc:
            raise self.recorder.failure(
                VectorFieldError, f"events[{i}] raised {type(exc).__name__} at t={t:.6g}: {exc}", t) from exc
        try:
            value = self.backend.to_numpy(raw)
        except (TypeError, ValueError):
            raise TypeError(f"events[{i}] must return a real number or a 1-D array (one value per sample), "
                            f"got {type(raw).__name__}") from None
        if np.iscomplexobj(value) or value.ndim > 1:
            raise TypeError(f"events[{i}] must return a real number or a 1-D array (one value per sample), "
                            f"got {'complex values' if np.iscomplexobj(value) else f'shape {value.shape}'}")
        if first:
            self.shapes[i] = value.shape
        elif value.shape != self.shapes[i]:
            raise ValueError(f"events[{i}] returned shape {value.shape} at t={t:.6g}, "
                             f"but shape {self.shapes[i]} at the start")
        return np.atleast_1d(value)

    def step(self, t: float, t_new: float, y_new, interpolate) -> float | None:
        """Record the zeros in ``(t, t_new]``; return the time a terminal event stops at, else None."""
        h = t_new - t
        found = []
        for i in range(len(self.events)):
            old, new = self.prev[i], self._value(i, t_new, y_new)
            up, down = (old < 0) & (new >= 0), (old > 0) & (new <= 0)
            active = up | down if self.direction[i] == 0 else (up if self.direction[i] > 0 else down)
            for comp in np.flatnonzero(active):
                root = t_new if new[comp] == 0 else self._root(i, int(comp), t, t_new, h, interpolate)
                found.append((root, i, int(comp)))
            self.prev[i] = new
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

    def _root(self, i: int, comp: int, t: float, t_new: float, h: float, interpolate) -> float:
        from scipy.optimize import brentq

        def g_at(s: float) -> float:
            return float(self._value(i, s, interpolate(np.array([(s - t) / h]))[0])[comp])

        a, b = (t, t_new) if h > 0 else (t_new, t)
        try:
            return float(brentq(g_at, a, b, xtol=max(1e-300, 2 * EPS * abs(h)), rtol=4 * EPS, maxiter=200))
        except ValueError:  # rounding in interp(0) flipped the sign at the step start: the zero is there
            return t

    def results(self):
        t_events = [np.asarray(ts, dtype=np.float64) for ts in self.times]
        y_events = [self.backend.stack(ys) if ys else self.empty_state.reshape((0, *self.y0_shape))
                    for ys in self.states]
        indices = [np.asarray(ix, dtype=np.int64) if shape else None for ix, shape in zip(self.indices, self.shapes)]
        return t_events, y_events, indices
