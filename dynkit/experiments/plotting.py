"""``matplotlib.pyplot`` for the experiments' figures (the backend stays the caller's: never ``matplotlib.use``)."""
from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` (imported on first use; headless machines get Agg by default)."""
    import matplotlib.pyplot as plt

    return plt
