"""Shared command line and output helpers of the heavy-ball neural ODE experiments (``analysis/node_*.py``)."""
from __future__ import annotations

import argparse

import torch

from analysis.common import command_line, experiment_parser

MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
COLORS = {"node": "tab:blue", "anode": "tab:orange", "sonode": "tab:green", "hbnode": "tab:red",
          "ghbnode": "tab:purple"}


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    p = experiment_parser(description, default_out)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    return p


def setup(args) -> str:
    """Single-threaded torch (shared CPUs), the output folder; returns the command line for the results."""
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    return command_line()


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
