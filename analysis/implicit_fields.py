"""The trained NODE/HBNODE/GHBNODE fields of the results of record through explicit and implicit
methods (issue 23, Sect. 4): does an implicit method change the NFE picture the review draws?

The review argues that HBNODE needs fewer evaluations because its learned dynamics are benign (less
stiff). If a field were stiff, an explicit method's NFE would be set by stability and an implicit
method's would not: the ratio HBNODE / NODE would then shrink or flip under ``radau5``/``bdf``.
Reads ``analysis/results/node_trained/results.json`` (metrics ``<model>.field@1e-05.<method>.nfe``,
written by :func:`dynkit.experiments.node.node_trained.implicit_nfe`) and prints, per method, each
model's mean NFE over seeds and the ratio to NODE, and how often ``auto`` switched to a stiff
method.

    python -m analysis.implicit_fields [RESULTS]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "node_trained" / "results.json"
METHODS = ("dopri5", "radau5", "bdf", "auto")


def table(path: Path = RESULTS) -> str:
    """The Markdown table of mean NFE per (model, method) at rtol 1e-5 and the ratio to NODE."""
    results = json.loads(Path(path).read_text())
    metrics, models = results["metrics"], results["config"]["models"]

    def mean(model: str, method: str, key: str = "nfe") -> float | None:
        entry = metrics.get(f"{model}.field@1e-05.{method}.{key}")
        return None if entry is None else entry["mean"]

    lines = [
        "| method | " + " | ".join(f"{m} NFE (/ NODE)" for m in models) + " | auto switched |",
        "|" + " --- |" * (len(models) + 2),
    ]
    for method in METHODS:
        base = mean("node", method)
        cells = []
        for model in models:
            value = mean(model, method)
            cells.append(
                "–"
                if value is None
                else f"{value:.0f}"
                + ("" if model == "node" or not base else f" ({value / base:.2f})")
            )
        switched = (
            [mean(m, "auto", "switched_fraction") for m in models] if method == "auto" else []
        )
        lines.append(
            f"| {method} | "
            + " | ".join(cells)
            + " | "
            + (", ".join("–" if s is None else f"{s:.2f}" for s in switched) or "")
            + " |"
        )
    seeds = results.get("seeds")
    return (
        "\n".join(lines)
        + f"\n\nseeds {seeds}; trained fields of `node_trained` (scale {results.get('scale')}), "
        "solved at rtol 1e-5, atol 1e-7 in float64 from 2 test inputs each\n"
    )


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS))
