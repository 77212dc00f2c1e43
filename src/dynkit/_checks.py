"""Argument checks shared by the public entry points: each raises ``ValueError``/``TypeError``
naming the argument, what was expected and what was received (DESIGN.md, Conventions)."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def integer(value: Any, name: str, minimum: int | None = None) -> int:
    """``value`` as an int (bools are not integers here), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an integer{'' if minimum is None else f' >= {minimum}'}, "
            f"got {type(value).__name__} {_shown(value)}"
        )
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_shown(value)}")
    return int(value)


def real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
) -> float:
    """``value`` as a float in the interval ``[low, high]`` (ends open where asked), finite
    unless told."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {_shown(value)}")
    value = float(value)
    bad = math.isnan(value) or (finite and math.isinf(value))
    bad = bad or (low is not None and (value <= low if low_open else value < low))
    bad = bad or (high is not None and (value >= high if high_open else value > high))
    if bad:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        interval = (
            f"in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        )
        raise ValueError(
            f"{name} must be a {'finite ' if finite else ''}number {interval}, got {_shown(value)}"
        )
    return value


def boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {_shown(value)}")
    return value


def one_of(value: Any, name: str, allowed) -> Any:
    try:
        ok = value in allowed
    except TypeError:  # unhashable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {_shown(value)}")
    return value


def module(value: Any, name: str):
    import torch

    if not isinstance(value, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def tensor(
    value: Any,
    name: str,
    *,
    ndim: int | tuple | None = None,
    floating: bool | None = None,
    finite: bool = False,
    shape_hint: str = "",
):
    """A torch tensor with ``ndim`` dimensions, floating point (or integer with
    ``floating=False``), finite."""
    import torch

    hint = f" of shape {shape_hint}" if shape_hint else ""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor{hint}, got {type(value).__name__}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if dims is not None and value.dim() not in dims:
        raise ValueError(
            f"{name} must have {' or '.join(map(str, dims))} dimensions{hint}, "
            f"got shape {tuple(value.shape)}"
        )
    if floating is True and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if floating is False and (
        value.is_floating_point() or value.is_complex() or value.dtype == torch.bool
    ):
        raise TypeError(f"{name} must be an integer tensor (token ids), got dtype {value.dtype}")
    if finite and value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise ValueError(
            f"{name} must be finite, got {int((~torch.isfinite(value)).sum())} non-finite entries"
        )
    return value


def path(value: Any, name: str):
    """``value`` as a ``pathlib.Path`` (a non-empty str or os.PathLike)."""
    import os
    from pathlib import Path

    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)) or str(value) == "":
        raise TypeError(
            f"{name} must be a path (a non-empty str or os.PathLike), got {type(value).__name__} "
            f"{_shown(value)}"
        )
    return Path(value)


def existing_file(value: Any, name: str):
    """``value`` as the ``Path`` of an existing regular file."""
    p = path(value, name)
    if not p.is_file():
        raise ValueError(
            f"{name} must be an existing file, got {str(p)!r} "
            f"({'a directory' if p.is_dir() else 'no such file'})"
        )
    return p


DEVICE_FORMS = ("cpu", "cuda", "cuda:N", "mps")


def available_devices() -> list[str]:
    """The torch devices this machine has: ``"cpu"``, each ``"cuda:N"``, ``"mps"`` where present."""
    import torch

    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def device(value: Any, name: str = "device") -> str:
    """``value`` as the name of a torch device this machine has: ``"cpu"``, ``"cuda"``, ``"cuda:N"``
    or ``"mps"``.

    The one check of every training entry, before any data is loaded: a device of another form, or
    one the machine lacks (no GPU, a CPU-only torch build, ``cuda:N`` beyond the GPUs), is a
    ``ValueError`` naming it and what the machine has, where torch would fail later with its own
    message (or an ``AssertionError``).
    """
    import re

    import torch

    if isinstance(value, torch.device):
        value = str(value)
    have = available_devices()
    if not isinstance(value, str) or not re.fullmatch(r"cpu|cuda(:\d+)?|mps(:0)?", value):
        raise ValueError(
            f"{name} must be one of {', '.join(DEVICE_FORMS)}, got {_shown(value)} "
            f"(this machine has {', '.join(have)})"
        )
    if value.startswith("cuda"):
        index = int(value.partition(":")[2] or 0)
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if index >= count:
            if count:
                why = f"it has {count} CUDA GPU{'s' * (count > 1)}"
            elif torch.version.cuda is None:
                why = "this torch build has no CUDA support (a CPU-only build)"
            else:
                why = "no CUDA GPU is visible (none installed, or CUDA_VISIBLE_DEVICES hides them)"
            raise ValueError(
                f"{name} must be a device this machine has ({', '.join(have)}), "
                f"got {value!r}: {why}"
            )
    elif value.startswith("mps") and "mps" not in have:
        raise ValueError(
            f"{name} must be a device this machine has ({', '.join(have)}), got {value!r}: "
            "Apple's Metal (MPS) backend is not available"
        )
    return value
