"""Seeds by a plan fixed before the results: ``dynkit run NAME --planned``.

Issue 21's ``--until-decided`` added one seed at a time while a row was inconclusive and judged
every look at 95 %: under a true null that decides falsely in about 11 % of rows instead of 5 %
(tests/test_inference.py simulates it). It is replaced by a group-sequential design: the
experiment's committed plan (:mod:`dynkit.experiments.judging.plans`) names its looks (seed counts)
and the alpha each look spends (Lan-DeMets O'Brien-Fleming or Pocock); :func:`run_planned` runs the
seeds of the first look (finished shards reused), judges the experiment's rows at that look's level
(families and Holm's levels as in the ledger), and goes on to the next look only while a row is
``inconclusive``. The results record the plan they followed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from .ledger import COMPARISONS, Comparison, judge
from .plans import Plan, load_plan, PLANS_ROOT
from ..registry import get
from ..runner import run

__all__ = ["UNDECIDED", "run_planned", "follow_plan"]

UNDECIDED = ("inconclusive",)


def run_planned(
    name: str,
    plan: Plan | str | Path | None = None,
    scale: str = "cpu",
    out: str | Path | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    **run_kwargs,
) -> dict:
    """Run ``name`` look by look of its plan until every ledger row of it is decided or the last
    look is done.

    Parameters
    ----------
    name, scale, out
        As :func:`dynkit.experiments.run` (``out`` default ``runs/experiments/<name>/<scale>``).
    plan : Plan or path, optional
        Default the committed plan ``analysis/plans/<name>.json``; a ValueError names the file when
        it is missing (seeds are not chosen after the results).
    **run_kwargs
        Passed to :func:`dynkit.experiments.run` (backend, device, address).

    Returns
    -------
    dict
        The last ``results.json``, with ``"plan"`` (the plan followed, the look stopped at and its
        level) and ``"rows"`` (``{id: outcome}``) added.
    """
    from . import baselines as _baselines
    from ...io import write_json

    get(name)
    if not isinstance(plan, Plan):
        path = Path(plan) if plan is not None else PLANS_ROOT / f"{name}.json"
        if not path.exists():
            raise ValueError(
                f"plan must be a committed plan file, got {str(path)!r}, which does not "
                f"exist (write it "
                f"before the runs: python -m analysis.plans {name} ...)"
            )
        plan = load_plan(path)
    if plan.experiment != name:
        raise ValueError(f"plan must be {name}'s, got the plan of {plan.experiment!r}")
    out = Path(out) if out is not None else Path("runs/experiments") / name / scale
    say = progress
    claims = [
        c
        for c in COMPARISONS.values()
        if c.experiment == name and (not plan.rows or c.id in plan.rows)
    ]
    base: dict = {}

    def results_at(n: int) -> dict:
        results = run(
            name, scale=scale, seeds=tuple(range(n)), out=out, progress=progress, **run_kwargs
        )
        base.clear()
        if name in _baselines.BASELINES:
            data = _baselines.compute(name, results)
            write_json(
                out / _baselines.BASELINES_FILE, data, command=f"dynkit run {name} --planned"
            )
            base.update({int(k): v for k, v in data["seeds"].items()})
        return results

    n, rows, results = follow_plan(claims, plan, results_at, lambda n: base, say)
    results["plan"] = {**plan.to_dict(), "stopped_at": n, "level": plan.level_at(n)}
    results["rows"] = {i: r.outcome for i, r in rows.items()}
    write_json(out / "results.json", results, command=f"dynkit run {name} --planned")
    return results


def follow_plan(
    claims: Sequence[Comparison],
    plan: Plan,
    results_at: Callable[[int], dict],
    baselines_at: Callable[[int], Mapping] | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[int, dict, dict]:
    """The stopping rule of a plan: at each look ``n``, ``results_at(n)`` (the results of seeds
    ``0 .. n-1``) judged at the look's level (:func:`~dynkit.experiments.judging.ledger.judge`);
    stop at the first look where no row is ``inconclusive``, else at the last. Returns
    ``(n, {id: LedgerRow}, results)``.
    """
    say = say or (lambda line: None)
    for n in plan.looks:
        results = results_at(n)
        base = baselines_at(n) if baselines_at is not None else {}
        rows = {
            r.claim.id: r for r in judge(claims, lambda c: (results, base), {plan.experiment: plan})
        }
        say(
            f"{plan.experiment}: look at {n} seeds (level {plan.level_at(n):.4g}); "
            + ", ".join(f"{i}: {r.outcome}" for i, r in rows.items())
        )
        if not any(r.reading in UNDECIDED for r in rows.values()):  # a pilot's words read the same
            break
    return n, rows, results
