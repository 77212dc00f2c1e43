"""Lazy re-exports: a package names what each of its submodules provides, and loads one on first
use.

A package declares ``_LAZY = {"submodule": ("Name", ...), ...}`` (a literal: the result identity,
:mod:`dynkit.experiments.code_closure`, reads it from the syntax tree) and binds

>>> __getattr__, __dir__ = exports(__name__, _LAZY)  # doctest: +SKIP

Then ``package.Name`` imports ``package.submodule`` the first time it is asked for, and
``package.submodule`` is the submodule itself. ``import dynkit`` stays fast, and a run that uses
``dynkit.models.MomentumResNet`` runs (and depends on) ``models/momentum_resnet.py``, not every
model of the package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module

__all__ = ["exports", "names"]


def names(table: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every name a table's submodules provide, in its order (the package's ``__all__``)."""
    return [name for provided in table.values() for name in provided]


def exports(
    package: str, table: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of ``package`` for the lazy ``table``.

    Parameters
    ----------
    package : str
        The dotted name of the package (its ``__name__``).
    table : mapping
        ``{submodule: names it provides}``; each submodule is an attribute too.

    Returns
    -------
    tuple
        The module-level ``__getattr__`` (PEP 562), which imports the owning submodule, caches the
        value in the package and raises :class:`AttributeError` for any other name, and
        ``__dir__``.
    """
    owner = {name: submodule for submodule, provided in table.items() for name in provided}
    clash = sorted(set(owner) & set(table))
    if clash:
        raise ValueError(f"{package}: names {clash} are both submodules and names they provide")

    def __getattr__(name: str) -> object:
        if name in table:
            value: object = import_module(f"{package}.{name}")
        elif name in owner:
            value = getattr(import_module(f"{package}.{owner[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *owner, *table})

    return __getattr__, __dir__
