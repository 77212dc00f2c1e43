"""Issue 31 item 7: ``node_adjoint_norm`` records its training metric beside its trivial predictors'
and holds every model of its rows to that bar; ``node_images`` trains and measures its own models,
from a seed stream of its own.

Planted violations: a constant predictor in place of the hybrids makes the adjoint rows invalid (the
real bar binds, a model at half the trivial predictor's error passes it); node_trained's results
pointed at garbage leave node_images' rows unchanged; node_images' values identical to
node_trained's are caught.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import dynkit.experiments as E
import dynkit.experiments.node.node_adjoint_norm as adjoint
import dynkit.experiments.node.node_images as images
from dynkit.experiments.judging.baselines import baseline_of
from dynkit.experiments.judging.ledger import evaluate, ledger

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "analysis" / "results"
ADJOINT_ROWS = [c for c in E.COMPARISONS.values() if c.experiment == "node_adjoint_norm"]
IMAGE_ROWS = [c for c in E.COMPARISONS.values() if c.experiment == "node_images"]
C = 0.25  # the planted ramp's step


def _ramp(length=6) -> torch.Tensor:
    """8 windows (length + 1 stamps, channels u and y): y rises by C per stamp, window w starting
    at 10 w."""
    y = (
        10.0 * torch.arange(adjoint.N_SEQUENCES, dtype=torch.float64)[:, None]
        + C * torch.arange(length + 1)[None]
    )
    return torch.stack([torch.zeros_like(y), y], -1)


# ---- node_adjoint_norm: the trivial predictors and the model's metric
# --------------------------------------------
def test_trivial_forecasts_have_their_closed_form_errors():
    x = _ramp()
    for split in ("train", "test"):
        got = adjoint.trivial_forecasts(x, split)
        # persistence misses every next stamp by exactly C; exact in float64
        assert got[f"baseline.persistence.{split}_mse"] == pytest.approx(C**2, rel=1e-12)
        # the mean of the training targets (stamps 1..L of windows 0..6), scored on the split's
        # stamps 1..L (numpy)
        y = x[..., 1].numpy()
        mean = y[:7, 1:].mean()
        truth = y[:7, 1:] if split == "train" else y[7:, 1:]
        assert got[f"baseline.mean.{split}_mse"] == pytest.approx(
            float(((truth - mean) ** 2).mean()), rel=1e-12
        )
        assert got[f"baseline.best.{split}_mse"] == min(
            got[f"baseline.persistence.{split}_mse"], got[f"baseline.mean.{split}_mse"]
        )
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        adjoint.trivial_forecasts(x, "valid")


class _Constant(torch.nn.Module):
    """A model that did not learn: it predicts ``value`` at every stamp, whatever it reads. A
    real hybrid runs beside it (scaled by 1e-9) so that training and the adjoint go through the
    same code as for a model."""

    def __init__(self, model, value=0.0):
        super().__init__()
        self.model, self.value = model, value

    def forward(self, x, gaps, keep_states=False):
        pred, states, z = self.model(x, gaps, keep_states=keep_states)
        return self.value + 1e-9 * pred, states, z


def test_one_step_mse_scores_the_next_stamp():
    x, times = _ramp(), torch.arange(7, dtype=torch.float64)[None].repeat(adjoint.N_SEQUENCES, 1)
    flat = _Constant(adjoint.hybrid("node").double(), value=3.0)
    # the constant 3 against y at stamps 1..6 (independent: numpy); 1e-9 x the hybrid's output moves
    # it by < 1e-7
    expected = float(((3.0 - x[..., 1].numpy()[:, 1:]) ** 2).mean())
    assert adjoint.one_step_mse(flat, times, x) == pytest.approx(expected, rel=1e-7)


@pytest.fixture(scope="module")
def constant_run(tmp_path_factory):
    """The smoke run of node_adjoint_norm with a constant predictor in place of every hybrid."""
    mp = pytest.MonkeyPatch()
    real = adjoint.hybrid
    mp.setattr(adjoint, "hybrid", lambda name, **kw: _Constant(real(name, **kw)))
    try:
        out = tmp_path_factory.mktemp("constant")
        E.run("node_adjoint_norm", "smoke", seeds=[0], out=out)
        return json.loads((out / "results.json").read_text())
    finally:
        mp.undo()


def test_each_shard_records_every_models_metric_beside_its_trivial_predictors(constant_run):
    m = constant_run["shards"][0]["metrics"]
    times, x = adjoint.make_data(
        24, adjoint.N_SEQUENCES, 0
    )  # the smoke scale's data (--length 24, seed 0)
    y = x[..., 1].numpy()
    for model in adjoint.HYBRIDS:
        # the constant 0 (+ 1e-9 x a hybrid): its MSE is the mean of y^2 on the same stamps (numpy,
        # rel 1e-6)
        assert m[f"{model}.train_mse"] == pytest.approx(float((y[:7, 1:] ** 2).mean()), rel=1e-6)
        assert m[f"{model}.test_mse"] == pytest.approx(float((y[7:, 1:] ** 2).mean()), rel=1e-6)
    assert m["baseline.persistence.test_mse"] == pytest.approx(
        float(((y[7:, 1:] - y[7:, :-1]) ** 2).mean()), rel=1e-12
    )


def _seeds_like(metrics: dict, n=5) -> dict:
    """``n`` seeds of a shard's metrics, the decays (orders of magnitude from T to the start)
    spread a little so that the row has an interval: ODE-RNN's adjoint vanishes by 20 orders, the
    heavy-ball ones' by half an order."""
    shards = []
    for s in range(n):
        m = dict(metrics)
        for model in adjoint.HYBRIDS:
            m[f"{model}.decay_orders_of_magnitude"] = (20.0 if model == "node" else 0.5) + 0.1 * s
        shards.append({"seed": s, "metrics": m})
    return {"scale": "cpu", "shards": shards}


def test_a_model_that_did_not_learn_makes_every_adjoint_row_invalid(constant_run):
    assert ADJOINT_ROWS, "node_adjoint_norm has ledger rows"
    flat = constant_run["shards"][0]["metrics"]
    for claim in ADJOINT_ROWS:
        row = evaluate(claim, _seeds_like(flat))
        assert row.outcome == "invalid" and "trained bar" in row.reason, (claim.id, row.reason)
        # the reason names the model, its metric and the baseline's
        assert "hbnode.train_mse" in row.reason and "baseline.best.train_mse" in row.reason, (
            row.reason
        )
    # the control: the same shards with every model at half the better trivial predictor's error are
    # decided on their effect (the bar, not something else, made them invalid)
    learned = dict(flat)
    for model in adjoint.HYBRIDS:
        for split in ("train", "test"):
            learned[f"{model}.{split}_mse"] = 0.5 * flat[f"baseline.best.{split}_mse"]
    for claim in ADJOINT_ROWS:
        row = evaluate(claim, _seeds_like(learned))
        assert row.outcome != "invalid", (claim.id, row.reason)
    # one model short of the bar (ODE-RNN, which every comparison row reads) invalidates the rows
    # that read it
    learned["node.test_mse"] = 0.95 * flat["baseline.best.test_mse"]
    row = evaluate(E.COMPARISONS["review.hbnode_adjoint_no_vanishing"], _seeds_like(learned))
    assert row.outcome == "invalid" and "node.test_mse" in row.reason
    assert (
        evaluate(E.COMPARISONS["review.hbnode_adjoint_own_decay"], _seeds_like(learned)).outcome
        != "invalid"
    )


def test_results_recorded_before_the_bar_read_invalid_naming_the_missing_metric():
    old = {
        "scale": "cpu",
        "shards": [
            {
                "seed": s,
                "metrics": {f"{m}.decay_orders_of_magnitude": -10.0 - s for m in adjoint.HYBRIDS},
            }
            for s in range(5)
        ],
    }
    for claim in ADJOINT_ROWS:
        row = evaluate(claim, old)
        assert (
            row.outcome == "invalid"
            and "missing metric" in row.reason
            and "train_mse" in row.reason
        )


# ---- node_images: its own models, its own seeds, its own shards
# -------------------------------------------------
def test_model_seeds_are_the_experiments_own():
    seeds = [images.model_seed(s) for s in range(1000)]
    assert (
        len(set(seeds)) == 1000 and min(seeds) >= 1000
    )  # none is a seed the other experiments pass through
    assert seeds[:3] == [images.model_seed(s) for s in range(3)]  # deterministic
    assert all(0 <= s < 2**31 for s in seeds)
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            images.model_seed(bad)


def test_node_images_trains_every_model_its_rows_compare_from_its_own_seed(monkeypatch, tmp_path):
    calls = []

    def fake_train(
        name, task, *, seed, **kw
    ):  # planted results: no training, the seed it was asked for recorded
        calls.append((name, seed))
        hist = [
            {
                "epoch": 1,
                "forward_nfe": 40.0 + seed % 7,
                "backward_nfe": 30.0,
                "test_acc": 0.9,
                "batch_time": 0.1,
            }
        ]
        return None, {
            "n_parameters": 1,
            "history": hist,
            "final": hist[0],
            "config": {"settings": {"n_train": 64}, "batch_size": 32},
        }

    monkeypatch.setattr(images, "train_model", fake_train)
    monkeypatch.setattr(images, "plot", lambda *a, **k: None)
    compared = {m.split(".")[0] for c in IMAGE_ROWS for m in c.value.metrics}
    cpu_models = E.EXPERIMENTS["node_images"].config("cpu").args
    assert compared <= set(cpu_models)  # the cpu scale trains every model its rows compare
    images.main(["--models", *sorted(compared), "--seed", "3", "--out", str(tmp_path), "--quiet"])
    assert sorted(calls) == [(m, images.model_seed(3)) for m in sorted(compared)]


def test_node_images_floors_are_measured_on_its_own_models(monkeypatch):
    import dynkit.experiments.node.baselines as baselines

    seen = []
    monkeypatch.setattr(
        baselines,
        "untrained_forward_nfe",
        lambda model, task, tol, seed, batch, solver="dynkit": seen.append(seed) or 20.0,
    )
    baseline_of("node_images")({"args": ["--tol", "1e-5", "--models", "anode", "hbnode"]}, 2)
    assert seen == [images.model_seed(2)] * 2


def _identical_to_node_trained(img: dict, trained: dict) -> list[str]:
    """The metrics of HBNODE (the model both experiments train) equal in both, per seed: a row of
    node_images built from node_trained's models rather than its own."""
    own = {s["seed"]: s["metrics"] for s in img["shards"]}
    theirs = {}
    for s in trained["shards"]:
        theirs.setdefault(s["seed"], {}).update(s["metrics"])
    pairs = (
        ("hbnode.test_acc", "hbnode.test_acc"),
        ("hbnode.forward_nfe", "hbnode.last_epoch.forward_nfe"),
    )
    return [
        f"seed {seed}: {a}"
        for seed, m in own.items()
        for a, b in pairs
        if b in theirs.get(seed, {}) and m.get(a) == theirs[seed][b]
    ]


def test_node_images_results_of_record_are_not_node_trained_s():
    img = json.loads((RESULTS / "node_images" / "results.json").read_text())
    trained = json.loads((RESULTS / "node_trained" / "results.json").read_text())
    assert _identical_to_node_trained(img, trained) == []
    # planted: node_images' HBNODE copied from node_trained (what the old design amounted to) is
    # caught
    copied = json.loads(json.dumps(img))
    by_seed = {}
    for s in trained["shards"]:
        by_seed.setdefault(s["seed"], {}).update(s["metrics"])
    for s in copied["shards"]:
        s["metrics"]["hbnode.test_acc"] = by_seed[s["seed"]]["hbnode.test_acc"]
    assert len(_identical_to_node_trained(copied, trained)) == len(copied["shards"])


def _node_images_rows(root: Path) -> list[tuple]:
    rows = ledger(root, claims=IMAGE_ROWS, plans=ROOT / "analysis" / "plans").rows
    return [(r.claim.id, r.outcome, r.reason, r.effect, r.ci_low, r.ci_high) for r in rows]


def test_node_images_rows_read_only_its_own_shards(tmp_path):
    for name in ("node_images", "node_trained"):
        shutil.copytree(
            RESULTS / name, tmp_path / name, ignore=shutil.ignore_patterns("*.png", "shards")
        )
    before = _node_images_rows(tmp_path)
    # planted: node_trained's results point at garbage, valid in form (absurd HBNODE numbers), then
    # unreadable
    garbage = json.loads((tmp_path / "node_trained" / "results.json").read_text())
    for s in garbage["shards"]:
        s["metrics"] = {k: -1e9 for k in s["metrics"]}
    (tmp_path / "node_trained" / "results.json").write_text(json.dumps(garbage))
    assert _node_images_rows(tmp_path) == before
    (tmp_path / "node_trained" / "results.json").write_bytes(b"\x00garbage")
    (tmp_path / "node_trained" / "baselines.json").write_text("{}")
    assert _node_images_rows(tmp_path) == before
    # and every metric the rows and their checks read is in node_images' own shards (with its own
    # baselines)
    img = json.loads((RESULTS / "node_images" / "results.json").read_text())
    floors = json.loads((RESULTS / "node_images" / "baselines.json").read_text())["seeds"]
    for claim in IMAGE_ROWS:
        needed = {*claim.value.metrics, *(k for c in claim.validity() for k in c.metrics)}
        for s in img["shards"]:
            assert needed <= {*s["metrics"], *floors[str(s["seed"])]}, (claim.id, s["seed"])
    assert np.isfinite([r[3] for r in before if r[3] is not None]).all()
