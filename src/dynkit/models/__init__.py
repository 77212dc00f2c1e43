"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures."""

# heavy-ball neural ODEs (review Sect. 3)
from .ode_block import ODEBlock, ode_blocks, set_tolerance
from .neural_ode import (
    ANODE,
    GHBNODE,
    HBNODE,
    MODELS,
    NODE,
    SONODE,
    ConvField,
    ConvInitial,
    FirstOrder,
    GeneralizedHeavyBall,
    HeavyBall,
    MLPField,
    SecondOrder,
    damping,
    skip_coefficient,
)
from .node_paper import Classifier, count_parameters, from_paper
from .ode_rnn import HYBRIDS, ODERNN, adjoint_norms

# continuous self-attention (CSAODE)
from .csaode import CSAODE

# Momentum ResNets and RevNets
from .exact import InformationBuffer
from .momentum_resnet import MomentumResNet, MomentumStage, ResidualBranch, to_momentum_resnet
from .revnet import RevNet

# MomentumRNN family and momentum attention
from .attention import (
    adaptive_momentum,
    linear_attention,
    momentum_attention,
    momentum_attention_recurrent,
    momentum_attention_step,
    momentum_weights,
    softmax_attention,
)
from .momentum_rnn import MOMENTUM_RULES, MomentumRNN, MomentumRule, SequenceClassifier
from .transformer import MomentumTransformer, MultiHeadAttention, TransformerLayer
