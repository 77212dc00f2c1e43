"""How the five papers are named to readers (one place for the report, the docs and the
derivations' LaTeX)."""

from __future__ import annotations

import re

# the short names the claims and their tables carry (``Claim.paper``)
REVIEW = "review"
MOMENTUM_TRANSFORMER = "Momentum Transformer"
MOMENTUM_RNN = "MomentumRNN"
MOMENTUM_RESNETS = "Momentum ResNets"
CSAODE = "CSAODE"
DYNKIT_ANALYSIS = "dynkit analysis"
"""Not a paper: the label of a row that records dynkit's own analysis of a paper's method."""

PAPER_NAMES = {
    REVIEW: "Wang et al., momentum review",
    MOMENTUM_TRANSFORMER: "Nguyen et al., Momentum Transformer",
    MOMENTUM_RNN: "Nguyen et al., MomentumRNN",
    MOMENTUM_RESNETS: "Sander et al., Momentum ResNets",
    CSAODE: "Zhang et al., CSAODE",
}


def paper_name(label: str) -> str:
    """A paper as readers cite it: ``"review (000)"`` -> ``"Wang et al., momentum review"``.

    The file number in parentheses is an internal label and is dropped; each comma-separated part
    that is a known short name is replaced by authors and title; anything else is kept as written.
    """
    parts = [re.sub(r"\s*\(\d{3}\)", "", part).strip() for part in str(label).split(",")]
    return ", ".join(PAPER_NAMES.get(part, part) for part in parts if part)
