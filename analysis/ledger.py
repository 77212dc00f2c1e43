"""Render the claims ledger from the committed results: ``analysis/results/LEDGER.md`` and ``ledger.json``.

    python -m analysis.ledger [--results analysis/results] [--before OLD_LEDGER.json]

With ``--before`` (a ``ledger.json`` written by an earlier dynkit, e.g. ``git show REV:analysis/results/ledger.json``)
it also writes ``LEDGER_CHANGES.md``: the counts per label before and after (also with every row at a Bonferroni
level), and every row whose label changed with the reason.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynkit.experiments import OUTCOMES, ledger
from dynkit.io import atomic_write, write_json

SAME = {"reproduced": "reproduced", "partly reproduced": "smaller effect", "contradicted": "opposite",
        "ruled out": "negligible"}
"""The outcome an old label corresponds to (``ruled out`` became ``negligible`` in issue 30)."""
DECISIONS = ("reproduced", "smaller effect", "opposite")


def _old_label(row: dict) -> str:
    return row.get("outcome") or row.get("verdict", "")


def _old_ours(row: dict) -> str:
    if row.get("effect") is not None:
        method = row.get("ci_method", "")
        return (f"{row['effect']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}] ({row.get('scale', '')}"
                + (f", {method}" if method else "") + f"), n={row['n']}")
    o = row.get("ours") or {}
    if o.get("mean") is None:
        return "–"
    return f"{o['mean']:.3g} [{o['ci_low']:.3g}, {o['ci_high']:.3g}], n={o['n_seeds']}"


def why_changed(old: dict | None, new: dict) -> str:
    """The reason a row's label changed, from the new row (validity, rule, level, plan) and the old one."""
    level = f"level {new['level']:.4g} ({new['family']}, {'primary' if new['primary'] else 'secondary: Holm'})"
    before = _old_label(old) if old else ""
    if new["outcome"] == "invalid":
        return "invalid: " + new["reason"]
    if new["outcome"] == "deterministic":
        return new["reason"]
    if before == "needs full scale":
        return ("'needs full scale' had been set after the results, for inconclusive rows only; no recipe states it "
                f"before the results. Now {new['outcome']}: " + (new["reason"] or f"its interval at {level}"))
    if new["outcome"] == "negligible":
        return (f"the interval [{new['ci_low']:.3g}, {new['ci_high']:.3g}] at {level} lies inside ±{new['sesoi']:.3g} "
                f"(the smallest effect of interest): negligible whatever its sign")
    if new["outcome"] == "inconclusive" and before in DECISIONS:
        extra = (" (the plan's t interval; the old one was the bootstrap chosen from the skew)"
                 if old and old.get("ci_method") == "bootstrap" else "")
        return (f"at {level}, plan {new['plan']!r}, the interval [{new['ci_low']:.3g}, {new['ci_high']:.3g}] holds no "
                f"effect{extra}")
    return new["reason"] or f"the interval at {level} decides it"


def _issue21_decide(lo: float, hi: float, goal: float, sesoi: float) -> str:
    """Issue 21's rule on ``d`` (no magnitude floor): kept here only to count the old rule's survivors."""
    if lo > 0:
        return "reproduced" if hi >= goal else "smaller effect"
    if hi < 0:
        return "opposite"
    return "ruled out" if -sesoi < lo and hi < sesoi else "inconclusive"


def bonferroni(rows: list[dict], alpha: float = 0.05, rule: str = "issue 30") -> dict[str, int]:
    """Outcome counts with every decided row's t interval at ``1 - alpha / N`` over all N rows (the per-seed effects
    the ledger computed), by issue 30's rule or issue 21's (``rule="issue 21"``); other rows keep their label."""
    from dynkit.experiments.inference import decide, interval

    level = 1 - alpha / len(rows)
    counts: dict[str, int] = {}
    for r in rows:
        xs = list((r.get("per_seed") or {}).values())
        label = r["outcome"]
        if label in (*DECISIONS, "negligible", "ruled out") and r.get("n", 0) >= 5:
            ci = interval(xs, level, "t")
            s = 1 if r["direction"] == "greater" else -1
            if rule == "issue 30":
                label = decide(ci.low, ci.high, r["null"], r["paper_effect"], r["sesoi"], s)
            else:
                lo, hi = sorted((s * (ci.low - r["null"]), s * (ci.high - r["null"])))
                label = _issue21_decide(lo, hi, s * (r["paper_effect"] - r["null"]), r["sesoi"])
        counts[label] = counts.get(label, 0) + 1
    return counts


def changes(before: dict, after: dict) -> str:
    old = {r["id"]: r for r in before["rows"]}
    old_counts: dict[str, int] = {}
    for r in before["rows"]:
        old_counts[_old_label(r)] = old_counts.get(_old_label(r), 0) + 1
    new_counts = {k: sum(r["outcome"] == k for r in after["rows"]) for k in OUTCOMES}
    n = len(after["rows"])
    text = lambda c: ", ".join(f"{k}: {v}" for k, v in c.items() if v)  # noqa: E731
    lines = ["# Ledger changes (issue 30)", "",
             f"Before (issue 21's rule): {len(before['rows'])} rows — {text(old_counts)}", "",
             f"After (issue 30's rule: trained bars, magnitude floor, plans, Holm within families): {n} rows — "
             f"{text(new_counts)}", "",
             f"Every row at a Bonferroni level over all {n} rows (t interval at 1 - 0.05/{n}): before's rule — "
             f"{text(bonferroni(before['rows'], rule='issue 21'))}; after's rule — "
             f"{text(bonferroni(after['rows']))}", "",
             "A label counts as unchanged when the old outcome maps onto the new one (ruled out -> negligible).", "",
             "| id | before | before: effect [CI], n | after | after: effect [CI] (method, level), n (sign) | "
             "family | reason |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in after["rows"]:
        o = old.get(r["id"])
        before_label = _old_label(o) if o else "(new row)"
        if o and SAME.get(before_label, before_label) == r["outcome"]:
            continue
        eff = ("–" if r["effect"] is None else
               f"{r['effect']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}] ({r['ci_method']}, {r['level']:.4g})")
        cells = [r["id"], before_label, _old_ours(o) if o else "–", r["outcome"],
                 f"{eff}, {r['n']}; {r['sign_test']}",
                 r["family"], why_changed(o, r)]
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
