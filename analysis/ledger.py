"""Render the claims ledger from the committed results: ``analysis/results/LEDGER.md`` and ``ledger.json``.

    python -m analysis.ledger [--results analysis/results]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from dynkit.experiments import ledger
from dynkit.io import atomic_write, write_json


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    table = ledger(args.results)
    atomic_write(args.results / "LEDGER.md", lambda fh: fh.write("# Claims ledger\n\n" + table.to_markdown()))
    write_json(args.results / "ledger.json", table.to_dict(), command="python -m analysis.ledger")
    print(table.to_markdown())
    return table.to_dict()


if __name__ == "__main__":
    main()
