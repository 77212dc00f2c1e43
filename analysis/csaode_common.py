"""Command-line plumbing shared by the CSAODE analysis scripts (``--out``, ``--seed``, ``--quiet``, ``--full``)."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

# the team's offline data sits beside the checkout: <workspace>/shared/data/sentence-classification
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sentence-classification"


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path(default_out), help="output folder (JSON + PNG)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--full", action="store_true", help="the paper's size (d = 300, 300-d embeddings)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help=f"folder of the standard sentence-classification files (default {DEFAULT_DATA})")
    return p


def command_line() -> str:
    return "python -m " + " ".join(shlex.quote(a) for a in [_module_name(), *sys.argv[1:]])


def _module_name() -> str:
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else Path(sys.argv[0]).stem
