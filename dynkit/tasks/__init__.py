"""Offline data sets and training loops for the experiments."""
from .sequences import CopyData, DigitSequences, adding_task, copy_task, digit_sequences
