"""Offline data of the heavy-ball neural ODE experiments: IDX reader, point cloud, simulated
Silverbox."""

import gzip
import struct

import numpy as np
import pytest
import torch

from dynkit.tasks.images import load_digits_split, load_idx_images, read_idx
from dynkit.tasks.point_cloud import point_cloud
from dynkit.tasks.silverbox import silverbox


def _write_idx(path, array, gz=False):
    codes = {np.dtype(np.uint8): 0x08}
    header = struct.pack(">HBB", 0, codes[array.dtype], array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape
    )
    (gzip.open if gz else open)(path, "wb").write(header + array.tobytes())


@pytest.mark.parametrize("gz", [False, True])
def test_idx_files_round_trip(tmp_path, gz):
    rng = np.random.default_rng(0)
    suffix = ".gz" if gz else ""
    images = {
        s: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in (("train", 5), ("t10k", 3))
    }
    labels = {s: rng.integers(0, 10, len(images[s]), dtype=np.uint8) for s in images}
    for s in images:
        _write_idx(tmp_path / f"{s}-images-idx3-ubyte{suffix}", images[s], gz)
        _write_idx(tmp_path / f"{s}-labels-idx1-ubyte{suffix}", labels[s], gz)
    np.testing.assert_array_equal(
        read_idx(tmp_path / f"train-images-idx3-ubyte{suffix}"), images["train"]
    )
    x, y, xt, yt = load_idx_images(tmp_path, n_train=4)
    assert x.shape == (4, 1, 28, 28) and xt.shape == (3, 1, 28, 28)
    torch.testing.assert_close(x[:, 0], torch.from_numpy(images["train"][:4] / 255.0).float())
    assert y.tolist() == labels["train"][:4].tolist() and yt.dtype == torch.int64


def test_read_idx_rejects_other_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"PK\x03\x04rest")
    with pytest.raises(ValueError, match="IDX"):
        read_idx(tmp_path / "bad")


def test_point_cloud_radii_and_labels():
    x, y = point_cloud(seed=1)
    r = x.norm(dim=1)
    assert (y == 0).sum() == 40 and (y == 1).sum() == 80
    assert r[y == 0].max() < 0.5 and r[y == 1].min() > 0.85 and r[y == 1].max() < 1.0
    assert torch.equal(point_cloud(seed=1)[0], x) and not torch.equal(point_cloud(seed=2)[0], x)


def test_digits_split_is_seeded_and_disjoint():
    a = load_digits_split(seed=0)
    b = load_digits_split(seed=0)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert a[0].shape[1:] == (1, 8, 8) and len(a[1]) + len(a[3]) == 1797 and a[0].max() <= 1.0


def test_silverbox_is_a_duffing_oscillator():
    t, u, y, drive = silverbox(t_end=20.0, n_points=2001, seed=0)
    # y'' + 0.1 y' + y + y^3 = u, checked with second differences (h = 0.01: O(h^2) ~ 1e-4 error)
    h = t[1] - t[0]
    ypp = (y[2:] - 2 * y[1:-1] + y[:-2]) / h**2
    yp = (y[2:] - y[:-2]) / (2 * h)
    residual = ypp + 0.1 * yp + y[1:-1] + y[1:-1] ** 3 - u[1:-1]
    assert np.abs(residual).max() < 1e-3
    np.testing.assert_allclose(drive(t), u)
