"""Momentum ResNets (Sander et al.): the cubic, the rings, LISTA, the buffer's bits, the reference
accuracy.

Its modules, in the order they register, are listed in the catalogue
(:data:`dynkit.experiments.FAMILIES`); this file holds only its docstring, so that a shard's code
identity follows it and finds nothing to digest (:mod:`dynkit.experiments.code_closure`).
"""
