"""Write the experiments' plans (issue 30 §3): ``analysis/plans/<experiment>.json``.

    python -m analysis.plans NAME --pilot PILOT/results.json [--cap 10] [--looks 2] [--interval t]
    python -m analysis.plans --retrospective

A new plan is computed from a pilot run (its per-seed effects of every ledger row of NAME and each
row's smallest effect of interest, 80 % power:
:func:`dynkit.experiments.judging.plans.plan_from_pilot`) and committed before the main runs;
``dynkit run NAME --planned`` then follows it.

``--retrospective`` writes the plans of the results of record, which were run before any plan
existed: each says ``prospective: false`` and states the looks the results actually had, so that the
ledger spends the error rate over them. The looks come from the history of each ``results.json``
(every committed seed count at the final config and scale;
``git log -- analysis/results/NAME/results.json``), and for the runs made with issue 21's
``--until-decided`` (one more seed at a time while a row was inconclusive, cap 10) every count from
5 to 10. Every plan fixes the t interval (the method the ledger used for all but skewed rows). A
prospective plan already committed (written before its results, e.g. issue 31's reruns) is kept as
it is.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynkit.experiments import COMPARISONS, load_all
from dynkit.experiments.judging.baselines import load as load_baselines
from dynkit.experiments.judging.ledger import evaluate, load_results
from dynkit.experiments.judging.plans import CAP, PLANS_ROOT, Plan, load_plan, plan_from_pilot
from dynkit.io import write_json

RESULTS = Path(__file__).resolve().parent / "results"
UNTIL_DECIDED = (5, 6, 7, 8, 9, 10)
"""The looks of issue 21's --until-decided (5 seeds, then one at a time up to the cap 10)."""
LOOKS_OF_RECORD = {
    # committed seed counts at the final config (git history of results.json)
    "csaode_trec": (3, 5),
    "momentum_lstm_digits": (3, 5),
    "momres_buffer_bits": (3, 5),
    "momres_cubic": (3, 5),
    "momres_lista": (1, 3, 5),
    "momres_reference_accuracy": (3, 5),
    "momres_rings": (3, 10),
    "momres_rings_tied": (3, 5),
    "momseq_attention_scaling": (3, 5),
    "node_adjoint_norm": (3, 10),
    "node_blowup": (3, 10),
    # run with --until-decided (commits 099b468, 72da508, 2a12f29): looks at every n from 5 to the
    # cap 10
    "momseq_vanishing": UNTIL_DECIDED,
    "node_point_cloud": UNTIL_DECIDED,
    "ode_rnn_plane_vibration": UNTIL_DECIDED,
}
"""Looks of the results of record other than a single look at their n."""


def _pilot(name: str, results: dict, baselines: dict | None = None) -> dict:
    """``{row: (per-seed effects, sesoi)}`` of ``name``'s rows in ``results`` (with the trivial
    predictors' ``baselines`` per seed, which the rows' validity checks read)."""
    rows = {}
    for c in COMPARISONS.values():
        if c.experiment == name:
            r = evaluate(c, results, baselines=baselines)
            if not r.per_seed and r.invalid_seeds:  # sized on the pilot's valid seeds
                valid = [s for s in results["shards"] if int(s["seed"]) not in r.invalid_seeds]
                r = evaluate(c, {**results, "shards": valid}, baselines=baselines)
            if r.per_seed:
                rows[c.id] = (list(r.per_seed.values()), c.bounds()[2])
    return rows


def retrospective(out: Path = PLANS_ROOT) -> dict[str, Plan]:
    load_all()
    plans = {}
    for name in sorted({c.experiment for c in COMPARISONS.values()}):
        results = load_results(RESULTS, name, "cpu")
        if results is None:
            continue
        kept = out / f"{name}.json"
        if (
            kept.exists() and load_plan(kept).prospective
        ):  # a plan fixed before its results is never rewritten after
            plans[name] = load_plan(kept)
            print(f"{plans[name].describe()} (kept)")
            continue
        n = len({int(s["seed"]) for s in results["shards"]})
        looks = tuple(k for k in LOOKS_OF_RECORD.get(name, (n,)) if k >= 2)
        if n not in looks:
            looks = tuple(sorted({*(k for k in looks if k < n), n}))
        base = plan_from_pilot(
            name,
            _pilot(name, results, load_baselines(RESULTS / name)),
            cap=CAP,
            prospective=False,
            note="written after the results (issue 30): the looks the results of record had",
        )
        plan = Plan(
            name,
            looks,
            "t",
            "obrien-fleming",
            tuple(c.id for c in COMPARISONS.values() if c.experiment == name),
            base.basis,
            False,
            base.written,
        )
        write_json(
            out / f"{name}.json", plan.to_dict(), command="python -m analysis.plans --retrospective"
        )
        plans[name] = plan
        print(plan.describe())
    return plans


def main(argv: list[str] | None = None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", nargs="?")
    p.add_argument("--pilot", type=Path)
    p.add_argument("--cap", type=int, default=CAP)
    p.add_argument("--looks", type=int, default=1)
    p.add_argument("--interval", default="t", choices=["t", "bca"])
    p.add_argument("--spending", default="obrien-fleming", choices=["obrien-fleming", "pocock"])
    p.add_argument("--retrospective", action="store_true")
    p.add_argument("--out", type=Path, default=PLANS_ROOT)
    p.add_argument("--note", default="", help="what the plan's reader must know of its pilot")
    args = p.parse_args(argv)
    if args.retrospective:
        return retrospective(args.out)
    if not args.name or args.pilot is None:
        p.error("NAME and --pilot are required (or --retrospective)")
    load_all()
    plan = plan_from_pilot(
        args.name,
        _pilot(args.name, json.loads(args.pilot.read_text()), load_baselines(args.pilot.parent)),
        cap=args.cap,
        n_looks=args.looks,
        interval=args.interval,
        spending=args.spending,
        note=f"written before its runs (prospective), from the pilot {args.pilot}"
        + (f": {args.note}" if args.note else ""),
    )
    write_json(args.out / f"{args.name}.json", plan.to_dict(), command="python -m analysis.plans")
    print(plan.describe())
    return plan


if __name__ == "__main__":
    main()
