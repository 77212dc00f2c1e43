"""Bars from the data for every model of a row: a trivial model planted in place of a trained one
makes its rows invalid (the point-cloud NODE as the best constant, the Momentum ResNet as the
majority class, LISTA as the zero code). The trivial predictors' values are recomputed here from the
data alone, not read from the code under test."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.judging.baselines import load as load_baselines
from dynkit.experiments.judging.ledger import evaluate

RESULTS = Path(__file__).resolve().parents[1] / "analysis" / "results"


FOLDER = {"momres_rings_tied": "momres_rings_tied_pilot"}
"""A record read from another folder: its planned campaign has not reached a look yet."""


def _record(name: str) -> tuple[dict, dict]:
    folder = RESULTS / FOLDER.get(name, name)
    return json.loads((folder / "results.json").read_text()), load_baselines(folder)


def _planted(results: dict, metric: str, value) -> dict:
    out = copy.deepcopy(results)
    for shard in out["shards"]:
        if metric in shard["metrics"]:
            shard["metrics"][metric] = value(int(shard["seed"])) if callable(value) else value
    return out


def test_the_rings_bar_is_the_majority_class_of_the_labels_used():
    # labels ring % 2 over four rings of equal size: two balanced classes, chance 0.5 (not "4 rings,
    # chance 0.25")
    E.load_all()
    results, base = _record("momres_rings")
    for seed, values in base.items():
        assert values["baseline.majority.test_accuracy"] == 0.5 and values["baseline.classes"] == 2
    (why,) = {
        c.why
        for c in E.COMPARISONS["momres.rings"].validity()
        if c.metrics[0] == "momentum.test_accuracy"
    }
    assert "majority class" in why and "chance 0.25" not in why


@pytest.mark.parametrize("row_id", ["momres.rings", "momres.rings_tied"])
def test_a_momentum_resnet_at_the_majority_class_is_invalid(row_id):
    claim = E.COMPARISONS[row_id]
    results, base = _record(claim.experiment)
    assert evaluate(claim, results, baselines=base).outcome != "invalid"  # as recorded: trained
    planted = _planted(
        results, "momentum.test_accuracy", 0.5
    )  # predicts one class: half the balanced labels
    row = evaluate(claim, planted, baselines=base)
    assert row.outcome == "invalid" and "momentum.test_accuracy" in row.reason


def test_a_point_cloud_node_at_the_best_constant_makes_every_point_cloud_row_invalid():
    results, base = _record("node_point_cloud")
    constant = (
        8 / 9
    )  # the best constant output under the MSE against labels -1 (40 points) and 1 (80): c = 1/3
    assert min(
        ((c - 1) ** 2 * 80 + (c + 1) ** 2 * 40) / 120 for c in torch.linspace(-1, 1, 2001).tolist()
    ) == pytest.approx(constant, abs=1e-6)
    planted = _planted(results, "node.final_loss_median", constant)
    rows = [c for c in E.COMPARISONS.values() if c.experiment == "node_point_cloud"]
    assert len(rows) == 4
    for claim in rows:
        row = evaluate(claim, planted, baselines=base)
        assert row.outcome == "invalid" and "node.final_loss_median" in row.reason, claim.id


def test_the_point_cloud_node_of_record_is_held_to_its_bar():
    # seed 1 of the record ends at 1.341, worse than the constant's 0.889: every row reading NODE is
    # invalid
    results, base = _record("node_point_cloud")
    row = evaluate(E.COMPARISONS["review.point_cloud_hbnode_forward_nfe"], results, baselines=base)
    assert row.outcome == "invalid" and "seed 1" in row.reason


def test_lista_at_the_zero_code_is_invalid():
    from dynkit.experiments.momres.momres_lista import make_problem

    results, base = _record("momres_lista")
    claim = E.COMPARISONS["momres.lista_matches"]
    assert evaluate(claim, results, baselines=base).outcome != "invalid"
    # the zero code's loss 0.5 |y|^2 on the seed's test samples, recomputed here: the gap is at most
    # that
    for seed, values in base.items():
        _, _, y = make_problem(1000, 1000, torch.Generator().manual_seed(seed))
        assert (
            0
            < values["baseline.zero.deepest_loss_gap"]
            <= float(0.5 * (y**2).sum(dim=1).mean()) + 1e-12
        )
    planted = _planted(
        results, "lista.deepest_loss_gap", lambda s: base[s]["baseline.zero.deepest_loss_gap"]
    )
    row = evaluate(claim, planted, baselines=base)
    assert row.outcome == "invalid" and "lista.deepest_loss_gap" in row.reason
