"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures.

Each name loads its submodule on first use (:mod:`dynkit._lazy`).
"""

from .._lazy import exports as _exports, names as _names

_LAZY = {
    # heavy-ball neural ODEs (review Sect. 3)
    "ode_block": ("ODEBlock", "ode_blocks", "set_tolerance"),
    "neural_ode": (
        "ANODE",
        "GHBNODE",
        "HBNODE",
        "MODELS",
        "NODE",
        "SONODE",
        "ConvField",
        "ConvInitial",
        "FirstOrder",
        "GeneralizedHeavyBall",
        "HeavyBall",
        "MLPField",
        "SecondOrder",
        "damping",
        "skip_coefficient",
    ),
    "node_paper": ("Classifier", "count_parameters", "from_paper"),
    "ode_rnn": ("HYBRIDS", "ODERNN", "adjoint_norms"),
    # continuous self-attention (CSAODE)
    "csaode": ("CSAODE",),
    # Momentum ResNets and RevNets
    "exact": ("InformationBuffer",),
    "momentum_resnet": ("MomentumResNet", "MomentumStage", "ResidualBranch", "to_momentum_resnet"),
    "revnet": ("RevNet",),
    # MomentumRNN family and momentum attention
    "attention": (
        "adaptive_momentum",
        "linear_attention",
        "momentum_attention",
        "momentum_attention_recurrent",
        "momentum_attention_step",
        "momentum_weights",
        "softmax_attention",
    ),
    "momentum_rnn": ("MOMENTUM_RULES", "MomentumRNN", "MomentumRule", "SequenceClassifier"),
    "transformer": ("MomentumTransformer", "MultiHeadAttention", "TransformerLayer"),
}

__all__ = _names(_LAZY)

__getattr__, __dir__ = _exports(__name__, _LAZY)
