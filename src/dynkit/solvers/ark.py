"""Accelerated Runge–Kutta (ARK) methods: explicit, constant-step, two-step.

The general form (Eq. (9)-(10) of the CSAODE paper, after Udwadia & Farahani [UF]) is

.. math::

    y_{n+1} = c_0 y_n - c_{-0} y_{n-1} + h\\Big[c_1 k_1 - c_{-1} k_{-1}
              + \\sum_{j=2}^{s} c_j (k_j - k_{-j})\\Big],

    k_1 = f(t_n, y_n),\\quad k_j = f(t_n + a_j h,\\ y_n + a_j h\\, k_{j-1}),

and ``k_{-j}`` the same chain at ``(t_{n-1}, y_{n-1})`` -- the previous step's stages, reused. A
step therefore costs ``s`` new evaluations of ``f``. The first step is taken by a one-step RK method
of the same order (the "starter"); where the starter's stages coincide with the ARK chain at ``t_0``
they are reused.

Where the coefficients come from
--------------------------------
They are not in our papers. Expanding the local error ``y(t+h) - y_{n+1}`` in powers of ``h`` for a
scalar autonomous ``y' = f(y)`` (exact past values ``y_n = y(t)``, ``y_{n-1} = y(t-h)``) and asking
each power's coefficient to vanish for every ``f`` gives, with ``c_0 = 1, c_{-0} = 0`` (as in [UF]):

* order 1: ``c_1 - c_{-1} = 1``
* order 2: ``c_{-1} + sum_j c_j = 1/2``
* order 3: ``sum_j a_j c_j = 5/12`` (the two elementary differentials f''f² and f'²f give the same
  condition; this is what lets two new evaluations reach order 3)
* order 4 (s = 3): ``a_2² c_2 + a_3² c_3 = 1/3`` and ``a_2 a_3 c_3 = 1/6`` (the third condition,
  on f''f'f², is then implied).

ARK3 (s = 2) is the one-parameter family ``c_1 = 1 + c_{-1}``, ``c_2 = 1/2 - c_{-1}``,
``a_2 = 5 / (6 (1 - 2 c_{-1}))``. We take ``c_{-1} = 1/12``: then ``a_2 = 1``, so the ARK chain at
``t_0`` equals the first two stages of SSPRK3, which starts the method at no extra cost:
``c_1 = 13/12, c_{-1} = 1/12, c_2 = 5/12, a_2 = 1``.

ARK4 (s = 3) is the one-parameter family in ``a_2 = α``: ``a_3 = 3α - 5α²/2``,
``c_3 = 1/(6 α a_3)``, ``c_2 = 5/(12α) - 1/(6α²)``, ``c_{-1} = 1/2 - c_2 - c_3``,
``c_1 = 1 + c_{-1}``. We take ``α = 1/2`` (so RK4's second stage is reused by the starter):
``a_2 = 1/2, a_3 = 7/8, c_2 = 1/6, c_3 = 8/21, c_{-1} = -1/21, c_1 = 20/21``.

:mod:`dynkit.symbolic` re-derives these conditions and families with sympy, and the tests check
that the constants here satisfy them exactly and fail the next order.

References
----------
.. [UF] F. E. Udwadia, A. Farahani, "Accelerated Runge-Kutta methods", Discrete Dynamics in
   Nature and Society 2008, 790619.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction as Fr
from typing import Sequence

import numpy as np

from .tableaus import RK4, SSPRK3, RungeKuttaTableau

__all__ = ["TwoStepRK", "ARK3", "ARK4"]


@dataclass(frozen=True)
class TwoStepRK:
    """A two-step accelerated RK method in the general form of CSAODE's Eq. (9).

    Parameters
    ----------
    name : str
    order : int
        The order claimed for it (used for documentation and the starter's order check only).
    c0, c_m0 : number
        Weights of ``y_n`` and ``y_{n-1}`` (``c_{-0}``).
    c1, c_m1 : number
        Weights of ``k_1`` and ``k_{-1}``.
    c : sequence
        ``(c_2, …, c_s)``, weights of ``k_j - k_{-j}``.
    a : sequence
        ``(a_2, …, a_s)``, the chain's nodes.
    starter : RungeKuttaTableau
        One-step method for the first step (of order ``order`` for the method to keep its order).

    Raises
    ------
    ValueError
        If the coefficients are inconsistent (the method would not converge to the ODE's solution)
        or not zero-stable (its characteristic polynomial ``ζ² - c_0 ζ + c_{-0}`` has a root
        outside the unit disc, or a repeated root on it).
    """

    name: str
    order: int
    c0: object
    c_m0: object
    c1: object
    c_m1: object
    c: Sequence
    a: Sequence
    starter: RungeKuttaTableau = RK4
    reference: str = ""
    a_float: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if len(self.c) != len(self.a):
            raise ValueError(
                f"TwoStepRK {self.name!r}: c = (c_2..c_s) and a = (a_2..a_s) must have the same "
                f"length, got {len(self.c)} and {len(self.a)}"
            )
        try:
            values = [float(x) for x in (self.c0, self.c_m0, self.c1, self.c_m1, *self.c, *self.a)]
        except (TypeError, ValueError):
            raise ValueError(
                f"TwoStepRK {self.name!r}: coefficients must be real numbers"
            ) from None
        if not np.isfinite(values).all():
            raise ValueError(f"TwoStepRK {self.name!r}: coefficients must be finite")
        c0, c_m0, c1, c_m1 = values[:4]
        # consistency: exact for y = 1 (c0 - c_m0 = 1) and for y = t (c_m0 + c1 - c_m1 = 1)
        if abs(c0 - c_m0 - 1) > 1e-12:
            raise ValueError(
                f"TwoStepRK {self.name!r} is inconsistent: need c0 - c_m0 = 1 (exact for constant "
                f"solutions), got c0 - c_m0 = {c0 - c_m0:g}"
            )
        if abs(c_m0 + c1 - c_m1 - 1) > 1e-12:
            raise ValueError(
                f"TwoStepRK {self.name!r} is inconsistent: need c_m0 + c1 - c_m1 = 1 (exact for "
                f"y = t), got {c_m0 + c1 - c_m1:g}"
            )
        # zero-stability: rho(z) = z^2 - c0 z + c_m0 = (z - 1)(z - c_m0) given consistency
        if not -1.0 <= c_m0 < 1.0:
            raise ValueError(
                f"TwoStepRK {self.name!r} is not zero-stable: the roots of z^2 - c0 z + c_m0 are 1 "
                f"and c_m0 = {c_m0:g}; need -1 <= c_m0 < 1"
            )
        object.__setattr__(self, "a_float", tuple(float(x) for x in self.a))

    @property
    def stages(self) -> int:
        """New evaluations of ``f`` per step (the chain length ``s``)."""
        return 1 + len(self.a)

    def update_coefficients(self, h: float) -> np.ndarray:
        """Weights of ``(y_n, y_{n-1}, k_1..k_s, k_{-1}..k_{-s})`` in ``y_{n+1}``."""
        c = [float(x) for x in self.c]
        return np.array(
            [
                float(self.c0),
                -float(self.c_m0),
                h * float(self.c1),
                *(h * x for x in c),
                -h * float(self.c_m1),
                *(-h * x for x in c),
            ]
        )

    def starter_reuse(self) -> int:
        """How many leading chain stages at ``t_0`` equal the starter's stages (1 at least: f(t0,
        y0))."""
        st, n = self.starter, 1
        for j, a_j in enumerate(self.a, start=1):
            if (
                j >= st.stages
                or st.C[j] != a_j
                or st.A[j][j - 1] != a_j
                or any(st.A[j][i] != 0 for i in range(j - 1))
            ):
                break
            n += 1
        return n


ARK3 = TwoStepRK(
    "ark3",
    order=3,
    c0=Fr(1),
    c_m0=Fr(0),
    c1=Fr(13, 12),
    c_m1=Fr(1, 12),
    c=(Fr(5, 12),),
    a=(Fr(1),),
    starter=SSPRK3,
    reference="[UF] form; coefficients derived in dynkit.solvers.ark",
)
ARK4 = TwoStepRK(
    "ark4",
    order=4,
    c0=Fr(1),
    c_m0=Fr(0),
    c1=Fr(20, 21),
    c_m1=Fr(-1, 21),
    c=(Fr(1, 6), Fr(8, 21)),
    a=(Fr(1, 2), Fr(7, 8)),
    starter=RK4,
    reference="[UF] form; coefficients derived in dynkit.solvers.ark",
)
