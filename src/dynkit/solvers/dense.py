"""Dense output: the piecewise continuous extension of a solve, evaluated at any times of its span.

Each accepted step contributes its method's own interpolant (Shampine's for dopri5, Tsitouras' for
tsit5, the 7th-order one of DOP853, cubic Hermite for methods without one), see [HNW] II.6.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backend import is_torch

__all__ = ["DenseOutput"]


class DenseOutput:
    """``dense(tq)``: the states at the times ``tq`` (1-D, any order, or a scalar)."""

    def __init__(self, backend, t0: float, y0):
        self.backend = backend
        self.t0, self.shape = t0, tuple(y0.shape)
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.interpolants: list = []
        self._arrays = None
        self.stop: float | None = None  # a terminal event's time: the span ends there

    def append(self, t: float, t_new: float, y_new, interpolant) -> None:
        self.starts.append(t)
        self.ends.append(t_new)
        self.interpolants.append(interpolant)
        self._arrays = None

    @property
    def t_span(self) -> tuple[float, float]:
        if self.stop is not None:
            return (self.t0, self.stop)
        return (self.t0, self.ends[-1] if self.ends else self.t0)

    def __call__(self, tq: Any):
        if is_torch(tq):
            tq = tq.detach().cpu().numpy()
        if tq is None or isinstance(tq, (str, bytes)) or np.iscomplexobj(tq):
            raise TypeError(f"t must be real times, got {tq!r:.80}")
        try:
            times = np.asarray(tq, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"t must be a real time or a 1-D array of times, got {type(tq).__name__}"
            ) from None
        scalar = times.ndim == 0
        times = np.atleast_1d(times)
        if times.ndim != 1:
            raise ValueError(f"t must be a scalar or a 1-D array of times, got shape {times.shape}")
        if not np.isfinite(times).all():
            raise ValueError(
                f"t must be finite, got {times[~np.isfinite(times)][0]!r} at index "
                f"{int(np.argmin(np.isfinite(times)))}"
            )
        if not self.starts:
            raise ValueError("no step was taken: the dense output is empty")
        lo, hi = sorted(self.t_span)
        slack = 1e-12 * max(1.0, abs(lo), abs(hi))
        outside = (times < lo - slack) | (times > hi + slack)
        if outside.any():
            raise ValueError(
                f"t must lie within the integrated span [{lo:.17g}, {hi:.17g}], got "
                f"{times[outside][0]!r}"
            )
        if self._arrays is None:
            direction = 1.0 if self.t_span[1] >= self.t_span[0] else -1.0
            self._arrays = (
                direction,
                direction * np.asarray(self.starts),
                np.asarray(self.starts),
                np.asarray(self.ends),
            )
        direction, signed_starts, starts, ends = self._arrays
        step = np.clip(
            np.searchsorted(signed_starts, direction * times, side="right") - 1, 0, len(starts) - 1
        )
        order = np.argsort(step, kind="stable")
        sorted_steps = step[order]
        bounds = np.flatnonzero(np.diff(sorted_steps)) + 1
        chunks = []
        for group in np.split(np.arange(len(order)), bounds):
            i = int(sorted_steps[group[0]])
            theta = (times[order[group]] - starts[i]) / (ends[i] - starts[i])
            chunks.append(self.interpolants[i](theta))
        out = _concatenate(chunks)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        if not np.array_equal(order, np.arange(len(order))):
            out = out[_index_like(out, inverse)]
        return out[0] if scalar else out


def _index_like(out, index: np.ndarray):
    if is_torch(out):
        import torch

        return torch.as_tensor(index, device=out.device)
    return index


def _concatenate(chunks):
    if len(chunks) == 1:
        return chunks[0]
    if is_torch(chunks[0]):
        import torch

        return torch.cat(chunks)
    return np.concatenate(chunks)
