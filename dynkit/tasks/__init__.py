"""Offline data sets and training loops for the experiments."""
