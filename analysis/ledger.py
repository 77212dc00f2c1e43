"""Render the claims ledger from the committed results: ``analysis/results/LEDGER.md`` and
``ledger.json``.

    python -m analysis.ledger [--results analysis/results] [--before OLD_LEDGER.json]

With ``--before`` (a ``ledger.json`` written by an earlier dynkit, e.g. ``git show
REV:analysis/results/ledger.json``) it also writes ``LEDGER_CHANGES.md``: the counts by evidence and
outcome before and after, and every row whose label changed with the reason. Nothing is trained: the
ledger reads the committed results, verified against their shards.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynkit.experiments import ledger
from dynkit.experiments.judging.ledger import rule_plan_words
from dynkit.io import atomic_write, write_json


def _label(row: dict) -> str:
    return row.get("outcome") or row.get("verdict", "")


def _ci(row: dict) -> str:
    if row.get("effect") is None:
        return "–"
    return f"{row['effect']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]"


def why_changed(old: dict | None, new: dict) -> str:
    """Why a row's label changed: its evidence (a pilot's words), the bars from the data, the rule's
    seven cases (SESOI half the paper's effect, criterion rows against P), Holm over the whole
    family."""
    parts = []
    if new["evidence"] == "pilot":
        parts.append(f"a pilot ({new['evidence_why']})")
    elif new["evidence"] == "replication" and old and old.get("evidence") == "pilot":
        parts.append(f"now a replication ({new['evidence_why']})")
    before, reading = (_label(old) if old else ""), new["reading"]
    if reading == "invalid" and before != "invalid":
        parts.append("invalid: " + new["reason_words"])
    elif reading != "invalid" and reading != before:
        role = "primary" if new["primary"] else "secondary"
        level = f"level {new['level']:.4g}, {new['family']} ({role}; Holm over the whole family)"
        was = f" (was ±{old['sesoi']:.3g})" if old and old.get("sesoi") is not None else ""
        parts.append(
            f"the interval {_ci(new)} at {level} against the paper's effect "
            f"{new['paper_effect']:.3g} and the smallest effect of interest "
            f"±{new['sesoi']:.3g}{was} reads {reading}"
        )
    return "; ".join(parts) or new["reason_words"] or "–"


def _counts(rows: list[dict], key=None) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        k = key(r) if key else _label(r)
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"


def changes(before: dict, after: dict) -> str:
    """``LEDGER_CHANGES.md``: the counts by evidence and outcome before and after, and every row
    whose label changed (the old label against the new one) with the reason."""
    old = {r["id"]: r for r in before["rows"]}
    rows = after["rows"]
    had_levels = all("evidence" in r for r in before["rows"])
    lines = ["# Ledger changes", ""]
    if had_levels:
        for evidence in ("replication", "pilot", "not run"):
            these = [r for r in before["rows"] if r["evidence"] == evidence]
            tail = f" — {_counts(these)}" if these else ""
            lines += [f"Before, {evidence}: {len(these)} rows{tail}.", ""]
    else:
        lines += [
            f"Before: {len(before['rows'])} rows, no evidence level (every row read as if it "
            f"replicated the paper): {_counts(before['rows'])}.",
            "",
        ]
    for evidence in ("replication", "pilot", "not run"):
        these = [r for r in rows if r["evidence"] == evidence]
        lines += [
            f"After, {evidence}: {len(these)} rows"
            + (f" — {_counts(these)}" if these else "")
            + "."
        ]
        if evidence == "pilot" and these:
            reads = _counts(these, lambda r: r["reading"])
            lines += ["", f"After, what the pilots' intervals read under the rule: {reads}."]
        lines.append("")
    lines += [
        f"Comparisons of the papers no experiment tests yet (not run): "
        f"{len(after.get('not_run', []))}.",
        "",
        rule_plan_words(rows) + " The plans are kept as they were written; none is rewritten.",
        "",
        "| id | before | after | reads | evidence | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        o = old.get(r["id"])
        before_label = _label(o) if o else "(new row)"
        if before_label == r["outcome"]:
            continue
        cells = [
            r["id"],
            f"{before_label} {_ci(o) if o else ''}".strip(),
            r["outcome"],
            r["reading"],
            r["evidence"],
            why_changed(o, r),
        ]
        lines.append(
            "| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |"
        )
    gone = sorted(set(old) - {r["id"] for r in rows})
    if gone:
        lines += ["", "Rows removed: " + ", ".join(gone)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    p.add_argument(
        "--before",
        type=Path,
        default=None,
        help="an earlier ledger.json to list the changed rows against",
    )
    args = p.parse_args(argv)
    table = ledger(args.results)
    data = table.to_dict()
    atomic_write(
        args.results / "LEDGER.md", lambda fh: fh.write("# Claims ledger\n\n" + table.to_markdown())
    )
    write_json(args.results / "ledger.json", data, command="python -m analysis.ledger")
    if args.before is not None:
        text = changes(json.loads(args.before.read_text()), data)
        atomic_write(args.results / "LEDGER_CHANGES.md", lambda fh: fh.write(text))
        print(text)
    print(table.to_markdown())
    return data


if __name__ == "__main__":
    main()
