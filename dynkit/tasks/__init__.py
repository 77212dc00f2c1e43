"""Offline data sets and training loops for the experiments."""
from .node_runs import TRAINING_TASKS, load_task, run_training
