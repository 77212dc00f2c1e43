"""Every training entry checks its device with one rule (dynkit._checks.device) and hands it to the
models.

On a CPU-only machine a GPU device is refused before any data is read, naming the device and what
the machine has; with torch's CUDA availability patched (``cuda:1`` of two "GPUs"), the same entries
reach the models' and the data's ``.to(device)`` with that device: the plumbing is checked without a
GPU.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

import dynkit as dk
from dynkit import _checks
from dynkit.cli import main
from dynkit.experiments import registry
from dynkit.tasks import node_runs, text
from shared_data import SENTENCE_DATA, needs_sentence_data


class Reached(Exception):
    """Raised by a planted ``.to`` once the device has arrived: the test ends there, before any
    training."""


@pytest.fixture
def two_gpus(monkeypatch):
    """torch reports two CUDA devices (nothing is allocated on them: the entries stop at the
    first ``.to``)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def cpu_only(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize("value", ["cpu", torch.device("cpu")])
def test_the_cpu_is_always_there(monkeypatch, value):
    cpu_only(monkeypatch)
    assert _checks.device(value) == "cpu"


@pytest.mark.parametrize(
    "value, says",
    [
        ("cuda", "got 'cuda': "),
        ("cuda:0", "got 'cuda:0': "),
        ("mps", "Metal (MPS) backend is not available"),
        ("gpu", "must be one of cpu, cuda, cuda:N, mps"),
        ("cuda:x", "must be one of"),
        (3, "got 3"),
        (None, "got None"),
    ],
)
def test_a_device_the_machine_lacks_is_refused_naming_it_and_what_it_has(monkeypatch, value, says):
    cpu_only(monkeypatch)
    with pytest.raises(ValueError, match="got ") as info:
        _checks.device(value, "--device")
    message = str(info.value)
    assert (
        says in message
        and message.startswith("--device must be")
        and ("has cpu" in message or "(cpu)" in message)
    )


def test_a_cuda_index_beyond_the_gpus_names_how_many_there_are(two_gpus):
    assert _checks.device("cuda:1") == "cuda:1" and _checks.device("cuda") == "cuda"
    with pytest.raises(
        ValueError, match=r"\(cpu, cuda:0, cuda:1\), got 'cuda:2': it has 2 CUDA GPUs"
    ):
        _checks.device("cuda:2")


def test_a_cpu_only_torch_build_is_named(monkeypatch):
    cpu_only(monkeypatch)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(ValueError, match="this torch build has no CUDA support"):
        _checks.device("cuda")


def _refuse_data(*args, **kwargs):
    raise AssertionError("data was loaded before the device was checked")


@pytest.mark.parametrize("model, task", [("hbnode", "digits"), ("csaark", "trec")])
def test_run_training_refuses_a_missing_gpu_before_any_data(monkeypatch, model, task):
    """Was: torch's raw ``AssertionError: Torch not compiled with CUDA enabled`` after the data
    had loaded."""
    cpu_only(monkeypatch)
    monkeypatch.setattr(node_runs, "load_task", _refuse_data)
    monkeypatch.setattr(text, "load_dataset", _refuse_data)
    with pytest.raises(
        ValueError, match="device must be a device this machine has \\(cpu\\), got 'cuda': "
    ):
        dk.tasks.run_training(model, task, device="cuda")


class _Movable:
    """Stands for the data and the model: records where ``.to`` sends it, then stops the run."""

    def __init__(self, seen: list):
        self.seen = seen

    def to(self, device):
        self.seen.append(device)
        raise Reached


def test_run_training_hands_the_device_to_the_data(two_gpus, monkeypatch):
    seen = []
    monkeypatch.setattr(node_runs, "load_task", lambda *a, **k: [_Movable(seen)] * 4)
    with pytest.raises(Reached):
        dk.tasks.run_training("hbnode", "digits", device="cuda:1")
    assert seen == [torch.device("cuda:1")]


def test_run_training_hands_the_device_to_the_model(two_gpus, monkeypatch):
    """The data are real here (the digits, a few kB); the model's ``.to`` is the planted one."""
    seen = []
    monkeypatch.setattr(
        node_runs.torch.Tensor, "to", lambda self, device: self
    )  # the data stay where they are
    monkeypatch.setattr(node_runs, "from_paper", lambda *a, **k: _Movable(seen))
    with pytest.raises(Reached):
        dk.tasks.run_training("hbnode", "digits", device="cuda:1")
    assert seen == [torch.device("cuda:1")]


@needs_sentence_data
def test_train_csaode_hands_the_device_to_the_model(two_gpus, monkeypatch):
    from dynkit.models import csaode

    seen = []
    monkeypatch.setattr(csaode.CSAODE, "to", lambda self, device: _Movable(seen).to(device))
    with pytest.raises(Reached):
        text.train_csaode(
            "trec",
            SENTENCE_DATA,
            solver="ark",
            epochs=1,
            d=8,
            embed_dim=8,
            train_subset=64,
            quiet=True,
            device="cuda:1",
        )
    assert seen == [torch.device("cuda:1")]


def test_dynkit_train_passes_its_device_to_run_training(two_gpus, monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(node_runs, "load_task", lambda *a, **k: [_Movable(seen)] * 4)
    code = main(["train", "--model", "hbnode", "--task", "digits", "--device", "cuda:1", "--quiet"])
    assert (
        code == 3 and "Reached" in capsys.readouterr().err
    )  # the planted stop, after the device arrived
    assert seen == [torch.device("cuda:1")]


def test_dynkit_train_on_a_cpu_only_machine_names_cudas_absence(monkeypatch, capsys):
    cpu_only(monkeypatch)
    monkeypatch.setattr(node_runs, "load_task", _refuse_data)
    code = main(["train", "--model", "hbnode", "--task", "digits", "--device", "cuda"])
    err = capsys.readouterr().err
    assert (
        code == 2
        and "--device must be a device this machine has (cpu), got 'cuda'" in err
        and "CUDA" in err
    ), err


@dataclasses.dataclass(frozen=True)
class _Toy:
    value: float = 1.0


def _toy_experiment(monkeypatch, seen: list) -> str:
    def toy(config, *, seed, out, device):
        seen.append(device)
        return {"metrics": {"value": config.value}}

    monkeypatch.setitem(
        registry.EXPERIMENTS,
        "device_toy",
        registry.Experiment(
            "device_toy",
            toy,
            {s: _Toy() for s in ("smoke", "cpu", "full")},
            None,
            "a toy",
            None,
            __name__,
        ),
    )
    return "device_toy"


def test_dynkit_run_hands_its_device_to_the_experiment(two_gpus, monkeypatch, tmp_path):
    seen = []
    name = _toy_experiment(monkeypatch, seen)
    code = main(
        [
            "run",
            name,
            "--scale",
            "smoke",
            "--seeds",
            "0",
            "--device",
            "cuda:1",
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ]
    )
    assert code == 0 and seen == ["cuda:1"]


def test_dynkit_run_refuses_a_missing_gpu_before_any_folder(monkeypatch, tmp_path, capsys):
    cpu_only(monkeypatch)
    seen = []
    name = _toy_experiment(monkeypatch, seen)
    code = main(["run", name, "--scale", "smoke", "--device", "cuda", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert (
        code == 2
        and "--device must be a device this machine has (cpu), got 'cuda'" in err
        and seen == []
    )
    assert not (tmp_path / "o").exists()


def test_a_cuda_shard_records_the_gpus_name(two_gpus, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: f"Planted GPU {device}")
    name = _toy_experiment(monkeypatch, [])
    results = dk.experiments.run(
        name, scale="smoke", seeds=(0,), out=tmp_path / "o", device="cuda:1"
    )
    shard = json.loads(next((tmp_path / "o" / "shards").glob("*/shard.json")).read_text())
    assert shard["device"] == "cuda:1" and shard["device_name"] == "Planted GPU cuda:1"
    assert results["shards"][0]["device_name"] == "Planted GPU cuda:1"


def test_a_cpu_shard_records_cpu_as_its_device_name(tmp_path, monkeypatch):
    name = _toy_experiment(monkeypatch, [])
    results = dk.experiments.run(name, scale="smoke", seeds=(0,), out=tmp_path / "o")
    assert results["shards"][0]["device_name"] == "cpu"


def test_node_point_cloud_trains_on_the_shards_device(two_gpus, monkeypatch, tmp_path):
    """Was: its models trained on the CPU whatever --device said (train_model's default)."""
    from dynkit.experiments.node import node_point_cloud

    seen = []

    def planted_train_model(*args, device, **kwargs):
        seen.append(torch.device(device))
        raise Reached

    monkeypatch.setattr(node_point_cloud, "train_model", planted_train_model)
    with pytest.raises(Reached), torch.device("cuda:1"):
        node_point_cloud.main(["--runs", "1", "--epochs", "1", "--out", str(tmp_path), "--quiet"])
    assert seen == [torch.device("cuda:1")]


class _DrawsNameTheirDevice(torch.overrides.TorchFunctionMode):
    """Refuses a seeded draw that leaves its device to the default: under ``torch.device("cuda")`` a
    CPU generator then meets a CUDA tensor and torch raises (what the paper rows hit on a GPU)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        generator = kwargs.get("generator")
        if generator is not None and torch.device(kwargs.get("device", "meta")) != generator.device:
            raise AssertionError(
                f"{getattr(func, '__name__', func)} draws from a {generator.device} generator "
                f"without device={generator.device}"
            )
        return func(*args, **kwargs)


def _draws():
    from dynkit.experiments.momres import momres_cubic, momres_lista, momres_rings
    from dynkit.tasks.point_cloud import point_cloud

    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    return {
        "lista": lambda: momres_lista.make_problem(4, 4, g(), "unit-variance"),
        "rings": lambda: momres_rings.make_rings("authors", 5, g()),
        "rings_dynkit": lambda: momres_rings.make_rings("dynkit", 5, g()),
        "cubic": lambda: momres_cubic.training_points("uniform", 5, g()),
        "point_cloud": lambda: point_cloud(4, 8, seed=0),
    }


@pytest.mark.parametrize("name", sorted(_draws()))
def test_the_paper_rows_seeded_draws_name_their_generators_device(name):
    with _DrawsNameTheirDevice():
        _draws()[name]()


def test_the_draw_check_catches_a_draw_that_leaves_its_device_to_the_default():
    with pytest.raises(AssertionError, match="without device=cpu"), _DrawsNameTheirDevice():
        torch.randn(3, generator=torch.Generator().manual_seed(0))


def test_copy_task_batches_follow_the_models_device(monkeypatch):
    """The copy task's tensors come from numpy (the CPU): masked_loss moves them to the model."""
    from dynkit.experiments.momseq import momseq_copy
    from dynkit.tasks.sequences import copy_task

    moved = []
    real_to = torch.Tensor.to
    monkeypatch.setattr(
        torch.Tensor, "to", lambda self, *a, **k: (moved.append(a), real_to(self, *a, **k))[1]
    )
    model = torch.nn.Sequential(torch.nn.Embedding(12, 4), torch.nn.Linear(4, 12))
    loss, _ = momseq_copy.masked_loss(model, copy_task(3, 12, seed=0))
    assert math.isfinite(float(loss)) and moved.count((torch.device("cpu"),)) == 3


def test_the_adjoints_per_state_tolerances_stay_numpy_under_another_default_device():
    """Was: under ``torch.device("cuda")`` (a GPU shard) the tolerances' tensor was made on the
    GPU and ``.numpy()`` refused; ``meta`` stands in for the GPU here (no values: ``.numpy()``
    refuses too)."""
    import numpy as np

    from dynkit.solvers.adjoint import _adjoint_options

    with torch.device("meta"):
        options = _adjoint_options({"atol": np.array([1e-6, 1e-8]), "rtol": 1e-6}, (2,), 3)
    assert options["atol"].tolist() == [1e-6, 1e-8, 1e-6, 1e-8, 1e-8, 1e-8, 1e-8]
