"""The authors' own runs beside ours: figures read from their published raw training logs.

``analysis/results/paper_runs/hbnode_logs.json`` (written by ``python -m analysis.paper_runs`` from
the public repository ``hedixia/HeavyBallNODE``, folder ``hbnode_data/``, commit recorded in the
file) maps a ledger row id to the paper's own effect on the row's scale with its spread across their
five runs. Where the file is absent (an installed dynkit without the results of record), the rows
say ``–``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from dynkit._checkout import RESULTS

__all__ = ["LOGS", "paper_runs", "paper_effect", "paper_effect_text"]

LOGS = RESULTS / "paper_runs" / "hbnode_logs.json"


@lru_cache(maxsize=1)
def paper_runs() -> dict:
    """``{"source": {...}, "rows": {claim_id: {"scale", "mean", "min", "max", "n", "values", "note"}}}``."""  # noqa: E501
    if not LOGS.exists() and not LOGS.is_symlink():
        return {"source": {}, "rows": {}}
    from ...io import read_regular_text

    return json.loads(read_regular_text(LOGS, "paper runs' logs"))


def paper_effect(claim_id: str) -> dict | None:
    """The authors' own effect for a ledger row, or None where their logs do not speak to it."""
    return paper_runs()["rows"].get(claim_id)


def paper_effect_text(claim_id: str) -> str:
    """``"log -0.31 (runs -0.35..-0.27, n=5); note"`` for a row the authors' logs speak to, else
    ``"–"``."""
    r = paper_effect(claim_id)
    if r is None:
        return "–"
    return (
        f"{r['scale']} {r['mean']:.3g} (runs {r['min']:.3g}..{r['max']:.3g}, n={r['n']}); "
        f"{r['note']}"
    )
