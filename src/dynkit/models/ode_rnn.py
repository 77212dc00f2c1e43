"""ODE-RNN hybrids for irregularly sampled sequences (Sect. 3.4.3-3.4.4 of the review, after
Rubanova et al.).

Between two observations the state ``z`` evolves by the model's ODE over the gap; at each
observation a recurrent cell maps ``[z, x_k]`` to the new state (position, augmentation and
velocity/momentum; ``residual=True`` adds a linear increment instead, as the authors' public code
hedixia/HeavyBallNODE does); a dense layer reads the output from the position. The five hybrids
differ only in the ODE:

* ODE-RNN: ``dh/dt = f(h)``; ANODE-RNN: the same with ``p`` zero-augmented components that restart
  at zero after every observation (ANODE's augmentation, once per solve);
* SONODE-RNN: ``dh/dt = v, dv/dt = f([h, v])``;
* HBNODE-RNN, Eq. (25): ``dh/dt = m, dm/dt = -gamma m + f(h)`` (as the review writes it; the
  authors' public code also adds GHBNODE's restoring term ``-xi h`` to HBNODE);
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
from .neural_ode import (
    FirstOrder,
    GeneralizedHeavyBall,
    HeavyBall,
    MLPField,
    SecondOrder,
    damping,
    skip_coefficient,
)
from .ode_block import ODEBlock

__all__ = [
    "HYBRIDS",
    "LABELS",
    "RESTORING",
    "INITIAL_STATES",
    "AUGMENTATIONS",
    "PREDICTIONS",
    "ODERNN",
    "adjoint_norms",
]

HYBRIDS = ("node", "anode", "sonode", "hbnode", "ghbnode")
LABELS = {
    "node": "ODE-RNN",
    "anode": "ANODE-RNN",
    "sonode": "SONODE-RNN",
    "hbnode": "HBNODE-RNN",
    "ghbnode": "GHBNODE-RNN",
}


class _DenseField(nn.Module):
    """A single dense layer ``f(t, h) = activation(W h + b)`` (the review's "simple dense
    network" for Walker2D)."""

    def __init__(self, in_dim: int, out_dim: int, activation):
        super().__init__()
        self.layer = nn.Linear(in_dim, out_dim)
        self.activation = activation

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.activation(self.layer(h))


class _TimeScaled(nn.Module):
    """``dz/ds = gap * g(s, z)``: one unit of ``s`` spans each sequence's own gap (``gap`` of shape
    (B, 1)).

    With ``gap`` None the gap rides in the state's last column (``d gap / ds = 0``): the
    adjoint's backward solve runs after :meth:`ODERNN.evolve` has returned, so the gap must be
    part of what is integrated."""

    def __init__(self, dynamics: nn.Module):
        super().__init__()
        self.dynamics = dynamics
        self.gap: torch.Tensor | None = None

    def forward(self, s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.gap is not None:
            return self.gap * self.dynamics(s, z)
        gap = z[:, -1:]
        return torch.cat([gap * self.dynamics(s, z[:, :-1]), torch.zeros_like(gap)], dim=1)


def _field(in_dim: int, out_dim: int, width, activation) -> nn.Module:
    if width is None:
        return _DenseField(in_dim, out_dim, activation)
    if isinstance(width, tuple):
        return _Perceptron(in_dim, width, out_dim, activation)
    return MLPField(in_dim, width, out_dim, activation=activation)


class _Perceptron(nn.Module):
    """``f(t, h)``: dense layers ``in_dim -> widths[0] -> ... -> out_dim`` with ``activation``
    between them (the authors' plane-vibration fields have unequal widths, e.g. 21 -> 63 -> 84 ->
    21)."""

    def __init__(self, in_dim: int, widths: tuple[int, ...], out_dim: int, activation):
        super().__init__()
        sizes = (in_dim, *widths, out_dim)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.activation = activation

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.activation(h)
        return h


class _BlockLinear(nn.Module):
    """A linear map of ``[z, x]`` as a sum of one dense layer per block (each with its bias), the
    parametrisation of the authors' plane-vibration cell
    (``dense2(p) + dense2q(q) + dense1(x)``): the same maps as one dense layer, with their
    parameter count."""

    def __init__(self, blocks: tuple[int, ...], out_dim: int):
        super().__init__()
        self.blocks = blocks
        self.parts = nn.ModuleList(nn.Linear(b, out_dim) for b in blocks)

    def forward(self, zx: torch.Tensor) -> torch.Tensor:
        return sum(part(piece) for part, piece in zip(self.parts, zx.split(self.blocks, dim=1)))


def _cell(
    blocks: tuple[int, ...], out_dim: int, width, residual: bool, squash: bool = True
) -> nn.Module:
    """The recurrent update of ``[z, x]`` (``blocks``: the widths of its position, velocity and
    input parts).

    Overwrite (``residual=False``): one dense layer (``width=None``) or a 3-layer perceptron with
    tanh inside (``width`` an int, or a tuple of the two hidden widths), then a tanh (``squash``;
    without it the linear output is the new state, the authors' Walker2D ODE-RNN cell). Residual
    (the authors'): the increment, linear in ``[z, x]`` block by block (``width=None``, their
    plane-vibration cell) or a 3-layer tanh perceptron with a linear output (their Walker2D
    cell)."""
    in_dim = sum(blocks)
    if residual and width is None:
        return _BlockLinear(blocks, out_dim)
    if width is None:
        layers = [nn.Linear(in_dim, out_dim)]
    else:
        first, second = width if isinstance(width, tuple) else (width, width)
        layers = [
            nn.Linear(in_dim, first),
            nn.Tanh(),
            nn.Linear(first, second),
            nn.Tanh(),
            nn.Linear(second, out_dim),
        ]
    return nn.Sequential(*layers) if residual or not squash else nn.Sequential(*layers, nn.Tanh())


def _width(value, name: str):
    """``None``, a positive int, or (a perceptron field's hidden widths) a non-empty tuple of
    positive ints."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        if not value:
            raise ValueError(
                f"{name} must be None, a positive int or a non-empty tuple of them, got {value!r}"
            )
        return tuple(check.integer(w, name, 1) for w in value)
    return check.integer(value, name, 1)


def _callable(value, name: str):
    if not callable(value):
        raise TypeError(
            f"{name} must be a callable (tensor -> tensor), got {type(value).__name__} "
            f"{value!r:.60}"
        )
    return value


def _check_forward_in_time(gaps: torch.Tensor, name: str) -> None:
    if bool((gaps < 0).any()):
        raise ValueError(
            f"{name} must be >= 0 (time must not run backwards), got minimum {float(gaps.min())!r}"
        )


def _identity(m: torch.Tensor) -> torch.Tensor:
    return m


RESTORING = ("none", "learnable", "fixed")
"""HBNODE-RNN's restoring term ``-xi h``: absent (Eq. (25) as the review writes it), ``xi = softplus(chi)``
learnable from ``ln 2`` (the authors' plane-vibration code) or fixed at ``ln 2`` (their Walker2D code)."""  # noqa: E501
INITIAL_STATES = ("zeros", "window", "first")
"""The state before the first observation: zeros, a dense layer of the whole window (the authors' plane-vibration
``ic``) or of the first observation only (their Walker2D ANODE-RNN's ``IC``)."""  # noqa: E501
AUGMENTATIONS = ("every_observation", "initial")
"""Where ANODE-RNN's augmented components are zero: after every observation (the cell writes the position only)
or at the initial state only (the authors': the cell writes the whole state)."""  # noqa: E501
PREDICTIONS = ("after_update", "after_gap", "before_update")
"""What the one-step prediction of observation ``k + 1`` reads: the state right after the update at ``k``, or
(the authors') that state carried by the ODE across the gap to ``k + 1``; ``"before_update"`` (the authors'
Walker2D ODE-RNN and ANODE-RNN, ``rnn_out=True`` in their ``ODE_RNN_with_Grad_Listener``): the target of
observation ``k`` is read from the state before observation ``k`` is read and before the gap to it is integrated,
i.e. two stamps ahead of the last observation read (the first from the initial state alone)."""  # noqa: E501


class ODERNN(nn.Module):
    """One of the five ODE-RNN hybrids.

    Parameters
    ----------
    model : {"node", "anode", "sonode", "hbnode", "ghbnode"}
    n_inputs, n_outputs : int
        Features per observation and per prediction.
    hidden : int
        Size of the position ``h`` (what the cell writes for ``"anode"`` with ``augmentation=
        "every_observation"``; what the initial state writes with ``augmentation="initial"``).
    augment : int
        Extra ODE components of the position (zero at the start, and after each observation for
        ``"anode"`` with ``augmentation="every_observation"``).
    field_width : int, tuple of int, or None
        Hidden width of the 3-layer perceptron ``f``; a tuple: the hidden widths of a perceptron
        with one layer more than the tuple's length (the authors' unequal widths); ``None`` makes
        ``f`` one dense layer.
    cell_width : int, tuple of two ints, or None
        Hidden width(s) of a 3-layer recurrent cell (a tuple: its two unequal hidden widths, the
        authors' Walker2D ODE-RNN's 72 and 48); ``None`` makes the cell one dense layer.
    squash : bool
        The overwrite cell's final tanh (``residual=False``); ``False``: its linear output is the
        new state (the authors' Walker2D ODE-RNN and ANODE-RNN).
    activation : callable
        Activation of ``f``: after each hidden layer of a perceptron ``f``, or after the single
        dense layer. ``tanh`` by default (the authors' code uses a linear field on Walker2D and ReLU
        perceptrons on plane vibration): a bounded ``f`` keeps the carried velocity/momentum bounded
        over a window (``|m| <= sup|f| / gamma``). With an unbounded ELU field and the overwrite
        cell the momentum of HBNODE-RNN and SONODE-RNN grew exponentially over the 64 stamps of a
        window (test MSE 1e8 to 1e10 on plane vibration, solver failures on Walker2D, measured with
        dynkit 0.1.0).
    sigma : callable
        GHBNODE's ``sigma`` (``tanh`` by default; the review's Silverbox run uses a hardtanh).
    residual : bool
        The authors' residual cell ``z + cell([z, x])`` with a linear output (block by block without
        ``cell_width``), instead of the overwrite ``tanh(...)``. Without the authors' other
        safeguards (parameters shrunk by 0.01 at initialisation, an initial state read from the
        whole window, gradient clipping: :func:`~dynkit.tasks.time_series.train_hybrid`) it diverged
        on plane vibration here (HBNODE-RNN forecast MSE 1e11 after 20 epochs, measured).
    restoring : {"none", "learnable", "fixed"}
        HBNODE-RNN's restoring term (:data:`RESTORING`): with it the ODE is GHBNODE's with ``sigma``
        the identity, as the authors' ``HeavyBallNODE(corr=0)`` (their ``dh = -m`` is ours with
        ``m -> -m``).
    chi : float
        ``xi = softplus(chi)`` at the start, of GHBNODE-RNN's and HBNODE-RNN's restoring term (0:
        ``xi = ln 2``; the authors' Walker2D GHBNODE-RNN starts at ``chi = 1``, their ``corr=1``).
    initial_state : {"zeros", "window", "first"}
        :data:`INITIAL_STATES`; ``"window"`` needs ``window``, the number of observations of every
        sequence.
    augmentation : {"every_observation", "initial"}
        :data:`AUGMENTATIONS` (``"anode"`` only).
    prediction : {"after_update", "after_gap", "before_update"}
        :data:`PREDICTIONS`; ``"after_gap"`` reads windows with :meth:`read_window`, the others with
        ``forward``.
    time_scale : float
        Every gap is multiplied by it before it is integrated (the authors divide Walker2D's by 64).
    **block_options
        :class:`~dynkit.models.ODEBlock` options (``method``, ``rtol``, ``atol``, ``solver``,
        ``adjoint``, ``step_size`` in units of one gap).

    References
    ----------
    The review (Sect. 3.4.3-3.4.4, Eqs. (25), (48)); its authors' code, github.com/hedixia/HeavyBallNODE
    (``base.py`` ``ODE_RNN_with_Grad_Listener``, ``plane_vibration/*_rnn_pv.py``, ``walker2d/*_rnn_walker.py``).
    """  # noqa: E501

    def __init__(
        self,
        model: str,
        n_inputs: int,
        n_outputs: int,
        hidden: int,
        *,
        augment: int = 0,
        field_width: int | tuple[int, ...] | None = None,
        cell_width: int | tuple[int, int] | None = None,
        activation: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
        sigma: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
        residual: bool = False,
        squash: bool = True,
        restoring: str = "none",
        chi: float = 0.0,
        initial_state: str = "zeros",
        window: int | None = None,
        augmentation: str = "every_observation",
        prediction: str = "after_update",
        time_scale: float = 1.0,
        **block_options,
    ):
        super().__init__()
        check.one_of(model, "model", HYBRIDS)
        for name, value in (("n_inputs", n_inputs), ("n_outputs", n_outputs), ("hidden", hidden)):
            check.integer(value, name, 1)
        check.integer(augment, "augment", 0)
        field_width, cell_width = (
            _width(field_width, "field_width"),
            _width(cell_width, "cell_width"),
        )
        if isinstance(cell_width, tuple) and len(cell_width) != 2:
            raise ValueError(
                f"cell_width must be None, a positive int or a tuple of two, got {cell_width!r}"
            )
        squash = check.boolean(squash, "squash")
        chi = check.real(chi, "chi")
        activation, sigma = _callable(activation, "activation"), _callable(sigma, "sigma")
        check.one_of(restoring, "restoring", RESTORING)
        check.one_of(initial_state, "initial_state", INITIAL_STATES)
        check.one_of(augmentation, "augmentation", AUGMENTATIONS)
        check.one_of(prediction, "prediction", PREDICTIONS)
        self.time_scale = check.real(time_scale, "time_scale", low=0.0, low_open=True)
        if restoring != "none" and model != "hbnode":
            raise ValueError(
                f"restoring must be 'none' for {model!r} (HBNODE-RNN's option; GHBNODE-RNN "
                f"always has "
                f"its -xi h), got {restoring!r}"
            )
        if initial_state == "window":
            window = check.integer(window, "window", 1)
        self.model, self.n_inputs, self.hidden, self.augment = model, n_inputs, hidden, augment
        self.restoring, self.initial, self.window = restoring, initial_state, window
        self.augmentation, self.prediction = augmentation, prediction
        self.position = hidden + augment
        P = self.position
        if model in ("node", "anode"):
            dynamics = FirstOrder(_field(P, P, field_width, activation))
        elif model == "sonode":
            dynamics = SecondOrder(_field(2 * P, P, field_width, activation))
        elif model == "hbnode" and restoring == "none":  # Eq. (25) as the review writes it
            dynamics = HeavyBall(_field(P, P, field_width, activation), damping())
        elif (
            model == "hbnode"
        ):  # the authors' HeavyBallNODE(corr=...): Eq. (25) with a restoring -xi h
            dynamics = GeneralizedHeavyBall(
                _field(P, P, field_width, activation),
                damping(),
                skip_coefficient(chi, learnable=restoring == "learnable"),
                _identity,
            )
        else:
            dynamics = GeneralizedHeavyBall(
                _field(P, P, field_width, activation), damping(), skip_coefficient(chi), sigma
            )
        self.n_states = 1 if model in ("node", "anode") else 2
        self.scaled = _TimeScaled(dynamics)
        self.block = ODEBlock(self.scaled, 0.0, 1.0, **block_options)
        width = self.n_states * P
        self.resets_augmentation = model == "anode" and augmentation == "every_observation"
        self.cell_out = hidden if self.resets_augmentation else width
        self.residual = check.boolean(residual, "residual")
        self.cell = _cell(
            (*(P,) * self.n_states, n_inputs), self.cell_out, cell_width, self.residual, squash
        )
        # the authors' ic: the whole window (or its first observation), flattened, to the state
        # (their ANODE's: to the first ``hidden``)
        self.initial_width = hidden if model == "anode" else width
        reads = {"window": window, "first": 1}.get(initial_state)
        self.encoder = None if reads is None else nn.Linear(reads * n_inputs, self.initial_width)
        self.readout = nn.Linear(P, n_outputs)

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        """The state before the first observation of ``like`` (B, L, n_inputs): zeros, or the
        encoder's."""
        z = like.new_zeros(batch, self.n_states * self.position)
        if self.encoder is None:
            return z
        if self.initial == "first":
            return torch.cat([self.encoder(like[:, 0]), z[:, self.initial_width :]], dim=1)
        if like.shape[1] != self.window:
            raise ValueError(
                f"x must hold window={self.window} observations per sequence (the initial "
                f"state reads "
                f"the whole window), got {like.shape[1]}"
            )
        written = self.encoder(like.reshape(batch, -1))
        return torch.cat([written, z[:, self.initial_width :]], dim=1)

    def evolve(self, z: torch.Tensor, gap: torch.Tensor) -> torch.Tensor:
        """``z`` after each sequence's ``gap`` (shape (B,), times ``time_scale``) of the ODE."""
        gap = (self.time_scale * gap).reshape(-1, 1).to(z.dtype)
        if self.block.adjoint:  # the gap integrated as a constant component (see _TimeScaled)
            return self.block(torch.cat([z, gap], dim=1))[:, :-1]
        self.scaled.gap = gap
        try:
            return self.block(z)
        finally:
            self.scaled.gap = None

    def update(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The observation update ``z <- cell([z, x])`` (``residual``: ``z + cell([z, x])``);
        ANODE's augmentation restarts at zero (``augmentation="every_observation"``)."""
        new = self.cell(torch.cat([z, x], dim=1))
        if self.residual:
            new = z[:, : self.cell_out] + new
        if self.resets_augmentation:
            new = torch.cat([new, new.new_zeros(new.shape[0], self.augment)], dim=1)
        return new

    def read(self, z: torch.Tensor) -> torch.Tensor:
        return self.readout(z[:, : self.position])

    def _check(self, x: torch.Tensor, gaps: torch.Tensor, name: str = "gaps") -> None:
        check.tensor(
            x,
            "x",
            ndim=3,
            floating=True,
            finite=True,
            shape_hint=f"(batch, length, {self.n_inputs})",
        )
        check.tensor(gaps, name, ndim=2, floating=True, finite=True, shape_hint="(batch, length)")
        if x.dim() != 3 or x.shape[2] != self.n_inputs:
            raise ValueError(
                f"x must have shape (batch, length, {self.n_inputs}), got {tuple(x.shape)}"
            )
        if tuple(gaps.shape) != tuple(x.shape[:2]):
            raise ValueError(
                f"{name} must have shape {tuple(x.shape[:2])} (batch, length), got "
                f"{tuple(gaps.shape)}"
            )
        _check_forward_in_time(gaps, name)

    def forward(self, x: torch.Tensor, gaps: torch.Tensor, keep_states: bool = False):
        """Read the sequence ``x`` (B, L, n_inputs) observed after ``gaps`` (B, L; ``gaps[:, 0]`` is
        ignored), predicting each next observation from the state right after the update
        (``prediction="after_update"``; the authors' plane-vibration order: :meth:`read_window`).
        With ``prediction="before_update"`` (the authors' Walker2D ODE-RNN) output ``k`` is read
        before the gap to observation ``k`` (``gaps[:, 0]`` from the initial state included) is
        integrated and before observation ``k`` is read.

        Returns
        -------
        outputs : torch.Tensor
            (B, L, n_outputs), the readout after each observation (the one-step-ahead prediction).
        states : list of torch.Tensor
            With ``keep_states``, the state after each update (``"before_update"``: each but the
            last, which no output reads), each with ``retain_grad()`` so that ``states[k].grad`` is
            the adjoint ``dL/dz`` at observation ``k`` after ``backward``.
        z : torch.Tensor
            The final state (for :meth:`forecast`).
        """
        if self.prediction == "after_gap":
            raise ValueError(
                f"prediction must be 'after_update' or 'before_update' to call the model on "
                f"(x, gaps); "
                f"it predicts after the gap: call read_window(x, ahead), got prediction="
                f"{self.prediction!r}"
            )
        self._check(x, gaps)
        check.boolean(keep_states, "keep_states")
        z = self.initial_state(x.shape[0], x)
        outputs, states = [], []
        before = self.prediction == "before_update"
        for k in range(x.shape[1]):
            if before:
                outputs.append(self.read(z))
            if k > 0 or before:
                z = self.evolve(z, gaps[:, k])
            z = self.update(z, x[:, k])
            if keep_states:
                z.retain_grad()
                states.append(z)
            if not before:
                outputs.append(self.read(z))
        if (
            before and keep_states
        ):  # the last update feeds no output (its target lies beyond the window)
            states = states[:-1]
        return torch.stack(outputs, 1), states, z

    def read_window(self, x: torch.Tensor, ahead: torch.Tensor, keep_states: bool = False):
        """The authors' order (``ODE_RNN_with_Grad_Listener``): update with observation ``k``, read
        it back (the reconstruction), carry the state across ``ahead[:, k]`` (the gap to observation
        ``k + 1``), read the prediction of ``k + 1``.

        Returns
        -------
        predictions, reconstructions : torch.Tensor
            (B, L, n_outputs) each.
        states : list of torch.Tensor
            With ``keep_states``, the state after each update (``retain_grad()``, as in
            :meth:`forward`).
        z : torch.Tensor
            The state at the time of the last prediction (for :meth:`forecast`).
        """
        self._check(x, ahead, "ahead")
        check.boolean(keep_states, "keep_states")
        z = self.initial_state(x.shape[0], x)
        predictions, reconstructions, states = [], [], []
        for k in range(x.shape[1]):
            z = self.update(z, x[:, k])
            if keep_states:
                z.retain_grad()
                states.append(z)
            reconstructions.append(self.read(z))
            z = self.evolve(z, ahead[:, k])
            predictions.append(self.read(z))
        return torch.stack(predictions, 1), torch.stack(reconstructions, 1), states, z

    def forecast(self, z: torch.Tensor, gaps: torch.Tensor) -> torch.Tensor:
        """Predictions at the next ``F`` times after the state ``z``, ``gaps`` (B, F): the ODE
        only, no updates."""
        width = self.n_states * self.position
        check.tensor(z, "z", ndim=2, floating=True, finite=True, shape_hint=f"(batch, {width})")
        check.tensor(
            gaps, "gaps", ndim=2, floating=True, finite=True, shape_hint="(batch, forecast)"
        )
        if z.shape[1] != width or gaps.shape[0] != z.shape[0]:
            raise ValueError(
                f"z must have shape (batch, {width}) and gaps (batch, forecast), got z "
                f"{tuple(z.shape)} and gaps {tuple(gaps.shape)}"
            )
        _check_forward_in_time(gaps, "gaps")
        outputs = []
        for k in range(gaps.shape[1]):
            z = self.evolve(z, gaps[:, k])
            outputs.append(self.read(z))
        return torch.stack(outputs, 1)


def adjoint_norms(states: list[torch.Tensor]) -> list[float]:
    """``||dL/dz_k||_2`` per observation after ``loss.backward()`` (``z = h`` or ``[h, m]``),
    Fig. 8 of the review."""
    if not isinstance(states, (list, tuple)) or not states:
        raise TypeError(
            f"states must be a non-empty list of tensors (forward(keep_states=True)), "
            f"got {type(states).__name__} {states!r:.60}"
        )
    norms = []
    for k, state in enumerate(states):
        check.tensor(state, f"states[{k}]")
        if state.grad is None:
            raise ValueError(
                f"states[{k}] has no gradient (run forward(keep_states=True), then backward), "
                f"got grad None"
            )
        norms.append(float(state.grad.norm()))
    return norms
