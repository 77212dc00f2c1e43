"""nfe-sweep says whether its models were trained: UNTRAINED in the table, the JSON and the
figure when measured as initialised, the real epochs (or that they are unknown) otherwise, never
0 for trained modules; the command and the library write one JSON layout (write_nfe_sweep)."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import component_fakes as fakes  # noqa: E402

from dynkit.cli import main  # noqa: E402
from dynkit.experiments.node import nfe_tolerance  # noqa: E402
from dynkit.experiments.node.nfe_tolerance import (
    GIVEN_MODULES,
    SweepResults,
    plot_nfe_vs_tolerance,  # noqa: E402
    training_record,
    write_nfe_sweep,
)

ENTRY = {"forward_nfe": {"mean": 20.0, "std": 1.0}, "backward_nfe": {"mean": 30.0, "std": 2.0}}


@pytest.fixture
def fake(monkeypatch):
    return fakes.install(monkeypatch)


def _title(fig) -> str:
    return fig._suptitle.get_text() if fig._suptitle is not None else ""


def test_the_command_labels_untrained_models_everywhere(capsys, fake, tmp_path):
    """Was: neither the output nor the figure said the swept models were untrained."""
    code = main(
        ["nfe-sweep", "--models", "node,hbnode", "--tolerances", "1e-3", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.count("(UNTRAINED)") == 2 and "measured as initialised" in out
    data = json.loads((tmp_path / "nfe_sweep.json").read_text())
    assert set(data) >= {"results", "training", "config", "versions", "command"}
    assert all(data["training"][m]["state"].startswith("UNTRAINED") for m in ("node", "hbnode"))
    assert data["config"]["train_epochs"] == 0
    assert "UNTRAINED" in _title(
        plot_nfe_vs_tolerance(data)
    )  # the figure drawn from the file says it too


def test_the_command_trains_when_asked_and_records_the_epochs(capsys, fake, tmp_path):
    code = main(
        [
            "nfe-sweep",
            "--models",
            "node",
            "--tolerances",
            "1e-3",
            "--train-epochs",
            "3",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert (
        code == 0 and dict(fake)["nfe_vs_tolerance"]["train_epochs"] == 3 and "UNTRAINED" not in out
    )
    data = json.loads((tmp_path / "nfe_sweep.json").read_text())
    assert data["training"]["node"] == {"epochs": 3, "state": "trained for 3 epochs"}
    assert "UNTRAINED" not in _title(plot_nfe_vs_tolerance(data))
    assert main(["nfe-sweep", "--train-epochs", "-1", "--out", str(tmp_path / "x")]) == 2


def test_given_modules_are_never_recorded_as_zero_epochs():
    assert training_record(GIVEN_MODULES)["epochs"] == GIVEN_MODULES
    assert training_record(0)["state"].startswith("UNTRAINED") and training_record(5)["epochs"] == 5


def test_one_layout_for_the_library_and_the_command(tmp_path, fake, capsys):
    results = SweepResults({"mine": {"1e-03": ENTRY}}, {"mine": training_record(GIVEN_MODULES)})
    write_nfe_sweep(results, tmp_path, config={"train_epochs": 0})
    library = json.loads((tmp_path / "nfe_vs_tolerance.json").read_text())
    assert (
        main(
            [
                "nfe-sweep",
                "--models",
                "node",
                "--tolerances",
                "1e-3",
                "--out",
                str(tmp_path / "cli"),
                "--quiet",
            ]
        )
        == 0
    )
    command = json.loads((tmp_path / "cli" / "nfe_sweep.json").read_text())
    assert set(library) == set(command) - {"command"} and set(
        library["results"]["mine"]["1e-03"]
    ) == set(ENTRY)
    assert library["training"]["mine"]["epochs"] == GIVEN_MODULES  # modules: unknown, not 0


def test_a_mixed_figure_labels_the_untrained_lines():
    results = SweepResults(
        {"a": {"1e-03": ENTRY}, "b": {"1e-03": ENTRY}},
        {"a": training_record(0), "b": training_record(4)},
    )
    fig = plot_nfe_vs_tolerance(results)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["A (UNTRAINED)", "B"] and "UNTRAINED" not in _title(fig)


def test_nfe_vs_tolerance_records_the_training_of_what_it_measures():
    """Named models as initialised are UNTRAINED; modules given with trained_epochs keep that
    number."""
    from dynkit.models.node_paper import from_paper

    module = from_paper("node", "point_cloud")
    res = nfe_tolerance.nfe_vs_tolerance(
        models={"fresh": "node", "given": module},
        task="point_cloud",
        tolerances=(1e-2,),
        n_batches=1,
        batch_size=4,
        quiet=True,
        trained_epochs={"given": 7},
    )
    assert (
        res.training["fresh"]["state"].startswith("UNTRAINED")
        and res.training["given"]["epochs"] == 7
    )
    with pytest.raises(ValueError, match="train_epochs must be an integer >= 0"):
        nfe_tolerance.nfe_vs_tolerance(
            models=("node",), task="point_cloud", train_epochs=-1, quiet=True
        )
