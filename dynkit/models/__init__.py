"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures."""
from .ode_block import ODEBlock, ode_blocks, set_tolerance
from .neural_ode import (ANODE, GHBNODE, HBNODE, MODELS, NODE, SONODE, ConvField, ConvInitial, FirstOrder,
                         GeneralizedHeavyBall, HeavyBall, MLPField, SecondOrder, damping, skip_coefficient)
from .node_paper import Classifier, count_parameters, from_paper
