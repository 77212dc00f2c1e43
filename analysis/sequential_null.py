"""The false-decision rate of the seed rules under a true null (issue 30 §3), by simulation.

    python -m analysis.sequential_null [--reps 4000]

Per-seed effects N(0, 1) with no effect, a row with the smallest effect of interest 0.5 (the paper's effect 0.5):
the rule of issue 21 (5 seeds, then one more while inconclusive up to 10, each look at 95 %), one look at 10
seeds, and the committed group-sequential rule (the same looks, O'Brien-Fleming and Pocock spending, judged by
dynkit.experiments.decide.follow_plan as ``dynkit run --planned`` does). Prints each rate with its Monte-Carlo
standard error.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from dynkit.experiments.decide import follow_plan
from dynkit.experiments.inference import DECISIONS, sequential_outcome
from dynkit.experiments.ledger import Claim, greater, metric
from dynkit.experiments.plans import Plan

LOOKS = (5, 6, 7, 8, 9, 10)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=4000)
    args = p.parse_args(argv)
    xs_all = np.random.default_rng(2026).normal(0.0, 1.0, size=(args.reps, LOOKS[-1]))
    claim = Claim("sim.null", "P", "x > 0", "-", "sim", "x", metric("x"), greater(0.5, null=0.0, sesoi=0.5))
    rates = {"issue 21 rule (looks 5..10 at 95 %)": np.mean(
                 [sequential_outcome(list(x), LOOKS, [0.05] * 6, 0.0, 0.5, 0.5, 1)[0] in DECISIONS for x in xs_all]),
             "one look at 10 seeds, 95 %": np.mean(
                 [sequential_outcome(list(x), (10,), [0.05], 0.0, 0.5, 0.5, 1)[0] in DECISIONS for x in xs_all])}
    for kind in ("obrien-fleming", "pocock"):
        plan = Plan("sim", LOOKS, spending=kind)
        false = 0
        for x in xs_all:
            res = {"scale": "cpu", "shards": [{"seed": s, "metrics": {"x": float(v)}} for s, v in enumerate(x)]}
            _, rows, _ = follow_plan([claim], plan, lambda n: {**res, "shards": res["shards"][:n]})
            false += rows["sim.null"].outcome in DECISIONS
        rates[f"planned, looks 5..10, {kind} spending"] = false / args.reps
    for name, rate in rates.items():
        print(f"{name:48s} false-decision rate {rate:.4f} ± {math.sqrt(rate * (1 - rate) / args.reps):.4f}")
    return rates


if __name__ == "__main__":
    main()
