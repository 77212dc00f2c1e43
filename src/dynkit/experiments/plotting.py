"""Matplotlib for the experiments' figures."""

from __future__ import annotations

__all__ = ["pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the caller's backend (none is chosen here: matplotlib falls back
    to Agg without a display, and a Jupyter backend is kept)."""
    import matplotlib.pyplot as plt

    return plt
