"""Measured series read from files: where they live, what a file must look like, and the review
authors' preprocessing, split and windows as data (one :class:`MeasuredProtocol` per data set).

The review (Sect. 3.4.3, Fig. 7) trains on two measured benchmark recordings that its authors
distribute beside their code (hedixia/HeavyBallNODE, ``data/pv.csv`` and ``data/sb.csv``): the F-16
ground vibration test (Noël & Schoukens 2017) and the Silverbox circuit (Wigren & Schoukens 2013).
dynkit reads them from a folder:

1. the ``directory`` argument of a loader, else
2. the environment variable :data:`DIRECTORY_VARIABLE` (``DYNKIT_TIME_SERIES_DIR``), else
3. ``shared/data/time-series`` beside the checkout dynkit runs from (``../shared/data/time-series``
   from the checkout's root), else beside (or in) the working directory.

A missing file, a malformed file (its line and column named) and a file whose SHA-256 differs from
the authors' (:attr:`SeriesFile.sha256_prefix`) are errors: the authors' split is defined on their
exact series, so a different file would silently cut different windows. ``verify=False`` accepts a
different copy; its digest is then recorded in the task's ``config``.

The data sets' protocols live beside their simulated stand-ins
(:data:`dynkit.tasks.plane_vibration.MEASURED`, :data:`dynkit.tasks.silverbox.MEASURED`); this
module is their one engine (:func:`load_measured`).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import _checks as check
from .windows import TimeSeriesTask, Windows
from dynkit._checkout import BESIDE

DIRECTORY_VARIABLE = "DYNKIT_TIME_SERIES_DIR"
"""The environment variable naming a folder that holds the measured series (a user's own copy)."""
_SHARED = Path("shared") / "data" / "time-series"
SCALINGS = ("standardise", "centre")


def default_directory() -> tuple[Path, str]:
    """The folder the measured series are read from when no ``directory`` is given, and how it was
    chosen.

    ``$DYNKIT_TIME_SERIES_DIR`` when set, else ``shared/data/time-series`` beside the checkout
    dynkit runs from, else beside (or in) the working directory; the first candidate when none
    exists (the loader then names it in its error).
    """
    from_env = os.environ.get(DIRECTORY_VARIABLE, "")
    if from_env:
        return Path(from_env), f"from ${DIRECTORY_VARIABLE}"
    candidates = [
        BESIDE / _SHARED,
        Path.cwd().parent / _SHARED,
        Path.cwd() / _SHARED,
    ]
    return next(
        (c for c in candidates if c.is_dir()), candidates[0]
    ), "the default beside the checkout"


@dataclass(frozen=True)
class SeriesFile:
    """One comma-separated file: a header row of ``columns``, then one sample per row (a trailing
    comma allowed).

    ``first_row_only`` are columns filled on the first data row only (the sampling rate ``Fs``):
    they may be empty and are dropped on reading. ``sha256_prefix`` is the start of the hex SHA-256
    of the authors' file.
    """

    name: str
    columns: tuple[str, ...]
    sha256_prefix: str
    first_row_only: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(
                f"name must be a file name (a non-empty str, no folder), got {self.name!r:.80}"
            )
        _names(self.columns, "columns")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns must be distinct, got {self.columns!r:.80}")
        if (
            not isinstance(self.sha256_prefix, str)
            or len(self.sha256_prefix) < 8
            or any(ch not in "0123456789abcdef" for ch in self.sha256_prefix)
        ):
            raise ValueError(
                f"sha256_prefix must be at least 8 lower-case hex digits, got "
                f"{self.sha256_prefix!r:.80}"
            )
        if not isinstance(self.first_row_only, tuple) or not set(self.first_row_only) < set(
            self.columns
        ):
            raise ValueError(
                f"first_row_only must be a tuple of some (not all) of the columns {self.columns}, "
                f"got {self.first_row_only!r:.80}"
            )

    @property
    def values(self) -> tuple[str, ...]:
        """The columns kept: every column but the ``first_row_only`` ones, in file order."""
        return tuple(c for c in self.columns if c not in self.first_row_only)


def _names(value, name: str, among: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """``value`` as a non-empty tuple of non-empty names (each one of ``among`` when given)."""
    if (
        not isinstance(value, tuple)
        or not value
        or not all(isinstance(c, str) and c for c in value)
        or (among is not None and not set(value) <= set(among))
    ):
        where = "" if among is None else f" among {among}"
        raise ValueError(f"{name} must be a non-empty tuple of names{where}, got {value!r:.80}")
    return value


def _fields(line: str, n: int) -> list[str]:
    """The comma-separated fields of ``line`` (``n`` expected), whitespace and quotes stripped; a
    trailing comma (one empty field more than ``n``) dropped, so that a row may end with one or
    not."""
    parts = [p.strip().strip('"').strip() for p in line.split(",")]
    return parts[:-1] if len(parts) == n + 1 and parts[-1] == "" else parts


def read_series(
    file: SeriesFile,
    directory: str | os.PathLike | None = None,
    *,
    min_rows: int = 1,
    verify: bool = True,
    needed_for: str = "the protocol",
) -> tuple[np.ndarray, str]:
    """The samples of ``file`` (rows, kept columns) as float64, and the file's hex SHA-256.

    Parameters
    ----------
    file : SeriesFile
        What the file must look like.
    directory : str or os.PathLike, optional
        The folder holding it; default :func:`default_directory`.
    min_rows : int
        Fewer data rows are an error (a truncated file), saying what they are ``needed_for``.
    verify : bool
        A SHA-256 that does not start with ``file.sha256_prefix`` is an error (``False``: accepted).

    Raises
    ------
    FileNotFoundError
        No such file (the message names the file, the folder, how it was chosen and how to choose
        another).
    ValueError
        A malformed file, naming the file, the line and (for a value) the column; too few rows; a
        different digest.
    """
    if not isinstance(file, SeriesFile):
        raise TypeError(f"file must be a SeriesFile, got {type(file).__name__}")
    check.integer(min_rows, "min_rows", 1)
    check.boolean(verify, "verify")
    if directory is None:
        folder, how = default_directory()
    else:
        folder, how = check.path(directory, "directory"), "from the directory argument"
    path = folder / file.name
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(
            f"the measured series {file.name!r} is missing: no file {str(path)!r} (folder "
            f"{how}). Pass "
            f"directory=... (a data option of the experiment) or set ${DIRECTORY_VARIABLE} "
            f"to a folder holding "
            f"{file.name} (the review authors' file, see docs/guide/experiments.md, "
            f"'Measured time series'), or "
            f"use source='simulated' for the simulated stand-in"
        )
    from ..io import read_regular_bytes

    raw = read_regular_bytes(path, "directory")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {err.start}); expected a CSV file"
        ) from None
    lines = text.splitlines()
    while (
        lines and not lines[-1].strip()
    ):  # trailing blank lines (the authors' pv.csv ends with one)
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: empty file; expected a header row {', '.join(file.columns)}")
    header = _fields(lines[0], len(file.columns))
    if header and header[-1] == "":  # shown without the trailing comma's empty field
        header = header[:-1]
    if tuple(header) != file.columns:
        raise ValueError(
            f"{path}, line 1: expected the columns {', '.join(file.columns)} (a trailing comma "
            f"allowed), got {', '.join(header) or 'nothing'}"
        )
    n_rows = len(lines) - 1
    if n_rows < min_rows:
        raise ValueError(
            f"{path}: {n_rows} data rows, fewer than the {min_rows} needed for {needed_for} "
            f"(a truncated file?)"
        )
    kept = [j for j, c in enumerate(file.columns) if c not in file.first_row_only]
    values = np.empty((n_rows, len(kept)))
    for i, line in enumerate(lines[1:]):
        fields = _fields(line, len(file.columns))
        if len(fields) != len(file.columns):
            raise ValueError(
                f"{path}, line {i + 2}: expected {len(file.columns)} fields "
                f"({', '.join(file.columns)}), got {len(fields)}: {line[:80]!r}"
            )
        for k, j in enumerate(kept):
            try:
                value = float(fields[j])
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise ValueError(
                    f"{path}, line {i + 2}, column {j + 1} ({file.columns[j]}): expected a finite "
                    f"number, got {fields[j]!r}"
                )
            values[i, k] = value
    digest = hashlib.sha256(raw).hexdigest()
    if verify and not digest.startswith(file.sha256_prefix):
        raise ValueError(
            f"{path}: SHA-256 {digest[:12]}... differs from {file.sha256_prefix}..., the review "
            f"authors' {file.name}: their split would cut a different series. Point "
            f"${DIRECTORY_VARIABLE} (or directory=...) at their file, or pass verify=False to use "
            f"this copy (its digest is recorded in the task's config)"
        )
    return values, digest


@dataclass(frozen=True)
class MeasuredProtocol:
    """The authors' preprocessing, split and windows of one measured series, as data.

    Preprocessing: ``scaling`` each kept column over the whole series (``"standardise"``: mean 0 and
    standard deviation 1, ``"centre"``: mean 0), then times ``factor``. Start indices: the first
    ``span`` samples (``None``: all but the last ``margin``, room for the forecast), of which the
    fraction ``keep`` is drawn at random with ``split_seed`` (legacy ``numpy.random.RandomState``,
    as the authors; ``noise_draw``: after drawing one normal per value, as their loader does for its
    zero-variance noise) and sorted; split in time order by the ratio ``split`` (train : validation
    : test). Windows: consecutive runs of ``length + 1`` kept indices, the model reads the first
    ``length`` and predicts each next one; ``forecast`` stamps from the last index on, one stamp
    apart.
    """

    name: str
    file: SeriesFile
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    scaling: str
    factor: float
    span: int | None
    margin: int
    keep: float
    noise_draw: bool
    split: tuple[int, int, int]
    split_seed: int
    length: int
    forecast: int
    description: str
    sources: str

    def __post_init__(self):
        for label in ("name", "description", "sources"):
            if not isinstance(getattr(self, label), str) or not getattr(self, label):
                raise ValueError(
                    f"{label} must be a non-empty str, got {getattr(self, label)!r:.80}"
                )
        if not isinstance(self.file, SeriesFile):
            raise TypeError(f"file must be a SeriesFile, got {type(self.file).__name__}")
        for label in ("inputs", "outputs"):
            _names(getattr(self, label), label, self.file.values)
        check.one_of(self.scaling, "scaling", SCALINGS)
        check.real(self.factor, "factor", low=0.0, low_open=True)
        if self.span is not None:
            check.integer(self.span, "span", 2)
        check.integer(self.margin, "margin", 0)
        check.real(self.keep, "keep", low=0.0, high=1.0, low_open=True)
        check.boolean(self.noise_draw, "noise_draw")
        if (
            not isinstance(self.split, tuple)
            or len(self.split) != 3
            or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in self.split)
            or self.split[0] < 1
            or self.split[2] < 1
        ):
            raise ValueError(
                f"split must be a tuple of 3 integer ratios (train, validation, test), train "
                f"and test "
                f">= 1, got {self.split!r:.80}"
            )
        check.integer(self.split_seed, "split_seed", 0)
        check.integer(self.length, "length", 2)
        check.integer(self.forecast, "forecast", 1)

    def min_rows(self, length: int, forecast: int) -> int:
        """The fewest samples this protocol can cut windows of ``length`` and ``forecast`` from:
        ``span`` plus the forecast's reach, or one window in the smallest part plus the
        ``margin``."""
        if self.span is not None:
            return self.span + forecast - 1
        smallest = min(r for r in self.split if r > 0)
        return self.margin + math.ceil((length + 1) * sum(self.split) / smallest / self.keep) + 1


def _scale(values: np.ndarray, protocol: MeasuredProtocol) -> np.ndarray:
    """``values`` (rows, columns) scaled per column over the whole series, as ``protocol`` says."""
    centred = values - values.mean(0)
    if protocol.scaling == "standardise":
        std = values.std(0)
        centred = centred / np.where(std > 0, std, 1.0)
    return protocol.factor * centred


def _start_indices(n_rows: int, protocol: MeasuredProtocol, split_seed: int) -> list[np.ndarray]:
    """The sorted start indices of the train, validation and test parts (the authors' draw and
    split)."""
    pool = protocol.span if protocol.span is not None else n_rows - protocol.margin
    n_kept = int(pool * protocol.keep)
    if protocol.keep < 1.0:
        rng = np.random.RandomState(split_seed)
        if protocol.noise_draw:
            rng.standard_normal((n_rows, len(protocol.file.values)))
        labels = np.sort(rng.choice(pool, n_kept, replace=False))
    else:
        labels = np.arange(pool)
    ratio = np.asarray(protocol.split, dtype=np.float64) / sum(protocol.split)
    n_train, n_val = (ratio[:2] * n_kept).astype(int)
    return [labels[:n_train], labels[n_train : n_train + n_val], labels[n_train + n_val :]]


def _cut(
    values: np.ndarray,
    labels: np.ndarray,
    inputs: list[int],
    outputs: list[int],
    length: int,
    forecast: int,
    max_windows: int | None = None,
) -> Windows:
    """Windows of consecutive runs of ``length + 1`` of the sorted ``labels`` (time in samples):
    inputs at the first ``length``, targets at the next ones, ``forecast`` stamps one sample
    apart from the last label on."""
    n = len(labels) // (length + 1)
    if max_windows is not None:
        n = min(n, max_windows)
    runs = labels[: n * (length + 1)].reshape(n, length + 1)
    seen, last = runs[:, :length], runs[:, -1]
    gaps = np.diff(seen, axis=1, prepend=seen[:, :1])  # 0 before the first observation
    ahead = last[:, None] + np.arange(forecast)[None]
    future_gaps = np.concatenate(
        [(last - seen[:, -1])[:, None], np.ones((n, forecast - 1))], axis=1
    )
    as_t = lambda a: torch.tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    return Windows(
        as_t(values[seen][..., inputs]),
        as_t(gaps),
        as_t(values[runs[:, 1:]][..., outputs]),
        as_t(values[ahead][..., outputs]),
        as_t(future_gaps),
    )


def load_measured(
    protocol: MeasuredProtocol,
    directory: str | os.PathLike | None = None,
    *,
    length: int | None = None,
    forecast: int | None = None,
    split_seed: int | None = None,
    max_windows: int | None = None,
    verify: bool = True,
) -> TimeSeriesTask:
    """The measured series of ``protocol`` read from ``directory``, preprocessed, split and windowed
    as the authors do; ``length``, ``forecast`` and ``split_seed`` default to theirs (``protocol``),
    ``max_windows`` keeps the first windows of each part (a scale's cut; ``None``: all).

    The returned task's ``source`` is ``"measured"``; its ``config`` records the file's digest.
    """
    if not isinstance(protocol, MeasuredProtocol):
        raise TypeError(f"protocol must be a MeasuredProtocol, got {type(protocol).__name__}")
    length = protocol.length if length is None else check.integer(length, "length", 2)
    forecast = protocol.forecast if forecast is None else check.integer(forecast, "forecast", 1)
    split_seed = (
        protocol.split_seed if split_seed is None else check.integer(split_seed, "split_seed", 0)
    )
    if max_windows is not None:
        check.integer(max_windows, "max_windows", 1)
    if protocol.span is None and forecast - 1 > protocol.margin:
        raise ValueError(
            f"forecast must be at most {protocol.margin + 1} (the {protocol.margin} samples "
            f"held back "
            f"after the last start index), got {forecast}"
        )
    values, digest = read_series(
        protocol.file,
        directory,
        min_rows=protocol.min_rows(length, forecast),
        verify=verify,
        needed_for=f"windows of length={length} and forecast={forecast}",
    )
    values = _scale(values, protocol)
    columns = list(protocol.file.values)
    inputs = [columns.index(c) for c in protocol.inputs]
    outputs = [columns.index(c) for c in protocol.outputs]
    parts = _start_indices(len(values), protocol, split_seed)
    for part, labels in zip(("train", "test"), (parts[0], parts[2])):
        if len(labels) < length + 1:
            raise ValueError(
                f"length must leave one window of length + 1 = {length + 1} start indices in the "
                f"{part} part ({len(labels)} indices), got {length}"
            )
    train, val, test = (
        _cut(values, labels, inputs, outputs, length, forecast, max_windows) for labels in parts
    )
    config = {
        "source": "measured",
        "file": protocol.file.name,
        "sha256": digest[:12],
        "length": length,
        "forecast": forecast,
        "split_seed": split_seed,
        "max_windows": max_windows,
    }
    note = (
        f"measured: {protocol.description} ({protocol.file.name}, sha256 {digest[:12]}), "
        f"the review authors' preprocessing and split ({protocol.sources})"
    )
    return TimeSeriesTask(
        protocol.name,
        train,
        val,
        test,
        protocol.inputs,
        protocol.outputs,
        note,
        config,
        source="measured",
    )


__all__ = [
    "DIRECTORY_VARIABLE",
    "MeasuredProtocol",
    "SeriesFile",
    "default_directory",
    "load_measured",
    "read_series",
]
