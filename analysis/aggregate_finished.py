"""Aggregate the finished shards of an interrupted ``dynkit run`` into ``results.json``, marked
partial.

``dynkit run`` writes ``results.json`` only once every shard has finished. When a run of record is
stopped early (a deadline), this writes the same aggregate from the shards that did finish, adding
``"partial": true`` and the list of missing shards; rerunning the ``dynkit run`` command in
``COMMAND`` reuses the finished shards and completes it.

    python -m analysis.aggregate_finished ode_rnn_walker2d --scale cpu --seeds 0,1,2 --out
    analysis/results/ode_rnn_walker2d
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dynkit.experiments import get, shards
from dynkit.experiments.runner import RESULTS_FILE, aggregate, finished
from dynkit.io import write_json


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name")
    p.add_argument("--scale", default="cpu")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    exp = get(args.name)
    done, missing = [], []
    for shard in shards(args.name, args.scale, seeds, args.out):
        record = finished(
            shard, notice=print
        )  # a damaged or stale shard counts as missing, said so
        (done if record is not None else missing).append(
            record if record is not None else shard.key
        )
    results = aggregate(exp, args.scale, seeds, done)
    results["partial"] = bool(missing)
    results["missing_shards"] = missing
    write_json(args.out / RESULTS_FILE, results)
    if exp.render is not None and done:
        exp.render(results, args.out)
    print(
        f"{args.name}: {len(done)} shards finished, {len(missing)} missing -> "
        f"{args.out / RESULTS_FILE}"
    )
    return results


if __name__ == "__main__":
    main()
