"""The statistics behind a ledger row: intervals, the sign test, the outcome rule (seven cases that
partition the line, :func:`decide`), Holm levels over a family and the alpha spent at each look of a
group-sequential plan.

Every interval comes from :mod:`scipy.stats` (Student t by :func:`scipy.stats.t.interval`, the BCa
bootstrap by :func:`scipy.stats.bootstrap`); which one a row uses is fixed by the experiment's plan
before the results (:mod:`dynkit.experiments.judging.plans`), never chosen from the data's skew.

References
----------
Lakens, D. (2017). Equivalence tests: a practical primer for t tests, correlations, and meta-analyses.
*Social Psychological and Personality Science* 8(4), 355-362 (equivalence and minimal-effect
tests, the basis of :func:`decide`'s cases).
Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scand. J. Statist.* 6, 65-70.
Lan, K. K. G. and DeMets, D. L. (1983). Discrete sequential boundaries for clinical trials. *Biometrika* 70,
659-663 (alpha-spending functions of the O'Brien-Fleming and Pocock type).
Efron, B. (1987). Better bootstrap confidence intervals. *JASA* 82, 171-185 (BCa).
"""  # noqa: E501

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "ALPHA",
    "POWER",
    "INTERVAL_METHODS",
    "SPENDING",
    "BOOTSTRAP_RESAMPLES",
    "DETERMINISTIC_RTOL",
    "Interval",
    "is_deterministic",
    "interval",
    "sign_test",
    "p_value",
    "SESOI_FRACTION",
    "RULE_FIXED",
    "REPLICATION_OUTCOMES",
    "decide",
    "holm_levels",
    "spending",
    "look_levels",
    "detectable",
    "seeds_needed",
    "DECISIONS",
    "sequential_outcome",
]

ALPHA = 0.05
"""The family-wise error rate of each family of rows (its primary row is judged at
``1 - ALPHA``)."""
POWER = 0.80
INTERVAL_METHODS = ("t", "bca")
"""The intervals a plan may fix: ``"t"`` (Student t of the mean) or ``"bca"`` (BCa bootstrap of
the mean)."""
SPENDING = ("obrien-fleming", "pocock")
BOOTSTRAP_RESAMPLES = 9999
DETERMINISTIC_RTOL = 1e-12
"""Per-seed effects whose range is at most this times max(1, |mean|) are one deterministic
measurement."""


@dataclass(frozen=True)
class Interval:
    """A ``level`` interval of the mean of per-seed effects, and how it was computed.

    ``method`` is ``"t"``, ``"bca"``, ``"deterministic"`` (zero spread: one measurement, low = high
    = its value) or ``"none"`` (one seed).
    """

    mean: float
    low: float
    high: float
    method: str
    level: float


def is_deterministic(xs: Sequence[float]) -> bool:
    """Whether the per-seed values have zero spread (a count fixed by a method's structure, say):
    then they are one measurement, not ``n`` replications."""
    x = np.asarray(xs, dtype=float)
    if len(x) < 2:
        return False
    return float(np.ptp(x)) <= DETERMINISTIC_RTOL * max(1.0, float(np.max(np.abs(x))))


def interval(
    xs: Sequence[float], level: float = 1 - ALPHA, method: str = "t", seed: int = 0
) -> Interval:
    """The ``level`` interval of the mean of ``xs`` by ``method`` (see :data:`INTERVAL_METHODS`).

    Zero spread gives a ``"deterministic"`` interval whatever ``method`` (there is nothing to
    resample and no standard error); one value gives ``"none"``. The bootstrap uses
    :data:`BOOTSTRAP_RESAMPLES` resamples from the fixed ``seed``, so a row renders the same every
    time.
    """
    from scipy import stats

    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {INTERVAL_METHODS}, got {method!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    x = np.asarray(xs, dtype=float)
    mean = float(np.mean(x)) if len(x) else math.nan
    if len(x) < 2:
        return Interval(mean, mean, mean, "none", level)
    if is_deterministic(x):
        return Interval(mean, mean, mean, "deterministic", level)
    if method == "t":
        lo, hi = stats.t.interval(level, len(x) - 1, loc=mean, scale=stats.sem(x))
    else:
        res = stats.bootstrap(
            (x,),
            np.mean,
            confidence_level=level,
            method="BCa",
            n_resamples=BOOTSTRAP_RESAMPLES,
            random_state=np.random.default_rng(seed),
        )
        lo, hi = res.confidence_interval.low, res.confidence_interval.high
        if not (
            math.isfinite(lo) and math.isfinite(hi)
        ):  # BCa degenerate (e.g. all resample means equal)
            lo, hi = float(np.min(x)), float(np.max(x))
    return Interval(mean, float(lo), float(hi), method, level)


def sign_test(xs: Sequence[float], null: float, sign: int) -> tuple[int, int, float]:
    """``(k, m, p)``: ``k`` of the ``m`` seeds whose effect differs from ``null`` lie on the
    paper's side (``sign``), and the two-sided exact binomial p-value
    (:func:`scipy.stats.binomtest`, p = 1/2)."""
    from scipy import stats

    d = [sign * (x - null) for x in xs]
    k, m = sum(v > 0 for v in d), sum(v != 0 for v in d)
    return k, m, (float(stats.binomtest(k, m, 0.5).pvalue) if m else 1.0)


def p_value(xs: Sequence[float], null: float) -> float:
    """Two-sided one-sample t-test p-value of ``mean(xs) == null`` (the order of Holm's steps); a
    deterministic measurement has p = 0 off ``null`` and 1 on it."""
    from scipy import stats

    x = np.asarray(xs, dtype=float)
    if len(x) < 2:
        return 1.0
    if is_deterministic(x):
        return (
            1.0
            if abs(float(np.mean(x)) - null) <= DETERMINISTIC_RTOL * max(1.0, abs(null))
            else 0.0
        )
    return float(stats.ttest_1samp(x, null).pvalue)


SESOI_FRACTION = 0.5
"""The smallest effect of interest where the paper states its effect ``d``: half of it (stated, as a
fraction of ``d``; the same for every row, fixed before these results were read under this rule)."""
RULE_FIXED = "2026-12-02"
"""When the outcome table of :func:`decide` and :data:`SESOI_FRACTION` were fixed: a plan written
before this date is retrospective for this rule (its results were seen before the rule was)."""
REPLICATION_OUTCOMES = (
    "reproduced",
    "smaller effect",
    "smaller effect (negligible)",
    "negligible",
    "opposite (negligible)",
    "opposite",
    "inconclusive",
)
"""The outcomes of :func:`decide`, in the order of its table (they partition the line)."""


def decide(low: float, high: float, null: float, target: float, sesoi: float, sign: int) -> str:
    """The outcome of an interval ``[low, high]`` on the row's scale.

    On ``x = sign * (effect - null)`` (positive on the paper's side), with the paper's effect ``d =
    sign * (target - null)`` and the smallest effect of interest ``s`` (``0 < s <= d``; ``s == d``
    only where the paper states a direction and no size), the CI ``[lo, hi]`` of ``x`` reads:

    ========================================  ===============================
    the interval of ``x``                     outcome
    ========================================  ===============================
    ``lo > 0, hi >= d``                       ``reproduced``
    ``lo > 0, s <= hi < d``                   ``smaller effect``
    ``lo > 0, hi < s``                        ``smaller effect (negligible)``
    ``-s < lo <= 0 <= hi < s``                ``negligible``
    ``hi < 0, lo > -s``                       ``opposite (negligible)``
    ``hi < 0, lo <= -s``                      ``opposite``
    otherwise (holds 0, reaches past ``±s``)  ``inconclusive``
    ========================================  ===============================
    """
    if not sesoi > 0:
        raise ValueError(f"sesoi must be > 0, got {sesoi!r}")
    d = sign * (target - null)
    if not sesoi <= d * (1 + 1e-12):
        raise ValueError(
            f"sesoi must be at most the paper's effect d = {d:g} on the row's scale, got {sesoi!r}"
        )
    lo, hi = sorted((sign * (low - null), sign * (high - null)))
    if lo > 0:
        if hi >= d:
            return "reproduced"
        return "smaller effect" if hi >= sesoi else "smaller effect (negligible)"
    if hi < 0:
        return "opposite (negligible)" if lo > -sesoi else "opposite"
    return "negligible" if -sesoi < lo and hi < sesoi else "inconclusive"


def holm_levels(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """The significance level each of ``m`` hypotheses is judged at by Holm's step-down procedure.

    The ``i``-th smallest p-value (``i = 0, 1, ...``) is judged at ``alpha / (m - i)`` until the
    first one that fails its level; that one and every later one are judged at the level where the
    procedure stopped (so none of them is rejected, as Holm's procedure requires). Deciding a row by
    whether its ``1 - level`` interval excludes no effect is then Holm's procedure for t intervals.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    levels = [alpha] * m
    stop = None
    for rank, i in enumerate(order):
        level = alpha / (m - (rank if stop is None else stop))
        if stop is None and not p_values[i] <= level:
            stop = rank
        levels[i] = level
    return levels


def spending(t: float, alpha: float = ALPHA, kind: str = "obrien-fleming") -> float:
    """The Lan-DeMets alpha spent by information fraction ``t`` in (0, 1] (two-sided).

    ``obrien-fleming``: ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``; ``pocock``:
    ``alpha log(1 + (e - 1) t)``.
    """
    from scipy import special

    if kind not in SPENDING:
        raise ValueError(f"kind must be one of {SPENDING}, got {kind!r}")
    if not 0 < t <= 1:
        raise ValueError(f"t must lie in (0, 1], got {t!r}")
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    return float(2 - 2 * special.ndtr(special.ndtri(1 - alpha / 2) / math.sqrt(t)))


def look_levels(
    looks: Sequence[int], alpha: float = ALPHA, kind: str = "obrien-fleming"
) -> list[float]:
    """The significance level of each look of a group-sequential plan: the increment of the spending
    function at the look's information fraction ``n_k / n_K``.

    The increments sum to ``alpha``; judging look ``k`` at its increment alone keeps the chance of
    any false decision over all looks at most ``alpha`` by the union bound (conservative: it ignores
    the correlation between looks, which the exact Lan-DeMets boundaries would spend).
    """
    return list(_look_levels(tuple(looks), alpha, kind))


@functools.lru_cache(maxsize=256)
def _look_levels(looks: tuple, alpha: float, kind: str) -> tuple:
    if (
        not looks
        or any(not isinstance(n, int) or n < 2 for n in looks)
        or list(looks) != sorted(set(looks))
    ):
        raise ValueError(f"looks must be increasing seed counts >= 2, got {list(looks)!r}")
    spent = [spending(n / looks[-1], alpha, kind) for n in looks]
    return tuple(b - a for a, b in zip([0.0, *spent[:-1]], spent))


def detectable(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimal detectable effect of a paired mean with ``n`` seeds at two-sided ``alpha``:
    ``(t_{1-alpha/2} + t_{power}) sd / sqrt(n)`` (t quantiles, ``n - 1`` degrees of freedom)."""
    from scipy import special

    if n < 2:
        return math.inf
    return float(
        (special.stdtrit(n - 1, 1 - alpha / 2) + special.stdtrit(n - 1, power)) * sd / math.sqrt(n)
    )


def seeds_needed(
    sd: float, sesoi: float, alpha: float = ALPHA, power: float = POWER, cap: int = 1000
) -> int | None:
    """The smallest n whose minimal detectable effect is at most ``sesoi`` (None above ``cap``)."""
    if sd == 0:
        return 2
    if detectable(sd, cap, alpha, power) > sesoi:
        return None
    lo, hi = 1, cap  # detectable falls with n: bisect for the first n that reaches sesoi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if detectable(sd, mid, alpha, power) <= sesoi else (mid, hi)
    return hi


DECISIONS = (
    "reproduced",
    "smaller effect",
    "smaller effect (negligible)",
    "opposite (negligible)",
    "opposite",
)
"""The outcomes that reject no effect (their CI excludes 0): under a true null each is a false
decision."""


def sequential_outcome(
    xs: Sequence[float],
    looks: Sequence[int],
    levels: Sequence[float],
    null: float,
    target: float,
    sesoi: float,
    sign: int,
    method: str = "t",
) -> tuple[str, int]:
    """``(outcome, n)`` of a row under a group-sequential plan: at each look ``n_k`` the first
    ``n_k`` per-seed effects are judged at ``1 - levels[k]``; the row stops at the first look
    that decides it (any outcome but ``inconclusive``), else it is ``inconclusive`` at the last
    look. This is the rule :func:`dynkit.experiments.judging.planned.run_planned` follows."""
    if len(looks) != len(levels):
        raise ValueError(
            f"looks and levels must have one entry each per look, got {len(looks)} and "
            f"{len(levels)}"
        )
    if len(xs) < looks[-1]:
        raise ValueError(
            f"xs must hold at least the last look's {looks[-1]} effects, got {len(xs)}"
        )
    outcome = "inconclusive"
    for n, level in zip(looks, levels):
        ci = interval(xs[:n], 1 - level, method)
        outcome = decide(ci.low, ci.high, null, target, sesoi, sign)
        if outcome != "inconclusive":
            return outcome, n
    return outcome, looks[-1]
