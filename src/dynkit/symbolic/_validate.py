"""Argument checks shared by the symbolic builders: a clear ValueError/TypeError naming the
argument, the expectation and what was received (never a raw sympy/itertools crash or a silent
empty result)."""

from __future__ import annotations

from typing import Any


def _describe(x: Any) -> str:
    return f"{type(x).__name__} {x!r}"[:100]


def positive_int(
    name: str, value: Any, *, minimum: int = 1, maximum: int | None = None, what: str = ""
) -> int:
    """``value`` as an int in ``[minimum, maximum]``; TypeError for non-integers, ValueError out
    of range."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(
            f"{name} must be an integer{' (' + what + ')' if what else ''}; got {_describe(value)}"
        )
    value = int(value.__index__())
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(
            f"{name} must be an integer {bound}{' (' + what + ')' if what else ''}; got {value}"
        )
    return value


def identifier(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueError(
            f"{name} must be a non-empty identifier-like str (a symbol name); got "
            f"{_describe(value)}"
        )
    return value


class UnknownDerivation(KeyError, ValueError):
    """An unknown derivation name: a KeyError (``DERIVATIONS[name]``) and a ValueError, listing
    the known names."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DerivationRegistry(dict):
    """``name -> zero-argument function returning the Derivation``; an unknown name raises
    :class:`UnknownDerivation` naming the known ones."""

    def __missing__(self, key):
        raise UnknownDerivation(
            f"name {key!r} is not a derivation; known derivations: {', '.join(self)}"
        )
