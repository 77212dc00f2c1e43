"""Explicit Runge–Kutta methods as data.

Each method is a :class:`RungeKuttaTableau`: its Butcher coefficients ``A``, ``B``, ``C``, the error
weights ``E`` (``B - B_hat`` for embedded pairs) and, where it has one, a dense-output matrix ``P``.
The engine in :mod:`dynkit.solvers.engine` runs any of them; adding a method means adding a tableau.

References
----------
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I: Nonstiff
   Problems*, 2nd ed., Springer 1993 (Sect. II.1 for the classical methods, II.4 for step-size
   control and the initial-step algorithm, II.5 for Dormand–Prince and its dense output, II.6).
.. [BS] P. Bogacki, L. F. Shampine, "A 3(2) pair of Runge–Kutta formulas", Appl. Math. Lett. 2 (1989).
.. [F] E. Fehlberg, "Low-order classical Runge–Kutta formulas with stepsize control and their
   application to some heat transfer problems", NASA TR R-315 (1969), Table III (RKF4(5)).
.. [DP] J. R. Dormand, P. J. Prince, "A family of embedded Runge–Kutta formulae", J. Comput. Appl.
   Math. 6 (1980); dense output of L. F. Shampine, "Some practical Runge–Kutta formulas", Math.
   Comp. 46 (1986), as given in [HNW] II.6.
.. [SO] C.-W. Shu, S. Osher, "Efficient implementation of essentially non-oscillatory
   shock-capturing schemes", J. Comput. Phys. 77 (1988) (the 3-stage order-3 method SSPRK3).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction as Fr

import numpy as np


def _as_array(rows) -> np.ndarray:
    return np.array([[float(x) for x in row] for row in rows], dtype=np.float64)


@dataclass(frozen=True)
class RungeKuttaTableau:
    """Coefficients of an explicit Runge–Kutta method (optionally an embedded pair).

    Parameters
    ----------
    name : str
    order : int
        Order of the propagated solution (``B``).
    A, B, C : sequences of exact rationals
        Butcher coefficients: stage ``i`` is ``f(t + C[i] h, y + h sum_j A[i][j] k_j)``.
    E : sequence or None
        Error weights ``B - B_hat`` of the embedded formula; ``None`` for fixed-step methods.
    error_order : int or None
        Order of the embedded formula (the error estimate is O(h^(error_order + 1))).
    fsal : bool
        "First same as last": the last stage is ``f(t + h, y_new)`` and becomes the next step's
        first stage, so a step costs one evaluation less.
    P : sequence or None
        Dense-output matrix: ``y(t + θh) = y + h K^T P [θ, θ², …]``; ``None`` means cubic
        Hermite interpolation from the step's end values and slopes. ``P`` may have one row more
        than there are stages: that row multiplies ``f(t + h, y_new)``, the next step's first stage.
        Rows for the extra dense-output stages (``A_dense``) follow.
    E2 : sequence or None
        Weights of a second error estimator (DOP853's 3rd-order one), combined with ``E`` by the
        stepper's error norm.
    A_dense, C_dense : sequences
        Extra stages evaluated only when the continuous extension is used (DOP853's stages 14-16):
        row ``i`` of ``A_dense`` weighs every stage before it (the step's stages, ``f(t + h, y_new)``
        when the method is not FSAL and ``P`` uses it, then the earlier extra stages).
    """

    name: str
    order: int
    A: tuple
    B: tuple
    C: tuple
    E: tuple | None = None
    error_order: int | None = None
    fsal: bool = False
    P: tuple | None = None
    reference: str = ""
    E2: tuple | None = None
    A_dense: tuple = ()
    C_dense: tuple = ()
    a: np.ndarray = field(init=False, repr=False, compare=False)
    b: np.ndarray = field(init=False, repr=False, compare=False)
    c: np.ndarray = field(init=False, repr=False, compare=False)
    e: np.ndarray | None = field(init=False, repr=False, compare=False)
    p: np.ndarray | None = field(init=False, repr=False, compare=False)
    e2: np.ndarray | None = field(init=False, repr=False, compare=False)
    a_dense: tuple = field(init=False, repr=False, compare=False)
    c_dense: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        s = len(self.B)
        if len(self.A) != s or len(self.C) != s or any(len(row) != s for row in self.A):
            raise ValueError(f"tableau {self.name!r}: A must be {s}x{s} and C of length {s}")
        for i, row in enumerate(self.A):
            if any(row[j] != 0 for j in range(i, s)):
                raise ValueError(f"tableau {self.name!r}: A must be strictly lower triangular (explicit)")
        if self.fsal and (tuple(self.A[-1][:-1]) != tuple(self.B[:-1]) or self.B[-1] != 0 or self.C[-1] != 1):
            raise ValueError(f"tableau {self.name!r}: FSAL needs the last row of A equal to B, B[-1] = 0, C[-1] = 1")
        n_dense = len(self.A_dense)
        if len(self.C_dense) != n_dense:
            raise ValueError(f"tableau {self.name!r}: C_dense needs {n_dense} entries, got {len(self.C_dense)}")
        if self.P is not None and len(self.P) not in (s + n_dense, s + 1 + n_dense):
            raise ValueError(f"tableau {self.name!r}: P needs {s + n_dense} or {s + 1 + n_dense} rows, "
                             f"got {len(self.P)}")
        if self.E2 is not None and len(self.E2) != s:
            raise ValueError(f"tableau {self.name!r}: E2 needs {s} entries, got {len(self.E2)}")
        set_ = object.__setattr__
        set_(self, "a", _as_array(self.A))
        set_(self, "b", np.array([float(x) for x in self.B]))
        set_(self, "c", np.array([float(x) for x in self.C]))
        set_(self, "e", None if self.E is None else np.array([float(x) for x in self.E]))
        set_(self, "p", None if self.P is None else _as_array(self.P))
        set_(self, "e2", None if self.E2 is None else np.array([float(x) for x in self.E2]))
        set_(self, "a_dense", tuple(np.array([float(x) for x in row]) for row in self.A_dense))
        set_(self, "c_dense", np.array([float(x) for x in self.C_dense]))

    @property
    def stages(self) -> int:
        return len(self.B)

    @property
    def p_uses_slope(self) -> bool:
        """Whether ``P`` weighs ``f(t + h, y_new)`` as an extra row after the stages."""
        return self.P is not None and len(self.P) == self.stages + 1 + len(self.A_dense)

    @property
    def adaptive(self) -> bool:
        return self.E is not None

    @property
    def new_evaluations_per_step(self) -> int:
        return self.stages - 1 if self.fsal else self.stages


_0 = Fr(0)

EULER = RungeKuttaTableau(
    "euler", order=1, A=((_0,),), B=(Fr(1),), C=(_0,), reference="[HNW] II.1")

MIDPOINT = RungeKuttaTableau(
    "midpoint", order=2,
    A=((_0, _0), (Fr(1, 2), _0)), B=(_0, Fr(1)), C=(_0, Fr(1, 2)), reference="[HNW] II.1")

HEUN = RungeKuttaTableau(
    "heun", order=2,
    A=((_0, _0), (Fr(1), _0)), B=(Fr(1, 2), Fr(1, 2)), C=(_0, Fr(1)), reference="[HNW] II.1")

RK4 = RungeKuttaTableau(
    "rk4", order=4,
    A=((_0, _0, _0, _0), (Fr(1, 2), _0, _0, _0), (_0, Fr(1, 2), _0, _0), (_0, _0, Fr(1), _0)),
    B=(Fr(1, 6), Fr(1, 3), Fr(1, 3), Fr(1, 6)), C=(_0, Fr(1, 2), Fr(1, 2), Fr(1)),
    reference="[HNW] II.1, Table 1.2 (Kutta 1901)")

SSPRK3 = RungeKuttaTableau(
    "ssprk3", order=3,
    A=((_0, _0, _0), (Fr(1), _0, _0), (Fr(1, 4), Fr(1, 4), _0)),
    B=(Fr(1, 6), Fr(1, 6), Fr(2, 3)), C=(_0, Fr(1), Fr(1, 2)),
    reference="[SO]; used as the ARK3 starter because its second stage is ARK3's")

BOSH3 = RungeKuttaTableau(
    "bosh3", order=3, error_order=2, fsal=True,
    A=((_0, _0, _0, _0), (Fr(1, 2), _0, _0, _0), (_0, Fr(3, 4), _0, _0),
       (Fr(2, 9), Fr(1, 3), Fr(4, 9), _0)),
    B=(Fr(2, 9), Fr(1, 3), Fr(4, 9), _0),
    C=(_0, Fr(1, 2), Fr(3, 4), Fr(1)),
    # B - B_hat with B_hat = (7/24, 1/4, 1/3, 1/8)
    E=(Fr(2, 9) - Fr(7, 24), Fr(1, 3) - Fr(1, 4), Fr(4, 9) - Fr(1, 3), -Fr(1, 8)),
    reference="[BS]")

RKF45 = RungeKuttaTableau(
    "rkf45", order=4, error_order=5,
    A=((_0,) * 6,
       (Fr(1, 4), _0, _0, _0, _0, _0),
       (Fr(3, 32), Fr(9, 32), _0, _0, _0, _0),
       (Fr(1932, 2197), Fr(-7200, 2197), Fr(7296, 2197), _0, _0, _0),
       (Fr(439, 216), Fr(-8), Fr(3680, 513), Fr(-845, 4104), _0, _0),
       (Fr(-8, 27), Fr(2), Fr(-3544, 2565), Fr(1859, 4104), Fr(-11, 40), _0)),
    # Fehlberg propagates the 4th-order solution; the 5th-order one only estimates its error.
    B=(Fr(25, 216), _0, Fr(1408, 2565), Fr(2197, 4104), Fr(-1, 5), _0),
    C=(_0, Fr(1, 4), Fr(3, 8), Fr(12, 13), Fr(1), Fr(1, 2)),
    E=(Fr(25, 216) - Fr(16, 135), _0, Fr(1408, 2565) - Fr(6656, 12825),
       Fr(2197, 4104) - Fr(28561, 56430), Fr(-1, 5) + Fr(9, 50), Fr(-2, 55)),
    # A 4th-order, C1 continuous extension from stages 1-5 and f(t + h, y_new): the solution of the
    # eight order-4 conditions in θ (a one-parameter family in the sixth stage's weight, set to 0 so
    # that θ = 1 gives B exactly). Derived by dynkit, not taken from the literature.
    P=((Fr(1), Fr(-19, 8), Fr(239, 108), Fr(-13, 18)),
       (_0, _0, _0, _0),
       (_0, Fr(1024, 285), Fr(-2560, 513), Fr(1664, 855)),
       (_0, Fr(-2197, 456), Fr(24167, 2052), Fr(-2197, 342)),
       (_0, Fr(21, 10), Fr(-5), Fr(27, 10)),
       (_0, _0, _0, _0),
       (_0, Fr(3, 2), Fr(-4), Fr(5, 2))),
    reference="[F] Table III; dense output derived here")

_DP_B = (Fr(35, 384), _0, Fr(500, 1113), Fr(125, 192), Fr(-2187, 6784), Fr(11, 84), _0)
_DP_B_HAT = (Fr(5179, 57600), _0, Fr(7571, 16695), Fr(393, 640), Fr(-92097, 339200),
             Fr(187, 2100), Fr(1, 40))
DOPRI5 = RungeKuttaTableau(
    "dopri5", order=5, error_order=4, fsal=True,
    A=((_0,) * 7,
       (Fr(1, 5), _0, _0, _0, _0, _0, _0),
       (Fr(3, 40), Fr(9, 40), _0, _0, _0, _0, _0),
       (Fr(44, 45), Fr(-56, 15), Fr(32, 9), _0, _0, _0, _0),
       (Fr(19372, 6561), Fr(-25360, 2187), Fr(64448, 6561), Fr(-212, 729), _0, _0, _0),
       (Fr(9017, 3168), Fr(-355, 33), Fr(46732, 5247), Fr(49, 176), Fr(-5103, 18656), _0, _0),
       _DP_B[:-1] + (_0,)),
    B=_DP_B,
    C=(_0, Fr(1, 5), Fr(3, 10), Fr(4, 5), Fr(8, 9), Fr(1), Fr(1)),
    E=tuple(b - bh for b, bh in zip(_DP_B, _DP_B_HAT)),
    # Shampine's 4th-order continuous extension, coefficients of θ, θ², θ³, θ⁴ per stage.
    P=((Fr(1), Fr(-8048581381, 2820520608), Fr(8663915743, 2820520608),
        Fr(-12715105075, 11282082432)),
       (_0, _0, _0, _0),
       (_0, Fr(131558114200, 32700410799), Fr(-68118460800, 10900136933),
        Fr(87487479700, 32700410799)),
       (_0, Fr(-1754552775, 470086768), Fr(14199869525, 1410260304),
        Fr(-10690763975, 1880347072)),
       (_0, Fr(127303824393, 49829197408), Fr(-318862633887, 49829197408),
        Fr(701980252875, 199316789632)),
       (_0, Fr(-282668133, 205662961), Fr(2019193451, 616988883), Fr(-1453857185, 822651844)),
       (_0, Fr(40617522, 29380423), Fr(-110615467, 29380423), Fr(69997945, 29380423))),
    reference="[DP], dense output [HNW] II.6")

TABLEAUS = {t.name: t for t in (EULER, MIDPOINT, HEUN, RK4, BOSH3, RKF45, DOPRI5)}
