"""Symbolic derivations (sympy): continuous limits, adjoints, order conditions, LaTeX.

Every result is computed by sympy from a definition and compared exactly with the paper's stated
equation. Each derivation is a :class:`Derivation` (steps, result, stated form, verdict) that
renders itself with :meth:`Derivation.to_latex` / :meth:`Derivation.to_markdown`.

>>> import dynkit as dk
>>> d = dk.symbolic.DERIVATIONS["hbnode_adjoint_first_order"]()
>>> d.equation, d.check_passed
('(41), Prop. 2', True)

:data:`DERIVATIONS` maps a name to a zero-argument function returning the (cached) derivation. For
your own model, :meth:`ODESystem.create` + :func:`adjoint` / :func:`adjoint_derivation`
(``check_numerically=True`` compares with torch autograd). For your own discrete scheme,
:func:`iterate` and :data:`k` to write it, and :func:`continuous_limit` for its continuous limit
(leading-order ODE, order of the first correction, the time scaling that makes the limit
non-trivial, an exact check against your stated limit).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from . import adjoint as _adjoint_mod
from . import ark as _ark
from . import limits as _limits
from . import linear as _linear
from .adjoint import (
    Adjoint,
    ODESystem,
    adjoint,
    adjoint_derivation,
    ghbnode_system,
    hbnode_system,
    state_block,
    vector_function,
)
from .ark import (
    ark_family,
    ark_tree_coefficients,
    coefficients_of,
    error_constants,
    satisfies,
    taylor_conditions,
    tree_conditions,
    trees,
)
from ._validate import DerivationRegistry, UnknownDerivation
from .derivation import Derivation, Step, equivalent
from .linear import heavy_ball_block_charpoly, psi_closed_form
from .schemes import NoContinuousLimit, SchemeLimit, continuous_limit, iterate, k

_SOURCES = {
    "heavy_ball_limit": _limits.heavy_ball_limit,
    "momentum_resnet_limit": _limits.momentum_resnet_limit,
    "momentum_resnet_eps_limits": _limits.momentum_resnet_eps_limits,
    "nesterov_limit": _limits.nesterov_limit,
    "momentum_rnn_unrolled": _limits.momentum_rnn_unrolled,
    "momentum_rnn_jacobian": _limits.momentum_rnn_jacobian,
    "momentum_attention_unrolled": _limits.momentum_attention_unrolled,
    "node_adjoint": _adjoint_mod.node_adjoint,
    "hbnode_adjoint_second_order": _adjoint_mod.hbnode_adjoint_second_order,
    "hbnode_adjoint_first_order": _adjoint_mod.hbnode_adjoint_first_order,
    "hbnode_adjoint_time_reversed": _adjoint_mod.hbnode_adjoint_time_reversed,
    "hbnode_remark6": _adjoint_mod.hbnode_remark6,
    "ghbnode_adjoint": _adjoint_mod.ghbnode_adjoint,
    "sonode_adjoint": _adjoint_mod.sonode_adjoint,
    "psi_eps": _linear.psi_eps,
    "psi_eps_appendix": _linear.psi_eps_appendix,
    "eigen_pairing_charpoly": _linear.eigen_pairing_charpoly,
    "revnet_jacobian": _linear.revnet_jacobian,
    "ark3_order_conditions": _ark.ark3_order_conditions,
    "ark4_order_conditions": _ark.ark4_order_conditions,
}

# cached: the docs and the CLI render them repeatedly
DERIVATIONS: dict[str, Callable[[], Derivation]] = DerivationRegistry(
    {name: lru_cache(maxsize=1)(fn) for name, fn in _SOURCES.items()}
)


def ark_coefficients() -> dict:
    """The derived ARK3 and ARK4 members (exact Rationals keyed like
    :class:`dynkit.solvers.TwoStepRK` fields)."""
    ark3, ark4 = _ark._members()
    return {"ark3": dict(ark3), "ark4": dict(ark4)}


__all__ = [
    "DERIVATIONS",
    "UnknownDerivation",
    "Derivation",
    "Step",
    "equivalent",
    "ODESystem",
    "Adjoint",
    "adjoint",
    "adjoint_derivation",
    "state_block",
    "vector_function",
    "hbnode_system",
    "ghbnode_system",
    "trees",
    "ark_tree_coefficients",
    "tree_conditions",
    "taylor_conditions",
    "satisfies",
    "ark_family",
    "ark_coefficients",
    "error_constants",
    "coefficients_of",
    "heavy_ball_block_charpoly",
    "psi_closed_form",
    "continuous_limit",
    "iterate",
    "k",
    "SchemeLimit",
    "NoContinuousLimit",
]
