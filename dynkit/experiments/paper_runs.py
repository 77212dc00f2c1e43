"""The authors' own runs beside ours: figures read from their published raw training logs (issue 21 §3).

Filled from ``hedixia/HeavyBallNODE`` (folder ``hbnode_data/``); :data:`PAPER_RUNS` maps a ledger row id
to the paper's own effect on the row's scale with its spread across their runs.
"""
from __future__ import annotations

SOURCE: dict = {}
PAPER_RUNS: dict[str, dict] = {}


def paper_effect_text(claim_id: str) -> str:
    """``"log10 -0.31 (runs: -0.35..-0.27, n=5)"`` for a row the authors' logs speak to, else ``"–"``."""
    r = PAPER_RUNS.get(claim_id)
    if r is None:
        return "–"
    text = f"{r['scale']} {r['mean']:.3g} (runs {r['min']:.3g}..{r['max']:.3g}, n={r['n']})"
    return text + (f"; {r['note']}" if r.get("note") else "")
