"""Evidence levels: a replication only for the paper's experiment (its recipe), a pilot otherwise,
with words of its own; a claim run on another task than the paper's is a pilot of a new question,
worded as ours."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import dynkit.experiments as E
from dynkit.experiments.judging.evidence import PILOT_WORDS, evidence_of, question
from dynkit.experiments.judging.ledger import evaluate

RECORD = Path(__file__).resolve().parents[1] / "analysis" / "results"
# the tied rings' 5-seed record (their planned campaign has no look yet)
TIED = "momres_rings_tied_pilot"


def _results(name: str) -> dict:
    return json.loads((RECORD / name / "results.json").read_text())


def test_the_tied_rings_at_the_authors_recipe_are_a_replication_and_a_changed_config_is_not():
    E.load_all()
    claim = E.COMPARISONS["momres.rings_tied"]
    results = _results(TIED)
    level, why = evidence_of(claim, results)
    assert (
        level == "replication" and "seeds" in why
    )  # the one difference: more seeds than the authors' run
    planted = copy.deepcopy(results)
    planted["config"]["args"] = [a if a != "1500" else "300" for a in planted["config"]["args"]]
    level, why = evidence_of(
        claim, planted
    )  # a fifth of the authors' iterations: not their experiment
    assert level == "pilot" and "another config" in why
    assert evidence_of(claim, None)[0] == "not run"


def test_a_claim_about_walker2d_run_on_plane_vibration_is_a_pilot_of_our_question():
    E.load_all()
    claim = E.COMPARISONS["review.plane_vibration_hbnode_adjoint_not_vanishing"]
    level, why = evidence_of(claim, _results("ode_rnn_plane_vibration"))
    assert level == "pilot" and "Walker2D" in why
    assert question(claim).startswith("Ours, on the measured plane vibration series:")
    assert "the paper's claim is about Walker2D" in question(claim)
    # MomentumRNN's MNIST claims on Fashion-MNIST: the recipe's data set differs
    fashion = E.COMPARISONS["momentum_rnn.fashion_mnist_MomentumLSTM_beats_lstm"]
    assert evidence_of(fashion, _results("momentum_lstm_fashion_mnist"))[0] == "pilot"
    assert "fashion_mnist" in question(fashion) and "MNIST" in question(fashion)


def test_a_pilot_never_reads_reproduced_and_keeps_what_its_interval_read():
    claim = E.COMPARISONS["momres.rings_tied"]
    from dynkit.experiments.judging.baselines import load

    results = _results(TIED)
    base = load(RECORD / TIED)
    as_replication = evaluate(claim, results, baselines=base)
    as_pilot = evaluate(claim, results, baselines=base, evidence="pilot", evidence_why="planted")
    assert as_pilot.reading == as_replication.outcome
    assert as_pilot.outcome == PILOT_WORDS[as_replication.outcome] and as_pilot.outcome.startswith(
        "pilot"
    )
    assert set(PILOT_WORDS.values()) == {
        "pilot agrees",
        "pilot: smaller effect",
        "pilot disagrees",
        "pilot: no effect",
        "pilot inconclusive",
        "pilot invalid",
    }
    # a pilot short of the paper's effect never reads as agreeing with it
    assert PILOT_WORDS["smaller effect"] != PILOT_WORDS["reproduced"]
