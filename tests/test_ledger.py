"""The ledger decides (issue 21): paired per-seed effects on their scale, validity first, six
outcomes.

Each outcome and each validity failure the issue lists is planted as per-seed results and must come
out as promised; reference intervals are recomputed here with scipy.stats.t.interval, not with the
ledger's code.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import dynkit.experiments as E
from dynkit.cli import main
from dynkit.experiments.judging import ledger
from dynkit.experiments.judging.ledger import (
    COMPARISONS,
    MIN_SEEDS,
    OUTCOMES,
    Comparison,
    LedgerError,
    RowValues,
    add_comparison,
    add_comparisons,
    at_least,
    at_most,
    decide,
    declare_validity,
    detectable,
    evaluate,
    greater,
    less,
    off_floor,
    plateau,
    ratio,
    seeds_needed,
)


def _results(per_seed: list[dict], scale: str = "cpu") -> dict:
    return {
        "scale": scale,
        "shards": [{"seed": s, "point": {}, "metrics": m} for s, m in enumerate(per_seed)],
    }


def _ratio_claim(sesoi=None, **kw) -> Comparison:
    """'x shrinks': x / one, the paper's ratio 0.8 (no effect 1), a trained baseline (one.acc >=
    0.5)."""
    return Comparison(
        "t.shrinks",
        "P",
        "x shrinks",
        "Fig. 1",
        "toy",
        "x / one",
        ratio("m.x", "base.x"),
        less(0.8, null=1.0, sesoi=sesoi),
        checks=(at_least("base.acc", 0.5, "chance 0.1"),),
        **kw,
    )


def _seeds(ratios, acc=0.9) -> list[dict]:
    return [{"m.x": r, "base.x": 1.0, "base.acc": acc} for r in ratios]


# ---- each outcome: every cell of the rule's table (docs/guide/experiments.md)
# --------------------------------------- the paper's effect of the ratio claim: log10(1 / 0.8) =
# 0.097, its sesoi half of it (0.048) unless given
@pytest.mark.parametrize(
    "ratios, sesoi, outcome",
    [
        (
            [0.70, 0.71, 0.69, 0.72, 0.70],
            None,
            "reproduced",
        ),  # excludes 0, not inside, reaches the paper's 0.8
        (
            [0.95, 0.951, 0.949, 0.95, 0.952],
            0.01,
            "smaller effect",
        ),  # excludes 0, not inside ±0.01, short of 0.8
        (
            [0.95, 0.951, 0.949, 0.95, 0.952],
            None,
            "smaller effect (negligible)",
        ),  # the paper's side, inside ±sesoi
        (
            [1.05, 1.051, 1.049, 1.05, 1.052],
            None,
            "opposite (negligible)",
        ),  # excludes 0 on the other side, inside
        (
            [1.00, 1.01, 0.99, 1.005, 0.995],
            None,
            "negligible",
        ),  # holds 0, inside ±sesoi (equivalence)
        (
            [1.40, 1.41, 1.39, 1.40, 1.42],
            None,
            "opposite",
        ),  # excludes 0 on the other side, not inside
        ([0.50, 1.50, 0.70, 1.30, 1.00], None, "inconclusive"),  # holds 0 and effects beyond ±sesoi
    ],
)
def test_planted_per_seed_effects_give_each_outcome(ratios, sesoi, outcome):
    row = evaluate(_ratio_claim(sesoi), _results(_seeds(ratios)))
    assert row.outcome == outcome and row.n == 5 and row.scale == "log"
    logs = np.log10(ratios)
    lo, hi = stats.t.interval(
        0.95, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs)
    )  # independent
    assert (row.effect, row.ci_low, row.ci_high) == pytest.approx(
        (logs.mean(), lo, hi), rel=1e-9, abs=1e-12
    )
    assert row.n_agree == int(np.sum(logs < 0)) and row.n_sign == int(
        np.sum(logs != 0)
    )  # the paper's side: < 0
    assert row.sign_p == pytest.approx(stats.binomtest(row.n_agree, row.n_sign).pvalue, rel=1e-12)
    d = row.to_dict()
    assert {
        "outcome",
        "effect",
        "ci_low",
        "ci_high",
        "ci_method",
        "level",
        "sign_test",
        "family",
        "baseline",
        "scale",
        "n",
        "n_agree",
        "reason",
        "seeds_needed",
        "metric",
    } <= set(d) and d["outcome"] in OUTCOMES
    if outcome == "inconclusive":
        assert (
            row.seeds_needed is not None
            and row.seeds_needed > 5
            and row.mde > row.claim.bounds()[2]
        )
        assert "minimal detectable effect" in row.reason
    else:
        assert row.seeds_needed is None


def test_an_effect_that_excludes_zero_is_never_called_negligible():
    # a 3 % increase where the paper's effect is a 20 % decrease: 0.013 on the log scale, inside
    # ±0.048: the rule before called it negligible (its CI inside ±sesoi); its CI excludes 0, so it
    # reads opposite (negligible)
    row = evaluate(_ratio_claim(), _results(_seeds([1.03, 1.031, 1.029, 1.03, 1.032])))
    assert (
        row.outcome == "opposite (negligible)"
        and row.ci_low > 0
        and row.ci_high < row.claim.bounds()[2]
    )
    # and a 20 % increase (0.079, beyond ±0.048) is opposite
    row = evaluate(_ratio_claim(), _results(_seeds([1.20, 1.21, 1.19, 1.20, 1.22])))
    assert row.outcome == "opposite"


def test_a_linear_ci_that_crosses_zero_is_decided_on_the_log_scale():
    # momres.lista_revnet_fails: per-seed ratios 8.9e8, 7.6e8, 1.6e8 as committed, and two seeds far
    # smaller (target 10): a linear CI on the ratio crosses 0 (one huge seed hides a unanimous
    # effect), the log CI lies above log10(10)
    claim = COMPARISONS["momres.lista_revnet_fails"]
    ratios = [8.9e8, 7.6e8, 1.6e8, 50.0, 200.0]
    per_seed = [
        {
            "revnet.deepest_loss_gap": r * 0.01,
            "momentum.deepest_loss_gap": 0.01,
            "baseline.zero.deepest_loss_gap": 1.0,
        }
        for r in ratios
    ]  # the momentum model beats the zero code
    row = evaluate(claim, _results(per_seed))
    assert row.outcome == "reproduced" and row.ci_low > 1 and row.n_agree == 5
    lin_lo, _ = stats.t.interval(0.95, 4, loc=np.mean(ratios), scale=stats.sem(ratios))
    assert lin_lo < 0  # the linear interval the old ledger used would have held no effect


def test_fewer_than_min_seeds_is_inconclusive_with_the_provisional_outcome():
    row = evaluate(_ratio_claim(), _results(_seeds([0.70, 0.71, 0.69])))
    assert MIN_SEEDS == 5 and row.outcome == "inconclusive" and row.provisional == "reproduced"
    assert "n = 3 < 5" in row.reason and row.seeds_needed == MIN_SEEDS


def test_a_claim_whose_recipe_needs_full_scale_says_so_whatever_its_cpu_interval():
    row = evaluate(
        _ratio_claim(full_scale="the mechanism needs 784 steps; full: hidden 256"),
        _results(_seeds([0.50, 1.50, 0.70, 1.30, 1.00])),
    )
    assert (
        row.outcome == "needs full scale"
        and "hidden 256" in row.reason
        and row.provisional == "inconclusive"
    )
    # stated before the results, the rule binds decided rows too (issue 30 §7): never only the
    # undecided ones
    decided = evaluate(
        _ratio_claim(full_scale="x"), _results(_seeds([0.70, 0.71, 0.69, 0.72, 0.70]))
    )
    assert decided.outcome == "needs full scale" and decided.provisional == "reproduced"
    invalid = evaluate(
        _ratio_claim(full_scale="x"), _results(_seeds([0.70, 0.71, 0.69, 0.72, 0.70], acc=0.2))
    )
    assert invalid.outcome == "invalid"
    assert not any(
        c.full_scale for c in COMPARISONS.values()
    )  # no registered recipe states it today


def test_seeds_needed_is_the_smallest_n_whose_detectable_effect_reaches_the_sesoi():
    sd, sesoi = 0.3, 0.1

    def mde(n):  # independent: (t_{0.975} + t_{0.80}) sd / sqrt(n)
        return (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.80, n - 1)) * sd / math.sqrt(n)

    n = seeds_needed(sd, sesoi)
    assert mde(n) <= sesoi < mde(n - 1) and detectable(sd, n) == pytest.approx(mde(n), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    lo=st.floats(-5, 5),
    width=st.floats(0, 5),
    target=st.floats(0.01, 3),
    fraction=st.floats(0.01, 1),
)
def test_decide_for_greater_mirrors_less(lo, width, target, fraction):
    # for all CIs: a claim that x grows by `target` decides on [lo, hi] as a claim that x shrinks by
    # `target` decides on the mirrored CI [-hi, -lo]
    hi, sesoi = lo + width, fraction * target
    assert decide(lo, hi, 0.0, target, sesoi, +1) == decide(-hi, -lo, 0.0, -target, sesoi, -1)


# ---- each validity failure
# ---------------------------------------------------------------------------------------
WALKER_EPOCHS = E.get("ode_rnn_walker2d").config("cpu").epochs


def _walker(s: int, hb: float = 0.5, node: float = 1.0) -> dict:
    """One valid Walker2D seed: every model plateaued (test MSE flat over the last 3 epochs), NFE
    off the floor."""
    m = {}
    for model, mse in (
        ("node", node),
        ("anode", node),
        ("hbnode", hb),
        ("ghbnode", hb),
        ("sonode", node),
    ):
        m.update(
            {
                f"{model}.test_mse": mse + 0.001 * s,
                f"{model}.tight.forward_nfe_per_solve": 60.0 * mse + s,
                f"{model}.tight.backward_nfe_per_solve": 60.0 * mse + s,
                f"{model}.adjoint_log10_ratio": -0.5,
            }
        )
        m.update(
            {f"{model}.epoch{e}.test_mse": mse + 0.001 * s for e in range(1, WALKER_EPOCHS + 1)}
        )
    m["baseline.best.test_mse"] = (
        2.0  # the trivial predictor's (persistence or mean): every model beats it
    )
    return m


WALKER = "review.walker2d_hbnode_test_mse_vs_node"


def test_a_valid_planted_walker_row_is_decided():
    assert (
        evaluate(COMPARISONS[WALKER], _results([_walker(s) for s in range(5)])).outcome
        == "reproduced"
    )


@pytest.mark.parametrize(
    "row_id", [WALKER, "review.walker2d_hbnode_forward_nfe", "review.walker2d_hbnode_adjoint_own"]
)
def test_a_mean_predictor_in_place_of_a_model_makes_its_rows_invalid(row_id):
    # issue 30: a Walker2D model replaced by the mean predictor (test MSE 0.97, a flat curve) passed
    # every check and flipped rows; the trained bar holds each model of a row to 0.9 x the better
    # trivial predictor's MSE
    seeds = [_walker(s) for s in range(5)]
    for s, m in enumerate(seeds):
        m.update(
            {
                "baseline.persistence.test_mse": 0.08,
                "baseline.mean.test_mse": 0.97,
                "baseline.best.test_mse": 0.08,
            }
        )
        for model in ("node", "hbnode"):
            m.update(
                {
                    f"{model}.test_mse": 0.97,
                    **{f"{model}.epoch{e}.test_mse": 0.97 for e in range(1, WALKER_EPOCHS + 1)},
                }
            )
    row = evaluate(COMPARISONS[row_id], _results(seeds))
    assert row.outcome == "invalid" and "trained bar" in row.reason
    assert (
        "hbnode.test_mse 0.97 vs baseline.best.test_mse 0.08" in row.reason
    )  # the model, its metric, the baseline's
    # and without the trivial predictor's metric the row is incomplete, never decided
    for m in seeds:
        del m["baseline.best.test_mse"]
    assert (
        "missing metric baseline.best.test_mse"
        in evaluate(COMPARISONS[row_id], _results(seeds)).reason
    )


def test_a_diverged_baseline_is_invalid_with_its_seed_never_a_ratio_of_zero():
    seeds = [_walker(s) for s in range(5)]
    seeds[2]["node.test_mse"] = (
        math.inf
    )  # the baseline diverged: hbnode / inf = 0 would pull towards the paper
    row = evaluate(COMPARISONS[WALKER], _results(seeds))
    assert (
        row.outcome == "invalid"
        and "node.test_mse diverged" in row.reason
        and "seed 2" in row.reason
    )
    assert row.n == 5 and 2 in row.invalid_seeds and row.effect is None


def test_a_diverged_momentum_model_is_invalid_not_dropped():
    seeds = [_walker(s) for s in range(5)]
    seeds[4]["hbnode.test_mse"] = None  # NaN written as null
    row = evaluate(COMPARISONS[WALKER], _results(seeds))
    assert row.outcome == "invalid" and "hbnode.test_mse diverged" in row.reason and row.n == 5


def test_an_exploding_adjoint_is_invalid_not_a_success():
    # "the adjoint of HBNODE does not vanish": a decay of -15 orders (it grew by 15) would pass
    # "decays by < 1"
    claim = COMPARISONS["review.hbnode_adjoint_own_decay"]
    # -0.3: 1.3 orders on the right side of the criterion 1, beyond its sesoi of 1 (0.2 would be
    # negligible) a model that learned: one-step MSE at 0.4x the better trivial predictor's (the
    # trained bar, issue 31 item 7)
    learned = {
        "hbnode.train_mse": 0.02,
        "hbnode.test_mse": 0.03,
        "baseline.best.train_mse": 0.05,
        "baseline.best.test_mse": 0.075,
    }
    good = [{"hbnode.decay_orders_of_magnitude": -0.3 + 0.01 * s, **learned} for s in range(5)]
    assert evaluate(claim, _results(good)).outcome == "reproduced"
    bad = [dict(m) for m in good]
    bad[1]["hbnode.decay_orders_of_magnitude"] = -15.0
    row = evaluate(claim, _results(bad))
    assert row.outcome == "invalid" and "bounded" in row.reason and "seed 1" in row.reason
    # and on the hybrids (Fig. 8 on Walker2D): the same bound on log10(||a(t_1)|| / ||a(T)||)
    seeds = [_walker(s) for s in range(5)]
    seeds[0]["hbnode.adjoint_log10_ratio"] = 15.0
    assert (
        evaluate(COMPARISONS["review.walker2d_hbnode_adjoint_own"], _results(seeds)).outcome
        == "invalid"
    )


def test_a_vanishing_adjoint_is_opposite_on_its_own_numbers():
    # every model's adjoint vanishing by ~20 orders: the comparison between models says nothing, the
    # absolute row says the paper's sentence is contradicted
    seeds = [_walker(s) for s in range(5)]
    for s, m in enumerate(seeds):
        m["hbnode.adjoint_log10_ratio"] = -20.0 - s
    assert (
        evaluate(COMPARISONS["review.walker2d_hbnode_adjoint_own"], _results(seeds)).outcome
        == "opposite"
    )


def test_an_nfe_at_the_solver_floor_is_invalid():
    claim = COMPARISONS["review.hbnode_forward_nfe_per_epoch"]

    def seed(
        hb, node
    ):  # the floors: each model's forward NFE as initialised at rtol 1e-5 (measured: 38 and 44)
        return {
            "hbnode.last_epoch.forward_nfe": hb,
            "node.last_epoch.forward_nfe": node,
            "hbnode.test_acc": 0.9,
            "node.test_acc": 0.9,
            "floor.hbnode.forward_nfe@train": 38.0,
            "floor.node.forward_nfe@train": 44.0,
        }

    assert (
        evaluate(claim, _results([seed(40.0 + s, 80.0) for s in range(5)])).outcome == "reproduced"
    )
    row = evaluate(
        claim, _results([seed(20.0, 20.0 + s) for s in range(5)])
    )  # 3 dopri5 steps: the floor
    assert row.outcome == "invalid" and "off floor" in row.reason
    # issue 30 §7: 38 evaluations, the untrained HBNODE's own count, passed the old fixed bound 1.5
    # x 14 = 21; the measured floor binds
    row = evaluate(claim, _results([seed(38.0, 80.0 + s) for s in range(5)]))
    assert row.outcome == "invalid"
    assert "hbnode.last_epoch.forward_nfe 38 vs floor.hbnode.forward_nfe@train 38" in row.reason
    assert off_floor("hbnode.last_epoch.forward_nfe", 14, "old").test(38.0)[
        0
    ]  # what the fixed bound said


def test_a_hybrid_nfe_at_the_solver_floor_is_invalid():
    # the ODE-RNN NFE rows read the trained model at rtol 1e-6, per interval solve: 2 dopri5 steps
    # (14) is the floor
    claim = COMPARISONS["review.walker2d_hbnode_forward_nfe"]
    assert evaluate(claim, _results([_walker(s) for s in range(5)])).outcome == "reproduced"
    seeds = [_walker(s) for s in range(5)]
    seeds[1]["node.tight.forward_nfe_per_solve"] = 14.0
    row = evaluate(claim, _results(seeds))
    assert row.outcome == "invalid" and "off floor" in row.reason and "seed 1" in row.reason


def test_an_untrained_baseline_is_invalid():
    claim = COMPARISONS["momtr.copy_momentum_vs_linear"]
    per_seed = [
        {
            "momentum.mean_test_accuracy": 0.19 + 0.01 * s,
            "linear.mean_test_accuracy": 0.1 + 0.005 * s,
            "linear.test_accuracy": 0.1 + 0.005 * s,
            "momentum.test_accuracy": 0.9,
        }
        for s in range(5)
    ]
    row = evaluate(claim, _results(per_seed))
    assert row.outcome == "invalid" and "trained: linear.test_accuracy >= 0.5" in row.reason


def test_a_loss_still_falling_is_invalid():
    seeds = [_walker(s) for s in range(5)]
    for e in range(1, WALKER_EPOCHS + 1):
        seeds[3][f"node.epoch{e}.test_mse"] = 2.0 + 0.1 * (
            WALKER_EPOCHS - e
        )  # 5 % per epoch at the end
    row = evaluate(COMPARISONS[WALKER], _results(seeds))
    assert row.outcome == "invalid" and "plateau" in row.reason and "seed 3" in row.reason


def test_a_missing_metric_is_invalid_naming_it_and_a_failed_run_says_so():
    seeds = [_walker(s) for s in range(5)]
    del seeds[1]["hbnode.test_mse"]
    row = evaluate(COMPARISONS[WALKER], _results(seeds))
    assert (
        row.outcome == "invalid" and "missing metric hbnode.test_mse in seed(s) [1]" in row.reason
    )
    seeds[1] = {k: v for k, v in seeds[1].items() if not k.startswith("hbnode.")}
    seeds[1].update({"hbnode.failed": 1.0, "hbnode.failed_epoch": 1.0})
    row = evaluate(COMPARISONS[WALKER], _results(seeds))
    assert row.outcome == "invalid" and "hbnode failed at epoch 1 in seed(s) [1]" in row.reason


def test_checks_state_their_criteria_and_refuse_bad_declarations():
    with pytest.raises(ValueError, match="state the smallest effect of interest"):
        greater(0.0)
    with pytest.raises(ValueError, match="target"):
        less(1.2, null=1.0)
    with pytest.raises(ValueError, match="plateau needs more than"):
        plateau("m.epoch{epoch}.loss", 3, k=3)
    with pytest.raises(TypeError, match="Check objects"):
        declare_validity("toy", "not a check")
    assert (
        off_floor("m.nfe", 14, "why").test(21.0)[0] is False
        and off_floor("m.nfe", 14, "why").test(22.0)[0]
    )
    assert at_most("m.loss", 0.5, "why").applies(["m.loss", "b.loss"]) and not at_most(
        "m.loss", 0.5, "w"
    ).applies(["b.loss"])


def test_add_comparisons_registers_its_rows_in_order_as_add_comparison_would(monkeypatch):
    monkeypatch.setattr(ledger, "COMPARISONS", {})
    rows = [
        RowValues(f"toy.{i}", f"claim {i}", "Fig. 1", "a / b", ratio("a", "b"), less(0.8, null=1.0))
        for i in range(3)
    ]
    registered = add_comparisons("a paper", "toy", rows)
    assert [c.id for c in registered] == list(ledger.COMPARISONS) == ["toy.0", "toy.1", "toy.2"]
    many = dict(ledger.COMPARISONS)
    ledger.COMPARISONS.clear()
    for row in rows:
        add_comparison(
            row.id,
            paper="a paper",
            claim=row.claim,
            paper_figure=row.paper_figure,
            experiment="toy",
            metric=row.metric,
            value=row.value,
            rule=row.rule,
        )
    assert many == ledger.COMPARISONS
    with pytest.raises(ValueError, match="already registered"):
        add_comparisons("a paper", "toy", rows[:1])


def test_every_registered_row_has_a_scale_a_sesoi_and_an_outcome():
    for row in E.ledger().rows:
        null, target, sesoi = row.claim.bounds()
        assert sesoi > 0 and math.isfinite(null) and math.isfinite(target), row.claim.id
        assert row.outcome in OUTCOMES, row.claim.id
        if row.outcome == "invalid":
            assert row.reason, row.claim.id
        if row.outcome == "inconclusive" and row.n >= 2:
            assert row.seeds_needed is not None or "seeds" in row.reason, row.claim.id
    # the old linear-scale ratio rows are all on a log scale now
    assert all(
        (c.value.scale == "log") == c.value.name.startswith("log10(") for c in COMPARISONS.values()
    )


# ---- results files are validated and named (issue 25 §1)
# ----------------------------------------------------------
@pytest.mark.parametrize(
    "content, match",
    [
        (
            b'{"experiment": "toy", "scale": "cpu", "shards": [{"seed": 0, "met',
            "cannot read",
        ),  # truncated
        (b"\x89PNG\r\n\x1a\n\x00\xff", "cannot read"),  # binary
        (
            json.dumps({"experiment": "toy", "scale": "cpu", "metrics": "x", "shards": 5}).encode(),
            "'shards' must be",
        ),
        (
            json.dumps({"scale": "cpu", "metrics": "x", "shards": []}).encode(),
            "'metrics' must be an object",
        ),
        (json.dumps([1, 2]).encode(), "expected a JSON object"),
        (
            json.dumps({"scale": "cpu", "shards": [{"seed": 0, "metrics": {"m.x": "1"}}]}).encode(),
            "must be a number",
        ),
        (
            json.dumps({"scale": "cpu", "shards": [{"seed": "0", "metrics": {}}]}).encode(),
            "seed must be an integer",
        ),
    ],
)
def test_a_bad_results_file_is_an_error_naming_the_file(tmp_path, content, match, capsys):
    (tmp_path / "momres_cubic").mkdir()
    path = tmp_path / "momres_cubic" / "results.json"
    path.write_bytes(content)
    with pytest.raises(LedgerError, match=match) as err:
        E.ledger(tmp_path, claims=[COMPARISONS["momres.cubic"]])
    assert str(path) in str(err.value)
    assert main(["ledger", "--results", str(tmp_path)]) != 0
    assert str(path) in capsys.readouterr().err


def test_markdown_and_counts_show_outcomes_effects_and_reasons(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "results.json").write_text(
        json.dumps(_results(_seeds([0.5, 1.5, 0.7, 1.3, 1.0])))
    )
    table = E.ledger(tmp_path, claims=[_ratio_claim()])
    md = table.to_markdown()
    assert "pilot inconclusive" in md and "seeds needed" in md and "log " in md and "5 (" in md
    # a toy experiment has no recipe: a pilot, counted apart from the replications
    assert (
        table.outcome_counts()["pilot inconclusive"] == 1
        and sum(table.outcome_counts().values()) == 1
    )
    assert table.counts() == {"replication": {}, "pilot": {"pilot inconclusive": 1}, "not run": {}}
    assert set(table.outcome_counts()) == set(OUTCOMES)


def test_the_markdown_says_whether_each_rows_plan_was_written_before_its_results():
    from dynkit.experiments.judging.ledger import plan_kind
    from dynkit.experiments.judging.plans import Plan

    before = Plan("toy", (5,), rows=("t.a",), prospective=True, written="written before the runs")
    after = Plan("toy", (5,), rows=("t.a",), prospective=False, written="after the results")
    assert plan_kind(before.describe()) == "prospective"
    assert (
        plan_kind(after.describe()) == "retrospective"
    )  # planted: a plan written after its results
    assert plan_kind(None) == plan_kind("none (one look at the results' n, t interval)") == "none"
    with pytest.raises(
        ValueError, match="plan must be"
    ):  # a text no Plan writes is refused, not read as one kind
        plan_kind("toy: n = 5, t interval, looked at twice")


def test_a_diverged_metric_stored_as_the_string_nan_is_diverged_not_a_crash(tmp_path):
    """Was: a results file whose shard held "nan" (how a NaN metric is stored in JSON) was refused
    as 'must be a number' and the whole ledger stopped; now the row is invalid, naming the seed."""
    from dynkit.experiments.judging.ledger import load_results, validate_results

    seeds = [_walker(s) for s in range(5)]
    seeds[3]["hbnode.test_mse"] = "nan"
    results = validate_results(_results(seeds), "planted")
    row = evaluate(COMPARISONS[WALKER], results)
    assert row.outcome == "invalid" and "hbnode.test_mse diverged" in row.reason
    assert "seed 3" in row.reason and row.effect is None
    for bad in ("banana", True, [1.0]):  # anything else is still refused, naming the metric
        seeds[3]["hbnode.test_mse"] = bad
        with pytest.raises(LedgerError, match=r"metrics\['hbnode.test_mse'\] must be a number"):
            validate_results(_results(seeds), "planted")
    assert load_results(tmp_path, "none_here", "cpu") is None
