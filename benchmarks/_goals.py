"""Goal lines and paired timings shared by every benchmark.

A goal is a ratio against a peer measured in the same run. Each benchmark reports its goals with
:func:`check_goal`, which prints one line
``GOAL <name>: <value> (goal <op> <target>): met | NOT met``, so a missed goal is flagged, never
only printed. :func:`paired_medians` times contenders interleaved (round robin, order rotated each
round) and returns medians, so that the load of a shared machine falls on every contender alike.
"""

from __future__ import annotations

import shlex
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent.parent / "analysis" / "results"
# every goal checked in this process, in order (``python -m benchmarks`` sums them up)
REPORTED: list = []


@dataclass(frozen=True)
class Goal:
    """One goal: ``value`` compared with ``target`` (``lower_is_better`` picks the direction)."""

    name: str
    value: float
    target: float
    lower_is_better: bool = True
    note: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.target if self.lower_is_better else self.value >= self.target

    def line(self) -> str:
        op = "<=" if self.lower_is_better else ">="
        note = f"  [{self.note}]" if self.note else ""
        return (
            f"GOAL {self.name}: {self.value:.4g} (goal {op} {self.target:g}): "
            f"{'met' if self.met else 'NOT met'}{note}"
        )

    def as_dict(self) -> dict:
        return {**asdict(self), "met": self.met}


def check_goal(
    name: str, value: float, target: float, *, lower_is_better: bool = True, note: str = ""
) -> Goal:
    """Print and return the goal line for ``value`` against ``target``."""
    goal = Goal(name, float(value), float(target), lower_is_better, note)
    print(goal.line(), flush=True)
    REPORTED.append(goal)
    return goal


def paired_medians(
    contenders: dict[str, Callable[[], Any]],
    repeats: int = 5,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median time (s) of each contender, timed interleaved: round ``r`` runs them rotated by ``r``.

    ``clock`` is wall time by default; ``time.process_time`` gives CPU time, which on a shared
    machine leaves out the time other processes held the core (all threads of this process count).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            contenders[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = clock()
            contenders[name]()
            times[name].append(clock() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def interleaved_minimum(
    contenders: dict[str, Callable[[], Any]],
    rounds: int = 3,
    slow_s: float = 0.1,
    batch_s: float = 0.0,
) -> tuple[dict[str, float], dict[str, Any]]:
    """``(best CPU seconds, last output)`` of each contender, timed interleaved with the order
    rotated each round.

    A contender slower than ``slow_s`` (its noise is small in relative terms) or whose output is
    None (a failed run) is timed once. With ``batch_s``, each round times a batch of runs lasting
    about ``batch_s`` (its size fixed from the first run, as ``timeit``'s autorange) and takes the
    mean of the batch: a run of a fraction of a millisecond timed alone is at the mercy of one
    interrupt. CPU time of this process (``time.process_time``): the load of other processes is
    left out.
    """
    best = {name: float("inf") for name in contenders}
    batch = dict.fromkeys(contenders, 1)
    outputs: dict[str, Any] = {}
    names = list(contenders)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if r > 0 and (best[name] > slow_s or outputs.get(name) is None):
                continue
            start = time.process_time()
            for _ in range(batch[name]):
                outputs[name] = contenders[name]()
            best[name] = min(best[name], (time.process_time() - start) / batch[name])
            if r == 0 and batch_s > 0 and outputs[name] is not None:
                batch[name] = max(1, min(1000, round(batch_s / max(best[name], 1e-6))))
    return best, outputs


def record(
    name: str, data: dict, goals: list[Goal], argv: list[str] | None = None, out: Path | None = None
) -> Path:
    """Write ``data`` and the goals to ``analysis/results/<name>/results.json`` with its
    ``COMMAND``."""
    from dynkit.io import atomic_write, write_json

    folder = (out or RESULTS) / name
    argv = sys.argv if argv is None else argv
    module = Path(argv[0]).stem if argv else name
    command = "python -m benchmarks." + module + "".join(" " + shlex.quote(a) for a in argv[1:])
    path = write_json(
        folder / "results.json", {**data, "goals": [g.as_dict() for g in goals]}, command=command
    )
    atomic_write(folder / "COMMAND", lambda fh: fh.write(command + "\n"))
    return path
