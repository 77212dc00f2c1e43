"""The campaign's cost: each shard's time and the total core-hours of the results of record (issue 21 §2).

    python -m analysis.campaign [EXPERIMENT ...] [--since ISO-DATE]

Reads ``analysis/results/<experiment>/results.json`` (every shard's ``seconds``, run with
``OMP_NUM_THREADS=1``: one core per shard) and prints one line per shard and the total in core-hours.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def shard_times(experiments: list[str] | None = None) -> list[tuple[str, int, dict, float]]:
    """``(experiment, seed, point, seconds)`` for every shard of the named (default: every) results of record."""
    rows = []
    for path in sorted(RESULTS.glob("*/results.json")):
        if experiments and path.parent.name not in experiments:
            continue
        results = json.loads(path.read_text())
        for shard in results.get("shards", ()) if isinstance(results, dict) else ():
            rows.append((path.parent.name, int(shard["seed"]), shard.get("point", {}), float(shard["seconds"])))
    return rows


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiments", nargs="*", help="result folders (default: all with shards)")
    args = p.parse_args(argv)
    rows = shard_times(args.experiments or None)
    for exp, seed, point, seconds in rows:
        print(f"{exp:32s} seed {seed:2d} {json.dumps(point):40s} {seconds:9.1f} s")
    total = sum(r[3] for r in rows) / 3600
    print(f"{len(rows)} shards, {total:.2f} core-hours")
    return total


if __name__ == "__main__":
    main()
