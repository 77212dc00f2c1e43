"""dk.tasks.run_training dispatches every experiment family and rejects mismatched arguments up front."""
import pytest
import torch

import dynkit as dk
from shared_data import SENTENCE_DATA, needs_sentence_data

torch.set_num_threads(1)


@needs_sentence_data
def test_text_task_trains_the_named_csaode_variant(tmp_path):
    tiny = dict(d=8, embed_dim=8, train_subset=128, batch_size=64)
    result = dk.tasks.run_training("csaark", "trec", epochs=1, out=tmp_path, quiet=True, data_dir=SENTENCE_DATA, **tiny)
    assert 0.0 <= result["test_accuracy"] <= 1.0 and len(result["history"]) == 1
    assert (tmp_path / "checkpoint.pt").exists()


def test_neural_ode_task_is_routed_to_its_trainer(tmp_path):
    result = dk.tasks.run_training("hbnode", "point_cloud", epochs=1, out=tmp_path, quiet=True, tol=1e-3)
    assert result["model"] == "hbnode" and result["task"] == "point_cloud" and len(result["history"]) == 1


@pytest.mark.parametrize("model,task,kwargs,match", [
    ("hbnode", "trec", {}, "model for the text task 'trec' must be one of"),
    ("csaark", "trec", {"tol": 1e-3}, "tol does not apply to CSAODE"),
    ("hbnode", "digits", {"data_dir": "x"}, "data_dir applies to the text tasks"),
    ("hbnode", "imagenet", {}, "task must be one of"),
])
def test_mismatched_arguments_are_rejected(model, task, kwargs, match):
    with pytest.raises(ValueError, match=match):
        dk.tasks.run_training(model, task, **kwargs)
