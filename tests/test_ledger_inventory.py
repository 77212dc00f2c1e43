"""The inventory of the papers' comparisons, counted against the papers' own text: every table and
figure of the five papers is a comparison with a row (or a not-run row saying what it needs) or is
listed as comparing nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dynkit.experiments as E
from dynkit.experiments.judging.inventory import (
    COMPARISONS,
    NOT_COMPARISONS,
    PAPER_FILES,
    Comparison,
    not_run,
)


def _papers() -> Path:
    for root in (
        Path(__file__).resolve().parents[2] / "shared",
        Path.cwd().parent / "shared",
        Path.cwd() / "shared",
    ):
        if (root / "papers").is_dir():
            return root / "papers"
    pytest.fail(
        "shared/papers must lie beside the checkout (the papers' text is what the inventory is "
        "counted against)"
    )


def _locations(text: str) -> set[str]:
    """Every 'Table N' and 'Figure N' / 'Fig. N' / 'Figs. N and M' the text names, as 'Table N' /
    'Fig. N'."""
    found = {f"Table {n}" for n in re.findall(r"\bTables? (\d+)", text)}
    found |= {f"Table {n}" for n in re.findall(r"\bTables \d+(?:, | and )(\d+)", text)}
    found |= {f"Fig. {n}" for n in re.findall(r"\b(?:Figure|Fig\.|Figs\.) ?(\d+)", text)}
    found |= {f"Fig. {n}" for n in re.findall(r"\bFigs\. \d+(?:, | and )(\d+)", text)}
    return found


def test_every_table_and_figure_of_the_papers_is_in_the_inventory():
    listed = {(c.paper, c.location) for c in COMPARISONS}
    assert len(listed) == len(COMPARISONS), "one entry per table or figure"
    assert not listed & set(NOT_COMPARISONS)
    for paper, name in PAPER_FILES.items():
        in_text = _locations((_papers() / name).read_text(encoding="utf-8", errors="replace"))
        ours = {loc for p, loc in listed | set(NOT_COMPARISONS) if p == paper}
        assert in_text - ours == set(), (
            f"{paper}: tables/figures in the text but not in the inventory"
        )
        assert ours - in_text == set(), f"{paper}: inventory entries the text never names"


def test_at_least_fifty_comparisons_each_with_a_row_or_a_need():
    E.load_all()
    assert len(COMPARISONS) >= 50
    for c in COMPARISONS:
        ids = c.claim_ids(E.COMPARISONS)
        assert bool(ids) != bool(c.needs), f"{c.paper} {c.location}: rows {ids}, needs {c.needs!r}"
    gone = not_run(E.COMPARISONS)
    assert gone and all(c.kind in ("data", "gpu", "capability") for c in gone)
    # the ledger lists them as not-run rows, counted apart
    table = E.ledger()
    assert [n.location for n in table.not_run] == [c.location for c in gone]
    unrun_rows = sum(r.outcome == "not run" for r in table.rows)  # e.g. a campaign before its look
    assert table.counts()["not run"]["not run"] == len(gone) + unrun_rows
    assert len(table.to_dict()["not_run"]) == len(gone)


def test_every_row_with_a_table_or_figure_is_in_the_inventory():
    E.load_all()
    covered = {i for c in COMPARISONS for i in c.claim_ids(E.COMPARISONS)}
    for claim in E.COMPARISONS.values():
        if re.match(
            r"(Table|Figs?\.) \d", claim.paper_figure
        ):  # located first at a table or figure
            assert claim.id in covered, claim.id


def test_a_malformed_entry_is_refused():
    with pytest.raises(ValueError, match="give rows, or needs"):
        Comparison(PAPER_FILES and next(iter(PAPER_FILES)), "Table 9", "x")
    with pytest.raises(ValueError, match="location must read"):
        Comparison(next(iter(PAPER_FILES)), "Tab. 9", "x", needs="y", kind="data")
