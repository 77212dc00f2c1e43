"""Jacobians ``J = ∂f/∂y`` and time derivatives ``∂f/∂t`` for the linearly implicit (Rosenbrock) steppers.

Three providers, one interface ``provider(t, y, f0) -> (J, f_t)``:

* :class:`UserJacobian` — the user's ``jac(t, y)``;
* :class:`AutogradJacobian` — ``torch.func.jacrev`` for torch states (one reverse pass per row,
  vectorised), and ``∂f/∂t`` by ``torch.func.jvp``;
* :class:`FiniteDifferenceJacobian` — forward differences for numpy states, ``f0 = f(t, y)`` reused.

``J`` is an array of shape ``(d, d)`` with ``d = y.size`` (the state flattened), or ``(B, n, n)`` with
``n = y[0].size`` when the leading axis holds ``B`` independent samples (``batched=True``: the
Jacobian is block diagonal and only its blocks are formed). ``f_t`` has the state's shape.

Every call of ``f`` is counted in the solve's ``stats.nfe`` (finite-difference calls, the autograd
pass and the time-derivative probe included); each provider call counts one ``stats.njev``.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


def _relative_step(backend) -> float:
    """sqrt(eps) of the state's dtype: balances truncation (O(δ)) and round-off (O(eps/δ))."""
    if backend.name == "torch":
        import torch

        return math.sqrt(torch.finfo(backend.dtype).eps)
    return math.sqrt(np.finfo(backend.dtype).eps)


class UserJacobian:
    """``jac(t, y)`` from the user: ``J``, or the pair ``(J, ∂f/∂t)`` (``∂f/∂t`` may be ``0`` for an
    autonomous ``f``); for a bare ``J``, ``∂f/∂t`` by one forward difference in ``t`` (one counted call)."""

    def __init__(self, jac: Callable, field, backend, batched: bool):
        self.jac, self.field, self.backend, self.batched = jac, field, backend, batched
        shape = tuple(field.shape)
        n = int(np.prod(shape[1:])) if batched else int(np.prod(shape))
        self.want = (shape[0], n, n) if batched else (n, n)

    def __call__(self, t: float, y, f0):
        self.field.stats.njev += 1
        J = self.jac(self.backend.time(t), y)
        f_t = None
        if isinstance(J, tuple):
            if len(J) != 2:
                raise ValueError(f"jac must return ∂f/∂y or the pair (∂f/∂y, ∂f/∂t), got a tuple of {len(J)}")
            J, f_t = J
        J = _as_backend_matrix(self.backend, J, "jac")
        if tuple(J.shape) != self.want:
            if math.prod(J.shape) == math.prod(self.want):
                J = J.reshape(self.want)
            else:
                raise ValueError(f"jac must return ∂f/∂y of shape {self.want} for a state of shape "
                                 f"{tuple(self.field.shape)}{' (per sample)' if self.batched else ''}, "
                                 f"got shape {tuple(J.shape)}")
        if f_t is None:
            return J, _time_derivative(self.field, self.backend, t, y, f0)
        return J, self._time_part(f_t, y)

    def _time_part(self, f_t, y):
        """The user's ``∂f/∂t`` as an array like ``y`` (a scalar 0 for an autonomous ``f``)."""
        if isinstance(f_t, (int, float)) and f_t == 0:
            return y * 0  # zeros like y (its dtype and device); lincomb skips zero weights anyway
        f_t = _as_backend_matrix(self.backend, f_t, "jac's ∂f/∂t")
        if tuple(f_t.shape) != tuple(y.shape):
            raise ValueError(f"jac's ∂f/∂t must have the state's shape {tuple(y.shape)} (or be 0), "
                             f"got shape {tuple(f_t.shape)}")
        return f_t


class FiniteDifferenceJacobian:
    """Forward differences ``(f(y + δ_j e_j) − f(y)) / δ_j``, ``δ_j = √ε max(1, |y_j|)`` ([HW] IV.8).

    ``d`` calls of ``f`` (``n`` for a batch: component ``j`` of every sample is perturbed at once,
    which is exact for independent samples), plus one for ``∂f/∂t``.
    """

    def __init__(self, field, backend, batched: bool):
        self.field, self.backend, self.batched = field, backend, batched

    def __call__(self, t: float, y, f0):
        self.field.stats.njev += 1
        shape = tuple(y.shape)
        rows = y.reshape(shape[0], -1) if self.batched else y.reshape(1, -1)
        f_rows = f0.reshape(rows.shape)
        n = rows.shape[1]
        J = np.empty((rows.shape[0], n, n), dtype=y.dtype)
        for j in range(n):
            delta = _relative_step(self.backend) * np.maximum(1.0, np.abs(rows[:, j]))
            probe = rows.copy()
            probe[:, j] += delta
            delta = probe[:, j] - rows[:, j]  # the step actually taken, after rounding
            df = self.field(t, probe.reshape(shape)).reshape(rows.shape) - f_rows
            J[:, :, j] = df / delta[:, None]
        return (J if self.batched else J[0]), _time_derivative(self.field, self.backend, t, y, f0)


class AutogradJacobian:
    """``torch.func.jacrev`` of ``f`` in ``y`` and ``torch.func.jvp`` in ``t`` (forward mode).

    Batched states (``B`` independent samples on the leading axis) differentiate the sum over the
    samples, ``Σ_b f_b``: its Jacobian with respect to ``y_b`` is the block ``∂f_b/∂y_b`` exactly when
    samples do not interact, so ``f`` is called on the whole batch (per-sample parameters work) and
    the cost is ``n`` reverse passes whatever ``B``. ``∂f/∂t`` by one forward-mode pass; if ``f``
    cannot be differentiated in ``t`` (it converts ``t`` to a Python float, say), by a forward
    difference instead. Counted: one call of ``f`` per pass.
    """

    def __init__(self, field, backend, batched: bool):
        self.field, self.backend, self.batched = field, backend, batched
        self.time_by_autograd = True

    def __call__(self, t: float, y, f0):
        import torch
        from torch.func import jacrev, jvp

        field = self.field
        field.stats.njev += 1
        f, shape = field.f, tuple(y.shape)
        tt = self.backend.time(t)
        y = y.detach()
        with torch.enable_grad():
            if self.batched:
                B = shape[0]
                rows = y.reshape(B, -1)
                summed = lambda yy: f(tt, yy.reshape(shape)).reshape(B, -1).sum(0)  # noqa: E731
                J = jacrev(summed)(rows).permute(1, 0, 2)  # [i, b, j] -> [b, i, j]
            else:
                J = jacrev(lambda yy: f(tt, yy.reshape(shape)).reshape(-1))(y.reshape(-1))
            field.stats.nfe += 1  # the forward pass inside jacrev (its reverse passes are vectorised)
            f_t = None
            if self.time_by_autograd:
                try:
                    f_t = jvp(lambda s: f(s, y), (tt,), (torch.ones_like(tt),))[1]
                    field.stats.nfe += 1
                except Exception:  # f is not differentiable in t: a difference below
                    self.time_by_autograd = False
        if f_t is None:
            f_t = _time_derivative(field, self.backend, t, y, f0)
        return J.detach(), f_t.detach().reshape(shape)


def _time_derivative(field, backend, t: float, y, f0):
    dt = _relative_step(backend) * max(1.0, abs(t))
    dt = (t + dt) - t  # the step actually taken, after rounding
    return backend.lincomb(None, (field(t + dt, y), f0), (1.0 / dt, -1.0 / dt))


def _as_backend_matrix(backend, J: Any, name: str):
    if backend.name == "torch":
        import torch

        if not isinstance(J, torch.Tensor):
            J = torch.as_tensor(np.asarray(J), dtype=backend.dtype, device=backend.device)
        return J.detach().to(backend.dtype)
    if not isinstance(J, np.ndarray):
        try:
            J = np.asarray(J, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must return an array of numbers, got {type(J).__name__}") from None
    if J.dtype.kind not in "fiu":
        raise TypeError(f"{name} must return real numbers, got dtype {J.dtype}")
    return J.astype(backend.dtype, copy=False)


def jacobian_provider(field, backend, jac: Callable | None, batched: bool):
    """The provider for a solve: the user's ``jac``, autograd for torch, finite differences for numpy."""
    if jac is not None:
        return UserJacobian(jac, field, backend, batched)
    if backend.name == "torch":
        return AutogradJacobian(field, backend, batched)
    return FiniteDifferenceJacobian(field, backend, batched)
