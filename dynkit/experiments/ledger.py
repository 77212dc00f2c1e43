"""The claims ledger: each empirical claim of the five papers, our number over seeds, and a computed verdict."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .runner import RESULTS_FILE, mean_ci, per_seed_metrics

VERDICTS = ("reproduced", "partly reproduced", "not reproduced at this scale", "contradicted")
MIN_SEEDS = 3
RESULTS_ROOT = Path(__file__).resolve().parents[2] / "analysis" / "results"
"""Where the results of record live (``analysis/results/<experiment>/results.json``)."""


@dataclass(frozen=True)
class Rule:
    """The verdict rule of a claim whose effect is a number that should be above (or below) a value.

    Parameters
    ----------
    direction : {"greater", "less"}
        Which side of ``null`` the paper's effect lies on.
    target : float
        The paper's effect size (e.g. a ratio of 0.8): ``reproduced`` when the whole 95 % CI lies
        beyond it.
    null : float
        No effect (e.g. a ratio of 1): ``contradicted`` when the whole CI lies on the wrong side of it.

    Notes
    -----
    With ``s = +1`` for "greater" and ``-1`` for "less", on ``s * value``:

    * fewer than :data:`MIN_SEEDS` seeds: ``not reproduced at this scale``;
    * CI entirely beyond ``target``: ``reproduced``;
    * CI entirely beyond ``null`` but not beyond ``target`` (a significant effect in the paper's direction,
      smaller than the paper's): ``partly reproduced``;
    * CI entirely on the other side of ``null``: ``contradicted``;
    * otherwise (the CI contains ``null``: no effect distinguishable at this scale):
      ``not reproduced at this scale``.
    """

    direction: str
    target: float
    null: float

    def __post_init__(self):
        if self.direction not in ("greater", "less"):
            raise ValueError(f"direction must be 'greater' or 'less', got {self.direction!r}")
        s = 1 if self.direction == "greater" else -1
        if s * self.target < s * self.null:
            raise ValueError(f"target {self.target} must lie on the {self.direction} side of null {self.null}")

    def verdict(self, ours: Mapping) -> str:
        if ours.get("n_seeds", 0) < MIN_SEEDS or ours.get("mean") is None:
            return "not reproduced at this scale"
        s = 1 if self.direction == "greater" else -1
        lo, hi = sorted((s * ours["ci_low"], s * ours["ci_high"]))
        if lo > s * self.target:
            return "reproduced"
        if lo > s * self.null:
            return "partly reproduced"
        if hi < s * self.null:
            return "contradicted"
        return "not reproduced at this scale"

    def describe(self) -> str:
        op = ">" if self.direction == "greater" else "<"
        if self.target == self.null:
            return f"reproduced if 95% CI {op} {self.null:g}; contradicted if CI on the other side"
        return (f"reproduced if 95% CI {op} {self.target:g}; partly if CI {op} {self.null:g}; "
                f"contradicted if CI on the other side of {self.null:g}")


def greater(target: float, null: float | None = None) -> Rule:
    return Rule("greater", target, target if null is None else null)


def less(target: float, null: float | None = None) -> Rule:
    return Rule("less", target, target if null is None else null)


Value = Callable[[Mapping[str, float]], float]


def metric(name: str) -> Value:
    """A claim's value: the seed's metric ``name``."""
    def value(m):
        return m[name]
    value.__name__ = name
    return value


def ratio(numerator: str, denominator: str) -> Value:
    """A claim's value: ``numerator / denominator`` within each seed."""
    def value(m):
        return m[numerator] / m[denominator]
    value.__name__ = f"{numerator} / {denominator}"
    return value


def difference(a: str, b: str) -> Value:
    """A claim's value: ``a - b`` within each seed."""
    def value(m):
        return m[a] - m[b]
    value.__name__ = f"{a} - {b}"
    return value


@dataclass(frozen=True)
class Claim:
    """One row of the ledger: a paper's empirical claim, the experiment that tests it and the rule."""

    id: str
    paper: str
    claim: str
    paper_figure: str
    experiment: str
    metric: str
    value: Value
    rule: Rule
    scale: str = "cpu"


CLAIMS: dict[str, Claim] = {}


def add_claim(id: str, *, paper: str, claim: str, paper_figure: str, experiment: str, metric: str, value: Value,
              rule: Rule, scale: str = "cpu") -> Claim:
    """Register a ledger row (see :class:`Claim`); ``value(per_seed_metrics) -> float``."""
    if id in CLAIMS:
        raise ValueError(f"a claim with id {id!r} is already registered")
    row = Claim(id, paper, claim, paper_figure, experiment, metric, value, rule, scale)
    CLAIMS[id] = row
    return row


@dataclass
class LedgerRow:
    claim: Claim
    ours: dict
    verdict: str
    note: str = ""

    def to_dict(self) -> dict:
        c = self.claim
        return {"id": c.id, "paper": c.paper, "claim": c.claim, "paper_figure": c.paper_figure,
                "experiment": c.experiment, "metric": c.metric, "ours": self.ours, "scale": c.scale,
                "verdict": self.verdict, "rule": c.rule.describe(), "note": self.note}


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.3g}"


@dataclass
class Ledger:
    rows: list[LedgerRow]

    def to_dict(self) -> dict:
        return {"rows": [r.to_dict() for r in self.rows]}

    def verdict_counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}

    def records(self) -> list[dict]:
        """One flat dict per row (our number split into ``mean``, ``ci_low``, ``ci_high``, ``n_seeds``):
        the rows of ``dynkit ledger --format csv`` and of :meth:`to_pandas`."""
        out = []
        for r in self.rows:
            d = r.to_dict()
            ours = d.pop("ours")
            d.update({k: ours.get(k) for k in ("mean", "ci_low", "ci_high", "n_seeds")})
            out.append({k: d[k] for k in ("id", "paper", "claim", "paper_figure", "experiment", "metric", "mean",
                                          "ci_low", "ci_high", "n_seeds", "scale", "verdict", "rule", "note")})
        return out

    def to_pandas(self):
        """The ledger as a ``pandas.DataFrame`` (one row per claim, :meth:`records`); needs pandas."""
        from ..io import to_pandas

        return to_pandas(self.records(), "Ledger")

    def to_markdown(self) -> str:
        lines = ["| id | paper | claim | paper figure | experiment | metric | ours (mean [95% CI], seeds) | scale "
                 "| verdict |", "|" + " --- |" * 9]
        for r in self.rows:
            c, o = r.claim, r.ours
            ours = f"{_fmt(o['mean'])} [{_fmt(o['ci_low'])}, {_fmt(o['ci_high'])}], n={o['n_seeds']}"
            cells = [c.id, c.paper, c.claim, c.paper_figure, c.experiment, c.metric, ours, c.scale,
                     r.verdict + (f" ({r.note})" if r.note else "")]
            lines.append("| " + " | ".join(str(x).replace("|", "/") for x in cells) + " |")
        counts = ", ".join(f"{k}: {v}" for k, v in self.verdict_counts().items())
        return "\n".join(lines) + f"\n\n{len(self.rows)} claims — {counts}\n"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def evaluate(claim: Claim, results: dict | None) -> LedgerRow:
    """One row from an experiment's aggregated results (None: not run yet)."""
    if results is None:
        return LedgerRow(claim, mean_ci([]), "not reproduced at this scale", "no results")
    values, note = [], ""
    for seed, metrics in sorted(per_seed_metrics(results).items()):
        try:
            v = float(claim.value(metrics))
        except (KeyError, ZeroDivisionError):
            continue
        if math.isfinite(v):
            values.append(v)
    ours = mean_ci(values)
    if ours["n_seeds"] < MIN_SEEDS:
        note = f"{ours['n_seeds']} seed(s) < {MIN_SEEDS}"
    return LedgerRow(claim, ours, claim.rule.verdict(ours), note)


def load_results(root: str | Path, experiment: str, scale: str) -> dict | None:
    """``root/<experiment>/results.json`` if it holds ``scale``'s run, else None."""
    path = Path(root) / experiment / RESULTS_FILE
    if not path.exists():
        return None
    results = json.loads(path.read_text())
    return results if results.get("scale") == scale else None


def default_results_root() -> Path:
    """The results of record: ``analysis/results`` of the source tree dynkit runs from, else of the
    working directory (an installed, non-editable dynkit has no source tree beside it)."""
    for root in (RESULTS_ROOT, Path.cwd() / "analysis" / "results"):
        if root.is_dir():
            return root
    raise ValueError(f"results must be given: no results of record at {str(RESULTS_ROOT)!r} nor in "
                     f"./analysis/results (run from a dynkit checkout, or pass the folder)")


def ledger(results: str | Path | None = None, claims: Sequence[Claim] | None = None) -> Ledger:
    """The ledger of every registered claim, computed from the results under ``results``.

    Parameters
    ----------
    results : path, optional
        A folder holding ``<experiment>/results.json`` as written by :func:`dynkit.experiments.run`;
        default the committed results of record, ``analysis/results``.
    claims : sequence of Claim, optional
        Default: every registered claim (:data:`CLAIMS`).
    """
    from . import load_all

    load_all()
    root = Path(results) if results is not None else default_results_root()
    if not root.is_dir():
        raise ValueError(f"results must be a folder holding <experiment>/results.json, got {str(results)!r}")
    cache: dict = {}
    rows = []
    for claim in (claims if claims is not None else CLAIMS.values()):
        key = (claim.experiment, claim.scale)
        if key not in cache:
            cache[key] = load_results(root, *key)
        rows.append(evaluate(claim, cache[key]))
    return Ledger(rows)
