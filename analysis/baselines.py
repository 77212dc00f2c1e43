"""Write the trivial predictors' metrics beside the results of record:
``analysis/results/<exp>/baselines.json``.

    python -m analysis.baselines [--results analysis/results] [NAME ...]

For every experiment with a trivial predictor
(:data:`dynkit.experiments.judging.baselines.BASELINES`) whose results are committed, the data of
each seed are regenerated from the config recorded in ``results.json`` (no training) and the
baselines' metrics written per seed (issue 30 §1).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynkit.experiments import load_all
from dynkit.experiments.judging.baselines import BASELINES, BASELINES_FILE, compute
from dynkit.io import write_json


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "names",
        nargs="*",
        help="results folders (default: every experiment with a trivial predictor); a folder "
        "named apart from its experiment (a pilot) is read as the experiment its results name",
    )
    p.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    load_all()
    written = {}
    for name in args.names or sorted(BASELINES):
        path = args.results / name / "results.json"
        if not path.exists():
            print(f"{name}: no results at {path}, skipped")
            continue
        results = json.loads(path.read_text())
        experiment = results.get("experiment", name)  # a pilot's folder is named apart
        if experiment not in BASELINES:
            print(f"{name}: {experiment} has no trivial predictor, skipped")
            continue
        data = compute(experiment, results)
        write_json(
            args.results / name / BASELINES_FILE,
            data,
            command="python -m analysis.baselines " + name,
        )
        written[name] = data
        for seed, values in data["seeds"].items():
            print(name, "seed", seed, ", ".join(f"{k} {v:.4g}" for k, v in values.items()))
    return written


if __name__ == "__main__":
    main()
