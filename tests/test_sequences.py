"""Offline sequence tasks: copy (0w0w), adding, pixel-by-pixel 8x8 digits."""

import pytest
import torch

from dynkit.tasks.sequences import adding_task, copy_task, digit_sequences


def test_copy_task_structure():
    data = copy_task(200, max_length=128, symbols=10, seed=3)
    assert data.tokens.shape == (200, 128) and data.vocab_size == 12 and data.pad == 11
    for row, mask in zip(data.tokens, data.mask):
        body = row[row != data.pad]
        w_len = (len(body) - 2) // 2
        assert len(body) == 2 * w_len + 2 <= 128 and w_len >= 1
        assert body[0] == 0 and body[w_len + 1] == 0
        w = body[1 : w_len + 1]
        assert torch.equal(body[w_len + 2 :], w) and ((w >= 1) & (w <= 10)).all()
        assert int(mask.sum()) == w_len
        # masked targets are exactly the second w
        assert torch.equal(row[1:][mask], w)
    assert torch.equal(data.inputs, data.tokens[:, :-1]) and torch.equal(
        data.targets, data.tokens[:, 1:]
    )
    lengths = (data.tokens != data.pad).sum(1)
    assert lengths.min() < 20 and lengths.max() > 100  # lengths spread over the range


def test_copy_task_is_seeded():
    assert torch.equal(copy_task(10, seed=1).tokens, copy_task(10, seed=1).tokens)
    assert not torch.equal(copy_task(10, seed=1).tokens, copy_task(10, seed=2).tokens)
    fixed = copy_task(5, max_length=20, fixed_length=True)
    assert (fixed.tokens != fixed.pad).all()


def test_adding_task():
    x, y = adding_task(100, 50, seed=0)
    assert x.shape == (100, 50, 2) and y.shape == (100,)
    markers = x[..., 1]
    assert (markers.sum(1) == 2).all()
    assert (markers[:, :25].sum(1) == 1).all() and (markers[:, 25:].sum(1) == 1).all()
    torch.testing.assert_close((x[..., 0] * markers).sum(1), y)


@pytest.mark.parametrize("permuted", [False, True])
def test_digit_sequences(permuted):
    plain = digit_sequences(False, seed=4)
    data = digit_sequences(permuted, seed=4)
    assert data.x_train.shape[1:] == (64, 1) and len(data.x_train) + len(data.x_test) == 1797
    assert data.x_train.min() >= 0 and data.x_train.max() <= 1
    assert set(data.y_test.tolist()) == set(range(10))
    if permuted:
        perm = data.permutation
        assert sorted(perm.tolist()) == list(range(64)) and not torch.equal(perm, torch.arange(64))
        torch.testing.assert_close(
            data.x_train[:, :, 0], plain.x_train[:, perm, 0]
        )  # same split, pixels permuted
    else:
        assert data.permutation is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: copy_task(0), "n must"),
        (lambda: copy_task(5, max_length=3), "max_length"),
        (lambda: adding_task(5, 1), "length"),
        (lambda: digit_sequences(test_fraction=1.0), "test_fraction"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
