"""The measured time series (issue 31 §3): plane vibration and Silverbox read from the shared files
with the review authors' preprocessing, split and windows; clear errors for a missing or malformed
file; the simulated stand-ins still available and labelled; the hybrid experiments' ``source``
setting and the results recorded before it.

Reference values are computed here from the files with numpy's own readers and the authors'
procedure as their README/code describes it (legacy ``np.random.RandomState``), not with dynkit's
loader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.hybrids import time_series_hybrids as hybrids
from dynkit.tasks import measured
from dynkit.tasks import plane_vibration as pv
from dynkit.tasks import silverbox as sb
from dynkit.tasks.time_series import load_time_series

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "time-series"
PV_FILE, SB_FILE = SHARED / pv.MEASURED.file.name, SHARED / sb.MEASURED.file.name
RESULTS = Path(__file__).resolve().parents[1] / "analysis" / "results"
# the values are float32 in the windows: standardised values reach |z| ~ 20, Silverbox's x100
# voltages ~ 30, so rtol 1e-6 (float32's eps is 6e-8) with atol 1e-5 bounds the rounding and nothing
# else
CLOSE = dict(rtol=1e-6, atol=1e-5)


@pytest.fixture(autouse=True)
def _no_user_folder(monkeypatch):
    """The tests choose the folder themselves: a user's $DYNKIT_TIME_SERIES_DIR must not leak in."""
    monkeypatch.delenv(measured.DIRECTORY_VARIABLE, raising=False)


def test_the_shared_files_are_there():
    # the tests below read them; a checkout without ../shared/data/time-series is a setup error, not
    # a skip
    assert PV_FILE.is_file() and SB_FILE.is_file(), (
        f"the measured series must be in {SHARED} (data README 1b)"
    )


def _authors_plane_vibration_split(n_rows: int, n_channels: int):
    """pvdat.py's draw as its README describes it: seed 1, the zero-variance noise drawn first,
    90 % of the start indices 0..n-101 chosen without replacement, sorted, split 2:1:1 by counts
    truncated to integers."""
    rng = np.random.RandomState(1)
    rng.randn(n_rows, n_channels)
    full = n_rows - 100
    kept = int(full * 0.9)
    labels = np.sort(rng.choice(range(full), kept, replace=False))
    n_train, n_val = int(kept * 2 / 4), int(kept * 1 / 4)
    n_test = kept - n_train - n_val
    return labels[:n_train], labels[n_train:-n_test], labels[-n_test:]


def test_plane_vibration_reads_the_file_with_the_authors_standardisation_split_and_windows():
    raw = np.genfromtxt(PV_FILE, delimiter=",")[
        1:, :5
    ]  # header row and Fs (+ the trailing comma's column) dropped
    assert raw.shape == (73728, 5)
    z = (raw - raw.mean(0)) / raw.std(0)
    np.testing.assert_allclose(
        z.mean(0), 0.0, atol=1e-12
    )  # standardised per channel over the whole series
    np.testing.assert_allclose(z.std(0), 1.0, rtol=1e-12)
    parts = _authors_plane_vibration_split(*raw.shape)
    assert [len(p) for p in parts] == [
        33132,
        16566,
        16567,
    ]  # 2:1:1 of int(0.9 * 73628) = 66265 start indices
    assert np.all(np.diff(np.concatenate(parts)) > 0)  # in time order, train first

    task = load_time_series("plane_vibration")  # measured is the default source
    assert (
        task.source == "measured"
        and "measured" in task.note
        and task.config["sha256"] == "b72a9d063e39"
    )
    assert (
        task.inputs
        == task.outputs
        == ("Force", "Voltage", "Acceleration1", "Acceleration2", "Acceleration3")
    )
    for windows, labels in zip((task.train, task.val, task.test), parts):
        n = len(labels) // 65
        assert len(windows) == n and n in (509, 254)
        runs = labels[: n * 65].reshape(n, 65)
        assert windows.x.shape == (n, 64, 5) and windows.future.shape == (n, 8, 5)
        np.testing.assert_allclose(windows.x.numpy(), z[runs[:, :64]], **CLOSE)
        np.testing.assert_allclose(windows.targets.numpy(), z[runs[:, 1:]], **CLOSE)
        np.testing.assert_allclose(windows.gaps[:, 1:].numpy(), np.diff(runs[:, :64], axis=1))
        # the forecast: 8 consecutive stamps from the segment's last (65th) stamp on (review Sect.
        # 3.4.3)
        np.testing.assert_allclose(windows.future.numpy(), z[runs[:, -1:] + np.arange(8)], **CLOSE)
        np.testing.assert_allclose(windows.future_gaps[:, 0].numpy(), runs[:, -1] - runs[:, -2])
        assert torch.all(windows.future_gaps[:, 1:] == 1)
    assert float(task.train.gaps[:, 1:].max()) >= 2  # irregular: 10 % of the stamps are missing


def test_silverbox_reads_the_file_with_the_authors_scaling_and_split():
    v = np.loadtxt(SB_FILE, delimiter=",", skiprows=1, usecols=(0, 1))
    assert v.shape == (131072, 2)
    scaled = 100 * (
        v - v.mean(0)
    )  # sonode_data_loader.load_data(rescaling=100): centred, times 100
    task = load_time_series("silverbox")
    assert task.source == "measured" and task.config["sha256"] == "e7076735427b"
    assert (task.inputs, task.outputs) == (("V1", "V2"), ("V2",))
    assert (len(task.train), len(task.val), len(task.test)) == (
        1000 // 65,
        0,
        4000 // 65,
    )  # 15, none, 61
    for windows, first in (
        (task.train, 0),
        (task.test, 1000),
    ):  # samples 0..999 train, 1000..4999 test
        runs = first + np.arange(len(windows) * 65).reshape(-1, 65)
        np.testing.assert_allclose(windows.x.numpy(), scaled[runs[:, :64]], **CLOSE)
        np.testing.assert_allclose(windows.targets.numpy()[..., 0], scaled[runs[:, 1:], 1], **CLOSE)
        np.testing.assert_allclose(windows.future.numpy()[:, 0, 0], scaled[runs[:, -1], 1], **CLOSE)
        assert torch.all(windows.gaps[:, 1:] == 1) and torch.all(
            windows.future_gaps == 1
        )  # regularly sampled
    assert int(task.test.x.shape[0] * 65) <= 4000 and task.val.x.shape == (0, 64, 2)


def test_max_windows_keeps_the_first_windows_of_each_part():
    full, cut = (
        load_time_series("plane_vibration"),
        load_time_series("plane_vibration", max_windows=25),
    )
    for a, b in ((full.train, cut.train), (full.val, cut.val), (full.test, cut.test)):
        assert len(b) == 25
        torch.testing.assert_close(b.x, a.x[:25], rtol=0, atol=0)


# ---- where the files are read from
# ----------------------------------------------------------------------------


def test_a_missing_file_names_the_file_the_folder_and_how_to_choose_another(tmp_path, monkeypatch):
    with pytest.raises(
        FileNotFoundError,
        match=r"silverbox\.csv.*from the directory argument.*DYNKIT_TIME_SERIES_DIR",
    ):
        load_time_series("silverbox", directory=tmp_path)
    monkeypatch.setenv(measured.DIRECTORY_VARIABLE, str(tmp_path))
    with pytest.raises(
        FileNotFoundError,
        match=r"plane_vibration_f16_gvt\.csv.*"
        + str(tmp_path)
        + r".*from \$DYNKIT_TIME_SERIES_DIR",
    ):
        load_time_series("plane_vibration")


def test_the_environment_variable_and_the_argument_are_honoured(tmp_path, monkeypatch):
    mine, empty = tmp_path / "mine", tmp_path / "empty"
    mine.mkdir(), empty.mkdir()
    shutil.copy(SB_FILE, mine / SB_FILE.name)
    monkeypatch.setenv(measured.DIRECTORY_VARIABLE, str(mine))
    assert measured.default_directory() == (mine, "from $DYNKIT_TIME_SERIES_DIR")
    from_env = load_time_series("silverbox")
    monkeypatch.setenv(measured.DIRECTORY_VARIABLE, str(empty))
    with pytest.raises(
        FileNotFoundError, match="silverbox.csv"
    ):  # the variable is read, not a cached copy
        load_time_series("silverbox")
    from_argument = load_time_series(
        "silverbox", directory=mine
    )  # the argument wins over the variable
    torch.testing.assert_close(from_env.test.x, from_argument.test.x, rtol=0, atol=0)
    monkeypatch.delenv(measured.DIRECTORY_VARIABLE)
    assert (
        measured.default_directory()[0] == SHARED
    )  # the default: shared/data/time-series beside the checkout


# ---- malformed files: each names the file and the line (and column)
# --------------------------------------------


def _planted(tmp_path: Path, source: Path, edit) -> Path:
    """A copy of ``source`` in ``tmp_path`` with its lines passed through ``edit``."""
    lines = source.read_text().splitlines()
    (tmp_path / source.name).write_text("\n".join(edit(lines)) + "\n")
    return tmp_path


def _set_field(lines, number, column, value):
    fields = lines[number - 1].split(",")
    fields[column - 1] = value
    lines[number - 1] = ",".join(fields)
    return lines


@pytest.mark.parametrize(
    "name, source, edit, message",
    [
        (
            "truncated",
            SB_FILE,
            lambda ls: ls[:1001],
            r"silverbox\.csv: 1000 data rows, fewer than the 5000 needed",
        ),
        (
            "cut mid-row",
            SB_FILE,
            lambda ls: ls[:6000] + ["0.0057756"],
            r"silverbox\.csv, line 6001: expected 2 fields \(V1, V2\), got 1",
        ),
        (
            "non-numeric cell",
            SB_FILE,
            lambda ls: _set_field(ls, 10, 2, "abc"),
            r"silverbox\.csv, line 10, column 2 \(V2\): expected a finite number, got 'abc'",
        ),
        (
            "not finite",
            PV_FILE,
            lambda ls: _set_field(ls, 300, 4, "nan"),
            r"plane_vibration_f16_gvt\.csv, line 300, column 4 \(Acceleration2\): expected a "
            r"finite number, got 'nan'",
        ),
        (
            "missing column",
            PV_FILE,
            lambda ls: [",".join(line.split(",")[1:]) for line in ls],
            r"plane_vibration_f16_gvt\.csv, line 1: expected the columns Force, Voltage, "
            r".*Fs.*got Voltage",
        ),
        ("empty", SB_FILE, lambda ls: [], r"silverbox\.csv: empty file"),
        (
            "one digit changed",
            SB_FILE,
            lambda ls: _set_field(ls, 2, 1, "0.0057757"),
            r"silverbox\.csv: SHA-256 .* differs from e7076735427b.*verify=False",
        ),
    ],
)
def test_a_malformed_file_fails_clearly(tmp_path, name, source, edit, message):
    folder = _planted(tmp_path, source, edit)
    task = "silverbox" if source == SB_FILE else "plane_vibration"
    with pytest.raises(ValueError, match=message):
        load_time_series(task, directory=folder)


def test_a_different_copy_loads_with_verify_false_and_records_its_digest(tmp_path):
    folder = _planted(tmp_path, SB_FILE, lambda ls: _set_field(ls, 2, 1, "0.0057757"))
    task = load_time_series("silverbox", directory=folder, verify=False)
    assert task.config["sha256"] != "e7076735427b" and len(task.test) == 61


def test_the_trailing_comma_is_optional(tmp_path):
    # the authors' files end every row with a comma; a copy without it (one comma less per row: an
    # empty Fs stays an empty field) reads the same numbers
    folder = _planted(
        tmp_path, PV_FILE, lambda ls: [line[:-1] if line.endswith(",") else line for line in ls]
    )
    assert (folder / PV_FILE.name).read_text().splitlines()[5].count(
        ","
    ) == 5  # 6 fields, the last empty
    plain = load_time_series("plane_vibration", directory=folder, verify=False, max_windows=3)
    authors = load_time_series("plane_vibration", max_windows=3)
    torch.testing.assert_close(plain.test.future, authors.test.future, rtol=0, atol=0)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(length=1), "length must be an integer >= 2, got 1"),
        (dict(forecast=102), r"forecast must be at most 101 .*got 102"),
        (dict(max_windows=0), "max_windows must be an integer >= 1, got 0"),
        (dict(directory=3), "directory must be a path"),
        (
            dict(length=40000),
            r"fewer than the 177884 needed for windows of length=40000 and forecast=8",
        ),
    ],
)
def test_bad_options_are_refused_clearly(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        pv.plane_vibration_measured(**options)


# ---- the simulated stand-ins
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, options",
    [
        ("silverbox", dict(n_points=400, length=16)),
        ("plane_vibration", dict(n_points=900, length=16)),
    ],
)
def test_the_simulated_stand_ins_stay_available_and_are_labelled(name, options):
    task = load_time_series(name, source="simulated", seed=0, **options)
    assert task.source == "simulated" and "stand" in task.note and task.train.x.shape[1] == 16


def test_sources_are_checked():
    with pytest.raises(ValueError, match="source must be one of .*got 'recorded'"):
        load_time_series("silverbox", source="recorded")
    with pytest.raises(
        ValueError, match="source must be 'simulated' for 'walker2d'.*got 'measured'"
    ):
        load_time_series("walker2d", source="measured")
    with pytest.raises(
        TypeError, match="n_points"
    ):  # a simulation's option is not a measured loader's
        load_time_series("silverbox", n_points=400)


def test_training_without_validation_windows_asks_for_validate_false():
    from dynkit.models.ode_rnn import ODERNN
    from dynkit.tasks.time_series import train_hybrid

    task = load_time_series("silverbox", max_windows=2, length=8)
    with pytest.raises(ValueError, match="validate must be False for task 'silverbox'"):
        train_hybrid(ODERNN("node", 2, 1, 2), task, epochs=1, batch_size=2, lr=1e-3, validate=True)


# ---- the experiments' setting
# -----------------------------------------------------------------------------------


def test_the_hybrid_experiments_train_on_the_measured_series_where_they_exist():
    for task, source in (
        ("plane_vibration", "measured"),
        ("silverbox", "measured"),
        ("walker2d", "simulated"),
    ):
        for scale in ("smoke", "cpu", "full"):
            assert E.get(f"ode_rnn_{task}").config(scale).source == source, (task, scale)
    with pytest.raises(ValueError, match="source must be 'simulated' for walker2d"):
        hybrids.HybridConfig("walker2d")
    with pytest.raises(ValueError, match="source must be one of"):
        hybrids.HybridConfig("silverbox", source="real")


def test_results_recorded_before_the_option_are_read_as_simulated(monkeypatch):
    # every hybrid record of issue 31 says its source itself (Walker2D's: its simulated stand-in);
    # plane vibration's was rerun on the measured series (issue 31 item 2); a record without one
    # (they predate the option) reads as the simulated stand-in it trained on
    walker = json.loads((RESULTS / "ode_rnn_walker2d" / "results.json").read_text())["config"]
    assert hybrids.data_source(walker) == "simulated" and "stand" in hybrids.data_label(walker)
    rerun = json.loads((RESULTS / "ode_rnn_plane_vibration" / "results.json").read_text())["config"]
    assert hybrids.data_source(rerun) == "measured" and "stand" not in hybrids.data_label(rerun)
    old_record = {
        k: v for k, v in rerun.items() if k != "source"
    }  # planted: the same record without a source
    assert hybrids.data_source(old_record) == "simulated" and "stand" in hybrids.data_label(
        old_record
    )
    calls = []
    monkeypatch.setattr(
        "dynkit.tasks.time_series.load_time_series", lambda name, **o: calls.append((name, o))
    )
    hybrids._task.cache_clear()
    try:
        old = {"task": "silverbox", "data": [["n_points", 3000]]}
        hybrids._task(
            "silverbox", hybrids.task_options(old), 4
        )  # as the baselines rebuild a recorded shard's data
        new = E.get("ode_rnn_silverbox").config("cpu")
        hybrids._task("silverbox", hybrids.task_options(new), 4)
    finally:
        hybrids._task.cache_clear()
    # the simulation is seeded by the shard; the measured split is the authors' whatever the shard's
    # seed
    assert calls == [
        ("silverbox", {"source": "simulated", "n_points": 3000, "seed": 4}),
        ("silverbox", {"source": "measured"}),
    ]


def test_the_table_says_what_the_data_are(tmp_path):
    results = {
        "scale": "cpu",
        "seeds": [0],
        "metrics": {},
        "config": {"task": "silverbox", "models": ["node"], "epochs": 1, "tol": 1e-3},
    }
    hybrids._table(results, tmp_path)
    assert (
        "simulated system standing in for the measured silverbox"
        in (tmp_path / "table.md").read_text()
    )
    hybrids._table({**results, "config": {**results["config"], "source": "measured"}}, tmp_path)
    assert (
        "the measured silverbox series with the review authors'"
        in (tmp_path / "table.md").read_text()
    )


def test_a_hybrid_shard_records_the_data_it_read(tmp_path):
    exp = E.get("ode_rnn_silverbox")
    _, config = exp.config_points(exp.config("smoke"))[0]
    out = hybrids.run_hybrid(config, seed=0, out=tmp_path, device="cpu")
    assert out["data"]["source"] == "measured" and out["data"]["sha256"] == "e7076735427b"
    assert (
        out["note"].startswith("measured: Silverbox") and out["n_train_windows"] == 2
    )  # smoke: max_windows 2


# ---- the blow-up experiment (the review's Fig. 7, the authors' silverbox_init.py)
# ----------------------------


def test_the_measured_drive_is_v1_of_the_training_samples_linear_between_them():
    v = np.loadtxt(SB_FILE, delimiter=",", skiprows=1, usecols=(0, 1))
    scaled = 100 * (v - v.mean(0))
    t, u, y, drive = sb.silverbox_measured_drive()
    np.testing.assert_array_equal(t, np.arange(1000.0))
    np.testing.assert_allclose(
        np.column_stack([u, y]), scaled[:1000], rtol=1e-12, atol=1e-12
    )  # float64 throughout
    assert drive(2.25) == pytest.approx(0.75 * scaled[2, 0] + 0.25 * scaled[3, 0], rel=1e-12)
    assert drive(-3.0) == u[0] and drive(5000.0) == u[-1]  # held at the ends


@pytest.mark.parametrize(
    "source, words", [("measured", "silverbox.csv"), ("simulated", "simulated Duffing")]
)
def test_node_blowup_runs_on_either_drive_and_records_which(tmp_path, source, words):
    from dynkit.experiments.node import node_blowup

    node_blowup.main(
        [
            "--inits",
            "1",
            "--t-end",
            "3",
            "--models",
            "hbnode",
            "--source",
            source,
            "--quiet",
            "--out",
            str(tmp_path),
        ]
    )
    config = json.loads((tmp_path / "node_blowup.json").read_text())["config"]
    assert config["source"] == source and words in config["data"]


def test_node_blowup_refuses_a_horizon_beyond_the_measured_drive(tmp_path, capsys):
    from dynkit.experiments.node import node_blowup

    with pytest.raises(SystemExit):
        node_blowup.main(["--t-end", "1500", "--out", str(tmp_path / "x")])
    assert (
        "--t-end must lie in (0, 999] (the measured drive's training samples), got 1500"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists()  # refused before any work


# ---- the ledger says what each row's data were, from the config its results record
# ------------------------------


def test_the_rows_of_record_say_what_they_ran_on():
    from dynkit.experiments.judging.ledger import ledger

    table = ledger()
    walker = [r for r in table.rows if r.claim.experiment == "ode_rnn_walker2d"]
    assert walker and all(
        "stand-in" in r.data and r.to_dict()["data"] == r.data for r in walker
    )  # no measured set
    # node_blowup's results of record were rerun on the measured Silverbox drive (issue 31 item 3)
    blowup = [r for r in table.rows if r.claim.experiment == "node_blowup"]
    assert blowup and all(
        r.data.startswith("the measured Silverbox's input voltage V1") for r in blowup
    )
    # plane vibration's results of record are the authors' design on the measured series (issue 31
    # item 2)
    measured = [r for r in table.rows if r.claim.experiment == "ode_rnn_plane_vibration"]
    assert measured and all(
        r.data.startswith("the measured plane vibration series") for r in measured
    )
    assert (
        "Data: a simulated system standing in for the measured walker2d" not in table.to_markdown()
    )


def test_a_measured_record_says_so_in_its_rows(tmp_path):
    from dynkit.experiments.judging.ledger import COMPARISONS, ledger

    (tmp_path / "ode_rnn_silverbox").mkdir()
    record = json.loads((RESULTS / "ode_rnn_plane_vibration" / "results.json").read_text())
    record["config"] = {
        **record["config"],
        "task": "silverbox",
        "source": "measured",
    }  # planted: a measured run
    record["experiment"] = (
        "ode_rnn_silverbox"  # (no shards beside it: the ledger reads the record alone)
    )
    (tmp_path / "ode_rnn_silverbox" / "results.json").write_text(json.dumps(record))
    claims = [c for c in COMPARISONS.values() if c.experiment == "ode_rnn_silverbox"]
    rows = ledger(tmp_path, claims=claims, plans={}).rows
    assert rows and all(
        r.data == "the measured silverbox series with the review authors' preprocessing and split"
        for r in rows
    )
    del record["config"]["source"]  # a record without a source predates the option: the stand-in
    (tmp_path / "ode_rnn_silverbox" / "results.json").write_text(json.dumps(record))
    assert all("stand-in" in r.data for r in ledger(tmp_path, claims=claims, plans={}).rows)


def test_node_blowup_records_its_source_in_every_scale():
    from dynkit.experiments.node.node_blowup import data_label

    for scale in ("smoke", "cpu", "full"):
        args = E.get("node_blowup").config(scale).args
        assert args[args.index("--source") + 1] == "measured"
        assert "measured Silverbox's input voltage" in data_label({"args": list(args)})
    assert "stand-in" in data_label(
        {"args": ["--inits", "10"]}
    )  # the record of results before the option


@pytest.mark.parametrize(
    "experiment", ["ode_rnn_plane_vibration"]
)  # Silverbox: no results of record (issue 31)
def test_the_committed_baselines_regenerate_from_the_recorded_config(experiment):
    # the record's config rebuilds its data (the measured series, 64 windows of each part), so the
    # trivial predictors come out as committed; the simulated stand-in would give other numbers
    from dynkit.experiments.judging.baselines import baseline_of

    folder = RESULTS / experiment
    config = json.loads((folder / "results.json").read_text())["config"]
    committed = json.loads((folder / "baselines.json").read_text())["seeds"]["0"]
    got = baseline_of(experiment)(config, 0)
    assert got == pytest.approx(
        committed, rel=1e-9
    )  # the same computation on the same data: float64 sums
    simulated = baseline_of(experiment)(
        {**config, "source": "simulated", "data": [["n_points", 4000]]}, 0
    )
    assert simulated["baseline.best.test_mse"] != pytest.approx(
        committed["baseline.best.test_mse"], rel=0.05
    )
