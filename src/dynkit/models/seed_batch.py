"""Several seeds of one ODE-RNN hybrid trained as one batched model.

:class:`SeedBatchedODERNN` takes ``S`` :class:`~dynkit.models.ode_rnn.ODERNN` models of the same
configuration (the review authors' plane-vibration design: any of the five hybrids with the
perceptron field, the block-linear residual cell and the initial state read from the window) and
stacks each of their parameters along a leading seed axis. Every dense layer becomes one batched
product (``torch.baddbmm``) for all seeds, and every gap is one :func:`~dynkit.solvers.seedwise.
solve_seeds` call in which each seed takes the steps its own model's ``dk.solve`` would take
(forward and, with ``adjoint``, backward). So one torch operation does ``S`` seeds' work: on small
models, whose training time is the per-operation overhead of torch, ``S`` seeds cost little more
than one.

The seeds never mix: each seed's loss, gradients, NFE and optimiser step are those of its own model
to rounding (``tests/test_seed_batch.py`` compares them in float64; in float32 at the recipe's
tolerance 1e-7 rounding tips a few step-size decisions, ``benchmarks/bench_training_batched.py``
prints the NFE either way), as long as the optimiser is elementwise (Adam) and
gradient clipping is per seed (:meth:`SeedBatchedODERNN.clip_grad_norms_`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ..solvers.seedwise import solve_seeds
from .neural_ode import ConstrainedScalar, FirstOrder, GeneralizedHeavyBall, HeavyBall, SecondOrder
from .ode_rnn import ODERNN, _BlockLinear, _Perceptron

__all__ = ["SeedBatchedODERNN"]


class _SeededLinear(nn.Module):
    """``S`` dense layers as one: ``x (S, B, in) -> x W_s + b_s`` (``weight``: (S, in, out),
    ``bias``: (S, 1, out))."""

    def __init__(self, layers: Sequence[nn.Linear]):
        super().__init__()
        self.weight = nn.Parameter(torch.stack([layer.weight.detach().t() for layer in layers]))
        self.bias = nn.Parameter(torch.stack([layer.bias.detach()[None] for layer in layers]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)

    def export(self, s: int, layer: nn.Linear) -> None:
        """Write seed ``s``'s weight and bias into ``layer``."""
        layer.weight.copy_(self.weight[s].t())
        layer.bias.copy_(self.bias[s, 0])


class _SeededScalar(nn.Module):
    """``S`` :class:`~dynkit.models.neural_ode.ConstrainedScalar` as one, shaped ``(S, 1, 1)``."""

    def __init__(self, scalars: Sequence[ConstrainedScalar]):
        super().__init__()
        raw = torch.stack([c.raw.detach() for c in scalars])
        if isinstance(scalars[0].raw, nn.Parameter):
            self.raw = nn.Parameter(raw)
        else:
            self.register_buffer("raw", raw)
        self.transform = scalars[0].transform

    def forward(self) -> torch.Tensor:
        return self.transform(self.raw).view(-1, 1, 1)


_KINDS = {FirstOrder: "first", SecondOrder: "second", HeavyBall: "heavy_ball"}
"""The gap fields a seed batch carries (:class:`GeneralizedHeavyBall`: ``"generalized"``)."""


class _SeededField(nn.Module):
    """The hybrids' gap field for ``S`` seeds: ``dz/ds = gap · g(z)`` with ``g`` the ODE-RNN's,
    ANODE-RNN's (:class:`~dynkit.models.neural_ode.FirstOrder`), SONODE-RNN's
    (:class:`~dynkit.models.neural_ode.SecondOrder`), HBNODE-RNN's or GHBNODE-RNN's
    (:class:`~dynkit.models.neural_ode.HeavyBall`,
    :class:`~dynkit.models.neural_ode.GeneralizedHeavyBall`), the gap in the state's last column
    (as :class:`~dynkit.models.ode_rnn._TimeScaled` under the adjoint) or in ``gap``."""

    def __init__(self, dynamics: Sequence[nn.Module]):
        super().__init__()
        first = dynamics[0]
        self.kind = _KINDS.get(type(first), "generalized")
        self.layers = nn.ModuleList(
            _SeededLinear([d.f.layers[i] for d in dynamics]) for i in range(len(first.f.layers))
        )
        self.activation = first.f.activation
        momentum = self.kind in ("heavy_ball", "generalized")
        self.gamma = _SeededScalar([d.gamma for d in dynamics]) if momentum else None
        self.xi = _SeededScalar([d.xi for d in dynamics]) if self.kind == "generalized" else None
        self.sigma = first.activation if self.kind == "generalized" else None
        self.gap: torch.Tensor | None = None

    def field(self, h: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.activation(h)
        return h

    def dynamics(self, z: torch.Tensor) -> torch.Tensor:
        if self.kind == "first":
            return self.field(z)
        h, m = z.chunk(2, dim=-1)
        if self.kind == "second":  # f reads the whole state [h, v]
            return torch.cat([m, self.field(z)], dim=-1)
        if self.kind == "heavy_ball":
            return torch.cat([m, -self.gamma() * m + self.field(h)], dim=-1)
        return torch.cat([self.sigma(m), -self.gamma() * m + self.field(h) - self.xi() * h], dim=-1)

    def forward(self, s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.gap is not None:
            return self.gap * self.dynamics(z)
        gap = z[..., -1:]
        return torch.cat([gap * self.dynamics(z[..., :-1]), torch.zeros_like(gap)], dim=-1)


def _check_models(models: Sequence[ODERNN]) -> ODERNN:
    """The first model, once every model is an ODERNN of the supported design, all alike."""
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(
            f"models must be a non-empty sequence of ODERNN, got {type(models).__name__}"
        )
    first, reference = models[0], None
    for i, m in enumerate(models):
        if not isinstance(m, ODERNN):
            raise TypeError(f"models[{i}] must be an ODERNN, got {type(m).__name__}")
        dynamics = m.scaled.dynamics
        supported = (
            isinstance(dynamics, (FirstOrder, SecondOrder, HeavyBall, GeneralizedHeavyBall))
            and isinstance(dynamics.f, _Perceptron)
            and m.residual
            and isinstance(m.cell, _BlockLinear)
            and m.initial == "window"
            and not m.resets_augmentation
            and m.prediction == "after_gap"
            and m.block.solver == "dynkit"
        )
        if not supported:
            raise ValueError(
                f"models[{i}] must be the authors' plane-vibration design (perceptron field, "
                f"residual block cell, initial_state='window', augmentation='initial', "
                f"prediction='after_gap', solver='dynkit'), got {m.model!r} with "
                f"{type(dynamics.f).__name__} field, prediction={m.prediction!r}"
            )
        same = (m.model, m.restoring, m.window, m.time_scale, m.cell.blocks, m.block.method)
        same += (m.block.rtol, m.block.atol, m.block.adjoint, len(dynamics.f.layers))
        if reference is not None and same != reference:
            raise ValueError(
                f"models[{i}] must be configured as models[0] (model, restoring, window, "
                f"time scale, cell, method, tolerances, adjoint, field depth), got {same} "
                f"against {reference}"
            )
        reference = same
    return first


class SeedBatchedODERNN(nn.Module):
    """``S`` ODE-RNN hybrids of one kind (one per seed) as one model: every tensor carries a leading
    seed axis; :meth:`read_window`, :meth:`forecast` and :meth:`losses` are
    :class:`~dynkit.models.ode_rnn.ODERNN`'s and the training loss's, for all seeds at once.

    Parameters
    ----------
    models : sequence of ODERNN
        The seeds' models (same configuration, see the module's description); their current
        parameters are copied in (the models are not changed).

    Attributes
    ----------
    nfe_forward, nfe_backward : numpy.ndarray
        Per seed, the NFE of the solves (forward) and of their adjoints (backward, once
        ``backward`` has run) since the last :meth:`take_nfe`.
    """

    def __init__(self, models: Sequence[ODERNN]):
        super().__init__()
        first = _check_models(models)
        self.n_seeds = len(models)
        self.position, self.n_states, self.window = first.position, first.n_states, first.window
        self.time_scale, self.prediction = first.time_scale, first.prediction
        self.blocks = first.cell.blocks
        self.method, self.rtol, self.atol = first.block.method, first.block.rtol, first.block.atol
        self.adjoint = first.block.adjoint
        self.encoder = _SeededLinear([m.encoder for m in models])
        self.initial_width = first.initial_width
        self.cell = nn.ModuleList(
            _SeededLinear([m.cell.parts[i] for m in models]) for i in range(len(self.blocks))
        )
        self.readout = _SeededLinear([m.readout for m in models])
        self.ode = _SeededField([m.scaled.dynamics for m in models])
        self._solutions: list = []
        self.nfe_forward = np.zeros(self.n_seeds, dtype=np.int64)

    # -- the model, ODERNN's methods with a seed axis in front

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        seeds, batch = x.shape[:2]
        if x.shape[2] != self.window:
            raise ValueError(
                f"x must hold window={self.window} observations per sequence, got {x.shape[2]}"
            )
        z = x.new_zeros(seeds, batch, self.n_states * self.position)
        written = self.encoder(x.reshape(seeds, batch, -1))
        return torch.cat([written, z[..., self.initial_width :]], dim=-1)

    def evolve(self, z: torch.Tensor, gap: torch.Tensor) -> torch.Tensor:
        """``z`` (S, B, W) after each sequence's ``gap`` (S, B) of the ODE, every seed its own
        steps."""
        gap = (self.time_scale * gap).unsqueeze(-1).to(z.dtype)
        span = [0.0, 1.0]
        options = dict(method=self.method, rtol=self.rtol, atol=self.atol)
        if self.adjoint:
            params = [p for p in self.ode.parameters()]
            sol = solve_seeds(
                self.ode,
                torch.cat([z, gap], dim=-1),
                span,
                adjoint=True,
                adjoint_params=params,
                **options,
            )
            out = sol.ys[-1][..., :-1]
        else:
            self.ode.gap = gap
            try:
                sol = solve_seeds(self.ode, z, span, **options)
            finally:
                self.ode.gap = None
            out = sol.ys[-1]
        self.nfe_forward += sol.stats.nfe
        self._solutions.append(sol)
        return out

    def update(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.cat([z, x], dim=-1).split(self.blocks, dim=-1)
        new = sum(part(piece) for part, piece in zip(self.cell, pieces))
        return z[..., : new.shape[-1]] + new

    def read(self, z: torch.Tensor) -> torch.Tensor:
        return self.readout(z[..., : self.position])

    def read_window(self, x: torch.Tensor, ahead: torch.Tensor):
        """ODERNN's ``read_window`` for ``x`` (S, B, L, n_inputs) and ``ahead`` (S, B, L):
        predictions and reconstructions (S, B, L, n_outputs) and the last state."""
        z = self.initial_state(x)
        predictions, reconstructions = [], []
        for k in range(x.shape[2]):
            z = self.update(z, x[:, :, k])
            reconstructions.append(self.read(z))
            z = self.evolve(z, ahead[:, :, k])
            predictions.append(self.read(z))
        return torch.stack(predictions, 2), torch.stack(reconstructions, 2), z

    def forecast(self, z: torch.Tensor, gaps: torch.Tensor) -> torch.Tensor:
        outputs = []
        for k in range(gaps.shape[2]):
            z = self.evolve(z, gaps[:, :, k])
            outputs.append(self.read(z))
        return torch.stack(outputs, 2)

    def losses(self, batch, weights, read_back: Sequence[int] | None = None):
        """Per seed ``(one-step MSE, forecast MSE, weighted loss)``, each of shape (S,), for a
        batch whose fields (``x``, ``targets``, ``future``, ``future_gaps``, ``ahead``) carry the
        seed axis in front (:func:`~dynkit.tasks.time_series` ``_losses``' terms)."""
        pred, recon, z = self.read_window(batch.x, batch.ahead)
        forecast = self.read(z)[:, :, None]
        later = batch.future_gaps[:, :, 1:]
        if later.shape[2]:
            forecast = torch.cat([forecast, self.forecast(z, later)], dim=2)
        one_step = (pred - batch.targets).pow(2).flatten(1).mean(1)
        future = (forecast - batch.future).pow(2).flatten(1).mean(1)
        loss = weights[0] * one_step + weights[2] * future
        if weights[1]:
            columns = list(range(recon.shape[-1]) if read_back is None else read_back)
            loss = loss + weights[1] * (recon - batch.x[..., columns]).pow(2).flatten(1).mean(1)
        return one_step, future, loss

    # -- training helpers

    def take_nfe(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-seed forward and backward NFE since the last call (backward: of the adjoints run
        so far); the counts restart."""
        backward = np.zeros(self.n_seeds, dtype=np.int64)
        for sol in self._solutions:
            if sol.backward_stats is not None:
                backward += sol.backward_stats.nfe
        forward, self.nfe_forward = self.nfe_forward, np.zeros(self.n_seeds, dtype=np.int64)
        self._solutions = []
        return forward, backward

    @torch.no_grad()
    def clip_grad_norms_(self, max_norm: float) -> torch.Tensor:
        """``torch.nn.utils.clip_grad_norm_`` for each seed on its own slices; the norms (S,)."""
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        squares = sum(g.reshape(self.n_seeds, -1).double().square().sum(1) for g in grads)
        norms = squares.sqrt()
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.to(g.dtype).view(-1, *(1,) * (g.dim() - 1)))
        return norms

    @torch.no_grad()
    def export(self, s: int, model: ODERNN) -> ODERNN:
        """Write seed ``s``'s parameters into ``model`` (an ODERNN of the same configuration)."""
        for seeded, layer in self._layer_pairs(model):
            seeded.export(s, layer)
        for seeded, scalar in self._scalar_pairs(model):
            scalar.raw.copy_(seeded.raw[s])
        return model

    def seed_gradients(self, s: int, model: ODERNN) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``(seed s's gradient here, model's matching parameter)`` for every parameter."""
        pairs = []
        for seeded, layer in self._layer_pairs(model):
            pairs.append((seeded.weight.grad[s].t(), layer.weight))
            pairs.append((seeded.bias.grad[s, 0], layer.bias))
        for seeded, scalar in self._scalar_pairs(model):
            if isinstance(seeded.raw, nn.Parameter):
                pairs.append((seeded.raw.grad[s], scalar.raw))
        return pairs

    def _layer_pairs(self, model: ODERNN):
        dynamics = model.scaled.dynamics
        pairs = [(self.encoder, model.encoder), (self.readout, model.readout)]
        pairs += list(zip(self.cell, model.cell.parts))
        pairs += list(zip(self.ode.layers, dynamics.f.layers))
        return pairs

    def _scalar_pairs(self, model: ODERNN):
        dynamics = model.scaled.dynamics
        pairs = [] if self.ode.gamma is None else [(self.ode.gamma, dynamics.gamma)]
        if self.ode.xi is not None:
            pairs.append((self.ode.xi, dynamics.xi))
        return pairs
