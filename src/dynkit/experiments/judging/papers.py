"""The papers whose claims the ledger's comparisons test, and the chance level that several
families' validity checks state."""

__all__ = ["REVIEW", "MOMRES", "CSAODE", "MOMRNN", "MOMTR", "DIGIT_CHANCE"]

REVIEW = "Wang et al., momentum review"
MOMRES = "Sander et al., Momentum ResNets"
CSAODE = "Zhang et al., CSAODE"
MOMRNN = "Nguyen et al., MomentumRNN"
MOMTR = "Nguyen et al., Momentum Transformer"

DIGIT_CHANCE = "10 classes, chance 0.1: a stated margin of 40 points"
"""The bar of a model trained on 10-class digits: chance 0.1, a stated margin of 40 points."""
