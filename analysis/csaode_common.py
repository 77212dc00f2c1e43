"""Command-line plumbing shared by the CSAODE analysis scripts (``--out``, ``--seed``, ``--quiet``, ``--full``)."""
from __future__ import annotations

import argparse
from pathlib import Path

from analysis.common import command_line, experiment_parser  # noqa: F401 (re-exported)

# the team's offline data sits beside the checkout: <workspace>/shared/data/sentence-classification
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sentence-classification"


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    p = experiment_parser(description, default_out, full_help="the paper's size (d = 300, 300-d embeddings)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help=f"folder of the standard sentence-classification files (default {DEFAULT_DATA})")
    return p
