"""Offline image data: scikit-learn's 8x8 digits and Fashion-MNIST (or MNIST) from IDX files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import torch

from .. import _checks as check

__all__ = [
    "FASHION_MNIST_DIR",
    "read_idx",
    "load_idx_images",
    "fashion_mnist_available",
    "load_digits_split",
]

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (MNIST format, optionally gzipped) into a numpy array."""
    path = check.existing_file(path, "path")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    try:
        zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
        if zero != 0 or dtype_code not in _IDX_DTYPES:
            raise ValueError(f"a header {data[:4]!r}")
        shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
        return np.frombuffer(data, dtype=_IDX_DTYPES[dtype_code], offset=4 + 4 * ndim).reshape(
            shape
        )
    except (struct.error, ValueError) as err:
        raise ValueError(f"path must be an IDX file, got {str(path)!r} with {err}") from None


def _find(directory: Path, stem: str) -> Path:
    for name in (
        stem,
        stem + ".gz",
        stem.replace("-idx", ".idx"),
        stem.replace("-idx", ".idx") + ".gz",
    ):
        if (directory / name).exists():
            return directory / name
    raise ValueError(
        f"directory must hold {stem}[.gz], got {str(directory)!r} without it "
        f"(install dataset-fashion-mnist, or pass directory=)"
    )


def load_idx_images(
    directory: str | Path = FASHION_MNIST_DIR,
    *,
    n_train: int | None = None,
    n_test: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x_train, y_train, x_test, y_test) from the standard IDX files in ``directory``.

    Images are float32 in [0, 1] with shape ``(N, 1, 28, 28)``; ``n_train``/``n_test`` keep the
    first N.
    """
    directory = check.path(directory, "directory")
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if n is not None:
            check.integer(n, name, 1)
    out = []
    for split in ("train", "t10k"):
        x = read_idx(_find(directory, f"{split}-images-idx3-ubyte"))
        y = read_idx(_find(directory, f"{split}-labels-idx1-ubyte"))
        n = n_train if split == "train" else n_test
        x, y = x[:n], y[:n]
        out += [
            torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1),
            torch.from_numpy(y.astype(np.int64)),
        ]
    return tuple(out)


def fashion_mnist_available(directory: str | Path = FASHION_MNIST_DIR) -> bool:
    try:
        _find(check.path(directory, "directory"), "train-images-idx3-ubyte")
    except ValueError:
        return False
    return True


def load_digits_split(test_fraction: float = 0.25, seed: int = 0):
    """scikit-learn's 1797 8x8 digits, scaled to [0, 1], shape ``(N, 1, 8, 8)``, split by a
    seeded permutation."""
    check.real(test_fraction, "test_fraction", low=0.0, high=1.0, low_open=True, high_open=True)
    check.integer(seed, "seed", 0)
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed), device="cpu")
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]
