"""Run every benchmark (``python -m benchmarks [--quick] [NAME ...]``).

Each ``benchmarks/bench_<area>.py`` prints ratios against a peer measured in the same run; timing
goals live here, never as assertions in ``tests/``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time

import benchmarks
from benchmarks._goals import REPORTED


def main(argv: list[str] | None = None) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "only", nargs="*", help=f"benchmarks to run (default: all of {', '.join(names)})"
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only) - set(names))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(names)}")
    for name in args.only or names:
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        module.main(["--quick"] if args.quick else [])
        print(f"--- {name}: {time.perf_counter() - start:.1f} s", flush=True)
    missed = [g for g in REPORTED if not g.met]
    print(f"\n=== goals: {len(REPORTED) - len(missed)} met, {len(missed)} NOT met", flush=True)
    for goal in missed:
        print("  " + goal.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
