"""Claims in your own tests: assertions on :class:`dynkit.theory.CheckResult` and hypothesis
strategies.

:func:`assert_holds` and :func:`assert_violated` work like ``numpy.testing``'s assertions: nothing
happens when the result is what you assert, and an ``AssertionError`` otherwise, whose message gives
the claim, the part that failed, the worst residual against its tolerance, how many instances
failed, the worst instance and its two sides.

The strategies (they need ``hypothesis``, in the ``dev`` extra) draw the inputs the checks document
as their range: matrices with a given spectrum, symmetric positive definite matrices of bounded
condition number, invertible diagonalisable matrices, and log-uniform ranges such as Momentum
ResNets' ``eps``.

>>> import numpy as np, dynkit as dk
>>> from dynkit.testing import assert_holds
>>> assert_holds(dk.theory.check_f_eps_surjective(np.array([2.0 + 1j]), 1.0))
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .io import jsonable
from .theory._core import CheckResult

__all__ = [
    "assert_holds",
    "assert_violated",
    "describe_failure",
    "matrices_with_spectrum",
    "spd_matrices",
    "invertible_matrices",
    "log_uniform",
    "epsilons",
]

_WIDTH = (
    400  # characters of an instance or a side shown in a message (an n x n matrix stays readable)
)


def _check_result(result: Any, where: str) -> CheckResult:
    if not isinstance(result, CheckResult):
        raise TypeError(
            f"{where}: result must be a dynkit.theory.CheckResult (what a check_* function "
            f"returns); "
            f"got {type(result).__name__}"
        )
    return result


def _short(value: Any) -> str:
    text = json.dumps(jsonable(value), separators=(", ", ": "))
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."


def describe_failure(result: CheckResult) -> str:
    """The lines :func:`assert_holds` prints: claim, failing part, residual vs tolerance,
    instances, worst instance, sides, and the check's own one-line message."""
    result = _check_result(result, "describe_failure")
    part = result.details.get("worst_part", result.claim)
    parts = result.details.get("parts", {})
    worst = parts.get(part, result)
    n, held = result.n_instances, result.n_held
    state = "undecided" if result.is_undecided else ("holds" if result.holds else "VIOLATED")
    lines = [
        f"claim {result.claim!r}: {state}",
        f" part that failed: {part}" if part != result.claim else f" part: {part}",
        f" worst residual: {result.residual:.6g} {'<=' if result.holds else '>'} tolerance "
        f"{result.tolerance:.6g}",
        f" instances: {n - held} of {n} failed"
        + (f" ({int(result.undecided.sum())} undecided)" if result.undecided.any() else ""),
        f" worst instance: {_short(worst.instance)}",
    ]
    if worst.sides:
        lines.append(f" sides: {_short(worst.sides)}")
    lines.append(f" check: {result.message}")
    return "\n".join(lines)


def assert_holds(result: CheckResult, err_msg: str = "") -> None:
    """Raise ``AssertionError`` unless ``result.holds`` (every instance within tolerance).

    Parameters
    ----------
    result : CheckResult
        What a ``dk.theory.check_*`` function (or ``Claim.sample``) returned.
    err_msg : str
        Prepended to the failure message.

    Raises
    ------
    AssertionError
        With :func:`describe_failure`'s lines: the part that failed, the worst residual against its
        tolerance, the worst instance (to replay it) and its two sides.
    TypeError
        If ``result`` is not a CheckResult (a bare bool would hide what failed).
    """
    result = _check_result(result, "assert_holds")
    if not result.holds:
        raise AssertionError(
            (err_msg + "\n" if err_msg else "") + "Claim does not hold\n" + describe_failure(result)
        )


def assert_violated(result: CheckResult, err_msg: str = "") -> None:
    """Raise ``AssertionError`` unless ``result`` is a counterexample: some instance violated, not
    merely undecided (for a planted violation, or a statement you expect to be false).

    Raises
    ------
    AssertionError
        If the result holds (the message gives the residual, the tolerance and the instance that
        held) or is undecided (no instance violated: not a counterexample).
    TypeError
        If ``result`` is not a CheckResult.
    """
    result = _check_result(result, "assert_violated")
    if result.holds or result.is_undecided:
        why = "holds on every instance" if result.holds else "is undecided (no instance violated)"
        raise AssertionError(
            (err_msg + "\n" if err_msg else "")
            + f"Expected a violation, but the claim {why}\n"
            + describe_failure(result)
        )


# -------------------------------------------------------------------------------------------
# strategies


def _st():
    try:
        from hypothesis import strategies as st
    except ImportError:  # pragma: no cover - hypothesis is in the dev extra
        raise ImportError(
            "dynkit.testing's strategies need hypothesis (pip install 'dynkit[dev]' or hypothesis)"
        ) from None
    return st


def log_uniform(low: float, high: float):
    """Floats spread log-uniformly over ``[low, high]`` (0 < low < high): each decade as likely
    as the next."""
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low < high):
        raise ValueError(
            f"low and high must be finite with 0 < low < high; got low={low!r}, high={high!r}"
        )
    st = _st()
    lo, hi = np.log10(low), np.log10(high)
    return st.floats(lo, hi, allow_nan=False).map(lambda e: float(np.clip(10.0**e, low, high)))


def epsilons(low: float = 0.1, high: float = 100.0):
    """Momentum ResNets' ``eps`` (Prop. 4, Theorem 1, Lemmas 1-2: eps > 0), log-uniform over
    ``[low, high]``; the defaults are the range the registry's checks document."""
    return log_uniform(low, high)


def _basis(st, n: int, cond_max: float):
    """An invertible n x n basis with condition number at most ``cond_max``: Q1 diag(s) Q2, s in
    [1, cond_max]."""
    if not (np.isfinite(cond_max) and cond_max >= 1):
        raise ValueError(f"cond_max must be a finite number >= 1; got {cond_max!r}")

    def build(seed, spread):
        rng = np.random.default_rng(seed)
        q1 = np.linalg.qr(rng.standard_normal((n, n)))[0]
        q2 = np.linalg.qr(rng.standard_normal((n, n)))[0]
        s = cond_max ** (spread * rng.uniform(0, 1, n))
        s[0], s[-1] = 1.0, cond_max**spread
        return (q1 * s) @ q2

    return st.builds(build, st.integers(0, 2**32 - 1), st.floats(0, 1))


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    return int(n)


def matrices_with_spectrum(eigenvalues, *, cond_max: float = 10.0):
    """Real matrices ``V diag(eigenvalues) V^-1`` with ``cond(V) <= cond_max``.

    Parameters
    ----------
    eigenvalues : sequence of float, or a hypothesis strategy of such sequences
        The spectrum (real). A strategy (e.g. ``st.lists(st.floats(-3, -1), min_size=2,
        max_size=2)``) draws it.
    cond_max : float
        Largest condition number of the eigenvector basis (1: a symmetric matrix up to rotation).
    """
    st = _st()
    spectra = eigenvalues if hasattr(eigenvalues, "example") else st.just(list(eigenvalues))

    def with_basis(values):
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError(
                f"eigenvalues must be a non-empty sequence of finite reals; got {values!r}"
            )
        return _basis(st, values.size, cond_max).map(
            lambda V: V @ np.diag(values) @ np.linalg.inv(V)
        )

    return spectra.flatmap(with_basis)


def spd_matrices(n: int, *, cond_max: float = 1e3, scale=(1e-2, 1e2)):
    """Symmetric positive definite n x n matrices: eigenvalues spread over ``[1, cond_max]``
    times a log-uniform scale in ``scale`` (the heavy-ball checks' quadratics)."""
    n = _check_n(n)
    if not (np.isfinite(cond_max) and cond_max >= 1):
        raise ValueError(f"cond_max must be a finite number >= 1; got {cond_max!r}")
    st = _st()

    def build(seed, spread, size):
        rng = np.random.default_rng(seed)
        q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        ev = size * cond_max ** (spread * rng.uniform(0, 1, n))
        ev[0] = size
        A = (q * ev) @ q.T
        return (A + A.T) / 2

    return st.builds(build, st.integers(0, 2**32 - 1), st.floats(0, 1), log_uniform(*scale))


def invertible_matrices(n: int, *, cond_max: float = 1e2):
    """Invertible diagonalisable real n x n matrices with condition number at most ``cond_max``
    (singular values in ``[1, cond_max]`` up to a common scale): the range of
    ``check_first_order_range`` (cond <= 1e2)."""
    n = _check_n(n)
    return _basis(_st(), n, cond_max)
