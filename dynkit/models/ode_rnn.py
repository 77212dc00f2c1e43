"""ODE-RNN hybrids for irregularly sampled sequences (Sect. 3.4.3-3.4.4 of the review, after Rubanova et al.).

Between two observations the state ``z`` evolves by the model's ODE over the gap; at each
observation a recurrent cell maps ``[z, x_k]`` to the new state (position, augmentation and
velocity/momentum; ``residual=True`` adds a linear increment instead, as the authors' public code
hedixia/HeavyBallNODE does); a dense layer reads the output from the position. The five hybrids
differ only in the ODE:

* ODE-RNN: ``dh/dt = f(h)``; ANODE-RNN: the same with ``p`` zero-augmented components that restart
  at zero after every observation (ANODE's augmentation, once per solve);
* SONODE-RNN: ``dh/dt = v, dv/dt = f([h, v])``;
* HBNODE-RNN, Eq. (25): ``dh/dt = m, dm/dt = -gamma m + f(h)`` (as the review writes it; the authors'
  public code also adds GHBNODE's restoring term ``-xi h`` to HBNODE);
* GHBNODE-RNN, Eq. (48): ``dh/dt = sigma(m), dm/dt = -gamma m + f(h) - xi h``.

The cell sees the velocity/momentum and writes it, so the adjoint ``[dL/dh, dL/dm]`` of the
heavy-ball hybrids flows through the ODE between observations and through the cell at each one
(Eq. (54)-(58), Fig. 8 of the review). An earlier design carried the momentum past the cell
untouched: with nothing resetting it, it grew over a 64-stamp window until HBNODE-RNN and
SONODE-RNN diverged in training (test MSE 1e8 to 1e10 on plane vibration, solver failures on
Walker2D). Every sequence of a batch has its own gaps: each gap ``dt`` is integrated as
``dz/ds = dt * g(z)`` over ``s`` in [0, 1] (an exact change of time for autonomous fields), so one
batched solve covers all sequences.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .. import _checks as check
from .neural_ode import (FirstOrder, GeneralizedHeavyBall, HeavyBall, MLPField, SecondOrder, damping,
                         skip_coefficient)
from .ode_block import ODEBlock

HYBRIDS = ("node", "anode", "sonode", "hbnode", "ghbnode")
LABELS = {"node": "ODE-RNN", "anode": "ANODE-RNN", "sonode": "SONODE-RNN", "hbnode": "HBNODE-RNN",
          "ghbnode": "GHBNODE-RNN"}


class _DenseField(nn.Module):
    """A single dense layer ``f(t, h) = activation(W h + b)`` (the review's "simple dense network" for Walker2D)."""

    def __init__(self, in_dim: int, out_dim: int, activation):
        super().__init__()
        self.layer = nn.Linear(in_dim, out_dim)
        self.activation = activation

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.activation(self.layer(h))


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
        return _DenseField(in_dim, out_dim, activation)
    return MLPField(in_dim, width, out_dim, activation=activation)


def _cell(in_dim: int, out_dim: int, width: int | None, residual: bool) -> nn.Module:
    """The recurrent update: one dense layer (``width=None``) or a 3-layer perceptron with tanh inside;
    a tanh output (the new state) or, ``residual``, a linear one (the increment)."""
    layers = [nn.Linear(in_dim, out_dim)] if width is None else [
        nn.Linear(in_dim, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, out_dim)]
    return nn.Sequential(*layers) if residual else nn.Sequential(*layers, nn.Tanh())


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
        Size of the position ``h`` (what the cell writes for ``"anode"``; the other hybrids' cell
        writes the whole state).
    augment : int
        Extra ODE components of the position (written by the cell; zeroed after each observation
        for ``"anode"``).
    field_width : int or None
        Hidden width of the 3-layer perceptron ``f``; ``None`` makes ``f`` one dense layer.
    cell_width : int or None
        Hidden width of a 3-layer recurrent cell; ``None`` makes the cell one dense layer.
    activation : callable
        Activation of ``f``: after each hidden layer of a perceptron ``f``, or after the single dense
        layer. ``tanh`` by default (the authors' code uses a linear field on Walker2D and ReLU
        perceptrons on plane vibration; dynkit keeps ``f`` bounded): a bounded ``f`` keeps the carried velocity/momentum bounded over a window (``|m| <= sup|f| /
        gamma``). With an unbounded ELU field the momentum of HBNODE-RNN and SONODE-RNN grew
        exponentially over the 64 stamps of a window (test MSE 1e8 to 1e10 on plane vibration, solver
        failures on Walker2D, measured with dynkit 0.1.0).
    sigma : callable
        GHBNODE's ``sigma`` (``tanh`` by default; the review's Silverbox run uses a hardtanh).
    residual : bool
        The authors' residual cell ``z + cell([z, x])`` with a linear output, instead of the default
        overwrite ``tanh(...)``. Without the authors' other safeguards (parameters shrunk by 0.01 at
        initialisation, an initial state read from the whole window, gradient clipping) it diverged
        on plane vibration here (HBNODE-RNN forecast MSE 1e11 after 20 epochs, measured).
    **block_options
        :class:`~dynkit.models.ODEBlock` options (``method``, ``rtol``, ``atol``, ``solver``,
        ``adjoint``, ``step_size`` in units of one gap).
    """

    def __init__(self, model: str, n_inputs: int, n_outputs: int, hidden: int, *, augment: int = 0,
                 field_width: int | None = None, cell_width: int | None = None,
                 activation: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
                 sigma: Callable[[torch.Tensor], torch.Tensor] = torch.tanh, residual: bool = False,
                 **block_options):
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
        elif model == "hbnode":  # Eq. (25) as the review writes it (the authors' code adds a restoring -xi h)
            dynamics = HeavyBall(_field(P, P, field_width, activation), damping())
        else:
            dynamics = GeneralizedHeavyBall(_field(P, P, field_width, activation), damping(), skip_coefficient(),
                                            sigma)
        self.n_states = 1 if model in ("node", "anode") else 2
        self.scaled = _TimeScaled(dynamics)
        self.block = ODEBlock(self.scaled, 0.0, 1.0, **block_options)
        width = self.n_states * P
        self.cell_out = hidden if model == "anode" else width
        self.residual = check.boolean(residual, "residual")
        self.cell = _cell(width + n_inputs, self.cell_out, cell_width, self.residual)
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
        """The observation update ``z <- cell([z, x])`` (``residual``: ``z + cell([z, x])``); ANODE's
        augmentation restarts at zero."""
        new = self.cell(torch.cat([z, x], dim=1))
        if self.residual:
            new = z[:, :self.cell_out] + new
        if self.model == "anode":
            new = torch.cat([new, new.new_zeros(new.shape[0], self.augment)], dim=1)
        return new

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
