"""Offline sequence tasks: the copy task 0w0w, the adding task, pixel-by-pixel 8x8 digits.

All generators take a ``seed`` (same seed, same data) and return torch tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import integer

__all__ = ["CopyData", "copy_task", "adding_task", "DigitSequences", "digit_sequences"]


def _tensors(record, **expected) -> None:
    for name, kind in expected.items():
        value = getattr(record, name)
        if kind == "tensor_or_none" and value is None:
            continue
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")


@dataclass
class CopyData:
    """Copy-task sequences ``0 w 0 w`` padded to ``max_length`` and the next-token training pairs.

    ``tokens``: (n, max_length) with 0 the separator, 1..symbols the alphabet, ``pad`` after the
    sequence. ``inputs = tokens[:, :-1]``, ``targets = tokens[:, 1:]``; ``mask`` marks the targets
    that are the copy (the second ``w``): the only predictable part, on which loss and accuracy are
    measured.
    """

    tokens: torch.Tensor
    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    vocab_size: int
    pad: int

    def __post_init__(self):
        _tensors(self, tokens=1, inputs=1, targets=1, mask=1)
        integer(self.vocab_size, "vocab_size", 2)
        integer(self.pad, "pad", 0)


def copy_task(
    n: int, max_length: int = 128, symbols: int = 10, *, seed: int = 0, fixed_length: bool = False
) -> CopyData:
    """The synthetic copy task of the Momentum Transformer (Sect. 4.1): sequences ``0 w 0 w``.

    ``|w|`` is drawn uniformly in ``[1, (max_length - 2) // 2]`` (or fixed at the maximum), symbols
    of ``w`` uniformly from ``1..symbols``. Vocabulary: ``symbols + 2`` (separator 0 and padding).
    """
    n = integer(n, "n", 1)
    max_length = integer(max_length, "max_length", 4)
    symbols = integer(symbols, "symbols", 1)
    if not isinstance(fixed_length, bool):
        raise TypeError(f"fixed_length must be a bool, got {fixed_length!r}")
    rng = np.random.default_rng(integer(seed, "seed", 0))
    longest = (max_length - 2) // 2
    pad = symbols + 1
    tokens = np.full((n, max_length), pad, dtype=np.int64)
    mask = np.zeros((n, max_length - 1), dtype=bool)
    lengths = np.full(n, longest) if fixed_length else rng.integers(1, longest + 1, size=n)
    for row, length in enumerate(lengths):
        w = rng.integers(1, symbols + 1, size=length)
        tokens[row, : 2 * length + 2] = np.concatenate([[0], w, [0], w])
        mask[row, length + 1 : 2 * length + 1] = True  # targets at positions of the second w
    tokens = torch.from_numpy(tokens)
    return CopyData(tokens, tokens[:, :-1], tokens[:, 1:], torch.from_numpy(mask), symbols + 2, pad)


def adding_task(n: int, length: int, *, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The adding problem (Hochreiter & Schmidhuber): ``x`` of shape (n, length, 2), ``y`` of shape
    (n,).

    Channel 0: values uniform in [0, 1]; channel 1: two markers, one in each half. ``y`` is the sum
    of the two marked values (mean-squared error of a constant predictor: about 1/6).
    """
    n = integer(n, "n", 1)
    length = integer(length, "length", 2)
    rng = np.random.default_rng(integer(seed, "seed", 0))
    values = rng.random((n, length))
    half = length // 2
    first = rng.integers(0, half, size=n)
    second = rng.integers(half, length, size=n)
    markers = np.zeros((n, length))
    markers[np.arange(n), first] = 1.0
    markers[np.arange(n), second] = 1.0
    x = np.stack([values, markers], axis=-1).astype(np.float32)
    y = (values[np.arange(n), first] + values[np.arange(n), second]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


@dataclass
class DigitSequences:
    """Pixel-by-pixel 8x8 digits: ``x_*`` of shape (n, 64, 1) in [0, 1], labels ``y_*`` in 0..9."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    permutation: torch.Tensor | None

    def __post_init__(self):
        _tensors(self, x_train=1, y_train=1, x_test=1, y_test=1, permutation="tensor_or_none")
        for x, y in (("x_train", "y_train"), ("x_test", "y_test")):
            if len(getattr(self, x)) != len(getattr(self, y)):
                raise ValueError(
                    f"{x} and {y} must have the same length, got {len(getattr(self, x))} and "
                    f"{len(getattr(self, y))}"
                )


def digit_sequences(
    permuted: bool = False, *, seed: int = 0, test_fraction: float = 0.25
) -> DigitSequences:
    """scikit-learn's ``load_digits`` (1797 images, offline) as sequences of 64 pixels, row by row.

    ``permuted=True`` applies one fixed pixel permutation drawn from ``seed`` to every image (the
    PMNIST protocol of MomentumRNN Sect. 3.1, at 8x8). The train/test split is stratified and
    seeded.
    """
    if (
        isinstance(test_fraction, bool)
        or not isinstance(test_fraction, (int, float))
        or not 0.0 < test_fraction < 1.0
    ):
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    if not isinstance(permuted, bool):
        raise TypeError(f"permuted must be a bool, got {permuted!r}")
    integer(seed, "seed", 0)
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.images.reshape(-1, 64) / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    permutation = rng.permutation(64) if permuted else None
    if permutation is not None:
        x = x[:, permutation]
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    return DigitSequences(
        t(x_tr)[..., None],
        t(y_tr),
        t(x_te)[..., None],
        t(y_te),
        None if permutation is None else t(permutation),
    )
