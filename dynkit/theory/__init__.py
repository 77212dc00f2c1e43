"""Numerical checks of the papers' propositions."""
