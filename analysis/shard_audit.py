"""Which stored shards of the results of record the current code would reuse, and why not the
others.

    PYTHONPATH=$PWD python -m analysis.shard_audit [RESULTS_FOLDER]

For every ``RESULTS_FOLDER/<name>/results.json`` (default ``analysis/results``) with a ``shards/``
folder, each stored ``shard.json`` is checked as ``dynkit run`` would check it before reusing it
(:func:`dynkit.experiments.runner.finished`, read-only: nothing is recomputed or rewritten), and
counted as *reusable* or by the reason it is not (recorded before shards carried their code,
recorded before the code identity covered the package, written by other code, ...). A result of
record whose shards are not reusable still stands for the code it was computed with (its ``COMMAND``
and ``versions``); rerunning its command recomputes them. Nothing here re-stamps a record with the
hash of code it was not computed with.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import dynkit.experiments as E
from dynkit.experiments.runner import finished, shards

REASONS = (
    ("written before shards recorded their code", "before shards recorded their code"),
    ("recorded before shards covered the package", "before the package hash"),
    ("recorded with whole-file hashes", "before per-module code digests"),
    ("written by other code", "written by other code"),
    ("differs", "other config or scale"),
)


def audit(folder: Path) -> dict[str, Counter]:
    """``{result name: Counter(reusable=..., <reason>=...)}`` for the results under ``folder``."""
    table = {}
    for results in sorted(folder.glob("*/results.json")):
        out = results.parent
        if not (out / "shards").is_dir():
            continue
        record = json.loads(results.read_text())
        name, scale = record.get("experiment"), record.get("scale")
        counts: Counter = Counter()
        if name not in E.EXPERIMENTS:
            counts["experiment no longer registered"] = len(list(out.glob("shards/*/shard.json")))
            table[out.name] = counts
            continue
        seeds = sorted(
            {
                int(m.group(1))
                for p in out.glob("shards/*/shard.json")
                if (m := re.match(r"seed(\d+)", p.parent.name))
            }
        )
        for shard in shards(name, scale, seeds, out) if seeds else []:
            if not shard.path.exists():
                continue
            notices: list[str] = []
            if finished(shard, notices.append) is not None:
                counts["reusable"] += 1
                continue
            text = notices[0] if notices else "unreadable"
            counts[
                next((label for words, label in REASONS if words in text), "other: " + text[-60:])
            ] += 1
        table[out.name] = counts
    return table


def main(argv: list[str]) -> int:
    E.load_all()
    folder = Path(argv[0]) if argv else Path("analysis/results")
    table = audit(folder)
    total: Counter = Counter()
    for name, counts in table.items():
        total.update(counts)
        print(f"{name:36s} " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"{'all':36s} " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
