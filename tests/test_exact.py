"""Exactly reversible fixed-point arithmetic and the information buffer (Appendix C)."""

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dynkit.models.exact import (
    InformationBuffer,
    floor_divmod,
    is_on_grid,
    rational,
    to_fixed,
    to_float,
)

int64s = st.integers(min_value=-(2**61), max_value=2**61)


@settings(max_examples=60, deadline=None)
@given(a=st.lists(int64s, min_size=1, max_size=20), d=st.integers(1, 2**16))
def test_floor_divmod_agree_for_negative_numbers(a, d):
    t = torch.tensor(a, dtype=torch.int64)
    q, r = floor_divmod(t, d)
    assert torch.equal(q * d + r, t)
    assert bool(((r >= 0) & (r < d)).all())
    assert q.tolist() == [x // d for x in a]  # Python's floor division is the reference


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=8),
    n=st.integers(0, 2**16),
    d=st.integers(1, 2**16),
    steps=st.integers(1, 60),
)
def test_multiply_then_divide_is_the_identity(values, n, d, steps):
    ratio = Fraction(min(n, d), d)
    c0 = torch.tensor(values, dtype=torch.int64)
    buffer = InformationBuffer(c0.shape, ratio)
    c, trajectory = c0, [c0]
    for _ in range(steps):
        c = buffer.multiply(c)
        trajectory.append(c)
        # the multiplication really multiplies: (c // d) * n + (i mod n) is off by less than n units
        exact = [Fraction(int(a)) * ratio for a in trajectory[-2]]
        assert all(abs(int(b) - e) < max(ratio.numerator, 1) for b, e in zip(c, exact))
    for expected in reversed(trajectory[:-1]):
        c = buffer.divide(c)
        assert torch.equal(c, expected)
    assert buffer.steps == 0 and buffer.limbs == [] and buffer.stash == []


def test_buffer_grows_beyond_one_limb_and_restores_it():
    # gamma = 1/2**10 loses 10 bits per step: 100 steps need ~1000 bits, i.e. >= 16 limbs of int64
    c0 = torch.tensor([-(2**40) + 12345, 2**40 - 7, -1, 3], dtype=torch.int64)
    buffer = InformationBuffer(c0.shape, Fraction(1, 2**10))
    c = c0
    for _ in range(100):
        c = buffer.multiply(c) + torch.tensor([2**30 + 1, -(2**29) - 3, 2**31 - 1, -(2**31) + 5])
    assert len(buffer.limbs) >= 16
    for _ in range(100):
        c = buffer.divide(c - torch.tensor([2**30 + 1, -(2**29) - 3, 2**31 - 1, -(2**31) + 5]))
    assert torch.equal(c, c0) and buffer.limbs == []


def test_divide_of_a_foreign_value_fails_loudly_rather_than_wrapping():
    buffer = InformationBuffer(torch.Size([2]), Fraction(1, 2**16))
    c = torch.tensor([2**40, -(2**40)], dtype=torch.int64)
    for _ in range(3):
        c = buffer.multiply(c)
    with pytest.raises(OverflowError):
        buffer.divide(torch.tensor([2**61, 5], dtype=torch.int64))


def test_information_bits_match_log2_inverse_gamma():
    # random remainders: the buffer must hold k log2(d/n) bits per element (Sect. 3.2), no more
    g = torch.Generator().manual_seed(0)
    ratio = rational(0.9)
    buffer = InformationBuffer(torch.Size([2000]), ratio)
    c = torch.zeros(2000, dtype=torch.int64)
    k = 300
    for _ in range(k):
        c = buffer.multiply(c) + torch.randint(-(2**32), 2**32, (2000,), generator=g)
    expected = k * math.log2(1 / 0.9)
    assert buffer.expected_bits() == pytest.approx(expected)
    # log2 of a uniform B-bit integer averages B - log2(e): allow that (per limb) plus 1 bit of
    # slack
    slack = math.log2(math.e) * len(buffer.limbs) + 1
    assert expected - slack <= buffer.information_bits() <= expected + 1
    assert buffer.allocated_bits() <= 64 * math.ceil(
        expected / (63 - math.log2(ratio.denominator)) + 1
    )


@pytest.mark.parametrize(
    "gamma, n, d", [(0.9, 9, 10), (0.99, 99, 100), (1 - 1 / 50000, 49999, 50000), (0.0, 0, 1)]
)
def test_rational(gamma, n, d):
    assert rational(gamma) == Fraction(n, d)


def test_fixed_point_round_trip_and_range():
    x = torch.tensor([1.5, -2.25, 3e-11, -1e5], dtype=torch.float64)
    q = to_fixed(x)
    assert torch.equal(to_float(q), torch.round(x * 2**40) / 2**40)
    assert is_on_grid(to_float(q)) and not is_on_grid(torch.tensor([1e-14], dtype=torch.float64))
    with pytest.raises(OverflowError, match="fixed-point range"):
        to_fixed(torch.tensor([2.0**22]))
    with pytest.raises(OverflowError):
        to_fixed(torch.tensor([float("nan")]))
