"""The claims ledger: each empirical claim of the five papers, decided from paired per-seed effects.

A row is computed, in code, in six steps:

1. **Completeness.** Every metric the row's effect and its validity checks read must be present in
   every seed; a missing metric makes the row ``invalid`` naming the metric and the seeds (never a
   skip).
2. **Validity.** Every metric the effect reads must be finite (a diverged run is reported with its
   seed, never dropped, never turned into 0), positive where the effect takes a logarithm, and pass
   the checks its experiment declares (:func:`declare_validity`): a trained bar (each model beats
   the trivial predictor on the same data by a stated margin,
   :func:`~dynkit.experiments.judging.baselines.beats_baseline`, or chance by a stated margin),
   plateaued, off the solver's floor, and any absolute bound (an adjoint that explodes). One invalid
   seed makes the row ``invalid``.
3. **The paired effect per seed** on the row's scale (:class:`Effect`): ``log`` (log10) for ratios
   and norms spanning orders of magnitude, ``difference`` for accuracies, ``linear`` for a single
   number held against an absolute criterion. Then the mean and its interval by the method the
   experiment's plan fixes (:mod:`dynkit.experiments.judging.plans`: Student t or BCa bootstrap,
   from :mod:`scipy.stats`), at the row's level, and a sign test (how many seeds lie on the paper's
   side). Per-seed effects with zero spread are one **deterministic** measurement: shown as its
   value, not as a replicated effect with an interval.
4. **The level.** Rows of one experiment that measure the same kind of metric form a *family*
   (:func:`family_of`); the whole family, its primary row included, is judged at Holm's step-down
   levels (:func:`~dynkit.experiments.judging.inference.holm_levels`) from the plan's level for the
   look its results are at (``alpha`` = 0.05 for one look): the chance of any false decision in a
   family is at most ``alpha`` (``python -m analysis.sequential_null`` simulates it).
5. **The outcome** (:func:`~dynkit.experiments.judging.inference.decide`) from the interval of
   ``x = s * (effect - null)`` (``s = +1`` when the paper's effect lies above no effect, ``-1``
   below), the paper's effect ``d`` and the smallest effect of interest (half of ``d`` unless
   stated; a criterion row "reaches P" takes P as ``d`` and the trivial predictor as its null):
   ``reproduced``, ``smaller effect``, ``smaller effect (negligible)``, ``negligible``,
   ``opposite (negligible)``, ``opposite`` or ``inconclusive`` (with the seeds it would need), the
   seven cases partitioning the line; ``invalid`` when step 1 or 2 failed (or the results do not
   follow the plan); ``deterministic`` for zero spread (one measurement, what it reads kept as
   ``provisional``); ``needs full scale`` where the claim's recipe states, before any result, that
   its mechanism needs the paper's scale.
6. **The evidence** (:mod:`dynkit.experiments.judging.evidence`): ``replication`` only for the
   paper's experiment (task, data, design, budget, tolerance: its recipe); otherwise ``pilot``,
   whose outcome reads ``pilot agrees``, ``pilot: smaller effect``, ``pilot disagrees``,
   ``pilot: no effect``, ``pilot inconclusive`` or ``pilot invalid``; ``not run`` without results.
   The comparisons no row tests yet are listed in :mod:`dynkit.experiments.judging.inventory`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from . import inference as _inference
from . import baselines as _baselines
from .checks import Check
from .evidence import EVIDENCE, PILOT_OUTCOMES, config_differences, label as evidence_label
from .inference import ALPHA, REPLICATION_OUTCOMES, decide, holm_levels, p_value, sign_test
from ..runner import NON_FINITE, RESULTS_FILE
from dynkit._checkout import RESULTS

__all__ = [
    "OUTCOMES",
    "DECIDED",
    "MIN_SEEDS",
    "MAX_SEEDS",
    "LEVEL",
    "POWER",
    "RESULTS_ROOT",
    "SCALE_KINDS",
    "LedgerError",
    "Effect",
    "ratio",
    "difference",
    "metric",
    "ratio_of_ratios",
    "at_least",
    "at_most",
    "off_floor",
    "plateau",
    "VALIDITY",
    "declare_validity",
    "DATA_NOTES",
    "declare_data",
    "Rule",
    "greater",
    "less",
    "Comparison",
    "COMPARISONS",
    "add_comparison",
    "RowValues",
    "add_comparisons",
    "METRIC_FORMS",
    "family_of",
    "interval",
    "detectable",
    "seeds_needed",
    "LedgerRow",
    "plan_kind",
    "effect_text",
    "NAME_WORDS",
    "metric_words",
    "words",
    "summary_words",
    "rule_plan_words",
    "Ledger",
    "evaluate",
    "metrics_and_baselines",
    "validate_results",
    "verify_shards",
    "load_results",
    "default_results_root",
    "ledger",
    "judge",
    "with_replications",
    "PAPER_PLANS",
    "PAPER_RESULTS",
]

OUTCOMES = (
    *REPLICATION_OUTCOMES,
    "invalid",
    "deterministic",
    "needs full scale",
    *PILOT_OUTCOMES,
    "not run",
)
"""The outcomes of a ledger row (see the module docstring): a replication's, a pilot's
(:data:`~dynkit.experiments.judging.evidence.PILOT_WORDS`) and ``not run``."""
DECIDED = tuple(o for o in REPLICATION_OUTCOMES if o != "inconclusive")
MIN_SEEDS = 5
"""Seeds a row needs before it is decided (fewer: ``inconclusive``, with the provisional
outcome)."""
MAX_SEEDS = 10
"""The default cap of a plan's seeds at the ``cpu`` scale
(:data:`dynkit.experiments.judging.plans.CAP`)."""
LEVEL = 1 - ALPHA
"""The interval level of a primary row at a single look (secondary rows and early looks: higher)."""
POWER = 0.80
RESULTS_ROOT = RESULTS
"""Where the results of record live (``analysis/results/<experiment>/results.json``)."""
SCALE_KINDS = ("log", "difference", "linear")


class LedgerError(ValueError):
    """A results file the ledger cannot read (the message names the file)."""


# ---- effects -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Effect:
    """A row's per-seed effect: ``natural(values of metrics)`` mapped to the row's scale.

    Parameters
    ----------
    metrics : tuple of str
        The per-seed metrics the effect reads (one seed's merged metrics).
    natural : callable
        ``natural(*values) -> float`` on the paper's natural scale (a ratio, a difference, a
        number).
    scale : {"log", "difference", "linear"}
        ``log``: the effect is ``log10(natural)`` (ratios, norms over orders of magnitude; every
        metric must be positive); ``difference`` and ``linear``: the natural value itself.
    name : str
        How the effect reads, e.g. ``"log10(hbnode.x / node.x)"``.
    """

    metrics: tuple[str, ...]
    natural: Callable[..., float]
    scale: str
    name: str

    def __post_init__(self):
        if self.scale not in SCALE_KINDS:
            raise ValueError(f"scale must be one of {SCALE_KINDS}, got {self.scale!r}")

    def to_scale(self, x: float) -> float:
        """A natural value (the paper's ratio, a criterion) on the row's scale."""
        return math.log10(x) if self.scale == "log" else float(x)

    def __call__(self, m: Mapping[str, float]) -> float:
        return self.to_scale(self.natural(*(m[k] for k in self.metrics)))


def ratio(numerator: str, denominator: str) -> Effect:
    """``log10(numerator / denominator)`` per seed (paired: both from the same seed)."""
    return Effect(
        (numerator, denominator), lambda a, b: a / b, "log", f"log10({numerator} / {denominator})"
    )


def difference(a: str, b: str, scale: str = "difference") -> Effect:
    """``a - b`` per seed (paired): accuracies, or metrics already on a log scale."""
    return Effect((a, b), lambda x, y: x - y, scale, f"{a} - {b}")


def metric(name: str, scale: str = "linear") -> Effect:
    """One model's own number per seed, against an absolute criterion (``scale="log"`` for
    norms)."""
    return Effect((name,), lambda x: x, scale, f"log10({name})" if scale == "log" else name)


def ratio_of_ratios(a: str, b: str, c: str, d: str) -> Effect:
    """``log10((a / b) / (c / d))`` per seed, e.g. one model's NFE growth over another's."""
    return Effect(
        (a, b, c, d),
        lambda w, x, y, z: (w / x) / (y / z),
        "log",
        f"log10(({a} / {b}) / ({c} / {d}))",
    )


# ---- validity ------------------------------------------------------------------------------------
def _subject(metric_name: str, subject: str | None) -> str:
    return metric_name.rsplit(".", 1)[0] if subject is None else subject


def at_least(
    metric_name: str,
    bound: float,
    why: str,
    kind: str = "trained",
    when: str | None = None,
    subject: str | None = None,
) -> Check:
    """Valid when ``metric >= bound`` (e.g. the baseline beats chance by a stated margin).

    ``subject`` defaults to the metric's name less its last part (``"digits.LSTM"`` for
    ``"digits.LSTM.best_accuracy"``); ``""`` applies the check to every row of the experiment.
    """
    return Check(
        kind,
        _subject(metric_name, subject),
        (metric_name,),
        lambda v: (v >= bound, v),
        f"{metric_name} >= {bound:g} ({why})",
        when,
    )


def at_most(
    metric_name: str,
    bound: float,
    why: str,
    kind: str = "trained",
    when: str | None = None,
    subject: str | None = None,
) -> Check:
    """Valid when ``metric <= bound`` (e.g. a loss below the trivial predictor's); see
    :func:`at_least`."""
    return Check(
        kind,
        _subject(metric_name, subject),
        (metric_name,),
        lambda v: (v <= bound, v),
        f"{metric_name} <= {bound:g} ({why})",
        when,
    )


def off_floor(
    metric_name: str,
    floor: float,
    why: str,
    margin: float = 1.5,
    when: str | None = "nfe",
    subject: str | None = None,
) -> Check:
    """Valid when an NFE metric exceeds ``margin * floor``, the solver's minimum evaluations at its
    tolerance.

    ``floor`` is stated per experiment: for dopri5 with torchdiffeq's initial-step selection, one
    solve costs at least 2 + 6 k evaluations for k accepted steps (FSAL), so 2 accepted steps give
    14.
    """
    bound = margin * floor
    return Check(
        "off floor",
        _subject(metric_name, subject),
        (metric_name,),
        lambda v: (v > bound, v),
        f"{metric_name} > {margin:g} x floor {floor:g} ({why})",
        when,
    )


def plateau(
    pattern: str, epochs: int, k: int = 3, rtol: float = 0.02, when: str | None = None
) -> Check:
    """Valid when the loss has plateaued: ``|L[-1] - L[-1-k]| / |L[-1-k]| <= rtol`` over the last
    ``k`` epochs.

    ``pattern`` holds ``{epoch}`` (1-based), e.g. ``"hbnode.epoch{epoch}.test_mse"``; ``epochs`` is
    the run's number of epochs.
    """
    if epochs <= k:
        raise ValueError(f"plateau needs more than k={k} epochs, got epochs={epochs}")
    names = (pattern.format(epoch=epochs - k), pattern.format(epoch=epochs))

    def test(before, last):
        change = abs(last - before) / abs(before) if before else math.inf
        return change <= rtol, change

    return Check(
        "plateau",
        pattern.split(".", 1)[0],
        names,
        test,
        f"relative change of {pattern.format(epoch='N')} over the last {k} epochs <= {rtol:g}",
        when,
    )


VALIDITY: dict[str, list[Check]] = {}
"""The validity checks each experiment declares, by experiment name."""


def declare_validity(experiment: str, *checks: Check) -> None:
    """Declare what makes a run of ``experiment`` valid for its claims (added to
    :data:`VALIDITY`)."""
    for c in checks:
        if not isinstance(c, Check):
            raise TypeError(
                f"checks must be Check objects (at_least, at_most, off_floor, plateau), got {c!r}"
            )
    VALIDITY.setdefault(experiment, []).extend(checks)


DATA_NOTES: dict[str, Callable[[Mapping], str]] = {}
"""What the data of a run were (measured, or a simulated stand-in), from the config its results
record, by experiment name: each of the experiment's rows says it (:func:`declare_data`)."""


def declare_data(experiment: str, describe: Callable[[Mapping], str]) -> None:
    """Declare how a row of ``experiment`` names its data: ``describe(recorded config) -> str``."""
    if not callable(describe):
        raise TypeError(
            f"describe must be callable (recorded config -> str), got {type(describe).__name__}"
        )
    DATA_NOTES[experiment] = describe


# ---- rules ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """The paper's effect and no effect of a claim, on the claim's natural scale.

    Parameters
    ----------
    direction : {"greater", "less"}
        Which side of ``null`` the paper's effect lies on.
    target : float
        The paper's effect (e.g. a ratio of 0.8) or the stated criterion of a one-model claim.
    null : float
        No effect (a ratio of 1, a difference of 0), or for a one-model claim the criterion's
        boundary.
    sesoi : float, optional
        The smallest effect of interest **on the row's scale** (log10 units for ratios); default
        :data:`~dynkit.experiments.judging.inference.SESOI_FRACTION` of the paper's effect ``d``
        (the distance from ``null`` to ``target`` on that scale), and never ``d`` or more. Must be
        stated where the paper gives no effect size (``target == null``): the paper's effect is then
        taken as ``sesoi`` itself (a direction only: the row reads ``reproduced`` or
        ``smaller effect (negligible)``, never ``smaller effect``).
    """

    direction: str
    target: float
    null: float
    sesoi: float | None = None

    def __post_init__(self):
        if self.direction not in ("greater", "less"):
            raise ValueError(f"direction must be 'greater' or 'less', got {self.direction!r}")
        s = 1 if self.direction == "greater" else -1
        if s * self.target < s * self.null:
            raise ValueError(
                f"target {self.target} must lie on the {self.direction} side of null {self.null}"
            )
        if self.target == self.null and self.sesoi is None:
            raise ValueError(
                f"the paper gives no effect size (target == null == {self.null}): state the "
                f"smallest "
                f"effect of interest, sesoi="
            )
        if self.sesoi is not None and not self.sesoi > 0:
            raise ValueError(f"sesoi must be > 0, got {self.sesoi}")

    @property
    def sign(self) -> int:
        return 1 if self.direction == "greater" else -1

    def describe(self) -> str:
        op = ">" if self.direction == "greater" else "<"
        return f"paper {op} {self.null:g}" + (
            f", paper's effect {self.target:g}" if self.target != self.null else ""
        )


def greater(target: float, null: float | None = None, sesoi: float | None = None) -> Rule:
    return Rule("greater", target, target if null is None else null, sesoi)


def less(target: float, null: float | None = None, sesoi: float | None = None) -> Rule:
    return Rule("less", target, target if null is None else null, sesoi)


# ---- claims --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """One row of the ledger: a paper's empirical claim, the experiment that tests it, its effect
    and rule.

    ``full_scale`` (a sentence, part of the experiment's recipe and stated before its results) marks
    a claim whose mechanism needs the paper's scale: the row reads ``needs full scale`` with that
    reason whatever the ``cpu`` interval says (shown as the provisional outcome). ``family``
    overrides the default family (:func:`family_of`); ``primary=True`` makes the row its family's
    primary one (default: the family's first registered row). ``design_note`` says where our model
    or setting differs from the authors' (so that a reader can tell a failure of the method from one
    of ours).
    """

    id: str
    paper: str
    claim: str
    paper_figure: str
    experiment: str
    metric: str
    value: Effect
    rule: Rule
    scale: str = "cpu"
    full_scale: str = ""
    checks: tuple[Check, ...] = ()
    design_note: str = ""
    family: str = ""
    primary: bool = False

    @property
    def effect_scale(self) -> str:
        return self.value.scale

    def bounds(self) -> tuple[float, float, float]:
        """``(null, target, sesoi)`` on the row's scale: ``sesoi`` below the paper's effect
        ``|target - null|`` (:data:`~dynkit.experiments.judging.inference.SESOI_FRACTION` of it
        unless stated); a claim of a direction only (``target == null``) has
        ``target = null ± sesoi``. A ValueError when a stated sesoi is not below the paper's
        effect."""
        null, target = self.value.to_scale(self.rule.null), self.value.to_scale(self.rule.target)
        d = abs(target - null)
        if d == 0:
            return null, null + self.rule.sign * self.rule.sesoi, self.rule.sesoi
        if self.rule.sesoi is None:
            return null, target, _inference.SESOI_FRACTION * d
        if not self.rule.sesoi < d:
            raise ValueError(
                f"claim {self.id!r}: sesoi must lie below the paper's effect {d:.3g} "
                f"on the row's scale, got {self.rule.sesoi!r}"
            )
        return null, target, self.rule.sesoi

    def validity(self) -> list[Check]:
        return [
            c
            for c in (*VALIDITY.get(self.experiment, ()), *self.checks)
            if c.applies(self.value.metrics)
        ]


COMPARISONS: dict[str, Comparison] = {}


def add_comparison(
    id: str,
    *,
    paper: str,
    claim: str,
    paper_figure: str,
    experiment: str,
    metric: str,
    value: Effect,
    rule: Rule,
    scale: str = "cpu",
    full_scale: str = "",
    checks: Sequence[Check] = (),
    design_note: str = "",
    family: str = "",
    primary: bool = False,
) -> Comparison:
    """Register a ledger row (see :class:`Comparison`)."""
    if id in COMPARISONS:
        raise ValueError(f"a claim with id {id!r} is already registered")
    if not isinstance(value, Effect):
        raise TypeError(
            f"claim {id!r}: value must be an Effect (ratio, difference, metric, "
            f"ratio_of_ratios), got "
            f"{type(value).__name__}"
        )
    row = Comparison(
        id,
        paper,
        claim,
        paper_figure,
        experiment,
        metric,
        value,
        rule,
        scale,
        full_scale,
        tuple(checks),
        design_note,
        family,
        primary,
    )
    row.bounds()  # the paper's ratio must be positive on a log scale
    COMPARISONS[id] = row
    return row


class RowValues(NamedTuple):
    """What one ledger row states besides its paper and experiment (the fields of
    :func:`add_comparison` of the same names), for :func:`add_comparisons`."""

    id: str
    claim: str
    paper_figure: str
    metric: str
    value: Effect
    rule: Rule


def add_comparisons(paper: str, experiment: str, rows: Iterable[RowValues]) -> list[Comparison]:
    """Register ledger rows of one paper and one experiment, in the order given.

    Parameters
    ----------
    paper : str
        The paper every row tests (:class:`Comparison`'s ``paper``).
    experiment : str
        The experiment whose results every row reads.
    rows : iterable of RowValues
        Each row's id, claim, paper figure, metric, effect and rule.

    Returns
    -------
    list of Comparison
        The registered rows (see :func:`add_comparison`).
    """
    return [
        add_comparison(
            row.id,
            paper=paper,
            claim=row.claim,
            paper_figure=row.paper_figure,
            experiment=experiment,
            metric=row.metric,
            value=row.value,
            rule=row.rule,
        )
        for row in rows
    ]


METRIC_FORMS = (
    ("nfe", "nfe"),
    ("mse", "loss"),
    ("loss", "loss"),
    ("acc", "accuracy"),
    ("adjoint", "gradient"),
    ("decay", "gradient"),
    ("grad", "gradient"),
)
"""(substring of a metric name, the form it belongs to), first match wins: the kinds of metric a
family shares."""


def family_of(claim: Comparison) -> str:
    """The family of a row: ``<experiment>/<metric form>`` unless the claim states one.

    Rows of one experiment share their models (they are computed from the same shards); rows that
    also measure the same form of metric (NFE of any pass or at any tolerance, a loss, an accuracy,
    a gradient's decay) test one hypothesis from several sides and form a family
    (forward/backward/test NFE; "vs NODE" and "vs ANODE"; one comparison at several points). A
    metric of no listed form is its own form (its last name part).
    """
    if claim.family:
        return claim.family
    names = [m.lower() for m in claim.value.metrics]
    for needle, form in METRIC_FORMS:
        if any(needle in m.rsplit(".", 1)[-1] or needle in m for m in names):
            return f"{claim.experiment}/{form}"
    return f"{claim.experiment}/{names[0].rsplit('.', 1)[-1]}"


# ---- statistics (dynkit.experiments.judging.inference)
# -----------------------------------------------------------
def interval(
    xs: Sequence[float], level: float = LEVEL, method: str = "t", seed: int = 0
) -> tuple[float, float, float, str]:
    """``(mean, low, high, method)`` of :func:`dynkit.experiments.judging.inference.interval`
    (scipy.stats: Student t or BCa bootstrap, ``method`` fixed by the plan; ``"deterministic"``
    for zero spread, ``"none"`` for one seed)."""
    ci = _inference.interval(xs, level, method, seed)
    return ci.mean, ci.low, ci.high, ci.method


def detectable(sd: float, n: int, level: float = LEVEL, power: float = POWER) -> float:
    """Minimal detectable effect of a paired mean with ``n`` seeds:
    ``(t_{1-a/2} + t_{power}) sd / sqrt(n)``."""
    return _inference.detectable(sd, n, 1 - level, power)


def seeds_needed(
    sd: float, sesoi: float, level: float = LEVEL, power: float = POWER, cap: int = 1000
) -> int | None:
    """The smallest n whose minimal detectable effect is at most ``sesoi`` (None above ``cap``)."""
    return _inference.seeds_needed(sd, sesoi, 1 - level, power, cap)


# ---- rows ----------------------------------------------------------------------------------------
@dataclass
class LedgerRow:
    """One computed row. ``effect``, ``ci_low``, ``ci_high``, ``paper_effect`` and ``sesoi`` are
    on ``scale``."""

    claim: Comparison
    outcome: str
    reason: str = ""
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str = "none"
    n: int = 0
    n_agree: int = 0
    per_seed: dict = field(default_factory=dict)
    invalid_seeds: dict = field(default_factory=dict)
    mde: float | None = None
    seeds_needed: int | None = None
    provisional: str = ""
    family: str = ""
    primary: bool = True
    alpha: float = ALPHA
    n_sign: int = 0
    sign_p: float | None = None
    deterministic: bool = False
    plan: str = ""
    baseline: str = ""
    data: str = ""
    evidence: str = "replication"
    evidence_why: str = ""
    reading: str = ""
    """What the interval reads under the rule
    (:func:`~dynkit.experiments.judging.inference.decide`), before a pilot's words replace it in
    ``outcome``."""
    question: str = ""
    pilot: str = ""
    """A row judged on a campaign at the paper scale (:func:`with_replications`): what the pilot
    of record (the cpu scale) read, kept beside the replication's look."""
    rule_plan: str = "none"
    """Whether the row's plan was written before the rule it is judged by
    (:data:`~dynkit.experiments.judging.inference.RULE_FIXED`): ``prospective``,
    ``retrospective`` (the results were seen before the rule) or ``none``."""

    @property
    def scale(self) -> str:
        return self.claim.effect_scale

    @property
    def level(self) -> float:
        """The interval's level, ``1 - alpha`` (alpha: the plan's look, Holm's step within the
        family)."""
        return 1 - self.alpha

    def sign_text(self) -> str:
        """``4/5 on the paper's side (sign test p = 0.38)``; ``–`` without per-seed effects."""
        if not self.per_seed:
            return "–"
        p = "" if self.sign_p is None else f" (sign test p = {self.sign_p:.2g})"
        return f"{self.n_agree}/{self.n_sign} on the paper's side{p}"

    def family_text(self) -> str:
        return (
            f"{self.family} ({'primary' if self.primary else 'secondary'}, level {self.level:.4g})"
        )

    @property
    def verdict(self) -> str:  # the field's former name, still read by old reports
        return self.outcome

    def to_dict(self) -> dict:
        from .paper_runs import paper_effect

        c = self.claim
        null, target, sesoi = c.bounds()
        natural = (
            None if self.effect is None else 10**self.effect if self.scale == "log" else self.effect
        )
        return {
            "id": c.id,
            "paper": c.paper,
            "claim": c.claim,
            "paper_figure": c.paper_figure,
            "experiment": c.experiment,
            "metric": c.metric,
            "effect_definition": c.value.name,
            "scale": self.scale,
            "run_scale": c.scale,
            "outcome": self.outcome,
            "reason": self.reason,
            "effect": self.effect,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "ci_method": self.ci_method,
            "effect_natural": natural,
            "n": self.n,
            "n_agree": self.n_agree,
            "null": null,
            "paper_effect": target,
            "sesoi": sesoi,
            "direction": c.rule.direction,
            "mde": self.mde,
            "seeds_needed": self.seeds_needed,
            "provisional": self.provisional,
            "per_seed": {str(k): v for k, v in self.per_seed.items()},
            "invalid_seeds": {str(k): v for k, v in self.invalid_seeds.items()},
            "validity": [k.why for k in c.validity()],
            "full_scale": c.full_scale,
            "rule": c.rule.describe(),
            "authors_runs": paper_effect(c.id),
            "design_note": c.design_note,
            "family": self.family,
            "primary": self.primary,
            "alpha": self.alpha,
            "level": self.level,
            "n_sign": self.n_sign,
            "sign_p": self.sign_p,
            "sign_test": self.sign_text(),
            "deterministic": self.deterministic,
            "plan": self.plan,
            "baseline": self.baseline,
            "data": self.data,
            "evidence": self.evidence,
            "evidence_why": self.evidence_why,
            "reading": self.reading,
            "question": self.question or c.claim,
            "rule_plan": self.rule_plan,
            "pilot": self.pilot,
            "summary": summary_words(self),
            "reason_words": words(self.reason),
            # the fields older reports read
            "verdict": self.outcome,
            "note": self.reason,
            "ours": {
                "mean": self.effect,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "n_seeds": self.n,
            },
        }


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.3g}"


def plan_kind(plan: str | None) -> str:
    """A row's plan (:meth:`~dynkit.experiments.judging.plans.Plan.describe`, or
    ``None``/``"none ..."`` without one) in one word: ``prospective`` (committed before the
    results it governs), ``retrospective`` (written after them: the row's seeds were not fixed
    blind) or ``none``."""
    from .plans import KIND_TEXT

    if not plan or plan.startswith("none"):
        return "none"
    for prospective, text in KIND_TEXT.items():
        if plan.endswith(text):
            return "prospective" if prospective else "retrospective"
    raise ValueError(
        f"plan must be a Plan.describe() text (ending "
        f"{' or '.join(map(repr, KIND_TEXT.values()))}) "
        f"or None, got {plan!r}"
    )


def effect_text(row: LedgerRow) -> str:
    """``log -0.52 [-0.61, -0.43] (t, 95%)`` (the effect on its scale with its interval, method
    and level); a deterministic measurement reads
    ``log -0.05, deterministic (identical in 5 seeds)``; ``–`` without one."""
    if row.effect is None:
        return "–"
    if row.deterministic:
        return f"{row.scale} {_fmt(row.effect)}, deterministic (identical in {row.n} seeds)"
    ci = (
        f" [{_fmt(row.ci_low)}, {_fmt(row.ci_high)}] ({row.ci_method}, {100 * row.level:.4g}%)"
        if row.n > 1
        else ""
    )
    return f"{row.scale} {_fmt(row.effect)}{ci}"


NAME_WORDS = {
    "node": "NODE",
    "hbnode": "HBNODE",
    "ghbnode": "GHBNODE",
    "anode": "ANODE",
    "sonode": "SONODE",
    "resnet": "ResNet",
    "momentum": "momentum model",
    "lista": "LISTA",
    "revnet": "RevNet",
    "floor": "untrained",
    "baseline": "trivial predictor:",
    "best": "the better of persistence and mean,",
    "majority": "majority class,",
    "zero": "zero code,",
    "nfe": "NFE",
    "mse": "MSE",
    "acc": "accuracy",
    "tight": "at rtol 1e-6,",
    "data": "data:",
    "log10": "log10",
}
"""How the parts of a metric's name read in words (a part not listed reads with its underscores as
spaces)."""
_METRIC_ID = re.compile(r"(?<![\w.])[A-Za-z][\w/-]*(?:\.[\w/@+-]+)+(?:@[\w.+-]+)?")


def metric_words(name: str) -> str:
    """A metric's name in words: ``hbnode.last_epoch.forward_nfe`` reads ``HBNODE last epoch forward
    NFE``, ``floor.node.forward_nfe@train`` reads ``untrained NODE forward NFE at the training
    tolerance``."""
    name, _, at = name.partition("@")
    parts = []
    for part in name.split("."):
        words = [NAME_WORDS.get(w, w) for w in part.split("_")]
        parts.append(NAME_WORDS.get(part, " ".join(words)))
    tail = "" if not at else " at the training tolerance" if at == "train" else f" at rtol {at}"
    return " ".join(parts) + tail


def words(text: str) -> str:
    """``text`` with every metric id in it (``model.part.metric``) read in words
    (:func:`metric_words`)."""

    def read(m):
        return m.group(0) if m.group(0)[0].isdigit() else metric_words(m.group(0))

    return _METRIC_ID.sub(read, text or "")


def _natural(row: "LedgerRow", x: float | None) -> str:
    if x is None:
        return "–"
    return f"ratio {10**x:.3g}" if row.scale == "log" else f"{x:.3g}"


def summary_words(row: "LedgerRow") -> str:
    """What a row measured, in words: the metric, its value with its interval, the paper's effect
    and the smallest of interest, and the bar each model was held to (or, for an invalid row, what
    failed)."""
    pilot = f"; the pilot at the cpu scale read: {row.pilot}" if row.pilot else ""
    return _measured_words(row) + pilot


def _measured_words(row: "LedgerRow") -> str:
    c = row.claim
    if row.reading == "invalid":
        return words(row.reason)
    null, target, sesoi = c.bounds()
    parts = [f"{c.metric}"]
    if row.effect is not None:
        ci = (
            ""
            if row.deterministic or row.n < 2
            else f", {100 * row.level:.4g} % CI {_natural(row, row.ci_low)} to "
            f"{_natural(row, row.ci_high)}"
        )
        parts.append(
            f": {_natural(row, row.effect)}{ci} over {row.n} seeds"
            + (" (one deterministic measurement)" if row.deterministic else "")
        )
    scale = " (log10)" if row.scale == "log" else ""
    parts.append(
        f"; the paper's {_natural(row, target)} against no effect "
        f"{_natural(row, null)}, the smallest effect of interest ±{sesoi:.3g}{scale}"
    )
    if row.baseline:
        parts.append(f"; bar: {words(row.baseline)}")
    if row.reading == "inconclusive" and row.seeds_needed is not None:
        parts.append(f"; about {row.seeds_needed} seeds would decide it")
    elif row.reading == "inconclusive" and row.reason:
        parts.append(f"; {words(row.reason)}")
    return "".join(parts)


def rule_plan_words(rows: Sequence[LedgerRow | Mapping]) -> str:
    """How many rows' plans were written before the rule they are judged by (its SESOI half the
    paper's effect, its seven outcomes), and how many after it was fixed (``rule_plan``)."""
    kinds = [r["rule_plan"] if isinstance(r, Mapping) else r.rule_plan for r in rows]
    before, after = kinds.count("retrospective"), kinds.count("prospective")
    return (
        f"For the rule (its SESOI half the paper's effect, its seven outcomes), {before} rows are "
        f"retrospective (their plans were written before it) and {after} prospective."
    )


def _cell(x) -> str:
    return str(x).replace("|", "/").replace("\n", " ")


@dataclass
class Ledger:
    rows: list[LedgerRow]
    recorded: dict[str, dict] = field(default_factory=dict)
    """``{experiment: the config its results of record were run with}`` (from ``results.json``),
    to say where they differ from the registered ``cpu`` config the setup tables read."""
    not_run: list = field(default_factory=list)
    """The papers' comparisons no row tests
    (:class:`~dynkit.experiments.judging.inventory.Comparison`, each with what it needs)."""

    def to_dict(self) -> dict:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "outcome_counts": self.outcome_counts(),
            "counts": self.counts(),
            "headline": self.headline(),
            "not_run": [c.to_dict(COMPARISONS) for c in self.not_run],
            "min_seeds": MIN_SEEDS,
            "level": LEVEL,
            "power": POWER,
            "setups": self.setups(),
            "setups_not_yet_run": self.stale_setups(),
        }

    def setups(self) -> dict[str, list[dict]]:
        """``{experiment: setup table}`` of every experiment of the rows that has a recipe: each
        setting's paper value and source, ours at the ``cpu`` scale read from its config, and why
        they differ (:func:`dynkit.experiments.recipes.setup_table`)."""
        from ..recipes import RECIPES, setup_table

        names = dict.fromkeys(r.claim.experiment for r in self.rows)
        return {name: setup_table(name) for name in names if name in RECIPES}

    def stale_setups(self) -> dict[str, dict[str, list]]:
        """``{experiment: {config key: [recorded, registered]}}`` where the results of record
        were run with another config than the registered ``cpu`` one the setup table shows (their
        rerun is pending; a key the record lacks predates the option: it reads as the option's
        default, the behaviour before the option, else ``None``); experiments without a
        difference are left out."""
        from ..registry import get

        out = {}
        for name in self.setups():
            run_with = self.recorded.get(name)
            if run_with is None:
                continue
            changed = config_differences(run_with, get(name).config("cpu"))
            if changed:
                out[name] = changed
        return out

    def outcome_counts(self) -> dict[str, int]:
        """Rows per outcome, every outcome listed (a replication's and a pilot's words alike)."""
        return {v: sum(r.outcome == v for r in self.rows) for v in OUTCOMES}

    def counts(self) -> dict[str, dict[str, int]]:
        """``{evidence: {outcome: rows}}`` (outcomes with rows only): the headline counts are the
        replications', the pilots counted apart; ``not run`` counts the rows without results and
        the comparisons of the papers no experiment tests yet
        (:mod:`dynkit.experiments.judging.inventory`)."""
        out: dict[str, dict[str, int]] = {e: {} for e in EVIDENCE}
        for r in self.rows:
            out[r.evidence][r.outcome] = out[r.evidence].get(r.outcome, 0) + 1
        if self.not_run:
            out["not run"]["not run"] = out["not run"].get("not run", 0) + len(self.not_run)
        return out

    verdict_counts = outcome_counts  # the former name

    def records(self) -> list[dict]:
        """One flat dict per row (the outcome with the effect on its scale, its CI, n and sign
        agreement, the reason or the seeds needed): the rows of ``dynkit ledger --format csv``
        and of :meth:`to_pandas`."""
        from .paper_runs import paper_effect_text

        keys = (
            "id",
            "paper",
            "claim",
            "paper_figure",
            "experiment",
            "metric",
            "scale",
            "effect",
            "ci_low",
            "ci_high",
            "ci_method",
            "level",
            "deterministic",
            "n",
            "n_agree",
            "n_sign",
            "sign_p",
            "family",
            "primary",
            "baseline",
            "plan",
            "paper_effect",
            "sesoi",
            "outcome",
            "reason",
            "seeds_needed",
            "mde",
            "rule",
            "evidence",
            "evidence_why",
            "reading",
            "question",
            "summary",
            "reason_words",
            "rule_plan",
        )
        out = []
        for r in self.rows:
            d = r.to_dict()
            out.append(
                {
                    **{k: d[k] for k in keys},
                    "authors_runs": paper_effect_text(r.claim.id),
                    "design_note": r.claim.design_note,
                }
            )
        return out

    def to_pandas(self):
        """The ledger as a ``pandas.DataFrame`` (one row per claim, :meth:`records`); needs
        pandas."""
        from ...io import to_pandas

        return to_pandas(self.records(), "Ledger")

    def headline(self) -> str:
        """The ledger in one paragraph: replications and their outcomes first, then pilots, then not
        run."""
        counts = self.counts()
        text = lambda c: ", ".join(f"{v} {k}" for k, v in c.items()) or "none"  # noqa: E731
        n_rep, n_pilot = sum(counts["replication"].values()), sum(counts["pilot"].values())
        no_rows = sum(r.evidence == "not run" for r in self.rows)
        rows, pilots = text(counts["replication"]), text(counts["pilot"])
        return (
            f"{n_rep} of {len(self.rows)} rows replicate the paper's experiment (its task, "
            f"data, design, budget and tolerance): {rows}. {n_pilot} rows are pilots, run on a "
            f"stand-in, a smaller budget or another setup than the authors', their outcomes in "
            f"words of their own and never counted as replications: {pilots}. Not run: "
            f"{no_rows} rows without results and {len(self.not_run)} comparisons of the papers "
            f"that no experiment here tests yet. {rule_plan_words(self.rows)}"
        )

    def to_markdown(self) -> str:
        """The ledger: the headline, then the replications, the pilots and what is not run, each
        row's question, outcome and what it measured in words, its id in a column of its own; then
        every row in detail and the setups against the paper."""
        by = {e: [r for r in self.rows if r.evidence == e] for e in EVIDENCE}
        parts = [self.headline(), ""]
        for evidence, title in (("replication", "Replications"), ("pilot", "Pilots")):
            rows = by[evidence]
            parts += [f"## {title} ({len(rows)})", ""]
            if not rows:
                parts += ["None.", ""]
                continue
            head = ["question", "outcome", "what we measured", "id"]
            if evidence == "pilot":
                head[2:2] = ["what the interval reads", "why a pilot"]
            parts += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            order = {o: i for i, o in enumerate(OUTCOMES)}
            for r in sorted(rows, key=lambda r: order.get(r.outcome, len(order))):
                cells = [r.question, r.outcome, summary_words(r), r.claim.id]
                if evidence == "pilot":
                    cells[2:2] = [r.reading, r.evidence_why]
                parts.append("| " + " | ".join(_cell(x) for x in cells) + " |")
            parts.append("")
        parts += [f"## Not run ({len(by['not run'])} rows, {len(self.not_run)} comparisons)", ""]
        if by["not run"] or self.not_run:
            rows = [
                (
                    r.claim.paper,
                    r.claim.paper_figure,
                    r.question,
                    r.evidence_why,
                    "results",
                    r.claim.id,
                )
                for r in by["not run"]
            ]
            rows += [(c.paper, c.location, c.compares, c.needs, c.kind, "–") for c in self.not_run]
            parts += [
                "| paper | table or figure | compares | what it needs | need | id |",
                "|" + " --- |" * 6,
            ]
            parts += ["| " + " | ".join(_cell(x) for x in cells) + " |" for cells in rows]
            parts.append("")
        return "\n".join(parts) + "\n## Every row in detail\n\n" + self.detail_markdown()

    def detail_markdown(self) -> str:
        from .paper_runs import paper_effect_text

        lines = [
            "| id | paper | claim | paper figure | metric | effect on its scale [CI] "
            "(method, level) | n | plan "
            "| sign test | family (level) | trained bar | paper's effect / sesoi | evidence "
            "| outcome | reason or seeds needed | authors' runs |",
            "|" + " --- |" * 16,
        ]
        differs = {
            name: [row["setting"] for row in table if not row["as_paper"]["cpu"]]
            for name, table in self.setups().items()
        }
        for r in self.rows:
            c = r.claim
            null, target, sesoi = c.bounds()
            why = words(r.reason)
            if r.reading in ("inconclusive", "needs full scale") and r.seeds_needed is not None:
                why = (why + "; " if why else "") + f"seeds needed {r.seeds_needed}"
            if c.design_note:
                why = (why + ". " if why else "") + f"Design: {c.design_note}"
            if r.data:
                why = (why + ". " if why else "") + f"Data: {r.data}"
            if c.scale == "cpu" and differs.get(
                c.experiment
            ):  # what could explain the row, from the recipe (its table below)
                why = (
                    (why + ". " if why else "")
                    + "Setup differs from the paper in: "
                    + ", ".join(differs[c.experiment])
                    + f" (setup of {c.experiment} below)"
                )
            n = f"1 measurement ({r.n} seeds)" if r.deterministic else str(r.n)
            plan = plan_kind(r.plan)
            if r.rule_plan == "retrospective":
                plan += "; retrospective for the rule"
            outcome = r.outcome + (f" (reads {r.reading})" if r.reading != r.outcome else "")
            cells = [
                c.id,
                c.paper,
                r.question or c.claim,
                c.paper_figure,
                c.metric,
                effect_text(r),
                n,
                plan,
                r.sign_text(),
                r.family_text(),
                words(r.baseline) or "–",
                f"{_fmt(target)} / ±{_fmt(sesoi)} (null {_fmt(null)})",
                r.evidence,
                outcome,
                why or "–",
                paper_effect_text(c.id),
            ]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        counts = ", ".join(f"{k}: {v}" for k, v in self.outcome_counts().items() if v)
        return (
            "\n".join(lines) + f"\n\n{len(self.rows)} claims — {counts}\n" + self.setups_markdown()
        )

    def setups_markdown(self) -> str:
        """The "setup against the paper" table of each experiment with a recipe (see
        :meth:`setups`)."""
        from ..recipes import setup_markdown

        stale = self.stale_setups()
        parts = [
            f"\n### {name}\n\n"
            + setup_markdown(name)
            + (
                f"\nThe results of record of {name} were run with another config: "
                + "; ".join(
                    f"{k} {json.dumps(a)} (registered cpu: {json.dumps(b)})"
                    for k, (a, b) in stale[name].items()
                )
                + ". The table shows the registered cpu config; its rerun is pending.\n"
                if name in stale
                else ""
            )
            for name in self.setups()
        ]
        return (
            (
                "\n## Setup against the paper\n\nPer experiment with a recipe: each setting "
                "that can change an "
                "outcome, the paper's value and its source, ours at the cpu scale (read from "
                "its config) and why "
                "they differ.\n" + "".join(parts)
            )
            if parts
            else ""
        )

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _missing(by_seed: dict[int, dict], names: Sequence[str]) -> str:
    """Which metrics are missing in which seeds; a model whose run failed (``<model>.failed``)
    says so."""
    gaps: dict[str, list[int]] = {}
    for seed, m in by_seed.items():
        for k in names:
            if k not in m:
                model = k.rsplit(".", 1)[0]
                failed = m.get(f"{model}.failed")
                if failed:
                    at = m.get(f"{model}.failed_epoch")
                    gaps.setdefault(
                        f"{model} failed" + (f" at epoch {at:g}" if _finite(at) else ""), []
                    ).append(seed)
                else:
                    gaps.setdefault(f"missing metric {k}", []).append(seed)
    return "; ".join(f"{k} in seed(s) {sorted(set(s))}" for k, s in gaps.items())


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _bar_text(claim: Comparison, checks: Sequence[Check], by_seed: dict[int, dict]) -> str:
    """The trained bars of a row: each model's metric beside its trivial predictor's (means over
    seeds), or the stated bound of a chance-level bar."""
    parts = []
    for c in checks:
        if c.kind == "trained bar":
            model, base = c.metrics
            mv = [m[model] for m in by_seed.values() if _finite(m.get(model))]
            bv = [m[base] for m in by_seed.values() if _finite(m.get(base))]
            if mv and bv:
                parts.append(f"{model} {sum(mv) / len(mv):.3g} vs {base} {sum(bv) / len(bv):.3g}")
        elif c.kind == "trained":
            parts.append(c.why)
    return "; ".join(parts)


def evaluate(
    claim: Comparison,
    results: dict | None,
    *,
    alpha: float = ALPHA,
    method: str = "t",
    baselines: Mapping[int, Mapping[str, float]] | None = None,
    plan: str = "",
    evidence: str = "replication",
    evidence_why: str = "",
    question: str = "",
) -> LedgerRow:
    """One row from an experiment's aggregated results (None: not run at the claim's scale).

    Parameters
    ----------
    alpha : float
        The row's significance level (its interval's level is ``1 - alpha``): the plan's look,
        Holm's step (:func:`ledger` sets it).
    method : {"t", "bca"}
        The interval, fixed by the experiment's plan.
    baselines : mapping, optional
        ``{seed: {"baseline....": value}}``, the trivial predictors' metrics beside the shards
        (:mod:`dynkit.experiments.judging.baselines`), merged into each seed's metrics.
    plan : str
        How the plan reads (shown in the row).
    evidence, evidence_why : str
        The row's evidence (:data:`~dynkit.experiments.judging.evidence.EVIDENCE`; :func:`judge`
        sets it by :func:`~dynkit.experiments.judging.evidence.evidence_of`) and why: a pilot's
        outcome reads in a pilot's words, a row not run reads ``not run``.
    question : str
        The question the row answers (default the paper's claim).
    """
    if evidence not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {evidence!r}")
    row = _evaluate(claim, results, alpha=alpha, method=method, baselines=baselines, plan=plan)
    row.evidence, row.evidence_why, row.question = evidence, evidence_why, question or claim.claim
    row.reading = row.provisional if row.outcome == "deterministic" else row.outcome
    if evidence == "pilot":
        row.outcome = evidence_label(row.reading, evidence)
    elif evidence == "not run":
        row.outcome = "not run"
    return row


def _evaluate(
    claim: Comparison,
    results: dict | None,
    *,
    alpha: float,
    method: str,
    baselines: Mapping[int, Mapping[str, float]] | None,
    plan: str,
) -> LedgerRow:
    if results is None:
        return _undecided(
            claim,
            LedgerRow(
                claim,
                "inconclusive",
                f"no results at scale {claim.scale!r}",
                seeds_needed=MIN_SEEDS,
                alpha=alpha,
                plan=plan,
            ),
        )
    by_seed = metrics_and_baselines(results, baselines)
    if not by_seed:
        return _undecided(
            claim,
            LedgerRow(
                claim,
                "inconclusive",
                "no seeds in the results",
                seeds_needed=MIN_SEEDS,
                alpha=alpha,
                plan=plan,
            ),
        )
    checks = claim.validity()
    bar = _bar_text(claim, checks, by_seed)
    needed = list(dict.fromkeys([*claim.value.metrics, *(k for c in checks for k in c.metrics)]))
    gap = _missing(by_seed, needed)
    if gap:
        return LedgerRow(
            claim,
            "invalid",
            f"incomplete: {gap}",
            n=len(by_seed),
            alpha=alpha,
            plan=plan,
            baseline=bar,
        )
    invalid: dict[int, list[str]] = {}  # seed -> what failed
    failures: dict[str, list[str]] = {}  # what failed -> "seed s: value", for a short reason
    for seed, m in sorted(by_seed.items()):
        found = []
        for k in claim.value.metrics:
            v = m[k]
            if not _finite(v):
                found.append((f"{k} diverged", f"seed {seed}: {v}"))
            elif claim.value.scale == "log" and v <= 0:
                found.append(
                    (f"{k} <= 0 (a log effect needs positive values)", f"seed {seed}: {v:g}")
                )
        for c in checks:
            values = [m[k] for k in c.metrics]
            if not all(_finite(v) for v in values):
                found.append(
                    (f"{c.kind}: {', '.join(c.metrics)} diverged", f"seed {seed}: {values}")
                )
                continue
            ok, got = c.test(*values)
            if not ok:
                shown = (
                    " vs ".join(f"{k} {v:.4g}" for k, v in zip(c.metrics, got))
                    if isinstance(got, tuple)
                    else f"{got:.4g}"
                )
                found.append((f"{c.kind}: {c.why}", f"seed {seed}: {shown}"))
        for what, where in found:
            invalid.setdefault(seed, []).append(what)
            failures.setdefault(what, []).append(where)
    if invalid:
        reason = "; ".join(
            f"{what} fails in {', '.join(where)}" for what, where in failures.items()
        )
        return LedgerRow(
            claim,
            "invalid",
            reason,
            n=len(by_seed),
            invalid_seeds=invalid,
            alpha=alpha,
            plan=plan,
            baseline=bar,
        )
    effects = {seed: claim.value(m) for seed, m in sorted(by_seed.items())}
    bad = {s: v for s, v in effects.items() if not math.isfinite(v)}
    if bad:
        return LedgerRow(
            claim,
            "invalid",
            "; ".join(f"seed {s}: effect {v}" for s, v in bad.items()),
            n=len(effects),
            invalid_seeds={s: [f"effect {v}"] for s, v in bad.items()},
            alpha=alpha,
            plan=plan,
            baseline=bar,
        )
    null, target, sesoi = claim.bounds()
    xs = list(effects.values())
    n = len(xs)
    ci = _inference.interval(xs, 1 - alpha, method)
    sd = math.sqrt(sum((x - ci.mean) ** 2 for x in xs) / (n - 1)) if n > 1 else math.nan
    k, m, p = sign_test(xs, null, claim.rule.sign)
    row = LedgerRow(
        claim,
        "inconclusive",
        effect=ci.mean,
        ci_low=ci.low,
        ci_high=ci.high,
        ci_method=ci.method,
        n=n,
        n_agree=k,
        per_seed=effects,
        alpha=alpha,
        n_sign=m,
        sign_p=p,
        deterministic=ci.method == "deterministic",
        plan=plan,
        baseline=bar,
    )
    row.provisional = (
        decide(ci.low, ci.high, null, target, sesoi, claim.rule.sign) if n >= 2 else "inconclusive"
    )
    if n > 1:
        row.mde = _inference.detectable(sd, n, alpha)
        row.seeds_needed = _inference.seeds_needed(sd, sesoi, alpha)
    if n < MIN_SEEDS:
        row.reason = f"n = {n} < {MIN_SEEDS} seeds" + (
            f" (the CI so far: {row.provisional})" if n > 1 else ""
        )
        if n < 2 or row.provisional != "inconclusive":
            row.seeds_needed = MIN_SEEDS
        elif row.seeds_needed is not None:
            row.seeds_needed = max(MIN_SEEDS, row.seeds_needed)
        else:
            row.reason += (
                "; more than 1000 seeds to detect the smallest effect of interest at this spread"
            )
        return _undecided(claim, row)
    row.outcome = row.provisional
    if (
        row.deterministic
    ):  # one measurement, not n replications: its value against the bounds, not an interval
        row.outcome, row.seeds_needed = "deterministic", None
        row.reason = (
            f"one deterministic measurement (zero spread over {n} seeds): held against the "
            f"paper's effect "
            f"and ±{sesoi:.3g} it reads {row.provisional}"
        )
        return _undecided(claim, row)
    if row.outcome == "inconclusive":
        row.reason = (
            f"the CI holds no effect and effects beyond ±{sesoi:.3g}; minimal detectable "
            f"effect at n = {n}: "
            f"{row.mde:.3g}"
            + ("" if row.seeds_needed is not None else "; more than 1000 seeds needed")
        )
        return _undecided(claim, row)
    row.seeds_needed = None
    return _undecided(claim, row)


def _undecided(claim: Comparison, row: LedgerRow) -> LedgerRow:
    """A claim whose recipe states that it needs the paper's scale reads ``needs full scale``
    whatever its ``cpu`` interval (kept as ``provisional``); ``invalid`` stays ``invalid``."""
    if claim.full_scale and row.outcome != "invalid":
        if row.outcome != "inconclusive" or not row.provisional:
            row.provisional = row.outcome
        row.outcome = "needs full scale"
        row.reason = (row.reason + "; " if row.reason else "") + claim.full_scale
    return row


# ---- reading results
# ----------------------------------------------------------------------------------------------
def metrics_and_baselines(
    results: dict, baselines: Mapping[int, Mapping[str, float]] | None = None
) -> dict[int, dict[str, float]]:
    """``{seed: {metric: value}}``, a seed's shards merged (validated by :func:`load_results`),
    with the trivial predictors' metrics of that seed (``baselines``) beside them."""
    merged: dict[int, dict[str, float]] = {}
    for shard in results["shards"]:
        merged.setdefault(int(shard["seed"]), {}).update(
            {  # JSON has no NaN: a diverged metric is stored as "nan", "inf" or "-inf"
                k: float(v) if isinstance(v, str) else v for k, v in shard["metrics"].items()
            }
        )
    for seed, values in (baselines or {}).items():
        if seed in merged:
            merged[seed].update(values)
    return merged


def validate_results(results, path: str | Path) -> dict:
    """Raise :class:`LedgerError` naming ``path`` unless ``results`` is an aggregated
    ``results.json``: a dict with ``scale`` (str) and ``shards``, a list of
    ``{"seed": int, "metrics": {str: number or null}}`` (``null`` and the strings
    :data:`~dynkit.experiments.runner.NON_FINITE` that stand for non-finite numbers are kept: the
    ledger reports them as diverged)."""

    def bad(what):
        return LedgerError(f"{path}: not a valid results file: {what}")

    if not isinstance(results, dict):
        raise bad(f"expected a JSON object, got {type(results).__name__}")
    if not isinstance(results.get("scale"), str):
        raise bad(f"'scale' must be a string, got {results.get('scale')!r}")
    shards = results.get("shards")
    if not isinstance(shards, list):
        raise bad(f"'shards' must be a list of shard records, got {type(shards).__name__}")
    for i, s in enumerate(shards):
        if not isinstance(s, dict):
            raise bad(f"shards[{i}] must be an object, got {type(s).__name__}")
        if not isinstance(s.get("seed"), int) or isinstance(s.get("seed"), bool):
            raise bad(f"shards[{i}].seed must be an integer, got {s.get('seed')!r}")
        metrics = s.get("metrics")
        if not isinstance(metrics, dict):
            raise bad(
                f"shards[{i}].metrics must be an object of numbers, got {type(metrics).__name__}"
            )
        for k, v in metrics.items():
            if v is None or v in NON_FINITE:  # a diverged run: kept, reported as diverged
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise bad(
                    f"shards[{i}].metrics[{k!r}] must be a number, null or one of {NON_FINITE} "
                    f"(a diverged run), got {v!r}"
                )
    metrics = results.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        raise bad(f"'metrics' must be an object, got {type(metrics).__name__}")
    return results


def _strict_json(data: bytes, path: Path):
    """``data`` parsed as strict JSON (RFC 8259): NaN, Infinity and numbers beyond float's range are
    refused, as dynkit never writes them (a non-finite metric is written as ``null`` or a
    string)."""

    def constant(name):
        raise ValueError(f"{name} is not JSON (RFC 8259)")

    def number(text):
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"the number {text[:30]} lies beyond float's range")
        return value

    try:
        return json.loads(data.decode("utf-8"), parse_constant=constant, parse_float=number)
    except (UnicodeDecodeError, ValueError) as err:
        raise LedgerError(f"{path}: cannot read the results file: {err}") from err


def _point(p) -> str:
    return json.dumps(p or {}, sort_keys=True)


def verify_shards(results: dict, folder: str | Path, path: str | Path) -> None:
    """Raise :class:`LedgerError` naming ``path`` unless every shard record of ``results`` is a
    shard beside it: ``folder/shards/*/shard.json`` whose content matches its own sha256
    (:func:`~dynkit.experiments.runner.content_hash`; a shard written before records carried one is
    compared by its metrics alone), of the same experiment, scale, seed and point, with the same
    metrics, and no shard of that scale left out. A folder without ``shards/`` is not checked (a
    results file written outside a run)."""
    from ...io import read_regular_bytes
    from ..runner import content_hash

    shards_dir = Path(folder) / "shards"
    if not shards_dir.is_dir():
        return
    stored: dict[tuple[int, str], tuple[Path, dict]] = {}
    for shard_path in sorted(shards_dir.glob("*/shard.json")):
        try:
            data = read_regular_bytes(shard_path, "shard", single_link=True)
            record = json.loads(data.decode("utf-8"))
        except (OSError, ValueError) as err:
            raise LedgerError(f"{shard_path}: cannot read the shard beside {path}: {err}") from err
        if not isinstance(record, dict) or record.get("sha256", None) not in (
            None,
            content_hash(record),
        ):
            raise LedgerError(
                f"{shard_path}: the shard's content does not match its sha256 "
                f"(edited or damaged); {path} cannot be verified"
            )
        # shards written before records carried a content hash are compared by their metrics alone
        if record.get("scale") == results["scale"]:
            stored[(record.get("seed"), _point(record.get("point")))] = (shard_path, record)
    seen = set()
    for i, shard in enumerate(results["shards"]):
        key = (shard["seed"], _point(shard.get("point")))
        if key in seen:
            raise LedgerError(f"{path}: shards[{i}] (seed {shard['seed']}) appears twice")
        seen.add(key)
        if key not in stored:
            raise LedgerError(
                f"{path}: shards[{i}] (seed {shard['seed']}, point {key[1]}) has no "
                f"shard in {shards_dir}: results that no shard backs are refused"
            )
        shard_path, record = stored[key]
        if record.get("experiment") != results.get("experiment", record.get("experiment")):
            raise LedgerError(
                f"{path}: shards[{i}] is backed by {shard_path}, a shard of another "
                f"experiment ({record.get('experiment')!r})"
            )
        stored_metrics = record.get("metrics") or {}
        if json.dumps(stored_metrics, sort_keys=True) != json.dumps(
            shard["metrics"], sort_keys=True
        ):
            differ = sorted(
                k
                for k in set(stored_metrics) | set(shard["metrics"])
                if stored_metrics.get(k) != shard["metrics"].get(k)
            )
            raise LedgerError(
                f"{path}: shards[{i}] (seed {shard['seed']}) differs from its shard "
                f"{shard_path} in {', '.join(differ[:5])}: the results file was "
                f"edited or is stale"
            )
    left_out = sorted(set(stored) - seen)
    if left_out:
        seeds = sorted({k[0] for k in left_out})
        raise LedgerError(
            f"{path}: {len(left_out)} shard(s) of scale {results['scale']!r} in "
            f"{shards_dir} are not in the results file (seeds {seeds})"
        )


def load_results(
    root: str | Path, experiment: str, scale: str, folder: str | None = None
) -> dict | None:
    """``root/<folder>/results.json`` (``folder`` default ``experiment``) if it holds ``scale``'s
    run, else None; :class:`LedgerError` naming the file if it is not a regular file inside
    ``root/<folder>`` (a device, a pipe, a link out of the folder), not strict JSON, not a results
    file, a results file of another experiment, or not what the shards beside it hold
    (:func:`verify_shards`)."""
    from ...io import read_regular_bytes

    folder = Path(root) / (folder or experiment)
    path = folder / RESULTS_FILE
    if not os.path.lexists(path):
        return None
    if path.resolve().parent != folder.resolve():
        raise LedgerError(
            f"{path}: the results file must lie in {folder}, got a link to {path.resolve()}"
        )
    try:
        data = read_regular_bytes(path, "results")
    except (OSError, ValueError) as err:
        raise LedgerError(f"{path}: cannot read the results file: {err}") from err
    results = _strict_json(data, path)
    validate_results(results, path)
    if "experiment" in results and results["experiment"] != experiment:
        raise LedgerError(
            f"{path}: the results of experiment {results['experiment']!r}, not of {experiment!r}"
        )
    if results["scale"] != scale:
        return None
    verify_shards(results, folder, path)
    return results


def default_results_root() -> Path:
    """The results of record: ``analysis/results`` of the source tree dynkit runs from, else of the
    working directory (an installed, non-editable dynkit has no source tree beside it)."""
    for root in (RESULTS_ROOT, Path.cwd() / "analysis" / "results"):
        if root.is_dir():
            return root
    raise ValueError(
        f"results must be given: no results of record at {str(RESULTS_ROOT)!r} nor in "
        f"./analysis/results (run from a dynkit checkout, or pass the folder)"
    )


def ledger(
    results: str | Path | None = None,
    claims: Sequence[Comparison] | None = None,
    plans: str | Path | Mapping | None = None,
    paper_plans: str | Path | Mapping | None = None,
) -> Ledger:
    """The ledger of every registered claim, computed from the results under ``results``.

    Parameters
    ----------
    results : path, optional
        A folder holding ``<experiment>/results.json`` as written by :func:`dynkit.experiments.run`
        (and the trivial predictors' ``<experiment>/baselines.json``); default the committed results
        of record, ``analysis/results``.
    claims : sequence of Comparison, optional
        Default: every registered claim (:data:`COMPARISONS`).
    plans : path or mapping, optional
        The plans (:mod:`dynkit.experiments.judging.plans`): a folder of ``<experiment>.json`` or
        ``{experiment: Plan}``; default ``plans/`` beside the results folder (``analysis/plans`` for
        the results of record). An experiment without a plan is judged as one look at its n with a t
        interval, and its rows say so.
    paper_plans : path or mapping, optional
        The plans of campaigns at the paper scale, default ``paper/`` inside a plans folder (none
        when ``plans`` is a mapping): an experiment with one and results in
        ``<results>/<experiment>_paper`` has its rows judged there (:func:`with_replications`).

    Raises
    ------
    LedgerError
        A results file is unreadable (truncated, binary) or not a results file; the message names
        it.
    """
    from .. import load_all
    from .plans import load_plans

    load_all()
    root = Path(results) if results is not None else default_results_root()
    if not root.is_dir():
        raise ValueError(
            f"results must be a folder holding <experiment>/results.json, got {str(results)!r}"
        )
    plans_root = None if isinstance(plans, Mapping) else Path(plans or root.parent / "plans")
    plan_of = dict(plans) if plans_root is None else load_plans(plans_root)
    if isinstance(paper_plans, Mapping):
        paper_plan_of = dict(paper_plans)
    elif paper_plans is not None or plans_root is not None:
        paper_plan_of = load_plans(paper_plans or plans_root / PAPER_PLANS)
    else:
        paper_plan_of = {}
    lookup, cache = _results_lookup(root)

    from .inventory import not_run

    rows = judge(list(claims if claims is not None else COMPARISONS.values()), lookup, plan_of)
    rows = with_replications(rows, root, paper_plan_of)
    recorded = {
        exp: found["config"]
        for (exp, scale), (found, _) in cache.items()
        if scale == "cpu" and found is not None and isinstance(found.get("config"), dict)
    }
    return Ledger(rows, recorded, not_run(COMPARISONS) if claims is None else [])


PAPER_PLANS = "paper"
"""The folder, inside a plans folder, of the plans of campaigns at the paper scale."""
PAPER_RESULTS = "{experiment}_paper"
"""The results folder of an experiment's campaign at the paper scale, inside a results folder."""


def _results_lookup(root: str | Path, folder: str = "{experiment}") -> tuple[Callable, dict]:
    """``(lookup, cache)``: ``lookup(claim) -> (results or None, {seed: baselines})`` of the
    claim's experiment and scale from ``root/<folder>`` (read once per experiment and scale, kept
    in ``cache``)."""
    cache: dict = {}

    def lookup(claim: Comparison):
        key = (claim.experiment, claim.scale)
        if key not in cache:
            where = folder.format(experiment=claim.experiment)
            found = load_results(root, *key, folder=where)
            cache[key] = (found, _baselines.load(Path(root) / where) if found is not None else {})
        return cache[key]

    return lookup, cache


def with_replications(
    rows: Sequence[LedgerRow], root: str | Path, plan_of: Mapping
) -> list[LedgerRow]:
    """``rows`` with each row of an experiment that has a campaign at the paper scale (a plan in
    ``plan_of`` and results at ``root/<experiment>_paper``) judged on that campaign's latest look
    at its plan's level, whatever that look reads (an interim look that did not decide reads
    ``inconclusive``): the authors' recipe outranks a pilot. The pilot's own outcome and what it
    measured stay in the row (``pilot``), so a reader sees when it does not carry over."""
    lookup, _ = _results_lookup(root, PAPER_RESULTS)
    chosen = [
        claim
        for claim in (dataclasses.replace(r.claim, scale="paper") for r in rows)
        if claim.experiment in plan_of and lookup(claim)[0] is not None
    ]
    if not chosen:
        return list(rows)
    judged = {r.claim.id: r for r in judge(chosen, lookup, plan_of)}
    out = []
    for row in rows:
        paper = judged.get(row.claim.id)
        if paper is not None:
            paper.pilot = f"{row.outcome} ({_measured_words(row)})"
            paper.evidence_why += "; " + _look_text(paper, plan_of[row.claim.experiment])
            ours = _unstated_settings(row.claim.experiment)
            if ours:
                paper.evidence_why += "; where the paper states no value, ours: " + ours
        out.append(paper or row)
    return out


def _unstated_settings(experiment: str) -> str:
    """The settings of ``experiment``'s paper scale that are not the paper's, each with our value
    and the paper's (by the recipe's construction, those the paper does not state)."""
    from ..recipes import RECIPES
    from ..registry import get

    if experiment not in RECIPES:
        return ""
    rows = RECIPES[experiment].rows(get(experiment).config("paper"), "paper")
    return "; ".join(
        f"{r['setting']} {r['ours']} (paper: {r['paper']})" for r in rows if not r["as_paper"]
    )


def _look_text(row: LedgerRow, plan) -> str:
    looks = list(plan.looks)
    at = looks.index(row.n) + 1 if row.n in looks else None
    where = PAPER_RESULTS.format(experiment=row.claim.experiment)
    if at is None:
        return f"{row.n} seeds in {where}, at none of the plan's looks {looks}"
    left = "" if at == len(looks) else f", the next at {looks[at]} seeds not run"
    return f"look {at} of {len(looks)} ({row.n} seeds) of the plan, in {where}{left}"


def judge(
    chosen: Sequence[Comparison], lookup: Callable[[Comparison], tuple], plan_of: Mapping
) -> list[LedgerRow]:
    """The rows of ``chosen``, each family's rows at Holm's step-down levels over the whole family,
    primary row included, from the plan's level for the look its results are at (so the chance of
    any false decision in a family stays at most that level; see the module docstring), each with
    its evidence (:func:`~dynkit.experiments.judging.evidence.evidence_of`).

    ``lookup(claim) -> (results or None, {seed: baselines})``; ``plan_of``: ``{experiment: Plan}``.
    """
    from .evidence import evidence_of, question

    families: dict[str, list[int]] = {}
    for i, claim in enumerate(chosen):
        families.setdefault(family_of(claim), []).append(i)
    primary = {
        f: next((i for i in idx if chosen[i].primary), idx[0]) for f, idx in families.items()
    }
    setting: list[dict] = []  # per row: evaluate's keyword arguments at the look's level
    rows: list[LedgerRow] = []
    for claim in chosen:
        found, base = lookup(claim)
        plan = plan_of.get(claim.experiment)
        level, why = evidence_of(claim, found)
        kw = {
            "baselines": base,
            "method": plan.interval if plan else "t",
            "plan": plan.describe() if plan else "none (one look at the results' n, t interval)",
            "evidence": level,
            "evidence_why": why,
            "question": question(claim),
        }
        n = len({int(s["seed"]) for s in found["shards"]}) if found is not None else 0
        if plan is not None and found is not None:
            try:
                kw["alpha"] = plan.level_at(n)
            except ValueError as err:  # results that did not follow their plan decide nothing
                setting.append(kw)
                row = LedgerRow(
                    claim,
                    evidence_label("invalid", level),
                    str(err),
                    n=n,
                    plan=kw["plan"],
                    evidence=level,
                    evidence_why=why,
                    reading="invalid",
                    question=kw["question"],
                )
                rows.append(row)
                continue
        setting.append(kw)
        rows.append(evaluate(claim, found, **kw))
    for fam, idx in families.items():
        for i in idx:
            rows[i].family, rows[i].primary = fam, i == primary[fam]
        tested = [i for i in idx if rows[i].per_seed and rows[i].reading != "invalid"]
        if len(tested) < 2:
            continue
        ps = [p_value(list(rows[i].per_seed.values()), chosen[i].bounds()[0]) for i in tested]
        base_alpha = min(setting[i].get("alpha", ALPHA) for i in tested)
        for i, level in zip(tested, holm_levels(ps, base_alpha)):
            rows[i] = evaluate(chosen[i], lookup(chosen[i])[0], **{**setting[i], "alpha": level})
            rows[i].family, rows[i].primary = fam, i == primary[fam]
    for claim, row in zip(chosen, rows):  # what the run's data were, as its results record them
        plan = plan_of.get(claim.experiment)
        row.rule_plan = (
            "none" if plan is None else "prospective" if plan.under_rule else "retrospective"
        )
        found = lookup(claim)[0]
        if found is not None and claim.experiment in DATA_NOTES:
            row.data = DATA_NOTES[claim.experiment](found.get("config") or {})
    return rows
