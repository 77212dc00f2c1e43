"""What a report section holds: small content blocks, rendered by the templates into HTML and
Markdown.

A block is data only (no markup); ``templates/html.j2`` and ``templates/md.j2`` hold one macro per
``kind``, and ``templates/report.j2`` lays the page out once for both formats.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .common import fmt

__all__ = [
    "Paragraph",
    "Table",
    "Math",
    "Code",
    "Figure",
    "Counts",
    "DerivationView",
    "Section",
    "figure",
]


@dataclass
class Paragraph:
    text: str  # plain text; inline math as $...$ or \( ... \)
    kind: str = field(default="paragraph", init=False)


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]
    caption: str = ""
    kind: str = field(default="table", init=False)

    @property
    def cells(self) -> list[list[str]]:
        return [[fmt(c) for c in row] for row in self.rows]


@dataclass
class Math:
    latex: str
    label: str = ""  # a short caption before the equation
    kind: str = field(default="math", init=False)


@dataclass
class Code:
    text: str
    summary: str = ""  # when set, the block is collapsed under this summary in HTML
    kind: str = field(default="code", init=False)


@dataclass
class Figure:
    name: str  # file name under figures/
    png: bytes
    caption: str
    kind: str = field(default="figure", init=False)

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class Counts:
    """How many rows have each verdict, e.g. ``[("holds", 8), ("false as stated", 1)]``."""

    items: list[tuple[str, int]]
    total_label: str = "claims"
    kind: str = field(default="counts", init=False)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.items)


@dataclass
class DerivationView:
    """One worked derivation: its statement as the heading, its steps collapsed below."""

    title: str
    source: str  # paper and equation
    badge: str  # "ok" / "failed" / "error"
    steps: list[tuple[str, str]] = field(default_factory=list)  # (sentence, display LaTeX or "")
    result: str = ""
    stated: str = ""
    notes: str = ""
    latex: str = ""  # the whole derivation as LaTeX (Derivation.to_latex)
    error: str = ""
    kind: str = field(default="derivation", init=False)

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.title.lower()).strip("-")


@dataclass
class Section:
    """One part of the report.

    ``status`` is ``"ok"``, ``"failed"`` (a check ran and did not hold), ``"unavailable"`` (the
    component is not in this build) or ``"error"`` (the section raised). ``summary`` blocks go to
    the one-screen summary at the top, ``figures`` to the figures part, ``blocks`` to the details.
    """

    key: str
    title: str
    status: str = "ok"
    note: str = ""
    summary: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    blocks: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    seconds: float = 0.0


def figure(name: str, caption: str, draw: Callable[[Path], Any], workdir: Path) -> Figure:
    """Run ``draw(path)`` (something that writes a PNG to ``path``) and keep the bytes."""
    path = workdir / "figures" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    from ..io import read_regular_bytes

    draw(path)
    return Figure(name, read_regular_bytes(path, "figure"), caption)
