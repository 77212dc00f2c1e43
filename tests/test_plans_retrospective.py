"""``python -m analysis.plans --retrospective`` never rewrites a plan that was fixed before its
results (issue 31: the reruns of csaode_trec and momentum_lstm_digits follow prospective plans
committed before them)."""

from __future__ import annotations

import json

from analysis.plans import retrospective
from dynkit.experiments.judging.plans import PLANS_ROOT, Plan, load_plan


def test_a_prospective_plan_is_kept_and_the_others_are_written(tmp_path):
    mine = Plan(
        "csaode_trec",
        (5, 10),
        rows=("csaode.ark_fewer_nfe",),
        prospective=True,
        written="before the runs",
    )
    (tmp_path / "csaode_trec.json").write_text(json.dumps(mine.to_dict()))
    old = Plan("momres_cubic", (7,), prospective=False, written="planted: to be rewritten")
    (tmp_path / "momres_cubic.json").write_text(json.dumps(old.to_dict()))
    plans = retrospective(tmp_path)
    assert load_plan(tmp_path / "csaode_trec.json") == mine and plans["csaode_trec"] == mine
    rewritten = load_plan(tmp_path / "momres_cubic.json")
    assert (
        rewritten != old and not rewritten.prospective
    )  # a retrospective plan is rewritten from the results
    assert {p.name for p in tmp_path.glob("*.json")} >= {"csaode_trec.json", "momres_cubic.json"}
    assert (
        PLANS_ROOT / "csaode_trec.json"
    ).exists()  # the committed plans were not touched (written to tmp_path)
