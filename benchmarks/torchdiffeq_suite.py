"""Run torchdiffeq's own test suite against ``dynkit.odeint`` and count what passes.

    python -m benchmarks.torchdiffeq_suite PATH/TO/torchdiffeq/tests [--verbose]

The tests are copied to a temporary folder (nothing of them is kept or committed),
``import torchdiffeq`` is replaced by ``import dynkit as torchdiffeq``, and the method lists of
their ``problems.py`` are limited to the torchdiffeq names dynkit maps
(:data:`dynkit.solvers.odeint.TORCHDIFFEQ_METHODS`); the other names are refused by dynkit with the
nearest dynkit method named. Prints, per test file and in all: test methods passed/failed/errored,
and subtests passed/failed/errored, then every failure with its first line.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import sys
import tempfile
import unittest
from collections import Counter
from pathlib import Path

FILES = ("api_tests", "event_tests", "gradient_tests", "norm_tests", "odeint_tests")

# Appended to their problems.py: every method list keeps the names dynkit maps, in their order.
LIMIT = """
# --- added by dynkit's benchmarks/torchdiffeq_suite.py: the methods dynkit maps ---
from dynkit.solvers.odeint import TORCHDIFFEQ_METHODS as _DK
FIXED_EXPLICIT_METHODS = tuple(m for m in FIXED_EXPLICIT_METHODS if m in _DK)
FIXED_IMPLICIT_METHODS = tuple(m for m in FIXED_IMPLICIT_METHODS if m in _DK)
FIXED_METHODS = FIXED_EXPLICIT_METHODS + FIXED_IMPLICIT_METHODS
ADAMS_METHODS = tuple(m for m in ADAMS_METHODS if m in _DK)
ADAPTIVE_METHODS = tuple(m for m in ADAPTIVE_METHODS if m in _DK)
SCIPY_METHODS = tuple(m for m in SCIPY_METHODS if m in _DK)
IMPLICIT_METHODS = FIXED_IMPLICIT_METHODS
METHODS = FIXED_METHODS + ADAPTIVE_METHODS + SCIPY_METHODS
"""


def _first_line(err) -> str:
    lines = str(err[1]).splitlines()
    return f"{err[0].__name__}: {lines[0][:160] if lines else ''}"


class _Counting(unittest.TextTestResult):
    """A result that also counts subtests (unittest reports only the failing ones to a result)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sub = Counter()
        self.problems: list[tuple[str, str]] = []

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            self.sub["passed"] += 1
            return
        kind = "failed" if issubclass(err[0], test.failureException) else "errors"
        self.sub[kind] += 1
        self.problems.append((subtest.id(), _first_line(err)))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.problems.append((test.id(), _first_line(err)))

    def addError(self, test, err):
        super().addError(test, err)
        self.problems.append((test.id(), _first_line(err)))


def prepare(source: Path, into: Path) -> None:
    for name in (*FILES, "problems"):
        text = (source / f"{name}.py").read_text()
        text = re.sub(r"^import torchdiffeq$", "import dynkit as torchdiffeq", text, flags=re.M)
        if name == "problems":
            text += LIMIT
        (into / f"{name}.py").write_text(text)


def run(source: Path, verbose: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        prepare(source, Path(tmp))
        sys.path.insert(0, tmp)
        try:
            totals, rows = Counter(), []
            for name in FILES:
                suite = unittest.defaultTestLoader.loadTestsFromName(name)
                stream = io.StringIO()
                result = unittest.TextTestRunner(
                    stream=stream, resultclass=_Counting, verbosity=0
                ).run(suite)
                n = result.testsRun
                # a failing subtest is listed under its own id: count the test method it belongs to
                bad = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
                row = Counter(
                    tests=n,
                    passed=n - len(bad),
                    failed=len(bad),
                    sub_passed=result.sub["passed"],
                    sub_failed=result.sub["failed"],
                    sub_errors=result.sub["errors"],
                )
                rows.append((name, row, result.problems))
                totals.update(row)
        finally:
            sys.path.remove(tmp)
            for name in (*FILES, "problems"):
                sys.modules.pop(name, None)
    print(f"{'file':<16}{'tests':>7}{'passed':>8}{'failed':>8}   subtests: passed  failed  errors")
    for name, row, _ in rows + [("all", totals, [])]:
        print(
            f"{name:<16}{row['tests']:>7}{row['passed']:>8}{row['failed']:>8}   "
            f"{row['sub_passed']:>16}"
            f"{row['sub_failed']:>8}{row['sub_errors']:>8}"
        )
    for name, _, problems in rows:
        shown = problems if verbose else list(dict.fromkeys(p for _, p in problems))
        for item in shown:
            print(f"  {name}: {item}")
    return dict(totals)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", type=Path, help="the tests/ folder of a torchdiffeq checkout")
    parser.add_argument(
        "--verbose", action="store_true", help="every failing (sub)test, not one line per message"
    )
    args = parser.parse_args(argv)
    missing = [f for f in (*FILES, "problems") if not (args.tests / f"{f}.py").is_file()]
    if missing:
        parser.error(
            f"tests: {args.tests} lacks {', '.join(m + '.py' for m in missing)} (expected "
            f"torchdiffeq's tests/)"
        )
    totals = run(args.tests, args.verbose)
    return 0 if totals.get("failed", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
