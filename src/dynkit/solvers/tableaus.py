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
.. [T] Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the first column simplifying
   assumption", Comput. Math. Appl. 62 (2011) 770-775.
.. [SO] C.-W. Shu, S. Osher, "Efficient implementation of essentially non-oscillatory
   shock-capturing schemes", J. Comput. Phys. 77 (1988) (the 3-stage order-3 method SSPRK3).
"""  # noqa: E501

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction as Fr

import numpy as np

__all__ = [
    "RungeKuttaTableau",
    "EULER",
    "MIDPOINT",
    "HEUN",
    "RK4",
    "SSPRK3",
    "BOSH3",
    "RKF45",
    "DOPRI5",
    "TSIT5",
    "DOP853",
    "TABLEAUS",
]


def _check_real_rows(name: str, label: str, rows) -> None:
    """Every coefficient a finite real number (int, Fraction, float; not a str, bool or complex)."""
    try:
        values = [x for row in rows for x in row]
    except TypeError:
        raise TypeError(
            f"tableau {name!r}: {label} must be a sequence of rows of numbers, got {rows!r:.80}"
        ) from None
    for x in values:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(
                f"tableau {name!r}: {label} must hold real numbers, got {type(x).__name__} "
                f"{x!r:.40}"
            )
        if not math.isfinite(float(x)):
            raise ValueError(f"tableau {name!r}: {label} must hold finite numbers, got {x!r}")


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
        row ``i`` of ``A_dense`` weighs every stage before it (the step's stages,
        ``f(t + h, y_new)`` when the method is not FSAL and ``P`` uses it, then the earlier extra
        stages).
    safety, pi_beta : float or None
        The step-size controller's safety factor and PI coefficient β for this method (None: the
        engine's defaults, 0.9 and 0.2 / k).
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
    safety: float | None = None
    pi_beta: float | None = None
    a: np.ndarray = field(init=False, repr=False, compare=False)
    b: np.ndarray = field(init=False, repr=False, compare=False)
    c: np.ndarray = field(init=False, repr=False, compare=False)
    e: np.ndarray | None = field(init=False, repr=False, compare=False)
    p: np.ndarray | None = field(init=False, repr=False, compare=False)
    e2: np.ndarray | None = field(init=False, repr=False, compare=False)
    a_dense: tuple = field(init=False, repr=False, compare=False)
    c_dense: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"RungeKuttaTableau: name must be a non-empty str, got {self.name!r}")
        for label, value in (("order", self.order), ("error_order", self.error_order)):
            if value is None and label == "error_order":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(
                    f"tableau {self.name!r}: {label} must be a positive int, got {value!r}"
                )
        if (self.E is None) != (self.error_order is None):
            raise ValueError(
                f"tableau {self.name!r}: E and error_order go together (an embedded pair has "
                f"both), "
                f"got E={'None' if self.E is None else 'given'} and "
                f"error_order={self.error_order!r}"
            )
        for label, rows in (
            ("A", self.A),
            ("B", [self.B]),
            ("C", [self.C]),
            ("E", [self.E] if self.E else []),
            ("E2", [self.E2] if self.E2 else []),
            ("P", self.P or []),
            ("A_dense", self.A_dense),
            ("C_dense", [self.C_dense]),
        ):
            _check_real_rows(self.name, label, rows)
        s = len(self.B)
        if s == 0:
            raise ValueError(f"tableau {self.name!r}: B must have at least one stage")
        if self.E is not None and len(self.E) != s:
            raise ValueError(
                f"tableau {self.name!r}: E needs {s} entries (one per stage), got {len(self.E)}"
            )
        if len(self.A) != s or len(self.C) != s or any(len(row) != s for row in self.A):
            raise ValueError(f"tableau {self.name!r}: A must be {s}x{s} and C of length {s}")
        for i, row in enumerate(self.A):
            if any(row[j] != 0 for j in range(i, s)):
                raise ValueError(
                    f"tableau {self.name!r}: A must be strictly lower triangular (explicit)"
                )
        if self.fsal and (
            tuple(self.A[-1][:-1]) != tuple(self.B[:-1]) or self.B[-1] != 0 or self.C[-1] != 1
        ):
            raise ValueError(
                f"tableau {self.name!r}: FSAL needs the last row of A equal to B, B[-1] = 0, "
                f"C[-1] = 1"
            )
        n_dense = len(self.A_dense)
        if len(self.C_dense) != n_dense:
            raise ValueError(
                f"tableau {self.name!r}: C_dense needs {n_dense} entries, got {len(self.C_dense)}"
            )
        if self.P is not None and len(self.P) not in (s + n_dense, s + 1 + n_dense):
            raise ValueError(
                f"tableau {self.name!r}: P needs {s + n_dense} or {s + 1 + n_dense} rows, "
                f"got {len(self.P)}"
            )
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

EULER = RungeKuttaTableau("euler", order=1, A=((_0,),), B=(Fr(1),), C=(_0,), reference="[HNW] II.1")

MIDPOINT = RungeKuttaTableau(
    "midpoint",
    order=2,
    A=((_0, _0), (Fr(1, 2), _0)),
    B=(_0, Fr(1)),
    C=(_0, Fr(1, 2)),
    reference="[HNW] II.1",
)

HEUN = RungeKuttaTableau(
    "heun",
    order=2,
    A=((_0, _0), (Fr(1), _0)),
    B=(Fr(1, 2), Fr(1, 2)),
    C=(_0, Fr(1)),
    reference="[HNW] II.1",
)

RK4 = RungeKuttaTableau(
    "rk4",
    order=4,
    A=((_0, _0, _0, _0), (Fr(1, 2), _0, _0, _0), (_0, Fr(1, 2), _0, _0), (_0, _0, Fr(1), _0)),
    B=(Fr(1, 6), Fr(1, 3), Fr(1, 3), Fr(1, 6)),
    C=(_0, Fr(1, 2), Fr(1, 2), Fr(1)),
    reference="[HNW] II.1, Table 1.2 (Kutta 1901)",
)

SSPRK3 = RungeKuttaTableau(
    "ssprk3",
    order=3,
    A=((_0, _0, _0), (Fr(1), _0, _0), (Fr(1, 4), Fr(1, 4), _0)),
    B=(Fr(1, 6), Fr(1, 6), Fr(2, 3)),
    C=(_0, Fr(1), Fr(1, 2)),
    reference="[SO]; used as the ARK3 starter because its second stage is ARK3's",
)

BOSH3 = RungeKuttaTableau(
    "bosh3",
    order=3,
    error_order=2,
    fsal=True,
    A=(
        (_0, _0, _0, _0),
        (Fr(1, 2), _0, _0, _0),
        (_0, Fr(3, 4), _0, _0),
        (Fr(2, 9), Fr(1, 3), Fr(4, 9), _0),
    ),
    B=(Fr(2, 9), Fr(1, 3), Fr(4, 9), _0),
    C=(_0, Fr(1, 2), Fr(3, 4), Fr(1)),
    # B - B_hat with B_hat = (7/24, 1/4, 1/3, 1/8)
    E=(Fr(2, 9) - Fr(7, 24), Fr(1, 3) - Fr(1, 4), Fr(4, 9) - Fr(1, 3), -Fr(1, 8)),
    reference="[BS]",
)

RKF45 = RungeKuttaTableau(
    "rkf45",
    order=4,
    error_order=5,
    A=(
        (_0,) * 6,
        (Fr(1, 4), _0, _0, _0, _0, _0),
        (Fr(3, 32), Fr(9, 32), _0, _0, _0, _0),
        (Fr(1932, 2197), Fr(-7200, 2197), Fr(7296, 2197), _0, _0, _0),
        (Fr(439, 216), Fr(-8), Fr(3680, 513), Fr(-845, 4104), _0, _0),
        (Fr(-8, 27), Fr(2), Fr(-3544, 2565), Fr(1859, 4104), Fr(-11, 40), _0),
    ),
    # Fehlberg propagates the 4th-order solution; the 5th-order one only estimates its error.
    B=(Fr(25, 216), _0, Fr(1408, 2565), Fr(2197, 4104), Fr(-1, 5), _0),
    C=(_0, Fr(1, 4), Fr(3, 8), Fr(12, 13), Fr(1), Fr(1, 2)),
    E=(
        Fr(25, 216) - Fr(16, 135),
        _0,
        Fr(1408, 2565) - Fr(6656, 12825),
        Fr(2197, 4104) - Fr(28561, 56430),
        Fr(-1, 5) + Fr(9, 50),
        Fr(-2, 55),
    ),
    # A 4th-order, C1 continuous extension from stages 1-5 and f(t + h, y_new): the solution of the
    # eight order-4 conditions in θ (a one-parameter family in the sixth stage's weight, set to 0 so
    # that θ = 1 gives B exactly). Derived by dynkit, not taken from the literature.
    P=(
        (Fr(1), Fr(-19, 8), Fr(239, 108), Fr(-13, 18)),
        (_0, _0, _0, _0),
        (_0, Fr(1024, 285), Fr(-2560, 513), Fr(1664, 855)),
        (_0, Fr(-2197, 456), Fr(24167, 2052), Fr(-2197, 342)),
        (_0, Fr(21, 10), Fr(-5), Fr(27, 10)),
        (_0, _0, _0, _0),
        (_0, Fr(3, 2), Fr(-4), Fr(5, 2)),
    ),
    reference="[F] Table III; dense output derived here",
)

_DP_B = (Fr(35, 384), _0, Fr(500, 1113), Fr(125, 192), Fr(-2187, 6784), Fr(11, 84), _0)
_DP_B_HAT = (
    Fr(5179, 57600),
    _0,
    Fr(7571, 16695),
    Fr(393, 640),
    Fr(-92097, 339200),
    Fr(187, 2100),
    Fr(1, 40),
)
DOPRI5 = RungeKuttaTableau(
    "dopri5",
    order=5,
    error_order=4,
    fsal=True,
    A=(
        (_0,) * 7,
        (Fr(1, 5), _0, _0, _0, _0, _0, _0),
        (Fr(3, 40), Fr(9, 40), _0, _0, _0, _0, _0),
        (Fr(44, 45), Fr(-56, 15), Fr(32, 9), _0, _0, _0, _0),
        (Fr(19372, 6561), Fr(-25360, 2187), Fr(64448, 6561), Fr(-212, 729), _0, _0, _0),
        (Fr(9017, 3168), Fr(-355, 33), Fr(46732, 5247), Fr(49, 176), Fr(-5103, 18656), _0, _0),
        _DP_B[:-1] + (_0,),
    ),
    B=_DP_B,
    C=(_0, Fr(1, 5), Fr(3, 10), Fr(4, 5), Fr(8, 9), Fr(1), Fr(1)),
    E=tuple(b - bh for b, bh in zip(_DP_B, _DP_B_HAT)),
    # Shampine's 4th-order continuous extension, coefficients of θ, θ², θ³, θ⁴ per stage.
    P=(
        (
            Fr(1),
            Fr(-8048581381, 2820520608),
            Fr(8663915743, 2820520608),
            Fr(-12715105075, 11282082432),
        ),
        (_0, _0, _0, _0),
        (
            _0,
            Fr(131558114200, 32700410799),
            Fr(-68118460800, 10900136933),
            Fr(87487479700, 32700410799),
        ),
        (_0, Fr(-1754552775, 470086768), Fr(14199869525, 1410260304), Fr(-10690763975, 1880347072)),
        (
            _0,
            Fr(127303824393, 49829197408),
            Fr(-318862633887, 49829197408),
            Fr(701980252875, 199316789632),
        ),
        (_0, Fr(-282668133, 205662961), Fr(2019193451, 616988883), Fr(-1453857185, 822651844)),
        (_0, Fr(40617522, 29380423), Fr(-110615467, 29380423), Fr(69997945, 29380423)),
    ),
    reference="[DP], dense output [HNW] II.6",
)


def _dec(text: str) -> Fr:
    """A published decimal coefficient, kept exactly as printed (no binary rounding)."""
    return Fr(text)


def _row(n: int, entries: dict) -> tuple:
    """A row of length ``n`` from ``{index (1-based): value}``, zeros elsewhere."""
    return tuple(entries.get(j + 1, _0) for j in range(n))


# ---------------------------------------------------------------------------------------------
# Tsitouras 5(4): Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the first column
# simplifying assumption", Comput. Math. Appl. 62 (2011) 770-775, Table 1 (the coefficients, given
# there as 16-digit decimals) and its 4th-order continuous extension (the b_i(θ) of Sect. 3).
_T5_C = (_0, _dec("0.161"), _dec("0.327"), _dec("0.9"), _dec("0.9800255409045097"), Fr(1), Fr(1))
_T5_B = (
    _dec("0.09646076681806523"),
    _dec("0.01"),
    _dec("0.4798896504144996"),
    _dec("1.379008574103742"),
    _dec("-3.290069515436081"),
    _dec("2.324710524099774"),
    _0,
)
# E = B - B_hat, as printed (B_hat is the embedded 4th-order formula; the last entry is -1/66)
_T5_E = (
    _dec("0.00178001105222577714"),
    _dec("0.0008164344596567469"),
    _dec("-0.007880878010261995"),
    _dec("0.1447110071732629"),
    _dec("-0.5823571654525552"),
    _dec("0.45808210592918697"),
    Fr(-1, 66),
)
TSIT5 = RungeKuttaTableau(
    "tsit5",
    order=5,
    error_order=4,
    fsal=True,
    A=(
        (_0,) * 7,
        (_dec("0.161"), _0, _0, _0, _0, _0, _0),
        (_dec("-0.008480655492356989"), _dec("0.335480655492357"), _0, _0, _0, _0, _0),
        (
            _dec("2.8971530571054935"),
            _dec("-6.359448489975075"),
            _dec("4.3622954328695815"),
            _0,
            _0,
            _0,
            _0,
        ),
        (
            _dec("5.325864828439257"),
            _dec("-11.748883564062828"),
            _dec("7.4955393428898365"),
            _dec("-0.09249506636175525"),
            _0,
            _0,
            _0,
        ),
        (
            _dec("5.86145544294642"),
            _dec("-12.92096931784711"),
            _dec("8.159367898576159"),
            _dec("-0.071584973281401"),
            _dec("-0.028269050394068383"),
            _0,
            _0,
        ),
        _T5_B[:-1] + (_0,),
    ),
    B=_T5_B,
    C=_T5_C,
    E=_T5_E,
    # b_i(θ) = θ (r_i1 + r_i2 θ + r_i3 θ² + r_i4 θ³): coefficients of θ, θ², θ³, θ⁴ per stage
    P=(
        (
            Fr(1),
            _dec("-2.763706197274826"),
            _dec("2.9132554618219126"),
            _dec("-1.0530884977290216"),
        ),
        (_0, _dec("0.1317"), _dec("-0.2234"), _dec("0.1017")),
        (_0, _dec("3.9302962368947516"), _dec("-5.941033872131505"), _dec("2.490627285651253")),
        (_0, _dec("-12.411077166933676"), _dec("30.33818863028232"), _dec("-16.548102889244902")),
        (_0, _dec("37.50931341651104"), _dec("-88.1789048947664"), _dec("47.37952196281928")),
        (_0, _dec("-27.896526289197286"), _dec("65.09189467479366"), _dec("-34.87065786149661")),
        (_0, Fr(3, 2), Fr(-4), Fr(5, 2)),
    ),
    reference="[T] Table 1, continuous extension of Sect. 3",
)


# ---------------------------------------------------------------------------------------------
# DOP853: E. Hairer, S. P. Nørsett, G. Wanner, [HNW] II.10 and Hairer's code DOP853 (1989-2004):
# Dormand–Prince 8(5,3) with 12 stages (the 13th, f(t + h, y_new), is the next step's first), a
# 5th-order error estimator combined with a 3rd-order one, and a 7th-order continuous extension from
# three more stages. Coefficients as printed there (30 digits; several are irrational, with √6).
_D = _dec
_DOP_C = (
    _0,
    _D("0.526001519587677318785587544488e-01"),
    _D("0.789002279381515978178381316732e-01"),
    _D("0.118350341907227396726757197510e+00"),
    _D("0.281649658092772603273242802490e+00"),
    _D("0.333333333333333333333333333333e+00"),
    _D("0.25"),
    _D("0.307692307692307692307692307692e+00"),
    _D("0.651282051282051282051282051282e+00"),
    _D("0.6"),
    _D("0.857142857142857142857142857142e+00"),
    Fr(1),
    Fr(1),
)
_DOP_A_ROWS = {  # row i (1-based): {column j: a_ij}
    2: {1: _D("5.26001519587677318785587544488e-2")},
    3: {1: _D("1.97250569845378994544595329183e-2"), 2: _D("5.91751709536136983633785987549e-2")},
    4: {1: _D("2.95875854768068491816892993775e-2"), 3: _D("8.87627564304205475450678981324e-2")},
    5: {
        1: _D("2.41365134159266685502369798665e-1"),
        3: _D("-8.84549479328286085344864962717e-1"),
        4: _D("9.24834003261792003115737966543e-1"),
    },
    6: {
        1: _D("3.7037037037037037037037037037e-2"),
        4: _D("1.70828608729473871279604482173e-1"),
        5: _D("1.25467687566822425016691814123e-1"),
    },
    7: {
        1: _D("3.7109375e-2"),
        4: _D("1.70252211019544039314978060272e-1"),
        5: _D("6.02165389804559606850219397283e-2"),
        6: _D("-1.7578125e-2"),
    },
    8: {
        1: _D("3.70920001185047927108779319836e-2"),
        4: _D("1.70383925712239993810214054705e-1"),
        5: _D("1.07262030446373284651809199168e-1"),
        6: _D("-1.53194377486244017527936158236e-2"),
        7: _D("8.27378916381402288758473766002e-3"),
    },
    9: {
        1: _D("6.24110958716075717114429577812e-1"),
        4: _D("-3.36089262944694129406857109825e0"),
        5: _D("-8.68219346841726006818189891453e-1"),
        6: _D("2.75920996994467083049415600797e1"),
        7: _D("2.01540675504778934086186788979e1"),
        8: _D("-4.34898841810699588477366255144e1"),
    },
    10: {
        1: _D("4.77662536438264365890433908527e-1"),
        4: _D("-2.48811461997166764192642586468e0"),
        5: _D("-5.90290826836842996371446475743e-1"),
        6: _D("2.12300514481811942347288949897e1"),
        7: _D("1.52792336328824235832596922938e1"),
        8: _D("-3.32882109689848629194453265587e1"),
        9: _D("-2.03312017085086261358222928593e-2"),
    },
    11: {
        1: _D("-9.3714243008598732571704021658e-1"),
        4: _D("5.18637242884406370830023853209e0"),
        5: _D("1.09143734899672957818500254654e0"),
        6: _D("-8.14978701074692612513997267357e0"),
        7: _D("-1.85200656599969598641566180701e1"),
        8: _D("2.27394870993505042818970056734e1"),
        9: _D("2.49360555267965238987089396762e0"),
        10: _D("-3.0467644718982195003823669022e0"),
    },
    12: {
        1: _D("2.27331014751653820792359768449e0"),
        4: _D("-1.05344954667372501984066689879e1"),
        5: _D("-2.00087205822486249909675718444e0"),
        6: _D("-1.79589318631187989172765950534e1"),
        7: _D("2.79488845294199600508499808837e1"),
        8: _D("-2.85899827713502369474065508674e0"),
        9: _D("-8.87285693353062954433549289258e0"),
        10: _D("1.23605671757943030647266201528e1"),
        11: _D("6.43392746015763530355970484046e-1"),
    },
}
_DOP_B = _row(
    13,
    {
        1: _D("5.42937341165687622380535766363e-2"),
        6: _D("4.45031289275240888144113950566e0"),
        7: _D("1.89151789931450038304281599044e0"),
        8: _D("-5.8012039600105847814672114227e0"),
        9: _D("3.1116436695781989440891606237e-1"),
        10: _D("-1.52160949662516078556178806805e-1"),
        11: _D("2.01365400804030348374776537501e-1"),
        12: _D("4.47106157277725905176885569043e-2"),
    },
)
# the 5th-order error estimator (Hairer's ER) and the 3rd-order one, B minus (BHH1, BHH2, BHH3) on
# k1, k9, k12
_DOP_E5 = _row(
    13,
    {
        1: _D("0.1312004499419488073250102996e-01"),
        6: _D("-0.1225156446376204440720569753e+01"),
        7: _D("-0.4957589496572501915214079952e+00"),
        8: _D("0.1664377182454986536961530415e+01"),
        9: _D("-0.3503288487499736816886487290e+00"),
        10: _D("0.3341791187130174790297318841e+00"),
        11: _D("0.8192320648511571246570742613e-01"),
        12: _D("-0.2235530786388629525884427845e-01"),
    },
)
_DOP_BHH = _row(
    13,
    {
        1: _D("0.244094488188976377952755905512e+00"),
        9: _D("0.733846688281611857341361741547e+00"),
        12: _D("0.220588235294117647058823529412e-01"),
    },
)
# the three dense-output stages 14-16 (weights on stages 1..13 and the earlier extra ones)
_DOP_C_DENSE = (_D("0.1"), _D("0.2"), _D("0.777777777777777777777777777778e+00"))
_DOP_A_DENSE = (
    _row(
        13,
        {
            1: _D("5.61675022830479523392909219681e-2"),
            7: _D("2.53500210216624811088794765333e-1"),
            8: _D("-2.46239037470802489917441475441e-1"),
            9: _D("-1.24191423263816360469010140626e-1"),
            10: _D("1.5329179827876569731206322685e-1"),
            11: _D("8.20105229563468988491666602057e-3"),
            12: _D("7.56789766054569976138603589584e-3"),
            13: _D("-8.298e-3"),
        },
    ),
    _row(
        14,
        {
            1: _D("3.18346481635021405060768473261e-2"),
            6: _D("2.83009096723667755288322961402e-2"),
            7: _D("5.35419883074385676223797384372e-2"),
            8: _D("-5.49237485713909884646569340306e-2"),
            11: _D("-1.08347328697249322858509316994e-4"),
            12: _D("3.82571090835658412954920192323e-4"),
            13: _D("-3.40465008687404560802977114492e-4"),
            14: _D("1.41312443674632500278074618366e-1"),
        },
    ),
    _row(
        15,
        {
            1: _D("-4.28896301583791923408573538692e-1"),
            6: _D("-4.69762141536116384314449447206e0"),
            7: _D("7.68342119606259904184240953878e0"),
            8: _D("4.06898981839711007970213554331e0"),
            9: _D("3.56727187455281109270669543021e-1"),
            13: _D("-1.39902416515901462129418009734e-3"),
            14: _D("2.9475147891527723389556272149e0"),
            15: _D("-9.15095847217987001081870187138e0"),
        },
    ),
)
# Hairer's D (rows d4j..d7j) of the continuous extension, weights on stages 1..16
_DOP_D = (
    _row(
        16,
        {
            1: _D("-0.84289382761090128651353491142e+01"),
            6: _D("0.56671495351937776962531783590e+00"),
            7: _D("-0.30689499459498916912797304727e+01"),
            8: _D("0.23846676565120698287728149680e+01"),
            9: _D("0.21170345824450282767155149946e+01"),
            10: _D("-0.87139158377797299206789907490e+00"),
            11: _D("0.22404374302607882758541771650e+01"),
            12: _D("0.63157877876946881815570249290e+00"),
            13: _D("-0.88990336451333310820698117400e-01"),
            14: _D("0.18148505520854727256656404962e+02"),
            15: _D("-0.91946323924783554000451984436e+01"),
            16: _D("-0.44360363875948939664310572000e+01"),
        },
    ),
    _row(
        16,
        {
            1: _D("0.10427508642579134603413151009e+02"),
            6: _D("0.24228349177525818288430175319e+03"),
            7: _D("0.16520045171727028198505394887e+03"),
            8: _D("-0.37454675472269020279518312152e+03"),
            9: _D("-0.22113666853125306036270938578e+02"),
            10: _D("0.77334326684722638389603898808e+01"),
            11: _D("-0.30674084731089398182061213626e+02"),
            12: _D("-0.93321305264302278729567221706e+01"),
            13: _D("0.15697238121770843886131091075e+02"),
            14: _D("-0.31139403219565177677282850411e+02"),
            15: _D("-0.93529243588444783865713862664e+01"),
            16: _D("0.35816841486394083752465898540e+02"),
        },
    ),
    _row(
        16,
        {
            1: _D("0.19985053242002433820987653617e+02"),
            6: _D("-0.38703730874935176555105901742e+03"),
            7: _D("-0.18917813819516756882830838328e+03"),
            8: _D("0.52780815920542364900561016686e+03"),
            9: _D("-0.11573902539959630126141871134e+02"),
            10: _D("0.68812326946963000169666922661e+01"),
            11: _D("-0.10006050966910838403183860980e+01"),
            12: _D("0.77771377980534432092869265740e+00"),
            13: _D("-0.27782057523535084065932004339e+01"),
            14: _D("-0.60196695231264120758267380846e+02"),
            15: _D("0.84320405506677161018159903784e+02"),
            16: _D("0.11992291136182789328035130030e+02"),
        },
    ),
    _row(
        16,
        {
            1: _D("-0.25693933462703749003312586129e+02"),
            6: _D("-0.15418974869023643374053993627e+03"),
            7: _D("-0.23152937917604549567536039109e+03"),
            8: _D("0.35763911791061412378285349910e+03"),
            9: _D("0.93405324183624310003907691704e+02"),
            10: _D("-0.37458323136451633156875139351e+02"),
            11: _D("0.10409964950896230045147246184e+03"),
            12: _D("0.29840293426660503123344363579e+02"),
            13: _D("-0.43533456590011143754432175058e+02"),
            14: _D("0.96324553959188282948394950600e+02"),
            15: _D("-0.39177261675615439165231486172e+02"),
            16: _D("-0.14972683625798562581422125276e+03"),
        },
    ),
)


def _poly_mul(p: list, q: list) -> list:
    out = [_0] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


def _dop853_dense_matrix() -> tuple:
    """P of ``y(t + θh) = y + h Σ_j k_j Σ_m P[j][m] θ^(m+1)`` from Hairer's nested form (CONTD8):

    ``y + θ(r1 + (1-θ)(r2 + θ(r3 + (1-θ)(r4 + θ(r5 + (1-θ)(r6 + θ r7))))))`` with
    ``r1 = Δy = h Σ b_j k_j``, ``r2 = h k_1 - Δy``, ``r3 = Δy - h k_13 - r2`` and ``r4..r7 = h D k``
    (all linear in the stages; expanded here exactly, in rationals).
    """
    n = 16
    unit = [[Fr(int(i == j)) for j in range(n)] for i in range(n)]
    b = list(_DOP_B) + [_0] * 3
    r1 = b
    r2 = [u - v for u, v in zip(unit[0], r1)]
    r3 = [u - v - w for u, v, w in zip(r1, unit[12], r2)]
    rs = [r1, r2, r3, *[list(d) for d in _DOP_D]]
    theta, one_minus_theta = [_0, Fr(1)], [Fr(1), Fr(-1)]
    rows = []
    for j in range(n):
        poly = [rs[6][j]]  # from the inside out: multiply by θ or (1-θ), then add the next r
        for level in range(5, -1, -1):
            poly = _poly_mul(theta if level % 2 else one_minus_theta, poly)
            poly[0] += rs[level][j]
        poly = _poly_mul(theta, poly)  # the outermost θ; poly[0] is 0
        rows.append(tuple(poly[1:]))
    return tuple(rows)


DOP853 = RungeKuttaTableau(
    "dop853",
    order=8,
    error_order=7,
    fsal=True,
    A=tuple(_row(13, _DOP_A_ROWS.get(i, {})) for i in range(1, 13)) + (_DOP_B,),
    B=_DOP_B,
    C=_DOP_C,
    E=_DOP_E5,
    E2=tuple(b - bh for b, bh in zip(_DOP_B, _DOP_BHH)),
    A_dense=_DOP_A_DENSE,
    C_dense=_DOP_C_DENSE,
    P=_dop853_dense_matrix(),
    # Hairer's DOP853 uses no PI term (β = 0). A safety factor of 0.8 rather than 0.9 rejects fewer
    # 12-evaluation steps: 10-15% fewer evaluations at matched error on Arenstorf, Pleiades and
    # Lotka–Volterra, the same on the rigid body (benchmarks/bench_high_order.py)
    safety=0.8,
    pi_beta=0.0,
    reference="[HNW] II.10 and the code DOP853 (coefficients, error estimators, dense output CONTD8)",  # noqa: E501
)


TABLEAUS = {t.name: t for t in (EULER, MIDPOINT, HEUN, RK4, BOSH3, RKF45, DOPRI5, TSIT5, DOP853)}
