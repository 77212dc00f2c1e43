"""Offline data sets and training loops for the experiments."""

from .node_runs import TRAINING_TASKS, load_task
from .runs import CSAODE_SOLVERS, TASKS, run_training
from .sequences import CopyData, DigitSequences, adding_task, copy_task, digit_sequences
from .text import DATASETS, TextDataset, Vocabulary, load_dataset, train_csaode
from .time_series import TimeSeriesTask, Windows, load_time_series, train_hybrid
