"""The review's ODE-RNN hybrids on measured and simulated time series (Walker2D, plane vibration,
Silverbox).

Its modules, in the order they register, are listed in the catalogue
(:data:`dynkit.experiments.FAMILIES`); this file holds only its docstring, so that a shard's code
identity follows it and finds nothing to digest (:mod:`dynkit.experiments.code_closure`).
"""
