"""Exactly reversible fixed-point arithmetic with an information buffer.

A float tensor ``t`` is represented by the int64 tensor ``round(t * 2**frac_bits)``. Additions and
subtractions of such integers are exact, so they invert bit for bit. Multiplication by
``gamma = n/d`` loses the remainder of a division by ``d``; Algorithm 1 of Appendix C of the
Momentum ResNets paper (after Maclaurin et al., 2015) keeps that remainder in a per-element
*information buffer* so that the multiplication can be undone exactly. Each multiplication adds
about ``log2(d/n) = log2(1/gamma)`` bits per element to the buffer (Sect. 3.2 of the paper).

Integer division here is floor division and the remainder is taken with the sign of the divisor, so
``a == d * (a // d) + a % d`` with ``0 <= a % d < d`` holds for negative ``a`` too (C-style
truncation would break the inversion for negative activations).
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

__all__ = [
    "FRAC_BITS",
    "MAX_DENOMINATOR",
    "FixedPointOverflow",
    "max_abs_value",
    "check_frac_bits",
    "check_representable",
    "to_fixed",
    "to_float",
    "is_on_grid",
    "floor_divmod",
    "check_no_overflow",
    "rational",
    "InformationBuffer",
]

FRAC_BITS = 40
"""Default number of fractional bits of the fixed-point grid: resolution 2**-40 ~ 9.1e-13, range
|x| < 2**22. Algorithm 1 rounds ``c * n / d`` with an error below ``n`` grid units, i.e. below
``n * 2**-40`` (4.5e-8 for gamma = 49999/50000), so the grid is kept fine."""

MAX_DENOMINATOR = 2**16
"""Largest denominator of the rational approximation n/d of gamma."""

_INT64_MAX = 2**63 - 1
_VALUE_BOUND = 2**62  # |fixed-point integer| stays below this, so that one sum of two fits in int64


class FixedPointOverflow(OverflowError, ValueError):
    """A value outside the fixed-point range (or not finite): an ``OverflowError`` and a
    ``ValueError``."""


def _check_int_tensor(q, name: str) -> None:
    if not isinstance(q, torch.Tensor) or q.dtype != torch.int64:
        raise TypeError(
            f"{name}: expected an int64 torch.Tensor (fixed-point integers), "
            f"got {getattr(q, 'dtype', type(q).__name__)}"
        )


def max_abs_value(frac_bits: int = FRAC_BITS) -> float:
    """The largest magnitude a value may have on the fixed-point grid of ``frac_bits`` bits."""
    check_frac_bits(frac_bits)
    return float(2 ** (62 - frac_bits))


def check_frac_bits(frac_bits: int) -> int:
    if not isinstance(frac_bits, int) or isinstance(frac_bits, bool) or not 1 <= frac_bits <= 52:
        raise ValueError(f"frac_bits: expected an int in [1, 52], got {frac_bits!r}")
    return frac_bits


def check_representable(t: torch.Tensor, name: str, frac_bits: int = FRAC_BITS) -> None:
    """Raise ``ValueError`` unless ``t`` is finite and within the fixed-point range."""
    check_frac_bits(frac_bits)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if not torch.is_floating_point(t):
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if t.numel() == 0:
        return
    if not bool(torch.isfinite(t).all()):
        raise ValueError(
            f"{name}: expected finite values for the exact mode, got non-finite entries "
            f"(first at flat index {int((~torch.isfinite(t)).flatten().nonzero()[0])})"
        )
    largest = float(t.detach().abs().max())
    if largest >= max_abs_value(frac_bits):
        raise ValueError(
            f"{name}: expected |values| < {max_abs_value(frac_bits):g} "
            f"(fixed point with {frac_bits} fractional bits), got max |value| = {largest:g}"
        )


def to_fixed(t: torch.Tensor, frac_bits: int = FRAC_BITS, name: str = "tensor") -> torch.Tensor:
    """Round ``t`` to the grid ``2**-frac_bits`` and return the integers (int64).

    Raises ``OverflowError`` (naming ``name``) for non-finite or out-of-range values instead of
    wrapping around silently.
    """
    check_frac_bits(frac_bits)
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        raise TypeError(
            f"t: expected a floating-point torch.Tensor, got "
            f"{getattr(t, 'dtype', type(t).__name__)}"
        )
    t = t.detach()
    scaled = t.to(torch.float64) * 2.0**frac_bits  # exact: scaling by a power of two
    if scaled.numel() and not bool((scaled.abs() < _VALUE_BOUND).all()):  # also False for nan
        raise FixedPointOverflow(
            f"{name}: values leave the fixed-point range |x| < {max_abs_value(frac_bits):g} "
            f"or are not finite, got max |x| = {float(t.abs().max()):g}"
        )
    return torch.round(scaled).to(torch.int64)


def to_float(
    q: torch.Tensor, frac_bits: int = FRAC_BITS, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """The float value ``q * 2**-frac_bits`` (exact in float64 while ``|q| < 2**53``)."""
    check_frac_bits(frac_bits)
    _check_int_tensor(q, "q")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype, got {dtype!r}")
    return (q.to(torch.float64) * 2.0**-frac_bits).to(dtype)


def is_on_grid(t: torch.Tensor, frac_bits: int = FRAC_BITS) -> bool:
    """Whether ``t`` converts to fixed point and back without any change."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        raise TypeError(
            f"t: expected a floating-point torch.Tensor, got "
            f"{getattr(t, 'dtype', type(t).__name__)}"
        )
    q = to_fixed(t, frac_bits)
    return bool(torch.equal(to_float(q, frac_bits, t.dtype), t.detach()))


def floor_divmod(a: torch.Tensor, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a // d, a % d)`` for integer tensors, with floor division: ``0 <= a % d < d`` for
    ``d > 0``."""
    _check_int_tensor(a, "a")
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d: expected a positive int, got {d!r}")
    q = torch.div(a, d, rounding_mode="floor")
    return q, a - q * d


def check_no_overflow(q: torch.Tensor, name: str) -> torch.Tensor:
    """Raise ``OverflowError`` if a fixed-point integer tensor left the safe range."""
    _check_int_tensor(q, "q")
    if q.numel() and int(q.abs().max()) >= _VALUE_BOUND:
        raise FixedPointOverflow(f"{name}: fixed-point value overflow, got |q| >= 2**62")
    return q


def rational(gamma: float, max_denominator: int = MAX_DENOMINATOR) -> Fraction:
    """The fraction n/d (d <= ``max_denominator``) closest to ``gamma`` that the exact mode
    multiplies by."""
    if (
        isinstance(gamma, bool)
        or not isinstance(gamma, (int, float, Fraction))
        or not 0 <= gamma <= 1
    ):
        raise ValueError(f"gamma: expected a real number in [0, 1], got {gamma!r}")
    if (
        isinstance(max_denominator, bool)
        or not isinstance(max_denominator, int)
        or max_denominator < 1
    ):
        raise ValueError(f"max_denominator: expected a positive int, got {max_denominator!r}")
    return Fraction(gamma).limit_denominator(max_denominator)


class InformationBuffer:
    """Per-element integer buffer that makes repeated multiplication by ``ratio = n/d`` reversible.

    ``multiply(c)`` returns ``c * n / d`` (to less than ``n`` units) and pushes the lost digits onto
    the buffer (Algorithm 1, Appendix C); ``divide(c)`` undoes the last ``multiply`` bit for bit.
    The buffer is a stack of int64 *limbs*; a fresh limb is opened (for all elements, and the step
    recorded) whenever the top limb could overflow at the next step, so the buffer grows as needed
    and never wraps. ``ratio == 0`` (gamma = 0) loses everything: the values are then stored
    outright.

    Parameters
    ----------
    shape, device
        Shape and device of the values being multiplied.
    ratio
        The multiplier n/d in [0, 1].
    """

    def __init__(self, shape: torch.Size, ratio: Fraction, device: torch.device | str = "cpu"):
        if not isinstance(shape, (tuple, list, torch.Size)) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
        ):
            raise ValueError(f"shape: expected a tuple of integers >= 0, got {shape!r}")
        if isinstance(ratio, bool) or not isinstance(ratio, (Fraction, int)):
            raise TypeError(
                f"ratio: expected a Fraction n/d (see rational()), got "
                f"{type(ratio).__name__} {ratio!r}"
            )
        if not 0 <= ratio <= 1:
            raise ValueError(f"ratio: expected a fraction in [0, 1], got {ratio}")
        ratio = Fraction(ratio)
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(
                f"device: expected a torch device such as 'cpu' or 'cuda:0', got {device!r}"
            ) from err
        self.shape, self.device = torch.Size(shape), device
        self.n, self.d = ratio.numerator, ratio.denominator
        self.limbs: list[torch.Tensor] = []
        self.opened_at: list[int] = []  # step index at which each limb was opened
        self.stash: list[torch.Tensor] = []  # gamma = 0: the values themselves
        self.steps = 0
        self._limit = (_INT64_MAX - (self.d - 1)) // self.d  # top limb <= limit: top * d + r fits

    # -- the two operations -------------------------------------------------------------------
    def multiply(self, c: torch.Tensor) -> torch.Tensor:
        """Exactly reversible ``c -> c * n / d`` (Algorithm 1 of Appendix C), off by less than ``n``
        units.

        The result is ``(c // d) * n + (i mod n)``: the low digits come from the buffer, which is
        what makes the map a bijection; hence the rounding error ``|result - c n / d| < n``.
        """
        self._check(c)
        self.steps += 1
        if self.n == 0:
            self.stash.append(c.clone())
            return torch.zeros_like(c)
        if self.n == self.d:
            return c.clone()
        if not self.limbs or int(self.limbs[-1].max()) > self._limit:
            self.limbs.append(torch.zeros(self.shape, dtype=torch.int64, device=self.device))
            self.opened_at.append(self.steps)
        c, buf = _transfer(c, self.limbs[-1], self.d, self.n)
        self.limbs[-1] = buf
        return c

    def divide(self, c: torch.Tensor) -> torch.Tensor:
        """Undo the last :meth:`multiply`: returns ``c * d / n`` with the digits taken back from
        the buffer."""
        self._check(c)
        if self.steps == 0:
            raise RuntimeError(
                "InformationBuffer.divide: the buffer is empty (more divisions than "
                "multiplications)"
            )
        self.steps -= 1
        if self.n == 0:
            return self.stash.pop()
        if self.n == self.d:
            return c.clone()
        top = self.limbs[-1]
        if int(top.max()) > (_INT64_MAX - (self.n - 1)) // self.n:
            raise OverflowError(
                "InformationBuffer.divide: buffer overflow; "
                "the value divided is not the one the last multiply produced"
            )
        if (
            c.numel() and int(c.abs().max()) // self.n >= _VALUE_BOUND // self.d
        ):  # |c d / n| < 2**62
            raise OverflowError(
                "InformationBuffer.divide: the result would leave the fixed-point range"
            )
        c, buf = _transfer(c, top, self.n, self.d)
        self.limbs[-1] = buf
        if self.opened_at and self.opened_at[-1] == self.steps + 1:
            if bool((buf != 0).any()):
                raise RuntimeError(
                    "InformationBuffer.divide: a limb did not return to zero; "
                    "the sequence of divisions does not mirror the multiplications"
                )
            self.limbs.pop()
            self.opened_at.pop()
        return c

    def copy(self) -> "InformationBuffer":
        """An independent buffer in the same state (the limbs are never modified in place)."""
        other = InformationBuffer(self.shape, Fraction(self.n, self.d), self.device)
        other.limbs, other.opened_at, other.stash = (
            list(self.limbs),
            list(self.opened_at),
            list(self.stash),
        )
        other.steps = self.steps
        return other

    # -- size -----------------------------------------------------------------------------------
    def information_bits(self) -> float:
        """Mean number of bits held per element: ``sum_limbs log2(1 + limb)``.

        For a buffer whose content is uniform on ``[0, 2**B)`` this is about ``B - log2(e)`` (the
        mean of log2 of a uniform integer), i.e. ~1.44 bits below the information stored.

        For ``gamma = 0`` the stored values count 64 bits each.
        """
        if self.n == 0:
            return 64.0 * len(self.stash)
        total = sum(torch.log2(1.0 + limb.to(torch.float64)) for limb in self.limbs)
        return float(total.mean()) if self.limbs else 0.0

    def allocated_bits(self) -> int:
        """Bits allocated per element (64 per limb, or per stored value when ``gamma = 0``)."""
        return 64 * (len(self.stash) if self.n == 0 else len(self.limbs))

    def nbytes(self) -> int:
        """Total bytes held by the buffer."""
        return sum(t.numel() * t.element_size() for t in self.limbs + self.stash)

    def expected_bits(self) -> float:
        """``steps * log2(d / n)``: the information Sect. 3.2 says must be kept per element."""
        if self.n == 0:
            return math.inf if self.steps else 0.0
        return self.steps * math.log2(self.d / self.n)

    def _check(self, c: torch.Tensor) -> None:
        if c.dtype != torch.int64 or c.shape != self.shape:
            raise ValueError(
                f"c: expected an int64 tensor of shape {tuple(self.shape)}, "
                f"got {c.dtype} of shape {tuple(c.shape)}"
            )


def _transfer(
    c: torch.Tensor, buf: torch.Tensor, into: int, out: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multiply ``c`` by ``out/into``: move ``c mod into`` into the buffer, ``buf mod out`` back
    into ``c``.

    With ``(into, out) = (d, n)`` this is Algorithm 1 of Appendix C; swapping them inverts it.
    """
    q, r = floor_divmod(c, into)
    buf = buf * into + r
    q_buf, r_buf = floor_divmod(buf, out)
    return q * out + r_buf, q_buf
