"""Render the claims ledger from the committed results: ``analysis/results/LEDGER.md`` and ``ledger.json``.

    python -m analysis.ledger [--results analysis/results] [--before OLD_LEDGER.json]

With ``--before`` (a ``ledger.json`` written by an earlier dynkit, e.g. ``git show REV:analysis/results/ledger.json``)
it also writes ``LEDGER_CHANGES.md``: the counts per label before and after, and every row whose label changed with
the reason.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynkit.experiments import OUTCOMES, ledger
from dynkit.io import atomic_write, write_json

SAME = {"reproduced": "reproduced", "partly reproduced": "smaller effect", "contradicted": "opposite"}
"""The outcome an old verdict corresponds to (``not reproduced at this scale`` was any of the undecided ones)."""


def _old_label(row: dict) -> str:
    return row.get("outcome") or row.get("verdict", "")


def _old_ours(row: dict) -> str:
    o = row.get("ours") or {}
    if o.get("mean") is None:
        return "–"
    return f"{o['mean']:.3g} [{o['ci_low']:.3g}, {o['ci_high']:.3g}], n={o['n_seeds']}"


def why_changed(new: dict) -> str:
    """The reason a row's label changed, from the new row (validity, seeds, scale, rule)."""
    if new["outcome"] == "invalid":
        return "invalid: " + new["reason"]
    if new["n"] < 5 and new["outcome"] in ("inconclusive", "needs full scale"):
        return f"{new['reason']}" + ("" if new["provisional"] in ("", "inconclusive") else
                                     f" — the CI now on the {new['scale']} scale, with 'reproduced' asking it to "
                                     f"reach the paper's effect")
    if new["outcome"] == "ruled out":
        return f"the CI lies inside ±{new['sesoi']:.3g} (the smallest effect of interest) around no effect"
    return new["reason"] or f"the CI on the {new['scale']} scale decides it"


def changes(before: dict, after: dict) -> str:
    old = {r["id"]: r for r in before["rows"]}
    old_counts: dict[str, int] = {}
    for r in before["rows"]:
        old_counts[_old_label(r)] = old_counts.get(_old_label(r), 0) + 1
    new_counts = {k: sum(r["outcome"] == k for r in after["rows"]) for k in OUTCOMES}
    lines = ["# Ledger changes (issue 21)", "",
             f"Before: {len(before['rows'])} rows — " + ", ".join(f"{k}: {v}" for k, v in old_counts.items()),
             "", f"After: {len(after['rows'])} rows — " + ", ".join(f"{k}: {v}" for k, v in new_counts.items()), "",
             "A label counts as unchanged when the old verdict maps onto the new outcome (reproduced -> reproduced, "
             "partly reproduced -> smaller effect, contradicted -> opposite).", "",
             "| id | before | before: mean [CI], n | after | after: effect [CI] (scale), n (agree) | reason |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in after["rows"]:
        o = old.get(r["id"])
        before_label = _old_label(o) if o else "(new row)"
        if o and SAME.get(before_label) == r["outcome"]:
            continue
        eff = ("–" if r["effect"] is None else
               f"{r['effect']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}] ({r['scale']})")
        cells = [r["id"], before_label, _old_ours(o) if o else "–", r["outcome"], f"{eff}, {r['n']} ({r['n_agree']})",
                 why_changed(r)]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    gone = sorted(set(old) - {r["id"] for r in after["rows"]})
    if gone:
        lines += ["", "Rows removed: " + ", ".join(gone)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    p.add_argument("--before", type=Path, default=None, help="an earlier ledger.json to list the changed rows against")
    args = p.parse_args(argv)
    table = ledger(args.results)
    data = table.to_dict()
    atomic_write(args.results / "LEDGER.md", lambda fh: fh.write("# Claims ledger\n\n" + table.to_markdown()))
    write_json(args.results / "ledger.json", data, command="python -m analysis.ledger")
    if args.before is not None:
        text = changes(json.loads(args.before.read_text()), data)
        atomic_write(args.results / "LEDGER_CHANGES.md", lambda fh: fh.write(text))
        print(text)
    print(table.to_markdown())
    return data


if __name__ == "__main__":
    main()
