"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures."""
from .exact import InformationBuffer
from .momentum_resnet import MomentumResNet, MomentumStage, ResidualBranch, to_momentum_resnet
from .revnet import RevNet
from .attention import (adaptive_momentum, linear_attention, momentum_attention, momentum_attention_recurrent,
                        momentum_attention_step, momentum_weights, softmax_attention)
from .momentum_rnn import MOMENTUM_RULES, MomentumRNN, MomentumRule, SequenceClassifier
from .transformer import MomentumTransformer, MultiHeadAttention, TransformerLayer
from .csaode import CSAODE
