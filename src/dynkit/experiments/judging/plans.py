"""Seeds fixed before the results: one committed plan per experiment.

A plan says, before the main runs, how many seeds the experiment runs and when its rows are looked
at (the looks of a group-sequential design, or one look), how much of the error rate each look
spends (Lan-DeMets O'Brien-Fleming or Pocock spending,
:func:`~dynkit.experiments.judging.inference.look_levels`), which interval every row uses (``t`` or
``bca``: fixed here, never chosen from the data), which rows it decides, and the basis of the seed
count: the pilot's per-seed spread of each row and the row's smallest effect of interest at 80 %
power (:func:`~dynkit.experiments.judging.inference.seeds_needed`), or the cap.

Plans live in ``analysis/plans/<experiment>.json``; the ledger reads the plan of each row's
experiment and judges the row at the level of the look its results are at. A plan written after the
results it governs says so (``prospective: false``) and the ledger shows it.

    python -m analysis.plans NAME --pilot analysis/results/NAME/results.json [--cap 10] [--looks 2]
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .inference import (
    ALPHA,
    INTERVAL_METHODS,
    POWER,
    RULE_FIXED,
    SPENDING,
    look_levels,
    seeds_needed,
)
from dynkit._checkout import PLANS

__all__ = ["PLANS_ROOT", "KIND_TEXT", "CAP", "Plan", "plan_from_pilot", "load_plan", "load_plans"]

PLANS_ROOT = PLANS
"""The committed plans (``analysis/plans/<experiment>.json``)."""
KIND_TEXT = {True: "prospective", False: "written after the results"}
"""How :meth:`Plan.describe` ends, by ``prospective`` (the ledger's plan column reads it back:
:func:`~dynkit.experiments.judging.ledger.plan_kind`)."""
CAP = 10
"""The most seeds a plan runs at the ``cpu`` scale (a row needing more is inconclusive at the
cap)."""


@dataclass(frozen=True)
class Plan:
    """One experiment's plan (see the module docstring).

    Parameters
    ----------
    experiment : str
    looks : tuple of int
        Seed counts at which the rows are judged, increasing; the last is the planned number of
        seeds (seeds ``0 .. looks[-1] - 1``). One look is a fixed-n design.
    interval : {"t", "bca"}
    spending : {"obrien-fleming", "pocock"}
    rows : tuple of str
        The ledger rows the plan decides.
    basis : dict
        ``{row: {"pilot_sd", "sesoi", "seeds_needed", "pilot_n"}}``: where the seed count comes
        from.
    prospective : bool
        Whether the plan was committed before the results it governs.
    written : str
        When and by what (a date and a note).
    alpha : float
        The family-wise error rate the looks spend.
    """

    experiment: str
    looks: tuple[int, ...]
    interval: str = "t"
    spending: str = "obrien-fleming"
    rows: tuple[str, ...] = ()
    basis: dict = field(default_factory=dict)
    prospective: bool = True
    written: str = ""
    alpha: float = ALPHA

    def __post_init__(self):
        object.__setattr__(self, "looks", tuple(self.looks))
        object.__setattr__(self, "rows", tuple(self.rows))
        if self.interval not in INTERVAL_METHODS:
            raise ValueError(f"interval must be one of {INTERVAL_METHODS}, got {self.interval!r}")
        if self.spending not in SPENDING:
            raise ValueError(f"spending must be one of {SPENDING}, got {self.spending!r}")
        look_levels(self.looks, self.alpha, self.spending)  # validates the looks

    @property
    def under_rule(self) -> bool:
        """Whether the plan was written under the ledger's present rule (on or after
        :data:`~dynkit.experiments.judging.inference.RULE_FIXED`): a plan written before it is
        retrospective for the rule, whatever it was for its own results."""
        return self.written[:10] >= RULE_FIXED

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.looks[-1]))

    def level_at(self, n: int) -> float:
        """The significance level of the look with ``n`` seeds; a ValueError when ``n`` is not a
        look."""
        if n not in self.looks:
            raise ValueError(
                f"the results hold {n} seeds, not a look of {self.experiment}'s plan (looks "
                f"{list(self.looks)})"
            )
        return look_levels(self.looks, self.alpha, self.spending)[self.looks.index(n)]

    def describe(self) -> str:
        kind = KIND_TEXT[self.prospective]
        looks = (
            f"looks at n = {', '.join(map(str, self.looks))} ({self.spending} spending)"
            if len(self.looks) > 1
            else f"n = {self.looks[0]}"
        )
        return f"{self.experiment}: {looks}, {self.interval} interval, {kind}"

    def to_dict(self) -> dict:
        return asdict(self)


def plan_from_pilot(
    experiment: str,
    per_row: Mapping[str, tuple[Sequence[float], float]],
    *,
    cap: int = CAP,
    n_looks: int = 1,
    interval: str = "t",
    spending: str = "obrien-fleming",
    prospective: bool = True,
    note: str = "",
    min_seeds: int = 5,
) -> Plan:
    """A plan from a pilot: ``per_row = {row: (pilot per-seed effects, sesoi)}``.

    The planned n is the largest over the rows of the seeds that detect the row's ``sesoi`` at 80 %
    power (from the pilot's standard deviation), at least ``min_seeds``, at most ``cap`` (a row
    needing more is inconclusive at the cap, and its basis says so); ``n_looks`` looks are spread
    evenly up to it.
    """
    basis, wanted = {}, min_seeds
    for row, (effects, sesoi) in per_row.items():
        xs = [float(x) for x in effects]
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else math.nan
        need = seeds_needed(sd, sesoi) if math.isfinite(sd) else None
        basis[row] = {
            "pilot_n": len(xs),
            "pilot_sd": sd,
            "sesoi": sesoi,
            "seeds_needed": need,
            "power": POWER,
            "at_cap": need is None or need > cap,
        }
        wanted = max(wanted, min(cap, need if need is not None else cap))
    n = wanted
    looks = sorted({max(2, round(n * (k + 1) / n_looks)) for k in range(n_looks)})
    written = f"{datetime.date.today().isoformat()}" + (f": {note}" if note else "")
    return Plan(
        experiment, tuple(looks), interval, spending, tuple(per_row), basis, prospective, written
    )


def load_plan(path: str | Path, option: str = "plan") -> Plan:
    """The :class:`Plan` in the JSON file ``path`` (a regular file:
    :func:`dynkit.io.read_regular_text`); errors name ``option``."""
    from ...io import read_regular_text

    text = read_regular_text(path, option)
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{option} must be a JSON plan file, got {str(path)!r}: {err}") from None
    if not isinstance(data, dict) or "experiment" not in data:
        raise ValueError(
            f"{option} must be a plan (a JSON object with 'experiment', 'looks', ...), got "
            f"{str(path)!r} holding {type(data).__name__}"
        )
    return Plan(**{k: data[k] for k in Plan.__dataclass_fields__ if k in data})


def load_plans(root: str | Path | None = None) -> dict[str, Plan]:
    """Every committed plan under ``root`` (default :data:`PLANS_ROOT`), by experiment; ``{}``
    without one."""
    root = Path(root) if root is not None else PLANS_ROOT
    if not root.is_dir():
        return {}
    return {p.stem: load_plan(p) for p in sorted(root.glob("*.json"))}
