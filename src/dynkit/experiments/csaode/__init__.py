"""CSAODE (Zhang et al.): TREC, the sensitivity to its settings, the attention it learns, Table 1 on
four cross-validated sets.

Its modules, in the order they register, are listed in the catalogue
(:data:`dynkit.experiments.FAMILIES`); this file holds only its docstring, so that a shard's code
identity follows it and finds nothing to digest (:mod:`dynkit.experiments.code_closure`).
"""
