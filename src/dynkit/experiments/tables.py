"""Markdown tables of an experiment's results: each cell the mean ± sample std of one metric over
the seeds."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Sequence

__all__ = ["mean_std", "cell", "write_table"]


def mean_std(values: Sequence[float | None], fmt: str = ".3g") -> str:
    """``"m ± s"`` (sample std, ``ddof = 1``; both in the format ``fmt``) of the finite
    ``values``, ``m`` alone for one, ``"–"`` for none."""
    xs = [float(v) for v in values if v is not None and float(v) - float(v) == 0]
    if not xs:
        return "–"
    if len(xs) == 1:
        return f"{xs[0]:{fmt}}"
    return f"{statistics.fmean(xs):{fmt}} ± {statistics.stdev(xs):{fmt}}"


def cell(results: dict, metric: str, fmt: str = ".3g") -> str:
    """:func:`mean_std` of the per-seed values of ``metric`` in an aggregated ``results.json``."""
    return mean_std(results["metrics"].get(metric, {}).get("values", []), fmt)


def write_table(
    out: str | Path,
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    note: str = "",
) -> Path:
    """``out/table.md``: a title, an optional note, and the table (written atomically)."""
    from ..io import atomic_write

    lines = [f"# {title}", ""] + ([note, ""] if note else [])
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return atomic_write(Path(out) / "table.md", lambda fh: fh.write("\n".join(lines) + "\n"))
