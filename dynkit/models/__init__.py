"""Torch modules: neural ODE blocks and models, CSAODE, momentum architectures."""
