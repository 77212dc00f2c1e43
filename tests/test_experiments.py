"""The experiments layer: registry, resumable shards, Ray fan-out (faked), the ledger's verdict
rule, the CLI."""

from __future__ import annotations

import dataclasses

import importlib
import json
import math
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import dynkit.experiments as E
from dynkit.cli import main
from dynkit.experiments.judging.ledger import Comparison, evaluate, greater, less, ratio
from dynkit.experiments.registry import Experiment

CALLS: list = []


@dataclass(frozen=True)
class ToyConfig:
    points: tuple[str, ...] = ("a", "b")
    point: str = "a"
    size: int = 3


def toy_run(config: ToyConfig, *, seed: int, out: Path, device: str) -> dict:
    """A toy experiment: value = size + seed/10 (+1 for point b); fails where told to."""
    CALLS.append((seed, config.point))
    if (seed, config.point) in FAIL:
        raise RuntimeError("interrupted")
    (out / "figure.txt").write_text("drawn")
    return {
        "metrics": {f"{config.point}.value": config.size + seed / 10 + (config.point == "b")},
        "note": device,
    }


FAIL: set = set()


@pytest.fixture
def toy(monkeypatch):
    CALLS.clear()
    FAIL.clear()
    exp = Experiment(
        "toy",
        toy_run,
        {"smoke": ToyConfig(), "cpu": ToyConfig(size=5), "full": ToyConfig(size=9)},
        points=lambda c: [{"point": p} for p in c.points],
    )
    monkeypatch.setitem(E.EXPERIMENTS, "toy", exp)
    return exp


def test_run_aggregates_mean_and_t_interval_over_seeds(toy, tmp_path):
    res = E.run("toy", scale="smoke", seeds=(0, 1, 2), out=tmp_path)
    assert len(CALLS) == 6 and (tmp_path / "results.json").exists()
    stats = res["metrics"]["a.value"]
    # values 3.0, 3.1, 3.2: mean 3.1, sd 0.1; t(0.975, 2) = 4.302652729911275 (published table
    # value)
    half = 4.302652729911275 * 0.1 / math.sqrt(3)
    assert stats["mean"] == pytest.approx(3.1, abs=1e-12)  # float sums of three numbers
    assert (stats["ci_low"], stats["ci_high"]) == pytest.approx((3.1 - half, 3.1 + half), abs=1e-9)
    assert stats["n_seeds"] == 3 and res["metrics"]["b.value"]["mean"] == pytest.approx(4.1)
    assert (tmp_path / "shards" / "seed1-point=b" / "figure.txt").read_text() == "drawn"


def test_interrupted_sweep_resumes_running_only_the_missing_shards(toy, tmp_path):
    FAIL.add((2, "a"))
    with pytest.raises(RuntimeError, match="interrupted"):
        E.run("toy", scale="smoke", seeds=(0, 1, 2), out=tmp_path)
    assert CALLS == [(0, "a"), (0, "b"), (1, "a"), (1, "b"), (2, "a")]
    FAIL.clear()
    CALLS.clear()
    lines: list[str] = []
    res = E.run("toy", scale="smoke", seeds=(0, 1, 2), out=tmp_path, progress=lines.append)
    assert CALLS == [(2, "a"), (2, "b")]
    assert sum("reused" in line for line in lines) == 4 and len(lines) == 6
    assert res["metrics"]["a.value"]["n_seeds"] == 3
    CALLS.clear()
    with pytest.warns(
        E.ShardRecomputed, match="scale differs"
    ):  # another config: stored shards do not match
        E.run("toy", scale="cpu", seeds=(0,), out=tmp_path)
    assert CALLS == [(0, "a"), (0, "b")]


class Ref:
    """An object reference (hashable by identity, like Ray's)."""

    def __init__(self, value):
        self.value = value


class FakeRay(types.ModuleType):
    """Ray's API as `run` uses it, executing tasks in-process (out of order, to test the
    bookkeeping)."""

    def __init__(self):
        super().__init__("ray")
        self.started = None
        self.submitted = 0

    def is_initialized(self):
        return self.started is not None

    def init(self, address=None, **kwargs):
        self.started = address or "local"

    def remote(self, num_cpus=1):
        def wrap(fn):
            ns = types.SimpleNamespace(remote=lambda *a: self._submit(fn, a))
            return ns

        return wrap

    def _submit(self, fn, args):
        self.submitted += 1
        return Ref(fn(*args))

    def wait(self, refs, num_returns=1):
        return list(reversed(refs))[:num_returns], list(reversed(refs))[num_returns:]

    def get(self, ref):
        return ref.value


def test_ray_backend_fans_out_missing_shards_to_the_given_cluster(toy, tmp_path, monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    E.run("toy", scale="smoke", seeds=(0,), out=tmp_path)
    res = E.run(
        "toy", scale="smoke", seeds=(0, 1), out=tmp_path, backend="ray", address="ray://head:10001"
    )
    assert fake.started == "ray://head:10001" and fake.submitted == 2  # seed 0 reused
    local = E.run("toy", scale="smoke", seeds=(0, 1), out=tmp_path / "local")
    assert res["metrics"] == local["metrics"]
    assert [s["seed"] for s in res["shards"]] == [
        0,
        0,
        1,
        1,
    ]  # seed-major order whatever the completion order


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scale": "huge"}, "scale"),
        ({"backend": "dask"}, "backend"),
        ({"device": "tpu"}, "device"),
        ({"seeds": (1, 1)}, "seeds"),
        ({"name": "nope"}, "experiment must be one of"),
    ],
)
def test_run_rejects_bad_arguments(toy, tmp_path, kwargs, match):
    args = {"name": "toy", "out": tmp_path, **kwargs}
    with pytest.raises(ValueError, match=match):
        E.run(args.pop("name"), **args)


def test_experiment_needs_three_scales_of_one_dataclass():
    with pytest.raises(ValueError, match="missing"):
        Experiment("x", toy_run, {"smoke": ToyConfig(), "cpu": ToyConfig()})
    with pytest.raises(TypeError, match="one dataclass"):
        Experiment("x", toy_run, {"smoke": ToyConfig(), "cpu": ToyConfig(), "full": {"size": 1}})


def _planted(tmp_path: Path, values: list[float], name="toy") -> Path:
    shards = [
        {"seed": i, "point": {}, "metrics": {"x": v, "one": 1.0}, "seconds": 0.0}
        for i, v in enumerate(values)
    ]
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    (tmp_path / name / "results.json").write_text(
        json.dumps({"experiment": name, "scale": "cpu", "shards": shards})
    )
    return tmp_path


@pytest.mark.parametrize(
    "values, outcome",
    [
        ([0.70, 0.71, 0.69, 0.70, 0.72], "reproduced"),  # log CI below 0, reaching log10(0.8)
        (
            [0.95, 0.96, 0.94, 0.95, 0.95],
            "smaller effect",
        ),  # log CI below 0, beyond ±0.01, short of log10(0.8)
        (
            [0.70, 0.95, 1.05, 1.30, 0.80],
            "inconclusive",
        ),  # the CI contains no effect and the paper's
        ([1.20, 1.21, 1.19, 1.20, 1.22], "opposite"),  # whole CI above 1, beyond ±0.01
        ([1.00, 1.001, 0.999, 1.0, 1.002], "negligible"),  # inside ±0.01 around no effect
        ([0.70, 0.71], "inconclusive"),  # fewer than MIN_SEEDS seeds
    ],
)
def test_planted_results_flip_each_outcome(tmp_path, values, outcome):
    # sesoi 0.01 on the log scale (2.3 %), below the paper's effect, so that every outcome can occur
    # (issue 30)
    claim = Comparison(
        "t.row",
        "P",
        "x shrinks",
        "Fig. 1",
        "toy",
        "x / one",
        ratio("x", "one"),
        less(0.8, null=1.0, sesoi=0.01),
    )
    table = E.ledger(_planted(tmp_path, values), claims=[claim])
    # a toy experiment has no recipe: a pilot, whose words say what its interval reads
    from dynkit.experiments.judging.evidence import PILOT_WORDS

    assert [r.reading for r in table.rows] == [outcome] and [r.outcome for r in table.rows] == [
        PILOT_WORDS[outcome]
    ]
    row = table.to_dict()["rows"][0]
    assert set(row) >= {
        "id",
        "paper",
        "claim",
        "paper_figure",
        "experiment",
        "metric",
        "scale",
        "outcome",
        "effect",
        "ci_low",
        "ci_high",
        "n",
        "n_agree",
        "reason",
        "seeds_needed",
    }
    assert row["n"] == len(values) and row["scale"] == "log"
    assert sum(table.outcome_counts().values()) == 1 and outcome in table._repr_markdown_()


def test_greater_rule_mirrors_less_and_missing_results_are_not_run(tmp_path):
    up = Comparison(
        "t.up", "P", "x grows", "Fig. 1", "toy", "x", ratio("x", "one"), greater(2.0, null=1.0)
    )
    assert (
        evaluate(
            up,
            json.loads(
                _planted(tmp_path, [2.5, 2.6, 2.4, 2.5, 2.55])
                .joinpath("toy/results.json")
                .read_text()
            ),
        ).outcome
        == "reproduced"
    )
    (tmp_path / "empty").mkdir()
    row = E.ledger(tmp_path / "empty", claims=[up]).rows[0]
    assert row.outcome == "not run" and row.evidence == "not run" and "no results" in row.reason
    with pytest.raises(ValueError, match="results must be a folder"):
        E.ledger(tmp_path / "missing", claims=[up])
    with pytest.raises(ValueError, match="target"):
        less(1.2, null=1.0)


def test_registered_ledger_covers_the_papers_with_distinct_rows():
    rows = E.ledger().to_dict()["rows"]
    assert len(rows) >= 25 and len({r["id"] for r in rows}) == len(rows)
    assert {r["experiment"] for r in rows} <= set(E.EXPERIMENTS)
    assert len({r["paper"] for r in rows}) == 5
    assert all(r["outcome"] in E.OUTCOMES for r in rows)


def test_ledger_finds_the_results_of_record_or_says_it_cannot(tmp_path, monkeypatch):
    # An installed (non-editable) dynkit has no analysis/results beside it: the ledger must then
    # read ./analysis/results, and with neither refuse loudly instead of printing "no results" for
    # every row.
    L = importlib.import_module(
        "dynkit.experiments.judging.ledger"
    )  # the attribute ``ledger`` is the function

    committed = E.ledger().to_dict()["rows"]
    assert any(r["n"] >= 3 for r in committed)  # the results of record are read at all
    monkeypatch.setattr(L, "RESULTS_ROOT", tmp_path / "site-packages" / "analysis" / "results")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="results must be given"):
        E.ledger()
    (tmp_path / "analysis" / "results").mkdir(parents=True)
    assert L.default_results_root() == Path.cwd() / "analysis" / "results"


def test_cli_run_and_ledger(toy, tmp_path, capsys):
    assert (
        main(["run", "toy", "--scale", "smoke", "--seeds", "0,1,2", "--out", str(tmp_path / "toy")])
        == 0
    )
    err = capsys.readouterr()
    assert err.err.count("toy seed") == 6 and "a.value" in err.out
    assert (
        main(["ledger", "--results", str(tmp_path), "--json", str(tmp_path / "ledger.json")]) == 0
    )
    out = capsys.readouterr().out
    assert "| id |" in out and json.loads((tmp_path / "ledger.json").read_text())["rows"]
    assert main(["run", "nope", "--scale", "smoke"]) == 2


def test_cli_run_reports_a_diverged_metric_instead_of_crashing(toy, tmp_path, capsys, monkeypatch):
    def diverging(
        config, *, seed, out, device
    ):  # a training run that diverged (point a) in every seed
        return {"metrics": {f"{config.point}.value": float("nan") if config.point == "a" else 1.0}}

    monkeypatch.setitem(
        E.EXPERIMENTS, "toy", dataclasses.replace(E.EXPERIMENTS["toy"], run=diverging)
    )
    assert (
        main(["run", "toy", "--scale", "smoke", "--seeds", "0,1", "--out", str(tmp_path / "toy")])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert any(ln.startswith("a.value") and "no finite value" in ln for ln in lines)
    assert any(ln.startswith("b.value") and " 1 " in ln for ln in lines)


def test_layers_contract_holds_and_catches_a_planted_violation(tmp_path):
    root = Path(__file__).resolve().parents[1]
    lint = Path(sys.executable).parent / "lint-imports"
    ok = subprocess.run(
        [str(lint), "--config", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stdout
    pkg = tmp_path / "planted"
    (pkg / "diagnostics").mkdir(parents=True)
    (pkg / "models").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "__init__.py").write_text("")
    (pkg / "diagnostics" / "__init__.py").write_text(
        "from planted.models import x  # measurement imports a model\n"
    )
    (tmp_path / "contract.toml").write_text(
        "[tool.importlinter]\nroot_package = "
        '"planted"\n[[tool.importlinter.contracts]]\nname = "layers"\n'
        'type = "layers"\ncontainers = ["planted"]\nlayers = ["models", "diagnostics"]\n'
    )
    bad = subprocess.run(
        [str(lint), "--config", str(tmp_path / "contract.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert (
        bad.returncode == 1
        and "planted.diagnostics is not allowed to import planted.models" in bad.stdout
    )


def test_node_trained_smoke_measures_trained_models(tmp_path):
    res = E.run("node_trained", scale="smoke", seeds=(0,), out=tmp_path)
    m = {k: v["mean"] for k, v in res["metrics"].items()}
    for model in ("node", "hbnode"):
        assert m[f"{model}.train_epochs"] == 1
        assert m[f"{model}.forward_nfe@1e-04"] >= m[f"{model}.forward_nfe@1e-02"] > 0
        assert m[f"{model}.epoch1.backward_nfe"] > 0 and m[f"{model}.stiffness_ratio_after"] >= 1
    assert (tmp_path / "node_trained.png").stat().st_size > 1000


def test_migrated_script_runs_as_a_registered_experiment(tmp_path):
    # momres_cubic began as an analysis script: its argparse options are its config per scale
    res = E.run("momres_cubic", scale="smoke", seeds=(0, 1), out=tmp_path)
    assert E.EXPERIMENTS["momres_cubic"].config("smoke").args == ("--iterations", "5")
    assert set(res["metrics"]) == {"resnet.final_mse", "momentum.final_mse"}
    assert res["metrics"]["momentum.final_mse"]["n_seeds"] == 2
    stored = json.loads((tmp_path / "shards" / "seed1" / "cubic.json").read_text())
    assert stored["config"]["iterations"] == 5 and stored["config"]["seed"] == 1
    assert (tmp_path / "shards" / "seed1" / "cubic.png").exists()


def test_shards_finished_by_a_concurrent_worker_are_not_run_again(toy, tmp_path, monkeypatch):
    # a second worker on the same folder finishes seed 1 while this run is busy with seed 0
    def worker_then_toy(config, *, seed, out, device):
        if (seed, config.point) == (0, "a"):
            E.run("toy", scale="smoke", seeds=(1,), out=tmp_path)
        return toy_run(config, seed=seed, out=out, device=device)

    monkeypatch.setitem(
        E.EXPERIMENTS,
        "toy",
        Experiment(
            "toy", worker_then_toy, E.EXPERIMENTS["toy"].scales, E.EXPERIMENTS["toy"].points
        ),
    )
    lines: list[str] = []
    E.run("toy", scale="smoke", seeds=(0, 1), out=tmp_path, progress=lines.append)
    assert sorted(CALLS) == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]  # each shard ran once
    assert sum("finished meanwhile" in line for line in lines) == 2


def test_planned_runs_look_by_look_and_records_the_plan(toy, tmp_path, monkeypatch, capsys):
    from dynkit.experiments.judging.planned import run_planned
    from dynkit.experiments.judging.inference import look_levels
    from dynkit.experiments.judging.ledger import COMPARISONS, metric
    from dynkit.experiments.judging.plans import Plan

    # toy: b.value / a.value = (4 + s/10) / (3 + s/10), about 1.3 on every seed: decided at the
    # first look
    clear = Comparison(
        "t.clear",
        "P",
        "b beats a",
        "Fig. 1",
        "toy",
        "b / a",
        ratio("b.value", "a.value"),
        greater(1.1, null=1.0),
    )
    monkeypatch.setitem(COMPARISONS, "t.clear", clear)
    plan = Plan("toy", (5, 7), rows=("t.clear",))
    res = run_planned("toy", plan, "smoke", out=tmp_path / "a")
    assert res["seeds"] == [0, 1, 2, 3, 4] and res["rows"] == {
        "t.clear": "pilot agrees"
    }  # toy: no recipe
    assert res["plan"]["stopped_at"] == 5 and res["plan"]["level"] == pytest.approx(
        look_levels((5, 7))[0]
    )
    assert json.loads((tmp_path / "a" / "results.json").read_text())["plan"]["looks"] == [
        5,
        7,
    ]  # on disk too
    assert len(CALLS) == 10
    # a.value = 3 + s/10 against 3.2: its CI holds 3.2 at 5 seeds -> the second look, then it stops
    # at the last
    monkeypatch.setitem(
        COMPARISONS,
        "t.open",
        Comparison(
            "t.open",
            "P",
            "a is 3.2",
            "Fig. 1",
            "toy",
            "a",
            metric("a.value"),
            greater(3.2, null=3.2, sesoi=0.001),
        ),
    )
    CALLS.clear()
    res = run_planned(
        "toy", Plan("toy", (5, 7), rows=("t.clear", "t.open")), "smoke", out=tmp_path / "a"
    )
    assert res["seeds"] == list(range(7)) and res["rows"]["t.open"] == "pilot inconclusive"
    assert sorted(CALLS) == [
        (5, "a"),
        (5, "b"),
        (6, "a"),
        (6, "b"),
    ]  # the first 5 seeds' shards were reused
    with pytest.raises(ValueError, match="plan must be a committed plan file"):
        run_planned("toy", tmp_path / "nope.json", "smoke", out=tmp_path / "a")
    with pytest.raises(ValueError, match="plan must be toy's"):
        run_planned("toy", Plan("other", (5,)), "smoke", out=tmp_path / "a")
    (tmp_path / "toy.json").write_text(json.dumps(Plan("toy", (5, 7), rows=("t.open",)).to_dict()))
    assert (
        main(
            [
                "run",
                "toy",
                "--scale",
                "smoke",
                "--planned",
                "--plan",
                str(tmp_path / "toy.json"),
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    assert "toy: look at 7 seeds" in capsys.readouterr().err


def test_implicit_nfe_tells_a_stiff_field_from_a_benign_one():
    # the control experiment of issue 23 (Sect. 4) on planted linear fields y' = A y over [0, 1]:
    # with A = diag(-1e4, -1) dopri5 is stability-limited (its step ~3.3/1e4: thousands of
    # evaluations) while radau5 and bdf are not, and auto switches to a stiff method; with A =
    # diag(-1, -0.5) dopri5 is the cheapest and auto never switches. Bounds: factors of 5, far from
    # the measured ~50x and ~1.3x.
    from types import SimpleNamespace

    import torch

    from dynkit.experiments.node.node_trained import implicit_nfe

    class Linear(torch.nn.Module):
        def __init__(self, diagonal):
            super().__init__()
            self.register_buffer("A", torch.diag(torch.tensor(diagonal)))

        def forward(self, t, y):
            return y @ self.A.T

    def net(diagonal):
        block = SimpleNamespace(field=SimpleNamespace(field=Linear(diagonal)), t0=0.0, t1=1.0)
        return SimpleNamespace(ode=SimpleNamespace(block=block, initial_state=lambda x: x))

    stiff = implicit_nfe(net([-1e4, -1.0]), torch.ones(2, 2))
    assert (
        stiff["radau5"]["nfe"] * 5 < stiff["dopri5"]["nfe"]
        and stiff["bdf"]["nfe"] * 5 < stiff["dopri5"]["nfe"]
    )
    assert stiff["auto"]["switched_fraction"] == 1.0 and stiff["radau5"]["njev"] >= 1
    benign = implicit_nfe(net([-1.0, -0.5]), torch.ones(2, 2))
    assert (
        benign["dopri5"]["nfe"] < benign["radau5"]["nfe"]
        and benign["auto"]["switched_fraction"] == 0.0
    )
