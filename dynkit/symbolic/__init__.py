"""Symbolic derivations (sympy): continuous limits, adjoints, order conditions, LaTeX."""
