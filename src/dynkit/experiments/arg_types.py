"""Argparse types for the experiment scripts' numeric options: the error names the option (argparse
adds it) and the expected value, before any work starts.

Kept out of :mod:`~dynkit.experiments.scripting` so that only the scripts that use them carry them
in their code identity.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

__all__ = ["bounded"]


def bounded(kind: type, expected: str, accept: Callable[[float], bool]) -> Callable[[str], float]:
    """An argparse type: ``kind(text)`` where ``accept`` holds of it (never for NaN), else an
    error saying ``expected`` (argparse names the option)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = expected  # argparse's "invalid <name> value" reads as the expectation
    return parse


positive_int = bounded(int, "a positive integer", lambda v: v >= 1)
positive_float = bounded(
    float, "a finite number > 0", lambda v: 0 < v < math.inf
)  # a learning rate
momentum_float = bounded(float, "a number in [0, 1)", lambda v: 0 <= v < 1)  # a momentum gamma
