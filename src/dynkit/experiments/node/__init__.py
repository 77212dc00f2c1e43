"""The neural ODEs of the momentum review (Wang et al.): NODE, ANODE, SONODE, HBNODE and GHBNODE
trained on digits, a point cloud and images; their blow-up, adjoint and NFE against the tolerance.

Its modules, in the order they register, are listed in the catalogue
(:data:`dynkit.experiments.FAMILIES`); this file holds only its docstring, so that a shard's code
identity follows it and finds nothing to digest (:mod:`dynkit.experiments.code_closure`).
"""
