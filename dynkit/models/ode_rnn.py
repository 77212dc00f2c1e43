"""ODE-RNN hybrids for irregularly sampled sequences (Sect. 3.4.3-3.4.4 of the review, after Rubanova et al.).

Between two observations the state ``z`` evolves by the model's ODE over the gap; at each
observation a recurrent cell updates the position ``h`` from ``[h, x_k]``; a dense layer reads the
output from ``h``. The five hybrids differ only in the ODE:

* ODE-RNN: ``dh/dt = f(h)``; ANODE-RNN: the same with ``p`` zero-augmented components that restart
  at zero after every observation (ANODE's augmentation, once per solve);
* SONODE-RNN: ``dh/dt = v, dv/dt = f([h, v])``;
* HBNODE-RNN, Eq. (25): ``dh/dt = m, dm/dt = -gamma m + f(h)``;
* GHBNODE-RNN, Eq. (48): ``dh/dt = sigma(m), dm/dt = -gamma m + f(h) - xi h``.

The velocity/momentum is carried through the observations (the cell updates ``h`` only), which is
what lets the adjoint ``[dL/dh, dL/dm]`` of the heavy-ball hybrids avoid vanishing (Eq. (54)-(58),
Fig. 8 of the review). Every sequence of a batch has its own gaps: each gap ``dt`` is integrated as
``dz/ds = dt * g(z)`` over ``s`` in [0, 1] (an exact change of time for autonomous fields), so one
batched solve covers all sequences.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks as check
from .neural_ode import (FirstOrder, GeneralizedHeavyBall, HeavyBall, MLPField, SecondOrder, damping,
                         skip_coefficient)
from .ode_block import ODEBlock

HYBRIDS = ("node", "anode", "sonode", "hbnode", "ghbnode")
LABELS = {"node": "ODE-RNN", "anode": "ANODE-RNN", "sonode": "SONODE-RNN", "hbnode": "HBNODE-RNN",
          "ghbnode": "GHBNODE-RNN"}


class _LinearField(nn.Module):
    """A single dense layer ``f(t, h) = W h + b`` (the review's "simple dense network" for Walker2D)."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.layer = nn.Linear(in_dim, out_dim)

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.layer(h)


class _TimeScaled(nn.Module):
    """``dz/ds = gap * g(s, z)``: one unit of ``s`` spans each sequence's own gap (``gap`` of shape (B, 1))."""

    def __init__(self, dynamics: nn.Module):
        super().__init__()
        self.dynamics = dynamics
        self.gap: torch.Tensor | None = None

    def forward(self, s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.gap * self.dynamics(s, z)


def _field(in_dim: int, out_dim: int, width: int | None, activation) -> nn.Module:
    if width is None:
        return _LinearField(in_dim, out_dim)
    return MLPField(in_dim, width, out_dim, activation=activation)


def _cell(in_dim: int, out_dim: int, width: int | None) -> nn.Module:
    """The recurrent update: one dense layer (``width=None``) or a 3-layer perceptron, tanh output."""
    if width is None:
        return nn.Sequential(nn.Linear(in_dim, out_dim), nn.Tanh())
    return nn.Sequential(nn.Linear(in_dim, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                         nn.Linear(width, out_dim), nn.Tanh())


def _width(value, name: str) -> int | None:
    return None if value is None else check.integer(value, name, 1)


def _callable(value, name: str):
    if not callable(value):
        raise TypeError(f"{name} must be a callable (tensor -> tensor), got {type(value).__name__} {value!r:.60}")
    return value


class ODERNN(nn.Module):
    """One of the five ODE-RNN hybrids.

    Parameters
    ----------
    model : {"node", "anode", "sonode", "hbnode", "ghbnode"}
    n_inputs, n_outputs : int
        Features per observation and per prediction.
    hidden : int
        Size of the position ``h`` the cell updates.
    augment : int
        Extra ODE components of the position (carried through observations; zeroed after each one
        for ``"anode"``).
    field_width : int or None
        Hidden width of the 3-layer perceptron ``f``; ``None`` makes ``f`` one dense layer.
    cell_width : int or None
        Hidden width of a 3-layer recurrent cell; ``None`` makes the cell one dense layer.
    activation : callable
        Activation inside a perceptron ``f`` (ELU by default).
    sigma : callable
        GHBNODE's ``sigma`` (``tanh`` by default; the review's Silverbox run uses a hardtanh).
    **block_options
        :class:`~dynkit.models.ODEBlock` options (``method``, ``rtol``, ``atol``, ``solver``,
        ``adjoint``, ``step_size`` in units of one gap).
    """

    def __init__(self, model: str, n_inputs: int, n_outputs: int, hidden: int, *, augment: int = 0,
                 field_width: int | None = None, cell_width: int | None = None,
                 activation: Callable[[torch.Tensor], torch.Tensor] = F.elu,
                 sigma: Callable[[torch.Tensor], torch.Tensor] = torch.tanh, **block_options):
        super().__init__()
        check.one_of(model, "model", HYBRIDS)
        for name, value in (("n_inputs", n_inputs), ("n_outputs", n_outputs), ("hidden", hidden)):
            check.integer(value, name, 1)
        check.integer(augment, "augment", 0)
        field_width, cell_width = _width(field_width, "field_width"), _width(cell_width, "cell_width")
        activation, sigma = _callable(activation, "activation"), _callable(sigma, "sigma")
        self.model, self.n_inputs, self.hidden, self.augment = model, n_inputs, hidden, augment
        self.position = hidden + augment
        P = self.position
        if model in ("node", "anode"):
            dynamics = FirstOrder(_field(P, P, field_width, activation))
        elif model == "sonode":
            dynamics = SecondOrder(_field(2 * P, P, field_width, activation))
        elif model == "hbnode":
            dynamics = HeavyBall(_field(P, P, field_width, activation), damping())
        else:
            dynamics = GeneralizedHeavyBall(_field(P, P, field_width, activation), damping(), skip_coefficient(),
                                            sigma)
        self.n_states = 1 if model in ("node", "anode") else 2
        self.scaled = _TimeScaled(dynamics)
        self.block = ODEBlock(self.scaled, 0.0, 1.0, **block_options)
        self.cell = _cell(P + n_inputs, hidden, cell_width)
        self.readout = nn.Linear(P, n_outputs)

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        return like.new_zeros(batch, self.n_states * self.position)

    def evolve(self, z: torch.Tensor, gap: torch.Tensor) -> torch.Tensor:
        """``z`` after each sequence's ``gap`` (shape (B,)) of the ODE."""
        self.scaled.gap = gap.reshape(-1, 1).to(z.dtype)
        try:
            return self.block(z)
        finally:
            self.scaled.gap = None

    def update(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The observation update: ``h <- cell([h, x])``; augmentation and momentum kept (ANODE: zeroed)."""
        P, H = self.position, self.hidden
        h = self.cell(torch.cat([z[:, :P], x], dim=1))
        aug = z[:, H:P] if self.model != "anode" else torch.zeros_like(z[:, H:P])
        return torch.cat([h, aug, z[:, P:]], dim=1)

    def read(self, z: torch.Tensor) -> torch.Tensor:
        return self.readout(z[:, :self.position])

    def _check(self, x: torch.Tensor, gaps: torch.Tensor) -> None:
        check.tensor(x, "x", ndim=3, floating=True, finite=True, shape_hint=f"(batch, length, {self.n_inputs})")
        check.tensor(gaps, "gaps", ndim=2, floating=True, finite=True, shape_hint="(batch, length)")
        if x.dim() != 3 or x.shape[2] != self.n_inputs:
            raise ValueError(f"x must have shape (batch, length, {self.n_inputs}), got {tuple(x.shape)}")
        if tuple(gaps.shape) != tuple(x.shape[:2]):
            raise ValueError(f"gaps must have shape {tuple(x.shape[:2])} (batch, length), got {tuple(gaps.shape)}")
        if bool((gaps < 0).any()):
            raise ValueError(f"gaps must be >= 0 (time must not run backwards), got minimum {float(gaps.min())!r}")

    def forward(self, x: torch.Tensor, gaps: torch.Tensor, keep_states: bool = False):
        """Read the sequence ``x`` (B, L, n_inputs) observed after ``gaps`` (B, L; ``gaps[:, 0]`` is ignored).

        Returns
        -------
        outputs : torch.Tensor
            (B, L, n_outputs), the readout after each observation (the one-step-ahead prediction).
        states : list of torch.Tensor
            With ``keep_states``, the state after each update, each with ``retain_grad()`` so that
            ``states[k].grad`` is the adjoint ``dL/dz`` at observation ``k`` after ``backward``.
        z : torch.Tensor
            The final state (for :meth:`forecast`).
        """
        self._check(x, gaps)
        check.boolean(keep_states, "keep_states")
        z = self.initial_state(x.shape[0], x)
        outputs, states = [], []
        for k in range(x.shape[1]):
            if k > 0:
                z = self.evolve(z, gaps[:, k])
            z = self.update(z, x[:, k])
            if keep_states:
                z.retain_grad()
                states.append(z)
            outputs.append(self.read(z))
        return torch.stack(outputs, 1), states, z

    def forecast(self, z: torch.Tensor, gaps: torch.Tensor) -> torch.Tensor:
        """Predictions at the next ``F`` times after the state ``z``, ``gaps`` (B, F): the ODE only, no updates."""
        width = self.n_states * self.position
        check.tensor(z, "z", ndim=2, floating=True, finite=True, shape_hint=f"(batch, {width})")
        check.tensor(gaps, "gaps", ndim=2, floating=True, finite=True, shape_hint="(batch, forecast)")
        if z.shape[1] != width or gaps.shape[0] != z.shape[0]:
            raise ValueError(f"z must have shape (batch, {width}) and gaps (batch, forecast), got z "
                             f"{tuple(z.shape)} and gaps {tuple(gaps.shape)}")
        if bool((gaps < 0).any()):
            raise ValueError(f"gaps must be >= 0 (time must not run backwards), got minimum {float(gaps.min())!r}")
        outputs = []
        for k in range(gaps.shape[1]):
            z = self.evolve(z, gaps[:, k])
            outputs.append(self.read(z))
        return torch.stack(outputs, 1)


def adjoint_norms(states: list[torch.Tensor]) -> list[float]:
    """``||dL/dz_k||_2`` per observation after ``loss.backward()`` (``z = h`` or ``[h, m]``), Fig. 8 of the review."""
    if not isinstance(states, (list, tuple)) or not states:
        raise TypeError(f"states must be a non-empty list of tensors (forward(keep_states=True)), "
                        f"got {type(states).__name__} {states!r:.60}")
    norms = []
    for k, state in enumerate(states):
        check.tensor(state, f"states[{k}]")
        if state.grad is None:
            raise ValueError(f"states[{k}] has no gradient (run forward(keep_states=True), then backward), "
                             f"got grad None")
        norms.append(float(state.grad.norm()))
    return norms
