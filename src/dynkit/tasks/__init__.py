"""Offline data sets and training loops for the experiments.

Each name loads its submodule on first use (:mod:`dynkit._lazy`).
"""

from .._lazy import exports as _exports, names as _names

_LAZY = {
    "node_runs": ("TRAINING_TASKS", "load_task"),
    "runs": ("CSAODE_SOLVERS", "TASKS", "run_training"),
    "sequences": ("CopyData", "DigitSequences", "adding_task", "copy_task", "digit_sequences"),
    "text": ("DATASETS", "TextDataset", "Vocabulary", "load_dataset", "train_csaode"),
    "time_series": ("TimeSeriesTask", "Windows", "load_time_series", "train_hybrid"),
}

__all__ = _names(_LAZY)

__getattr__, __dir__ = _exports(__name__, _LAZY)
