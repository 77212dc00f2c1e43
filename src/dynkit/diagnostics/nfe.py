"""Counting the function evaluations (NFE) of a learned vector field, forward and backward.

The forward NFE of a batch is the number of calls of the vector field while the model runs. The
backward NFE is the number of vector-Jacobian products taken through the field's outputs while the
loss is differentiated. One definition covers both ways of computing gradients:

* with the adjoint method (``odeint_adjoint``) the backward pass solves the adjoint ODE, calling the
  field and taking one vector-Jacobian product per call, under ``torch.enable_grad``;
* with discretise-then-optimise (``odeint`` or :func:`dynkit.solve`) autograd backpropagates once
  through every recorded evaluation that the output depends on.

This is how the review counts NFEs for Figs. 6, 10 and 11 (Sect. 3.4.2). The sweeps that train
models and measure them (NFE vs tolerance) are experiments:
:func:`dynkit.experiments.nfe_vs_tolerance`.
"""

from __future__ import annotations

from torch import nn


class NFECounter(nn.Module):
    """Wraps a vector field ``f(t, y)`` and counts its forward calls and backward products.

    Parameters
    ----------
    field : nn.Module
        The vector field; its parameters become this module's parameters.

    Attributes
    ----------
    calls : int
        Calls of ``field`` since the last :meth:`reset` (forward NFE, read it before ``backward``:
        the adjoint method calls the field again while differentiating).
    vjps : int
        Vector-Jacobian products taken through ``field``'s outputs since the last :meth:`reset`
        (backward NFE).
    """

    def __init__(self, field: nn.Module):
        super().__init__()
        self.field = field
        self.calls = 0
        self.vjps = 0

    def reset(self) -> None:
        self.calls = 0
        self.vjps = 0

    def forward(self, t, y):
        self.calls += 1
        out = self.field(t, y)
        if out.requires_grad:
            out.register_hook(self._count_vjp)
        return out

    def _count_vjp(self, grad):
        self.vjps += 1
        return grad


def counters(module: nn.Module) -> list[NFECounter]:
    """All :class:`NFECounter` submodules of ``module`` (itself included), in registration order."""
    return [m for m in module.modules() if isinstance(m, NFECounter)]


def reset_nfe(module: nn.Module) -> None:
    """Reset every counter inside ``module`` (call it at the start of each batch)."""
    for counter in counters(module):
        counter.reset()


def forward_nfe(module: nn.Module) -> int:
    """Calls of every counted vector field inside ``module`` since the last reset."""
    return sum(c.calls for c in counters(module))


def backward_nfe(module: nn.Module) -> int:
    """Vector-Jacobian products through every counted vector field inside ``module`` since the
    last reset."""
    return sum(c.vjps for c in counters(module))


class BatchNFE:
    """Measure one batch: ``with BatchNFE(model) as nfe: ... ; nfe.forward, nfe.backward``.

    Reset on entry; :meth:`mark_forward` freezes the forward count (call it after the model's
    forward pass, before ``loss.backward()``); the backward count is read on exit.
    """

    def __init__(self, module: nn.Module):
        self.module = module
        self.forward = 0
        self.backward = 0

    def __enter__(self) -> "BatchNFE":
        reset_nfe(self.module)
        return self

    def mark_forward(self) -> int:
        self.forward = forward_nfe(self.module)
        return self.forward

    def __exit__(self, *exc) -> None:
        self.backward = backward_nfe(self.module)


def tolerance_key(tol: float) -> str:
    """The key of a tolerance in results: ``1e-05`` for 1e-5."""
    return f"{tol:.0e}"


__all__ = [
    "NFECounter",
    "BatchNFE",
    "counters",
    "reset_nfe",
    "forward_nfe",
    "backward_nfe",
    "tolerance_key",
]
