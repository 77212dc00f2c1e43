"""Derivatives of a torch solve's outputs in the output times ``t`` (autograd through ``t``).

The steps' own arithmetic does not see ``t`` as a tensor; these two functions add the exact first
derivatives to the graph without changing any value: ``∂y(t_i)/∂t_i = f(t_i, y_i)`` at each output
and ``∂y(t_i)/∂t_0 = −Φ(t_i, t_0) f(t_0, y_0)`` through the start.
"""

from __future__ import annotations

import sys

from .backend import is_torch

__all__ = ["times_requiring_grad", "with_output_time_gradients", "with_start_time_gradient"]


def times_requiring_grad(t, y0):
    """``t`` when autograd should differentiate the outputs in it (a torch ``t`` that requires
    grad, a torch state, grad mode on), else None."""
    if not (is_torch(t) and is_torch(y0) and t.requires_grad):
        return None
    return t if sys.modules["torch"].is_grad_enabled() else None


def with_start_time_gradient(field, t, y0):
    """``y0`` unchanged in value, with ``∂/∂t_0 = −f(t_0, y_0)``: the flow carries it to every
    output, where ``∂y(t_i)/∂t_0 = −Φ(t_i, t_0) f(t_0, y_0)`` (one counted call of ``f``).

    ``(t_0 − t_0.detach())`` is exactly 0, so the values are untouched; only the graph gains the
    term.
    """
    torch = sys.modules["torch"]
    with torch.no_grad():
        f0 = field(float(t[0].detach()), y0.detach())
    if not bool(torch.isfinite(f0).all()):
        return y0  # 0 * Inf would poison the state; the solve reports the non-finite slope itself
    return y0 - (t[0] - t[0].detach()).to(y0.dtype) * f0


def with_output_time_gradients(field, t, ys):
    """Outputs unchanged in value, with ``∂y(t_i)/∂t_i = f(t_i, y_i)`` (one counted call of ``f``
    per output).

    With :func:`with_start_time_gradient` this gives autograd the exact first derivatives in every
    ``t_i`` (the first output is ``y0`` itself: ``∂y(t_0)/∂t_0 = 0``); the slopes are detached, so
    second derivatives in ``t`` are not included.
    """
    torch = sys.modules["torch"]
    n = ys.shape[0]
    with torch.no_grad():
        slopes = torch.stack([field(float(t[i].detach()), ys[i].detach()) for i in range(n)])
    if not bool(torch.isfinite(slopes).all()):
        return ys
    shift = (t[:n] - t[:n].detach()).to(ys.dtype).reshape((n,) + (1,) * (ys.ndim - 1))
    # the recorder's first row is the caller's y0 itself, not the start-time-shifted state the steps
    # start from: y(t_0) = y0 does not move with t_0 (adding f_0 there would give it ∂/∂t_0 = f_0)
    shift = torch.cat([torch.zeros_like(shift[:1]), shift[1:]])
    return ys + shift * slopes
