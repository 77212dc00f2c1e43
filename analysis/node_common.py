"""Shared command line and output helpers of the heavy-ball neural ODE experiments (``analysis/node_*.py``)."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import torch

MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
COLORS = {"node": "tab:blue", "anode": "tab:orange", "sonode": "tab:green", "hbnode": "tab:red",
          "ghbnode": "tab:purple"}


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path(default_out), help="output folder (JSON + PNG)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--full", action="store_true", help="the paper's size (slow on CPU)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    return p


def setup(args) -> str:
    """Single-threaded torch (shared CPUs), the output folder; returns the command line for the results."""
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    return "python -m " + " ".join(shlex.quote(a) for a in [sys.modules["__main__"].__spec__.name, *sys.argv[1:]])


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
