"""Trivial predictors beside the models (issue 30 §1): planted series whose persistence and mean
errors are known in closed form, and the file the ledger reads them from."""

from __future__ import annotations

import json

import pytest
import torch

import dynkit.experiments as E
import dynkit.experiments.hybrids.time_series_hybrids as hybrids
from dynkit.experiments.judging.baselines import baseline_of, beats_baseline, compute, load
from dynkit.experiments.judging.plans import Plan, load_plan
from dynkit.tasks.windows import TimeSeriesTask, Windows

C = 0.5  # the ramp's step: each stamp is the last plus C


def _ramp_task(n=4, length=6, forecast=3) -> TimeSeriesTask:
    """One channel rising by C per stamp: persistence misses by C one step ahead and by C k at
    forecast step k."""
    t0 = torch.arange(n, dtype=torch.float32)[:, None] * 100.0
    steps = torch.arange(length + forecast + 1, dtype=torch.float32)[None] * C + t0
    x, targets = steps[:, :length, None], steps[:, 1 : length + 1, None]
    future = steps[:, length : length + forecast, None]
    w = Windows(x, torch.ones(n, length), targets, future, torch.ones(n, forecast))
    return TimeSeriesTask("ramp", w, w, w, ("y",), ("y",), "planted")


@pytest.mark.parametrize(
    "task, expected_persistence",
    [
        ("walker2d", C**2),  # one step ahead (targets = values[1:L+1]): off by C everywhere
        # forecast (future = values[L:L+3], x ends at values[L-1]): off by C, 2C, 3C
        ("plane_vibration", (C**2) * (1 + 4 + 9) / 3),
    ],
)
def test_persistence_and_mean_have_their_closed_form_errors(
    monkeypatch, task, expected_persistence
):
    planted = _ramp_task()
    monkeypatch.setattr(hybrids, "_task", lambda name, data, seed: planted)
    got = baseline_of(f"ode_rnn_{task}")({"task": task, "data": []}, 0)
    assert got["baseline.persistence.test_mse"] == pytest.approx(
        expected_persistence, rel=1e-6
    )  # float32 data
    truth = (planted.test.targets if task == "walker2d" else planted.test.future).double()
    mean = planted.train.targets.double().mean()
    assert got["baseline.mean.test_mse"] == pytest.approx(
        float(((truth - mean) ** 2).mean()), rel=1e-9
    )
    assert got["baseline.best.test_mse"] == min(
        got["baseline.persistence.test_mse"], got["baseline.mean.test_mse"]
    )


def test_the_bar_names_the_model_its_metric_and_the_baseline():
    bar = beats_baseline("hbnode.test_mse", "baseline.best.test_mse", 0.1, "stated")
    assert (
        bar.test(0.5, 1.0)[0]
        and not bar.test(0.95, 1.0)[0]
        and bar.test(0.95, 1.0)[1] == (0.95, 1.0)
    )
    assert bar.subject == "hbnode" and bar.applies(["hbnode.tight.forward_nfe_per_solve", "node.x"])
    with pytest.raises(ValueError, match="margin must lie in"):
        beats_baseline("m.x", "b.x", 1.0, "why")


def test_baselines_are_computed_from_the_recorded_config_and_read_beside_the_results(
    tmp_path, monkeypatch
):
    planted = _ramp_task()
    monkeypatch.setattr(hybrids, "_task", lambda name, data, seed: planted)
    results = {
        "scale": "cpu",
        "config": {"task": "silverbox", "data": [["n_points", 10]]},
        "shards": [{"seed": s, "metrics": {}} for s in (0, 1)],
    }
    data = compute("ode_rnn_silverbox", results)
    assert set(data["seeds"]) == {"0", "1"} and data["config"]["task"] == "silverbox"
    (tmp_path / "baselines.json").write_text(json.dumps(data))
    assert load(tmp_path)[1]["baseline.persistence.test_mse"] == pytest.approx(C**2, rel=1e-6)
    assert load(tmp_path / "nowhere") == {}
    with pytest.raises(ValueError, match="must record their 'config'"):
        compute("ode_rnn_silverbox", {"shards": []})
    with pytest.raises(ValueError, match="experiment must be one of"):
        compute("not_an_experiment", results)


PROSPECTIVE = (
    "ode_rnn_plane_vibration",  # issue 31: plans written before a redesign's runs
    "ode_rnn_walker2d",
    "ode_rnn_walker2d_torchdiffeq",
    "csaode_trec",
    "momentum_lstm_digits",
    "node_adjoint_norm",
    "node_blowup",
    "momentum_lstm_fashion_mnist",
    "ode_rnn_silverbox",
    "node_trained",
    "node_images",
    "csaode_attention",
    "momseq_copy",
    "momres_cubic",  # the authors' recipe: plan from the pilot momres_cubic_pilot, before seeds 0-9
    "momres_rings_tied",  # plan from its 5-seed run (momres_rings_tied_pilot), before seeds 0-62
)


def test_the_committed_plans_load_and_name_their_rows():
    for name, plan in E.load_plans().items():
        assert isinstance(plan, Plan) and plan.experiment == name and plan.rows
        assert set(plan.rows) <= set(E.COMPARISONS)
        # the plans written after the results (issue 30) say so; those of a redesigned experiment
        # were written before its rerun (issue 31: the authors' hybrids, TREC trained to validity,
        # the authors' LSTM training, node_adjoint_norm on the authors' cell) and say that
        assert plan.prospective is (name in PROSPECTIVE), name
        says_before = "prospective" in plan.written or "written before" in plan.written
        assert says_before is plan.prospective, name


def test_a_plan_round_trips_through_its_file(tmp_path):
    plan = Plan(
        "toy", (5, 10), "bca", "pocock", ("t.a",), {"t.a": {"pilot_sd": 0.1}}, True, "2026-11-27"
    )
    (tmp_path / "toy.json").write_text(json.dumps(plan.to_dict()))
    assert load_plan(tmp_path / "toy.json") == plan
    with pytest.raises(ValueError, match="not a look"):
        plan.level_at(7)


def test_the_cubic_fit_is_held_to_the_zero_predictor():
    from fractions import Fraction

    from dynkit.experiments.judging.ledger import evaluate

    # independent: mean of x^6 over 200 points evenly spaced on [-1, 1], exact rational arithmetic
    exact = float(sum(Fraction(-199 + 2 * i, 199) ** 6 for i in range(200)) / 200)
    zero = baseline_of("momres_cubic")({}, 0)["baseline.zero.final_mse"]
    assert zero == pytest.approx(exact, rel=1e-6)  # 1e-6: the script's points are float32
    claim = E.COMPARISONS["momres.cubic"]
    fit = [
        {
            "momentum.final_mse": 0.03 + 0.001 * s,
            "resnet.final_mse": zero,
            "baseline.zero.final_mse": zero,
        }
        for s in range(5)
    ]
    assert (
        evaluate(
            claim,
            {"scale": "cpu", "shards": [{"seed": s, "metrics": m} for s, m in enumerate(fit)]},
        ).outcome
        == "reproduced"
    )  # the ResNet at the zero predictor is the claim, not a failed run
    for m in (
        fit
    ):  # a Momentum ResNet that learned nothing: the row is invalid, not "reproduced" or "opposite"
        m["momentum.final_mse"] = zero * (1 + 0.001 * fit.index(m))
    row = evaluate(
        claim, {"scale": "cpu", "shards": [{"seed": s, "metrics": m} for s, m in enumerate(fit)]}
    )
    assert (
        row.outcome == "invalid"
        and "momentum.final_mse" in row.reason
        and "baseline.zero.final_mse" in row.reason
    )
