"""Argparse types for the experiment scripts' numeric options: the error names the option (argparse adds it) and the
expected value, before any work starts.

Kept out of :mod:`~dynkit.experiments.scripting` so that only the scripts that use them carry them in their code
identity.
"""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse names the option in its error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (a learning rate)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def momentum_float(text: str) -> float:
    """An argparse type: a momentum gamma in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value
