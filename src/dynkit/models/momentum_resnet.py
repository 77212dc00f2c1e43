"""Momentum ResNets (Sander et al., 2021, "Momentum Residual Neural Networks"), with memory-free
training.

A Momentum ResNet iterates Eq. (2) of the paper,

    v_{n+1} = gamma v_n + (1 - gamma) f_n(x_n),    x_{n+1} = x_n + v_{n+1},

and is inverted in closed form by Eq. (3). With ``exact=True`` the state lives on a fixed-point grid
(:mod:`dynkit.models.exact`) where additions are exact and the multiplication by gamma is made
reversible by an information buffer (Appendix C), so the backward pass *reconstructs* every
activation bit for bit instead of storing it: the memory of a training step does not grow with depth
beyond the buffer's ``depth * log2(1/gamma)`` bits per element (Sect. 3.2).

The engine here runs the general coupled update ``v <- gamma v + alpha phi_n(x); x <- x + psi_n(v)``
(``psi_n`` = identity for a Momentum ResNet); a RevNet (:mod:`dynkit.models.revnet`) is the case
``gamma = alpha = 1``.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from numbers import Real
from typing import Callable, Iterable, Sequence

import torch
from torch import nn

from .exact import (
    FRAC_BITS,
    InformationBuffer,
    check_frac_bits,
    check_no_overflow,
    check_representable,
    rational,
    to_fixed,
    to_float,
)

__all__ = ["MomentumResNet", "MomentumStage", "ResidualBranch", "to_momentum_resnet"]


# ---------------------------------------------------------------------------------------------
# The coupled reversible engine shared by Momentum ResNets and RevNets
# ---------------------------------------------------------------------------------------------
class _Rule:
    """One forward call: the functions, the update coefficients, the keyword arguments, the seed."""

    def __init__(
        self,
        phis,
        psis,
        ratio: Fraction,
        alpha: float,
        kwargs: dict,
        seed: int | None,
        frac_bits: int,
    ):
        self.phis, self.psis = list(phis), (list(psis) if psis is not None else None)
        self.ratio, self.gamma, self.alpha = ratio, float(ratio), alpha
        self.kwargs, self.seed, self.frac_bits = kwargs, seed, frac_bits
        self.buffer: InformationBuffer | None = None  # filled by the exact forward
        self.end: tuple[torch.Tensor, torch.Tensor] | None = (
            None  # final (x, v) ints of the exact forward
        )
        self.reconstructed: tuple[torch.Tensor, torch.Tensor] | None = (
            None  # (x_0, v_0) ints, by backward
        )

    def with_kwargs(self, kwargs: dict) -> "_Rule":
        rule = _Rule(
            self.phis, self.psis, self.ratio, self.alpha, kwargs, self.seed, self.frac_bits
        )
        rule.buffer, rule.end = self.buffer, self.end
        return rule

    @property
    def depth(self) -> int:
        return len(self.phis)

    def rng(self, k: int, device: torch.device):
        """Layer ``k`` draws its random numbers (dropout, ...) from seed ``seed + k``, restored
        afterwards, so that the backward pass recomputes it with the very same random state."""
        if self.seed is None:
            return contextlib.nullcontext()
        devices = (
            [device.index if device.index is not None else torch.cuda.current_device()]
            if device.type == "cuda"
            else []
        )
        stack = contextlib.ExitStack()
        stack.enter_context(torch.random.fork_rng(devices=devices))
        torch.manual_seed(self.seed + k)
        return stack

    def phi(self, k: int, x: torch.Tensor) -> torch.Tensor:
        with self.rng(k, x.device):
            return self.phis[k](x, **self.kwargs)

    def psi(self, k: int, v: torch.Tensor) -> torch.Tensor:
        # psi reads the same seed stream offset by the depth, distinct from every phi's
        with self.rng(k + self.depth, v.device):
            return self.psis[k](v, **self.kwargs)


def _float_forward(rule: _Rule, x: torch.Tensor, v: torch.Tensor, record: list | None = None):
    """Plain autograd implementation of the coupled update (activations stored); ``record``
    collects states."""
    for k in range(rule.depth):
        v = rule.gamma * v + rule.alpha * rule.phi(k, x)
        x = x + (rule.psi(k, v) if rule.psis is not None else v)
        if record is not None:
            record.append((x, v))
    return x, v


def _exact_forward(rule: _Rule, xq: torch.Tensor, vq: torch.Tensor, dtype: torch.dtype):
    """Forward on the fixed-point grid; fills ``rule.buffer`` with the bits lost to gamma."""
    F = rule.frac_bits
    buffer = InformationBuffer(xq.shape, rule.ratio, xq.device)
    for k in range(rule.depth):
        step = to_fixed(
            rule.alpha * rule.phi(k, to_float(xq, F, dtype)), F, f"layer {k} residual output"
        )
        vq = check_no_overflow(buffer.multiply(vq) + step, f"layer {k} velocity")
        dx = (
            vq
            if rule.psis is None
            else to_fixed(rule.psi(k, to_float(vq, F, dtype)), F, f"layer {k} psi output")
        )
        xq = check_no_overflow(xq + dx, f"layer {k} state")
    rule.buffer = buffer
    return xq, vq


def _undo_layer(rule: _Rule, k: int, xq, vq, buffer: InformationBuffer, dtype, track: bool):
    """Invert layer ``k`` exactly (Eq. (3) on the grid). With ``track`` also return the
    recomputed graph."""
    F = rule.frac_bits
    with torch.set_grad_enabled(track):
        v_float = p = None
        if rule.psis is None:
            xq = xq - vq
        else:
            v_float = to_float(vq, F, dtype).requires_grad_(track)
            p = rule.psi(k, v_float)
            xq = xq - to_fixed(p, F, f"layer {k} psi output")
        x_float = to_float(xq, F, dtype).requires_grad_(track)
        f = rule.phi(k, x_float)
        vq = buffer.divide(vq - to_fixed(rule.alpha * f, F, f"layer {k} residual output"))
    return xq, vq, (v_float, p, x_float, f)


def _grad_targets(module: Callable, extra: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    params = (
        [p for p in module.parameters() if p.requires_grad] if isinstance(module, nn.Module) else []
    )
    return params + list(extra)


class _MemoryFree(torch.autograd.Function):
    """Forward without storing activations; backward reconstructs them exactly, layer by layer."""

    @staticmethod
    def forward(ctx, rule: _Rule, x: torch.Tensor, v: torch.Tensor, *grad_inputs: torch.Tensor):
        F, dtype = rule.frac_bits, x.dtype
        xq, vq = _exact_forward(rule, to_fixed(x, F, "x"), to_fixed(v, F, "v"), dtype)
        rule.end = (xq, vq)  # exact final state, for inverse()
        ctx.rule, ctx.end, ctx.dtype = rule, (xq, vq), dtype
        ctx.grad_index = {id(t): i for i, t in enumerate(grad_inputs)}
        return to_float(xq, F, dtype), to_float(vq, F, dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gx, gv):
        rule, dtype = ctx.rule, ctx.dtype
        xq, vq = ctx.end
        buffer = (
            rule.buffer.copy()
        )  # keep the forward's buffer intact (a second backward, inverse())
        gx = torch.zeros(xq.shape, dtype=dtype, device=xq.device) if gx is None else gx
        gv = torch.zeros_like(gx) if gv is None else gv
        kw_tensors = [
            t for t in rule.kwargs.values() if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        grads: list = [None] * len(ctx.grad_index)

        def accumulate(targets, values):
            for t, g in zip(targets, values):
                if g is not None:
                    i = ctx.grad_index[id(t)]
                    grads[i] = g if grads[i] is None else grads[i] + g

        for k in reversed(range(rule.depth)):
            xq, vq, (v_float, p, x_float, f) = _undo_layer(
                rule, k, xq, vq, buffer, dtype, track=True
            )
            if rule.psis is None:
                gv_total = gv + gx
            else:  # x_{k+1} = x_k + psi(v_{k+1})
                targets = _grad_targets(rule.psis[k], kw_tensors)
                g = torch.autograd.grad(p, [v_float] + targets, gx, allow_unused=True)
                gv_total = gv + (g[0] if g[0] is not None else 0.0)
                accumulate(targets, g[1:])
            # v_{k+1} = gamma v_k + alpha phi(x_k)  (Eq. (17) of Appendix E for psi = identity)
            targets = _grad_targets(rule.phis[k], kw_tensors)
            g = torch.autograd.grad(
                f, [x_float] + targets, rule.alpha * gv_total, allow_unused=True
            )
            if g[0] is not None:
                gx = gx + g[0]
            gv = rule.gamma * gv_total
            accumulate(targets, g[1:])
        rule.reconstructed = (xq, vq)
        return (None, gx, gv, *grads)


def _coupled_forward(rule: _Rule, x: torch.Tensor, v: torch.Tensor, exact: bool):
    if not exact:
        return _float_forward(rule, x, v)
    seen, grad_inputs = set(), []
    for module in rule.phis + (rule.psis or []):
        for t in _grad_targets(module, []):
            if id(t) not in seen:
                seen.add(id(t))
                grad_inputs.append(t)
    grad_inputs += [
        t for t in rule.kwargs.values() if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    return _MemoryFree.apply(rule, x, v, *grad_inputs)


def _coupled_inverse(rule: _Rule, x: torch.Tensor, v: torch.Tensor, exact: bool):
    """Run the layers backwards: exact on the grid, or Eq. (3) in floating point."""
    if exact:
        # The information buffer belongs to one forward pass, so only its outputs can be inverted;
        # we restart from its exact final state (the float outputs may be rounded: float32, or |x| >
        # 2**12).
        F, (xq, vq) = rule.frac_bits, rule.end
        for name, t, q in (("x", x, xq), ("v", v, vq)):
            if (
                t.shape != q.shape
                or t.dtype != x.dtype
                or not torch.equal(to_float(q, F, x.dtype), t)
            ):
                raise ValueError(
                    f"{name}: the exact inverse expects the outputs of the last forward pass "
                    "(it needs that pass's information buffer); got a different tensor"
                )
        buffer = rule.buffer.copy()
        with torch.no_grad():
            for k in reversed(range(rule.depth)):
                xq, vq, _ = _undo_layer(rule, k, xq, vq, buffer, x.dtype, track=False)
        return to_float(xq, F, x.dtype), to_float(vq, F, x.dtype)
    if rule.gamma == 0:
        raise ValueError(
            "gamma: the floating-point inverse (3) divides by gamma, got gamma = 0; "
            "use exact=True, which stores v outright"
        )
    for k in reversed(range(rule.depth)):
        x = x - (rule.psi(k, v) if rule.psis is not None else v)
        v = (v - rule.alpha * rule.phi(k, x)) / rule.gamma
    return x, v


def _check_gamma(gamma) -> Fraction:
    if (
        isinstance(gamma, bool)
        or not isinstance(gamma, Real)
        or not math.isfinite(gamma)
        or not 0 <= gamma <= 1
    ):
        raise ValueError(f"gamma: expected a real number in [0, 1], got {gamma!r}")
    return rational(float(gamma))


def _check_functions(functions, name: str) -> nn.ModuleList:
    if isinstance(functions, nn.Module) and not isinstance(
        functions, (nn.Sequential, nn.ModuleList)
    ):
        raise ValueError(
            f"{name}: expected a sequence of nn.Module (one per layer), got a single "
            f"{type(functions).__name__}; repeat it ([f] * depth) to tie the weights"
        )
    if isinstance(functions, (str, bytes)) or not hasattr(functions, "__iter__"):
        raise TypeError(
            f"{name}: expected a sequence of nn.Module (one per layer), got "
            f"{type(functions).__name__}"
        )
    functions = list(functions)
    if not functions or not all(isinstance(f, nn.Module) for f in functions):
        raise ValueError(
            f"{name}: expected a non-empty sequence of nn.Module, got "
            f"{[type(f).__name__ for f in functions]}"
        )
    return nn.ModuleList(functions)


def _expected_width(function) -> int | None:
    """The input width of a residual function when it is readable (a leading ``nn.Linear``), else
    None."""
    while True:
        if isinstance(function, nn.Linear):
            return function.in_features
        if isinstance(function, ResidualBranch):
            function = function.block
        elif isinstance(function, nn.Sequential) and len(function):
            function = function[0]
        else:
            return None


def _check_state(x, v, exact: bool, frac_bits: int, functions=None) -> None:
    if not isinstance(x, torch.Tensor) or not torch.is_floating_point(x):
        raise ValueError(
            f"x: expected a floating-point torch tensor, got {type(x).__name__}"
            f"{'' if not isinstance(x, torch.Tensor) else ' of dtype ' + str(x.dtype)}"
        )
    if v is not None and (
        not isinstance(v, torch.Tensor) or v.shape != x.shape or v.dtype != x.dtype
    ):
        raise ValueError(
            f"v: expected a tensor of the shape {tuple(x.shape)} and dtype {x.dtype} of x, got "
            f"{tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__}"
            f"{' ' + str(v.dtype) if isinstance(v, torch.Tensor) else ''}"
        )
    if exact:
        check_representable(x, "x", frac_bits)
        if v is not None:
            check_representable(v, "v", frac_bits)
    else:  # the float mode would propagate nan/inf silently through every layer
        for name, t in (("x", x), ("v", v)):
            if t is not None and not bool(torch.isfinite(t).all()):
                raise ValueError(
                    f"{name}: expected finite values, got {int((~torch.isfinite(t)).sum())} "
                    f"non-finite entries"
                )
    width = None if not functions else _expected_width(functions[0])
    if width is not None and (x.dim() == 0 or x.shape[-1] != width):
        raise ValueError(
            f"x: expected {width} features in the last dimension (the first function's input), "
            f"got shape {tuple(x.shape)}"
        )


class _ReversibleStack(nn.Module):
    """Common machinery of :class:`MomentumResNet` and :class:`~dynkit.models.revnet.RevNet`."""

    def _setup(self, exact: bool, frac_bits: int, preserve_rng_state: bool) -> None:
        for name, flag in (("exact", exact), ("preserve_rng_state", preserve_rng_state)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name}: expected a bool, got {flag!r}")
        self.exact = bool(exact)
        self.frac_bits = check_frac_bits(frac_bits)
        self.preserve_rng_state = bool(preserve_rng_state)
        self._last: _Rule | None = None

    def _rule(self, kwargs: dict) -> _Rule:  # pragma: no cover - defined by subclasses
        raise NotImplementedError

    def _first_functions(self) -> list:
        return list(getattr(self, "functions", None) or getattr(self, "phi_functions", None) or [])

    def _initial_velocity(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def forward(
        self, x: torch.Tensor, v: torch.Tensor | None = None, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Map ``(x_0, v_0)`` to ``(x_L, v_L)``; ``kwargs`` are passed to every block."""
        _check_state(x, v, self.exact, self.frac_bits, self._first_functions())
        if v is None:
            v = self._initial_velocity(x)
            _check_state(x, v, self.exact, self.frac_bits)
        rule = self._rule(kwargs)
        if self.preserve_rng_state:
            rule.seed = int(torch.randint(0, 2**62, (1,)).item())
        out = _coupled_forward(rule, x, v, self.exact)
        self._last = rule
        return out

    @torch.no_grad()
    def trajectory(
        self, x: torch.Tensor, v: torch.Tensor | None = None, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """All layers' states in floating point: ``(xs, vs)`` of shape ``(depth + 1, *x.shape)``
        (for plots)."""
        _check_state(x, v, False, self.frac_bits)
        v = self._initial_velocity(x) if v is None else v
        rule = self._rule(kwargs)
        if self.preserve_rng_state:
            rule.seed = int(torch.randint(0, 2**62, (1,)).item())
        record = [(x, v)]
        _float_forward(rule, x, v, record)
        return torch.stack([s[0] for s in record]), torch.stack([s[1] for s in record])

    def inverse(
        self, x: torch.Tensor, v: torch.Tensor, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Recover ``(x_0, v_0)`` from the outputs ``(x_L, v_L)`` of the last :meth:`forward`.

        Exact mode: bit-exact (the inputs of that forward rounded to the fixed-point grid), using
        that forward's final fixed-point state, information buffer and random seeds; ``x`` and ``v``
        must be its outputs. Float mode: Eq. (3), approximate.
        """
        _check_state(x, v, False, self.frac_bits)
        if v is None or v.shape != x.shape:
            raise ValueError("v: expected a tensor of the shape of x")
        if self._last is None:
            if self.exact or self.preserve_rng_state:
                raise ValueError(
                    "inverse: no forward pass to invert yet (the exact mode needs its information "
                    "buffer, and random layers need its seed)"
                )
            rule = self._rule(kwargs)
        else:
            rule = self._last.with_kwargs(kwargs)
        return _coupled_inverse(rule, x, v, self.exact)

    @property
    def buffer(self) -> InformationBuffer | None:
        """The information buffer of the last exact forward pass (its size is the memory cost of
        Sect. 3.2)."""
        return None if self._last is None else self._last.buffer


class MomentumResNet(_ReversibleStack):
    """Momentum ResNet, Eq. (2): ``v <- gamma v + (1 - gamma) f_n(x); x <- x + v``.

    Parameters
    ----------
    functions
        The residual functions ``f_n``, one ``nn.Module`` per layer, each called as
        ``f_n(x, **kwargs)`` (tie the weights by repeating one module).
    gamma
        Momentum term in [0, 1]. The exact mode multiplies by the fraction n/d (d <= 2**16) nearest
        to gamma (``gamma_ratio``); 0 recovers a ResNet (v is then stored outright), 1 never forgets
        v.
    init_speed
        ``None``: v_0 = 0; or an ``nn.Module``/callable ``g`` giving v_0 = g(x_0) (e.g.
        ``functions[0]``, the paper's v_0 = f(x_0, theta_0)). A ``v`` passed to :meth:`forward`
        overrides it.
    exact
        ``True``: memory-free training, the backward pass reconstructing the activations bit for bit
        on a fixed-point grid with ``frac_bits`` fractional bits. ``False``: plain autograd
        (activations stored).
    frac_bits
        Resolution 2**-frac_bits of the fixed-point grid; values must stay below 2**(62 -
        frac_bits).
    preserve_rng_state
        Seed each layer's random draws (dropout) from one seed drawn per forward, so that the
        backward pass and :meth:`inverse` recompute them identically. Same seeds in both modes.

    Notes
    -----
    Layers that update running statistics in training mode (batch norm) see each input twice in the
    exact mode (forward and reconstruction), as with any recomputation scheme.

    Examples
    --------
    >>> f = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 4))
    >>> net = MomentumResNet([f] * 10, gamma=0.9)
    >>> x_L, v_L = net(torch.randn(3, 4, dtype=torch.float64))
    """

    def __init__(
        self,
        functions: Sequence[nn.Module],
        gamma: float,
        init_speed: Callable | None = None,
        exact: bool = True,
        frac_bits: int = FRAC_BITS,
        preserve_rng_state: bool = True,
    ):
        super().__init__()
        self.gamma_ratio = _check_gamma(gamma)
        if init_speed is not None and not callable(init_speed):
            raise ValueError(
                f"init_speed: expected None or a callable x -> v_0, got {type(init_speed).__name__}"
            )
        self.functions = _check_functions(functions, "functions")
        self.gamma = float(gamma)
        self.init_speed = init_speed
        self._setup(exact, frac_bits, preserve_rng_state)

    def _rule(self, kwargs: dict) -> _Rule:
        ratio = self.gamma_ratio if self.exact else Fraction(self.gamma)
        return _Rule(self.functions, None, ratio, 1.0 - float(ratio), kwargs, None, self.frac_bits)

    def _initial_velocity(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x) if self.init_speed is None else self.init_speed(x)

    def extra_repr(self) -> str:
        return f"depth={len(self.functions)}, gamma={self.gamma}, exact={self.exact}"

    @classmethod
    def from_residual_blocks(
        cls, blocks: Iterable[nn.Module], gamma: float, **options
    ) -> "MomentumResNet":
        """Momentum ResNet with ``f_n(x) = block_n(x) - x``: the same parameters as a ResNet of
        those blocks.

        With gamma = 0 it computes exactly what the blocks compute in sequence.
        """
        return cls([ResidualBranch(b) for b in blocks], gamma, **options)


class ResidualBranch(nn.Module):
    """``f(x) = block(x) - x`` for a block that computes ``x + f(x)`` (possibly followed by an
    activation)."""

    def __init__(self, block: nn.Module):
        super().__init__()
        if not isinstance(block, nn.Module):
            raise TypeError(f"block: expected an nn.Module, got {type(block).__name__}")
        self.block = block

    def forward(self, x: torch.Tensor, **kwargs) -> torch.Tensor:
        return self.block(x, **kwargs) - x


class MomentumStage(nn.Module):
    """Drop-in replacement for a stage of residual blocks: ``x -> x_L`` (the velocity is
    dropped)."""

    def __init__(self, momentum: MomentumResNet):
        super().__init__()
        if not isinstance(momentum, MomentumResNet):
            raise TypeError(f"momentum: expected a MomentumResNet, got {type(momentum).__name__}")
        self.momentum = momentum

    def forward(self, x: torch.Tensor, **kwargs) -> torch.Tensor:
        return self.momentum(x, **kwargs)[0]


def to_momentum_resnet(
    stage: nn.Sequential | Iterable[nn.Module], gamma: float, **options
) -> nn.Sequential:
    """Turn a stage of residual blocks into its Momentum counterpart with the same parameters.

    Blocks that change the shape (torchvision style: a ``downsample`` attribute that is not
    ``None``) cannot be momentum layers (x and v must keep their shape); the leading ones are kept
    as they are. The remaining blocks become a :class:`MomentumResNet` with
    ``f_n(x) = block_n(x) - x``.

    Parameters
    ----------
    stage
        An ``nn.Sequential`` (or sequence) of residual blocks, e.g. ``resnet.layer3``.
    gamma, **options
        As for :class:`MomentumResNet`.

    Returns
    -------
    nn.Sequential
        ``(*kept_blocks, MomentumStage)``, mapping x to x like the original stage.
    """
    blocks = list(stage)
    if not blocks or not all(isinstance(b, nn.Module) for b in blocks):
        raise ValueError(f"stage: expected a non-empty sequence of nn.Module, got {stage!r}")
    n_kept = 0
    while n_kept < len(blocks) and getattr(blocks[n_kept], "downsample", None) is not None:
        n_kept += 1
    if n_kept == len(blocks):
        raise ValueError(
            "stage: every block changes the shape (has a downsample); nothing to convert"
        )
    if any(getattr(b, "downsample", None) is not None for b in blocks[n_kept:]):
        raise ValueError(
            "stage: a shape-changing block (downsample) follows a shape-preserving one; "
            "convert the sub-stages separately"
        )
    return nn.Sequential(
        *blocks[:n_kept],
        MomentumStage(MomentumResNet.from_residual_blocks(blocks[n_kept:], gamma, **options)),
    )
