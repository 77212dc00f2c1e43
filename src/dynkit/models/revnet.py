"""RevNet (Gomez et al., 2017) in the form of Eq. (4) of the Momentum ResNets paper.

    v_{n+1} = v_n + phi_n(x_n),    x_{n+1} = x_n + psi_n(v_{n+1}).

It is the coupled engine of :mod:`dynkit.models.momentum_resnet` with gamma = 1 and a learnable
``psi``: additions only, so the exact mode inverts it on the fixed-point grid without any
information buffer. Proposition 1: with tied weights its iterations have no attractive fixed point.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import torch
from torch import nn

from .exact import FRAC_BITS
from .momentum_resnet import _check_functions, _ReversibleStack, _Rule

__all__ = ["RevNet"]


class RevNet(_ReversibleStack):
    """Reversible network of Eq. (4) on the pair ``(x, v)``.

    Parameters
    ----------
    phi_functions, psi_functions
        One ``nn.Module`` per layer each (same length), called as ``phi_n(x, **kwargs)`` and
        ``psi_n(v, **kwargs)``. Repeat one module to tie the weights across layers; distinct modules
        give untied weights (see :meth:`tied`).
    exact, frac_bits, preserve_rng_state
        As for :class:`~dynkit.models.momentum_resnet.MomentumResNet`.

    Notes
    -----
    When ``forward`` gets no ``v``, the activations are duplicated, ``v_0 = x_0`` (as in the LISTA
    experiment of Sect. 5.3).
    """

    def __init__(
        self,
        phi_functions: Sequence[nn.Module],
        psi_functions: Sequence[nn.Module],
        exact: bool = True,
        frac_bits: int = FRAC_BITS,
        preserve_rng_state: bool = True,
    ):
        super().__init__()
        self.phi_functions = _check_functions(phi_functions, "phi_functions")
        self.psi_functions = _check_functions(psi_functions, "psi_functions")
        if len(self.phi_functions) != len(self.psi_functions):
            raise ValueError(
                f"psi_functions: expected {len(self.phi_functions)} modules (one per phi), "
                f"got {len(self.psi_functions)}"
            )
        self._setup(exact, frac_bits, preserve_rng_state)

    @classmethod
    def tied(cls, phi: nn.Module, psi: nn.Module, depth: int, **options) -> "RevNet":
        """RevNet whose layers all share ``phi`` and ``psi`` (theta_n = theta, theta'_n =
        theta')."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth: expected a positive int, got {depth!r}")
        return cls([phi] * depth, [psi] * depth, **options)

    def _rule(self, kwargs: dict) -> _Rule:
        return _Rule(
            self.phi_functions, self.psi_functions, Fraction(1), 1.0, kwargs, None, self.frac_bits
        )

    def _initial_velocity(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    def extra_repr(self) -> str:
        return f"depth={len(self.phi_functions)}, exact={self.exact}"
