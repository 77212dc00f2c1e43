"""The paper-scale rows that fit one lent GPU's minutes, run as ``dynkit run NAME --scale paper``.

The rows, their order and their seeds are fixed by the committed plan ``paper_rows_plan.json``
beside this file (written before any result; the seeds are the first look of each experiment's plan
in ``analysis/plans``). Each row is an experiment whose recipe is complete; each of its seeds is one
shard, run by :func:`dynkit.experiments.run` into ``OUT/<experiment>/`` (finished shards are reused,
so a second call resumes). Before each shard the script checks the time left against the shard's
estimate and stops cleanly between shards once the budget is spent; ``OUT/gpu_run.json`` (rewritten
after every shard) names the device, the commands, the seconds of each shard, what was skipped and
why, and the ledger's rows of the finished experiments at the paper scale.

    python -m analysis.gpu.paper_rows --plan                # rows, seeds, estimates, what does not fit
    python -m analysis.gpu.paper_rows --dry-run             # every model built, data loaded, one step
    python -m analysis.gpu.paper_rows --device cuda --calibrate --budget 540

On the lent machine only the repository's tree travels (``../shared`` does not): copy the measured
series into an ignored folder of the repository and carry it (see :data:`DEVICE_SETUP`, printed by
``--plan``). The machine has python3 with torch, numpy, scipy, sympy and torchdiffeq only: nothing
here needs more, and the figures are skipped where matplotlib is missing (the JSON results are
complete).
"""  # noqa: E501

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

PLAN_FILE = Path(__file__).with_name("paper_rows_plan.json")
RUN_FILE = "gpu_run.json"
DEFAULT_BUDGET = 540.0
CALIBRATE_WITHIN = 4.0
"""``--calibrate`` times the rows whose prior estimate is at most this many budgets (the others are
hours a seed: no calibration could make them fit)."""
DEVICE_DATA = ".device_data/time-series"
DEVICE_SETUP = (
    "here, once: mkdir -p .device_data && cp -r ../shared/data/time-series .device_data/ && "
    "echo /.device_data/ >> .git/info/exclude\n"
    "then run(carry=['.device_data'], timeout_s=600, command='export PYTHONPATH=src:. "
    f"PYTHONUNBUFFERED=1 DYNKIT_TIME_SERIES_DIR={DEVICE_DATA}; o=analysis/results/gpu_$(date -u "
    "+%Y%m%d); timeout 575 python3 -m analysis.gpu.paper_rows --device cuda --calibrate "
    "--budget 540 "
    "--out $o > $OUT/log.txt 2>&1; tar czf $OUT/gpu_run.tgz $o; tail -40 $OUT/log.txt')"
)
"""How to run it on the lent machine: the data folder carried in, the output tarred into
``$OUT``."""


# ---- the plan
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the plan: an experiment at the paper scale, its seeds and what one seed costs."""

    experiment: str
    seeds: tuple[int, ...]
    prior_s_per_seed: float
    basis: str
    data: tuple[str, ...]
    dry_run: dict | None
    calibrate: dict | None
    calibrate_factor: float | None


def load_plan(path: str | Path = PLAN_FILE) -> tuple[dict, list[Row]]:
    """The plan's header and its rows, checked: each experiment registered with a complete
    recipe."""
    from dynkit.experiments import get, load_all
    from dynkit.experiments.recipes import recipe_of

    load_all()
    data = json.loads(Path(path).read_text())
    rows = []
    for r in data["rows"]:
        get(r["experiment"])  # a ValueError names the registered experiments
        missing = recipe_of(r["experiment"]).missing()
        if missing:
            raise ValueError(
                f"{path}: row {r['experiment']!r} has no complete recipe: {'; '.join(missing)}"
            )
        rows.append(
            Row(
                r["experiment"],
                tuple(int(s) for s in r["seeds"]),
                float(r["prior_s_per_seed"]),
                r["basis"],
                tuple(r.get("data", ())),
                r.get("dry_run"),
                r.get("calibrate"),
                r.get("calibrate_factor"),
            )
        )
    return data, rows


def choose(rows: list[Row], names: list[str] | None) -> list[Row]:
    """The rows named by ``--rows`` (default all), in the plan's order."""
    if not names:
        return rows
    known = [r.experiment for r in rows]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--rows must name rows of the plan, one of {known}, got {unknown}")
    return [r for r in rows if r.experiment in names]


def schedule(rows: list[Row], estimate: dict[str, float], budget: float) -> tuple[list, list]:
    """``(shards, left_out)``: the (row, seed) shards that fit ``budget`` seconds, taken in the
    plan's order (a shard that does not fit is left out and the next, cheaper one still tried),
    and ``[(row, seed, why)]`` for the others."""
    shards, left, used = [], [], 0.0
    for row in rows:
        cost = estimate[row.experiment]
        for seed in row.seeds:
            if used + cost <= budget:
                shards.append((row, seed))
                used += cost
            else:
                left.append(
                    (
                        row,
                        seed,
                        f"does not fit: {cost:.0f} s a seed, {budget - used:.0f} s of the "
                        f"{budget:.0f} s budget left",
                    )
                )
    return shards, left


# ---- configs
# --------------------------------------------------------------------------------------
def config_with(experiment: str, overrides: dict | None) -> Any:
    """The paper-scale config of ``experiment`` with ``overrides`` (a recipe field each) written
    in."""
    from dynkit.experiments import get
    from dynkit.experiments.recipes import paper_config, write_field

    config = paper_config(get(experiment))
    for name, value in (overrides or {}).items():
        config = write_field(config, name, value)
    return config


def check_data(rows: list[Row]) -> Path | None:
    """The folder of the measured series the rows read (``$DYNKIT_TIME_SERIES_DIR`` or dynkit's
    default); a FileNotFoundError naming the row, the file, the folder and how to bring it."""
    needed = [(r.experiment, f) for r in rows for f in r.data]
    if not needed:
        return None
    from dynkit.tasks.measured import DIRECTORY_VARIABLE, default_directory

    folder, how = default_directory()
    absent = [(e, f) for e, f in needed if not (folder / f).is_file()]
    if absent:
        listed = ", ".join(f"{e} reads {f}" for e, f in absent)
        raise FileNotFoundError(
            f"the measured series are not in {str(folder)!r} ({how}): {listed}. Point "
            f"${DIRECTORY_VARIABLE} at the folder holding them (shared/data/time-series); on the "
            f"lent machine only the repository travels, so copy them into it and carry them:\n"
            f"{DEVICE_SETUP}"
        )
    return folder


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def figures_where_possible(rows: list[Row]):
    """Without matplotlib (the lent machine has none) the scripts' ``plot`` is skipped: a shard's
    record and JSON are complete without its figure, which can be drawn later from the JSON."""
    if have_matplotlib():
        yield False
        return
    from dynkit.experiments import get

    saved = []
    for row in rows:
        module = sys.modules[get(row.experiment).module or get(row.experiment).run.__module__]
        if callable(getattr(module, "plot", None)):
            saved.append((module, module.plot))
            module.plot = lambda *args, **kwargs: None
    try:
        yield True
    finally:
        for module, plot in saved:
            module.plot = plot


def run_direct(experiment: str, config: Any, seed: int, out: Path, device: str) -> float:
    """Seconds of one run of ``experiment``'s run function with ``config`` on ``device``, as the
    runner runs a shard (seeded, tensors made on ``device``), outside the results: a dry run or a
    calibration."""
    import torch

    from dynkit.experiments import get

    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    torch.manual_seed(seed)
    with torch.device(device):
        get(experiment).run(config, seed=seed, out=out, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


# ---- the run record
# -------------------------------------------------------------------------------
def device_description(device: str) -> dict:
    import platform

    import torch

    from dynkit.experiments.runner import device_name

    return {
        "device": device,
        "device_name": device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def paper_ledger_rows(out: Path, experiments: list[str]) -> list[dict] | str:
    """The ledger's rows of ``experiments`` judged on their paper-scale results under ``out``
    (each claim read at ``scale="paper"``, the committed plans' levels), or why they could not be
    computed."""
    from dynkit.experiments import load_all
    from dynkit.experiments.judging import baselines as _baselines
    from dynkit.experiments.judging.ledger import COMPARISONS, ledger
    from dynkit.io import write_json

    try:
        load_all()  # registers every family's comparisons and trivial predictors
        for name in experiments:
            results = json.loads((out / name / "results.json").read_text())
            if name in _baselines.BASELINES:
                write_json(
                    out / name / _baselines.BASELINES_FILE, _baselines.compute(name, results)
                )
        claims = [
            dataclasses.replace(c, scale="paper")
            for c in COMPARISONS.values()
            if c.experiment in experiments
        ]
        if not claims:
            return []
        plans = Path(__file__).resolve().parents[1] / "plans"
        return [row.to_dict() for row in ledger(out, claims=claims, plans=plans).rows]
    except Exception as err:  # the shards are the result; the rows can be recomputed from them
        return f"the ledger rows could not be computed: {type(err).__name__}: {err}"


def write_record(out: Path, record: dict) -> None:
    from dynkit.io import write_json

    write_json(out / RUN_FILE, record)


# ---- the command line ---------------------------------------------------------------------------
def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analysis.gpu.paper_rows",
        description=__doc__.strip().splitlines()[0],
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true", help="print the rows and estimates; no run")
    what.add_argument(
        "--dry-run",
        action="store_true",
        help="build every model, load every data set and take one optimiser step per row",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="first time a short run of each row on the device; estimate from it, not the priors",
    )
    p.add_argument(
        "--budget",
        type=_positive_seconds,
        default=None,
        help=f"seconds for the whole call, calibration included (default {DEFAULT_BUDGET:.0f})",
    )
    p.add_argument("--rows", nargs="+", default=None, help="only these rows (experiment names)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps (default cpu)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default analysis/results/gpu_<UTC date>)",
    )
    p.add_argument("--plan-file", type=Path, default=PLAN_FILE, help=argparse.SUPPRESS)
    return p


def print_plan(rows, shards, left, estimate, how, budget) -> None:
    print(f"budget {budget:.0f} s; estimates: {how}")
    for row in rows:
        fit = [s for r, s in shards if r is row]
        print(
            f"{row.experiment:26s} seeds {list(row.seeds)}  {estimate[row.experiment]:9.0f} "
            f"s a seed  "
            f"runs {fit or 'none'}"
        )
        print(f"{'':26s} basis: {row.basis}")
    for row in rows:  # one line a row: its seeds left out, and why the first of them was
        seeds = [s for r, s, _ in left if r is row]
        if seeds:
            why = next(w for r, _, w in left if r is row)
            print(f"not run: {row.experiment} seeds {seeds}: {why}")
    print(f"\non the lent machine:\n{DEVICE_SETUP}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    from dynkit import _checks

    try:
        header, rows = load_plan(args.plan_file)
        rows = choose(rows, args.rows)
        device = _checks.device(args.device, "--device")
        budget = (
            args.budget
            if args.budget is not None
            else float(header.get("budget_s", DEFAULT_BUDGET))
        )
        if args.plan:
            estimate = {r.experiment: r.prior_s_per_seed for r in rows}
            shards, left = schedule(rows, estimate, budget)
            print_plan(
                rows, shards, left, estimate, "priors (" + header["prior_basis"] + ")", budget
            )
            return 0
        runnable = [r for r in rows if r.dry_run is not None] if args.dry_run else rows
        check_data(runnable)
    except (ValueError, FileNotFoundError) as err:
        print(f"paper_rows: {err}", file=sys.stderr)
        return 2
    out = args.out or Path("analysis/results") / f"gpu_{_dt.datetime.now(_dt.timezone.utc):%Y%m%d}"
    out.mkdir(parents=True, exist_ok=True)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    record = {
        "command": "python -m analysis.gpu.paper_rows "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "plan": str(args.plan_file),
        "plan_written": header.get("written", ""),
        "budget_s": budget,
        **device_description(device),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    # a results folder names the command that remakes it (tests/test_results_of_record.py)
    (out / "COMMAND").write_text(record["command"] + "\n")
    with figures_where_possible(runnable) as skipped:
        record["figures"] = "skipped: no matplotlib" if skipped else "drawn"
        if args.dry_run:
            record["dry_run"] = {}
            for row in runnable:
                seconds = run_direct(
                    row.experiment,
                    config_with(row.experiment, row.dry_run),
                    row.seeds[0],
                    out / "dry_run" / row.experiment,
                    device,
                )
                record["dry_run"][row.experiment] = {"seconds": seconds, "overrides": row.dry_run}
                say(f"dry run {row.experiment}: {seconds:.1f} s")
            record["rows_not_dry_run"] = [r.experiment for r in rows if r.dry_run is None]
            write_record(out, record)
            return 0
        estimate = {r.experiment: r.prior_s_per_seed for r in rows}
        record["estimates"] = {"priors": dict(estimate)}
        if args.calibrate:
            record["calibration"] = {}
            for row in rows:
                if (
                    row.calibrate is None
                    or row.prior_s_per_seed > CALIBRATE_WITHIN * budget
                    or time.monotonic() - started > budget / 3
                ):
                    continue  # rows that may fit, in at most a third of the budget
                seconds = run_direct(
                    row.experiment,
                    config_with(row.experiment, row.calibrate),
                    row.seeds[0],
                    out / "calibrate" / row.experiment,
                    device,
                )
                estimate[row.experiment] = seconds * row.calibrate_factor
                record["calibration"][row.experiment] = {
                    "seconds": seconds,
                    "overrides": row.calibrate,
                    "factor": row.calibrate_factor,
                    "estimate_s_per_seed": estimate[row.experiment],
                }
                say(
                    f"calibrated {row.experiment}: {seconds:.1f} s, "
                    f"{estimate[row.experiment]:.0f} s a seed"
                )
                write_record(out, record)
        left_s = budget - (time.monotonic() - started)
        shards, left = schedule(rows, estimate, left_s)
        record["estimates"]["used"] = dict(estimate)
        record["not_run"] = [
            {"experiment": r.experiment, "seed": s, "why": why} for r, s, why in left
        ]
        record["shards"], record["commands"] = [], {}
        run_shards(shards, estimate, started, budget, device, out, record, say)
    done = sorted({s["experiment"] for s in record["shards"] if s["status"] == "done"})
    record["ledger_rows_paper_scale"] = paper_ledger_rows(out, done)
    record["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    record["seconds"] = time.monotonic() - started
    write_record(out, record)
    say(f"wrote {out / RUN_FILE}")
    return 0


def run_shards(shards, estimate, started, budget, device, out, record, say) -> None:
    """Each shard through the runner (finished ones reused), while its estimate fits the time
    left."""
    from dynkit.experiments import run

    seeds_done: dict[str, list[int]] = {}
    for row, seed in shards:
        name = row.experiment
        left_s = budget - (time.monotonic() - started)
        if estimate[name] > left_s:
            record["not_run"].append(
                {
                    "experiment": name,
                    "seed": seed,
                    "why": f"budget: {left_s:.0f} s left, {estimate[name]:.0f} s estimated",
                }
            )
            continue
        seeds = [*seeds_done.get(name, []), seed]
        record["commands"][name] = (
            f"dynkit run {name} --scale paper --seeds {','.join(map(str, seeds))} "
            f"--device {device} --out {out / name}"
        )
        tic = time.monotonic()
        results = run(name, scale="paper", seeds=seeds, out=out / name, device=device, progress=say)
        seeds_done[name] = seeds
        shard = next(s for s in results["shards"] if s["seed"] == seed)
        record["shards"].append(
            {
                "experiment": name,
                "seed": seed,
                "status": "done",
                "seconds": shard["seconds"],
                "wall_s": time.monotonic() - tic,
                "device_name": shard.get("device_name"),
                "metrics": shard["metrics"],
            }
        )
        write_record(out, record)  # what is finished survives a kill


if __name__ == "__main__":
    sys.exit(main())
