"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures."""
from .exact import InformationBuffer
from .momentum_resnet import MomentumResNet, MomentumStage, ResidualBranch, to_momentum_resnet
from .revnet import RevNet
