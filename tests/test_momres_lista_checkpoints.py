"""momres_lista resumes from its per-(model, depth) checkpoints: a resumed run's numbers are an
uninterrupted run's, a checkpoint of other settings is refused, and a kept result is really read."""

from __future__ import annotations

import json

import pytest

from dynkit.experiments.momres import momres_lista as L

KINDS = ("lista", "revnet", "momentum")


def small(**changes) -> dict:
    """A seconds-long run: the cpu options with two depths and a few iterations."""
    options = {**L.options([]), "depths": (1, 3), "iterations": 4}
    return {**options, **changes}


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    alone = L.run(0, True, **small())
    first = L.run(0, True, **small(checkpoints=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{k}-depth{d}.json" for k in KINDS for d in (1, 3)
    )
    (tmp_path / "revnet-depth3.json").unlink()  # an interrupted run: one piece left to train
    resumed = L.run(0, True, **small(checkpoints=tmp_path))
    # exact: each (model, depth) trains from its own seeded start, and JSON keeps a float's repr
    for result in (first, resumed):
        for kind in KINDS:
            assert result[kind] == alone[kind]


def test_a_kept_result_is_read_not_recomputed(tmp_path):
    # planted: a kept gap changed by hand comes back as it is, so the run did read the checkpoint
    L.run(0, True, **small(checkpoints=tmp_path))
    path = tmp_path / "momentum-depth1.json"
    kept = json.loads(path.read_text())
    path.write_text(json.dumps({**kept, "gap": 123.0}))
    again = L.run(0, True, **small(checkpoints=tmp_path))
    assert again["momentum"]["test_loss_minus_optimum"][0] == 123.0


@pytest.mark.parametrize("change", [{"iterations": 5}, {"lr": 2e-3}, {"columns": "unit-variance"}])
def test_a_checkpoint_of_other_settings_is_refused_naming_its_file(tmp_path, change):
    L.run(0, True, **small(checkpoints=tmp_path))
    with pytest.raises(ValueError, match=r"lista-depth1\.json was written with other settings"):
        L.run(0, True, **small(checkpoints=tmp_path, **change))
    with pytest.raises(ValueError, match="other settings"):
        L.run(1, True, **small(checkpoints=tmp_path))  # another seed is other settings too


def test_an_interrupted_shard_resumes_from_the_runner_s_work_folder(tmp_path, monkeypatch):
    import dynkit.experiments as E
    from dynkit.experiments.registry import WORK_DIR

    made, make_model = [], L.make_model

    def interrupted(*args, **kwargs):
        if len(made) == 7:  # the smoke scale's seven LISTA depths are done: stop there
            raise KeyboardInterrupt
        made.append(args[0])
        return make_model(*args, **kwargs)

    monkeypatch.setattr(L, "make_model", interrupted)
    with pytest.raises(KeyboardInterrupt):
        E.run("momres_lista", scale="smoke", seeds=(0,), out=tmp_path)
    kept = tmp_path / "shards" / "seed0" / WORK_DIR / "checkpoints"
    deepest = kept / "lista-depth16.json"
    assert sorted(p.name for p in kept.iterdir())[:1] == ["lista-depth1.json"] and deepest.exists()
    # planted: the deepest LISTA's kept gap changed by hand; the resumed shard reports it
    deepest.write_text(json.dumps({**json.loads(deepest.read_text()), "gap": 123.0}))
    monkeypatch.setattr(L, "make_model", make_model)
    result = E.run("momres_lista", scale="smoke", seeds=(0,), out=tmp_path)
    (shard,) = result["shards"]
    assert shard["metrics"]["lista.deepest_loss_gap"] == 123.0
    assert not (tmp_path / "shards" / "seed0" / WORK_DIR).exists()  # removed with the record
