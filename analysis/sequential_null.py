"""The false-decision rate of the seed rules under a true null, by simulation: per row and per
family.

    python -m analysis.sequential_null [--reps 4000]

Per-seed effects N(0, 1) with no effect, a row with the paper's effect 1 and the smallest effect of
interest 0.5: the rule of issue 21 (5 seeds, then one more while inconclusive up to 10, each look at
95 %), one look at 10 seeds, and the committed group-sequential rule (the same looks,
O'Brien-Fleming and Pocock spending, judged by dynkit.experiments.judging.planned.follow_plan as ``dynkit run
--planned`` does). Then a family of ``FAMILY`` rows of one experiment, all with no effect, 10 seeds,
their per-seed effects independent or correlated (``RHO``, rows computed from the same shards): the
chance of any false decision in the family when its primary row is judged at 95 % and the others by
Holm at 5 % (the rule before), and when the whole family is judged by Holm at 5 %
(:func:`dynkit.experiments.judging.ledger.judge`). Prints each rate with its Monte-Carlo standard error.
"""  # noqa: E501

from __future__ import annotations

import argparse
import math

import numpy as np

from dynkit.experiments.judging.planned import follow_plan
from dynkit.experiments.judging.inference import (
    DECISIONS,
    decide,
    holm_levels,
    interval,
    p_value,
    sequential_outcome,
)
from dynkit.experiments.judging.ledger import Comparison, greater, judge, metric
from dynkit.experiments.judging.plans import Plan

LOOKS = (5, 6, 7, 8, 9, 10)
FAMILY = 4
RHO = 0.5


def _family_effects(reps: int, rho: float, rng) -> np.ndarray:
    """``(reps, 10 seeds, FAMILY rows)`` N(0, 1) effects, pairwise correlation ``rho`` between the
    rows."""
    common = rng.normal(size=(reps, LOOKS[-1], 1))
    return math.sqrt(rho) * common + math.sqrt(1 - rho) * rng.normal(size=(reps, LOOKS[-1], FAMILY))


def _primary_then_holm(xs: np.ndarray) -> bool:
    """The rule before: row 0 at 95 %, rows 1.. at Holm's levels among themselves; any false
    decision?"""
    false = decide(*_ci(xs[:, 0], 0.05), 0.0, 1.0, 0.5, 1) in DECISIONS
    rest = [list(xs[:, j]) for j in range(1, FAMILY)]
    for x, level in zip(rest, holm_levels([p_value(x, 0.0) for x in rest], 0.05)):
        false |= decide(*_ci(x, level), 0.0, 1.0, 0.5, 1) in DECISIONS
    return false


def _ci(x, alpha):
    ci = interval(list(x), 1 - alpha, "t")
    return ci.low, ci.high


def family_rates(reps: int, seed: int = 2027, rhos: tuple = (0.0, RHO)) -> dict:
    """The family-wise false-decision rates of both rules, independent and correlated rows."""
    claims = [
        Comparison(
            f"sim.f{j}",
            "P",
            "x grows",
            "-",
            "sim",
            "x",
            metric(f"r{j}.x"),
            greater(1.0, null=0.0, sesoi=0.5),
            family="sim/x",
        )
        for j in range(FAMILY)
    ]
    rates = {}
    rng = np.random.default_rng(seed)
    for rho in rhos:
        effects = _family_effects(reps, rho, rng)
        before = holm_all = 0
        for xs in effects:
            res = {
                "scale": "cpu",
                "shards": [
                    {"seed": s, "metrics": {f"r{j}.x": float(v) for j, v in enumerate(row)}}
                    for s, row in enumerate(xs)
                ],
            }
            before += _primary_then_holm(xs)
            holm_all += any(r.reading in DECISIONS for r in judge(claims, lambda c: (res, {}), {}))
        rates[f"family of {FAMILY}, rho {rho:g}: primary at 95 %, Holm on the rest"] = before / reps
        rates[f"family of {FAMILY}, rho {rho:g}: Holm over the whole family (ledger)"] = (
            holm_all / reps
        )
    return rates


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=4000)
    args = p.parse_args(argv)
    xs_all = np.random.default_rng(2026).normal(0.0, 1.0, size=(args.reps, LOOKS[-1]))
    claim = Comparison(
        "sim.null", "P", "x > 0", "-", "sim", "x", metric("x"), greater(1.0, null=0.0, sesoi=0.5)
    )
    rates = {
        "issue 21 rule (looks 5..10 at 95 %)": np.mean(
            [
                sequential_outcome(list(x), LOOKS, [0.05] * 6, 0.0, 1.0, 0.5, 1)[0] in DECISIONS
                for x in xs_all
            ]
        ),
        "one look at 10 seeds, 95 %": np.mean(
            [
                sequential_outcome(list(x), (10,), [0.05], 0.0, 1.0, 0.5, 1)[0] in DECISIONS
                for x in xs_all
            ]
        ),
    }
    for kind in ("obrien-fleming", "pocock"):
        plan = Plan("sim", LOOKS, spending=kind)
        false = 0
        for x in xs_all:
            res = {
                "scale": "cpu",
                "shards": [{"seed": s, "metrics": {"x": float(v)}} for s, v in enumerate(x)],
            }
            _, rows, _ = follow_plan([claim], plan, lambda n: {**res, "shards": res["shards"][:n]})
            false += rows["sim.null"].reading in DECISIONS
        rates[f"planned, looks 5..10, {kind} spending"] = false / args.reps
    rates.update(family_rates(args.reps))
    for name, rate in rates.items():
        print(
            f"{name:64s} false-decision rate {rate:.4f} "
            f"± {math.sqrt(rate * (1 - rate) / args.reps):.4f}"
        )
    return rates


if __name__ == "__main__":
    main()
