"""NODE, ANODE, SONODE, HBNODE and GHBNODE: one model shape, five right-hand sides.

Every model maps an input ``x`` (vectors ``(B, d)`` or images ``(B, C, H, W)``) to an initial state
``z0`` (augmented, with momentum or velocity for the second-order models), integrates it with an
:class:`~dynkit.models.ODEBlock`, and returns the *position* part ``h(T)`` of the final state.
States are concatenated along dimension 1 (features or channels): ``z = [h, m]``.

The right-hand sides, all from Sect. 3 of the review:

* NODE/ANODE: ``dh/dt = f(t, h)``; ANODE appends ``p`` zero components to ``h`` [Dupont et al.].
* SONODE: ``dh/dt = v, dv/dt = f(t, [h, v])`` (f sees position and velocity) [Norcliffe et al.].
* HBNODE, Eq. (25): ``dh/dt = m, dm/dt = -gamma m + f(t, h)``, with
  ``gamma = eps * sigmoid(omega)``.
* GHBNODE, Eq. (48): ``dh/dt = sigma(m), dm/dt = -gamma m + f(t, h) - xi h``,
  ``xi = softplus(chi)``.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks as check
from .ode_block import ODEBlock

__all__ = [
    "MLPField",
    "ConvField",
    "ConvInitial",
    "ConstrainedScalar",
    "damping",
    "skip_coefficient",
    "FirstOrder",
    "SecondOrder",
    "HeavyBall",
    "GeneralizedHeavyBall",
    "NODE",
    "ANODE",
    "SONODE",
    "HBNODE",
    "GHBNODE",
    "MODELS",
]

# ---------------------------------------------------------------------------------------------
# learned vector fields f(t, h)


class _ThreeLayerField(nn.Module):
    """Three layers ``f(t, h)`` with ``activation`` between them; with ``time=True`` the time is
    appended to the input of every layer. Subclasses build the layers and append the time."""

    def __init__(
        self,
        in_name: str,
        in_width: int,
        hidden: int,
        out_name: str,
        out_width: int | None,
        time: bool,
        activation: Callable[[torch.Tensor], torch.Tensor],
        in_ndim: int,
    ):
        super().__init__()
        _check_positive(**{in_name: in_width, "hidden": hidden})
        out_width = in_width if out_width is None else out_width
        _check_positive(**{out_name: out_width})
        check.boolean(time, "time")
        _check_callable(activation, "activation")
        extra = int(time)
        self.time, self.activation = time, activation
        # what forward's h must have, checked by the models up front
        self.in_width, self.in_ndim = in_width, in_ndim
        self.layers = nn.ModuleList(self._layers(in_width + extra, hidden, extra, out_width))

    def _layers(self, n_in: int, hidden: int, extra: int, n_out: int) -> list[nn.Module]:
        raise NotImplementedError

    def _with_time(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        _check_field_input(self, h)
        for i, layer in enumerate(self.layers):
            if self.time:
                h = self._with_time(t, h)
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.activation(h)
        return h


class MLPField(_ThreeLayerField):
    """Three-layer perceptron ``f(t, h)``: ``in_dim -> hidden -> hidden -> out_dim``.

    With ``time=True`` the time is appended to the input of every layer.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int | None = None,
        *,
        time: bool = False,
        activation: Callable[[torch.Tensor], torch.Tensor] = F.elu,
    ):
        super().__init__("in_dim", in_dim, hidden, "out_dim", out_dim, time, activation, 2)

    def _layers(self, n_in: int, hidden: int, extra: int, n_out: int) -> list[nn.Module]:
        return [
            nn.Linear(n_in, hidden),
            nn.Linear(hidden + extra, hidden),
            nn.Linear(hidden + extra, n_out),
        ]

    def _with_time(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.cat([h, t.expand(*h.shape[:-1], 1)], dim=-1)


class ConvField(_ThreeLayerField):
    """Three-layer convolutional ``f(t, h)`` on images: 1x1, 3x3, 1x1 convolutions, ReLU in between.

    With ``time=True`` (the default, as in the review's image experiments) a constant channel
    holding ``t`` is appended to the input of every layer.
    """

    def __init__(
        self,
        in_channels: int,
        hidden: int,
        out_channels: int | None = None,
        *,
        time: bool = True,
        activation: Callable[[torch.Tensor], torch.Tensor] = F.relu,
    ):
        super().__init__(
            "in_channels", in_channels, hidden, "out_channels", out_channels, time, activation, 4
        )

    def _layers(self, n_in: int, hidden: int, extra: int, n_out: int) -> list[nn.Module]:
        return [
            nn.Conv2d(n_in, hidden, kernel_size=1),
            nn.Conv2d(hidden + extra, hidden, kernel_size=3, padding=1),
            nn.Conv2d(hidden + extra, n_out, kernel_size=1),
        ]

    def _with_time(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.cat([h, t.expand(h.shape[0], 1, *h.shape[2:])], dim=1)


class ConvInitial(nn.Module):
    """Small network for the initial augmentation and momentum of image models, as in the
    review's experiments: 1x1, 3x3, 1x1 convolutions with leaky ReLU (slope 0.3),
    ``in_channels -> out_channels``."""

    def __init__(self, in_channels: int, out_channels: int, hidden: int):
        super().__init__()
        _check_positive(in_channels=in_channels, out_channels=out_channels, hidden=hidden)
        self.in_width, self.in_ndim = in_channels, 4
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, hidden, 1),
            nn.LeakyReLU(0.3),
            nn.Conv2d(hidden, hidden, 3, padding=1),
            nn.LeakyReLU(0.3),
            nn.Conv2d(hidden, out_channels, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_field_input(self, x, "x")
        return self.net(x)


# ---------------------------------------------------------------------------------------------
# constrained scalars (damping gamma, skip coefficient xi)


class ConstrainedScalar(nn.Module):
    """A scalar ``transform(raw)`` with ``raw`` learnable (``nn.Parameter``) or fixed (a buffer)."""

    def __init__(
        self, raw: float, transform: Callable[[torch.Tensor], torch.Tensor], learnable: bool = True
    ):
        super().__init__()
        value = torch.tensor(check.real(raw, "raw"))
        _check_callable(transform, "transform")
        check.boolean(learnable, "learnable")
        if learnable:
            self.raw = nn.Parameter(value)
        else:
            self.register_buffer("raw", value)
        self.transform = transform

    def forward(self) -> torch.Tensor:
        return self.transform(self.raw)


def damping(omega: float = -3.0, epsilon: float = 1.0, learnable: bool = True) -> ConstrainedScalar:
    """``gamma = epsilon * sigmoid(omega)`` (Sect. 3.2.2 of the review); ``omega`` starts at -3
    there."""
    check.real(omega, "omega")
    epsilon = check.real(epsilon, "epsilon", low=0.0, low_open=True)
    check.boolean(learnable, "learnable")
    return ConstrainedScalar(omega, lambda w: epsilon * torch.sigmoid(w), learnable)


def skip_coefficient(chi: float = 0.0, learnable: bool = True) -> ConstrainedScalar:
    """``xi = softplus(chi)`` of GHBNODE, Eq. (48); ``chi = 0`` gives ``xi = ln 2``."""
    check.real(chi, "chi")
    check.boolean(learnable, "learnable")
    return ConstrainedScalar(chi, F.softplus, learnable)


# ---------------------------------------------------------------------------------------------
# right-hand sides on the full state z


class FirstOrder(nn.Module):
    """``dh/dt = f(t, h)`` (NODE, ANODE)."""

    def __init__(self, field: nn.Module):
        super().__init__()
        self.f = check.module(field, "field")

    def state_width(self) -> int | None:
        """Components of the state ``z`` along dim 1 that ``f`` accepts (None: unknown)."""
        return getattr(self.f, "in_width", None)

    def forward(self, t, z):
        return self.f(t, z)


class SecondOrder(nn.Module):
    """SONODE: ``dh/dt = v, dv/dt = f(t, [h, v])``."""

    def __init__(self, field: nn.Module):
        super().__init__()
        self.f = check.module(field, "field")

    def state_width(self) -> int | None:
        return getattr(self.f, "in_width", None)  # f sees the whole state [h, v]

    def forward(self, t, z):
        _check_even(z)
        v = z.chunk(2, dim=1)[1]
        return torch.cat([v, self.f(t, z)], dim=1)


class HeavyBall(nn.Module):
    """HBNODE, Eq. (25) of the review: ``dh/dt = m, dm/dt = -gamma m + f(t, h)``."""

    def __init__(self, field: nn.Module, gamma: ConstrainedScalar):
        super().__init__()
        self.f, self.gamma = check.module(field, "field"), _check_scalar(gamma, "gamma")

    def state_width(self) -> int | None:
        width = getattr(self.f, "in_width", None)  # f sees the position h, half of z = [h, m]
        return None if width is None else 2 * width

    def forward(self, t, z):
        _check_even(z)
        h, m = z.chunk(2, dim=1)
        return torch.cat([m, -self.gamma() * m + self.f(t, h)], dim=1)


class GeneralizedHeavyBall(nn.Module):
    """GHBNODE, Eq. (48) of the review: ``dh/dt = sigma(m), dm/dt = -gamma m + f(t, h) - xi h``."""

    def __init__(
        self,
        field: nn.Module,
        gamma: ConstrainedScalar,
        xi: ConstrainedScalar,
        activation: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
    ):
        super().__init__()
        self.f = check.module(field, "field")
        self.gamma, self.xi = _check_scalar(gamma, "gamma"), _check_scalar(xi, "xi")
        self.activation = _check_callable(activation, "activation")

    def state_width(self) -> int | None:
        width = getattr(self.f, "in_width", None)
        return None if width is None else 2 * width

    def forward(self, t, z):
        _check_even(z)
        h, m = z.chunk(2, dim=1)
        return torch.cat(
            [self.activation(m), -self.gamma() * m + self.f(t, h) - self.xi() * h], dim=1
        )


# ---------------------------------------------------------------------------------------------
# the models


class _NeuralODE(nn.Module):
    """Input -> initial state -> ODE block -> position part of the final state.

    ``n_states`` is 1 for first-order models and 2 for models with velocity or momentum. The state
    has ``n_states * (c + augment_dim)`` components along dim 1 for an input with ``c``; the first
    ``c`` are the input, the rest are zeros or ``initial(x)``.
    """

    n_states = 1

    def __init__(
        self,
        dynamics: nn.Module,
        *,
        augment_dim: int = 0,
        initial: nn.Module | None = None,
        **block_options,
    ):
        super().__init__()
        if isinstance(augment_dim, bool) or not isinstance(augment_dim, int) or augment_dim < 0:
            raise ValueError(f"augment_dim must be an integer >= 0, got {augment_dim!r}")
        if initial is not None:
            _check_callable(initial, "initial")
        self.augment_dim = augment_dim
        self.initial = initial
        self.block = ODEBlock(dynamics, **block_options)

    @property
    def dynamics(self) -> nn.Module:
        """The right-hand side on the full state (without the NFE counter)."""
        return self.block.field.field

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        check.tensor(x, "x", floating=True, finite=True)
        if x.dim() < 2:
            raise ValueError(
                f"x must have a batch and a feature/channel dimension, got shape {tuple(x.shape)}"
            )
        width = getattr(self.dynamics, "state_width", lambda: None)()
        if width is not None and self.n_states * (x.shape[1] + self.augment_dim) != width:
            expected = width // self.n_states - self.augment_dim
            raise ValueError(
                f"x must have {expected} features/channels along dim 1 (the field's input width), "
                f"got shape {tuple(x.shape)}"
            )
        extra = self.n_states * (x.shape[1] + self.augment_dim) - x.shape[1]
        if self.initial is None:
            rest = x.new_zeros(x.shape[0], extra, *x.shape[2:])
        else:
            rest = self.initial(x)
            if rest.shape[1] != extra:
                raise ValueError(
                    f"initial(x) must have {extra} components along dim 1, got {rest.shape[1]}"
                )
        return torch.cat([x, rest], dim=1)

    def forward(self, x: torch.Tensor, times=None) -> torch.Tensor:
        """``h(t1)`` (shape of ``x`` with ``c + augment_dim`` along dim 1), or ``h`` at
        ``times``."""
        z = self.block(self.initial_state(x), times)
        return z.narrow(1 if times is None else 2, 0, x.shape[1] + self.augment_dim)

    def state(self, x: torch.Tensor, times) -> torch.Tensor:
        """The full state ``z`` (position and momentum) at ``times``, stacked on dim 0."""
        return self.block(self.initial_state(x), times)


class NODE(_NeuralODE):
    """Neural ODE: ``dh/dt = f(t, h)``, ``h(0) = x`` [Chen et al. 2018]."""

    def __init__(self, field: nn.Module, **block_options):
        super().__init__(FirstOrder(field), **block_options)


class ANODE(_NeuralODE):
    """Augmented neural ODE: ``h(0) = [x, 0]`` with ``augment_dim`` zeros [Dupont et al. 2019]."""

    def __init__(self, field: nn.Module, augment_dim: int = 1, **block_options):
        super().__init__(FirstOrder(field), augment_dim=augment_dim, **block_options)


class SONODE(_NeuralODE):
    """Second-order neural ODE ``d2h/dt2 = f(t, h, dh/dt)`` as a first-order system [Norcliffe et
    al. 2020].

    The initial velocity (and augmentation) is zero, or ``initial(x)``.
    """

    n_states = 2

    def __init__(
        self,
        field: nn.Module,
        augment_dim: int = 0,
        initial: nn.Module | None = None,
        **block_options,
    ):
        super().__init__(
            SecondOrder(field), augment_dim=augment_dim, initial=initial, **block_options
        )


class HBNODE(_NeuralODE):
    """Heavy-ball neural ODE, Eq. (24)/(25) of the review.

    Parameters
    ----------
    field : nn.Module
        ``f(t, h)``.
    augment_dim : int
        Extra zero (or ``initial``-given) components of ``h``.
    initial : nn.Module, optional
        Network giving the augmentation and the initial momentum from ``x``; zeros when omitted.
    omega, epsilon, learn_gamma
        ``gamma = epsilon * sigmoid(omega)``; ``omega`` learnable (starting at -3, as in the review)
        unless ``learn_gamma=False``.
    **block_options
        :class:`~dynkit.models.ODEBlock` options (``solver``, ``method``, ``rtol``, ``atol``,
        ``adjoint``, ...).
    """

    n_states = 2

    def __init__(
        self,
        field: nn.Module,
        augment_dim: int = 0,
        initial: nn.Module | None = None,
        *,
        omega: float = -3.0,
        epsilon: float = 1.0,
        learn_gamma: bool = True,
        **block_options,
    ):
        gamma = damping(omega, epsilon, check.boolean(learn_gamma, "learn_gamma"))
        super().__init__(
            HeavyBall(field, gamma), augment_dim=augment_dim, initial=initial, **block_options
        )


class GHBNODE(_NeuralODE):
    """Generalized heavy-ball neural ODE, Eq. (48) of the review.

    As :class:`HBNODE`, plus ``activation`` (sigma, ``tanh`` by default; any callable) and
    ``xi = softplus(chi)`` (learnable unless ``learn_xi=False``; ``chi = 0`` gives ``ln 2``).
    """

    n_states = 2

    def __init__(
        self,
        field: nn.Module,
        augment_dim: int = 0,
        initial: nn.Module | None = None,
        *,
        omega: float = -3.0,
        epsilon: float = 1.0,
        learn_gamma: bool = True,
        chi: float = 0.0,
        learn_xi: bool = True,
        activation: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
        **block_options,
    ):
        check.boolean(learn_gamma, "learn_gamma")
        check.boolean(learn_xi, "learn_xi")
        dynamics = GeneralizedHeavyBall(
            field, damping(omega, epsilon, learn_gamma), skip_coefficient(chi, learn_xi), activation
        )
        super().__init__(dynamics, augment_dim=augment_dim, initial=initial, **block_options)


MODELS = {"node": NODE, "anode": ANODE, "sonode": SONODE, "hbnode": HBNODE, "ghbnode": GHBNODE}


def _check_positive(**sizes) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_callable(fn, name: str):
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    return fn


def _check_scalar(value, name: str):
    if not isinstance(value, ConstrainedScalar):
        raise TypeError(
            f"{name} must be a ConstrainedScalar (see damping, skip_coefficient), "
            f"got {type(value).__name__}"
        )
    return value


def _check_even(z: torch.Tensor) -> None:
    if z.dim() < 2 or z.shape[1] % 2:
        raise ValueError(
            f"z must hold position and momentum halves along dim 1 (an even size), "
            f"got shape {tuple(z.shape)}"
        )


def _check_field_input(field: nn.Module, h, name: str = "h") -> None:
    # images: (batch, C, H, W) with C channels; vectors: (..., features) with the features last
    check.tensor(h, name, floating=True)
    image = field.in_ndim == 4
    if (
        (h.dim() != 4 or h.shape[1] != field.in_width)
        if image
        else (h.dim() < 1 or h.shape[-1] != field.in_width)
    ):
        shape = f"(batch, {field.in_width}, H, W)" if image else f"(..., {field.in_width})"
        raise ValueError(f"{name} must have shape {shape}, got {tuple(h.shape)}")
