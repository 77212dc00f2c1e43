"""The registry: each claim of the papers with its random-instance generator, one module per paper.

A paper's module (:data:`PAPERS`) declares its rows once, ``CLAIMS``: a tuple of :class:`Claim`,
each with its quote, reading, correction and checks in the row itself; the checks two papers share
live in the private ``_rnn_checks`` and ``_transformer_checks``, the machinery every check uses in
``_sampling``. Paper modules import those, never one another (an import-linter contract).

To add a claim of a paper listed here: append a row to that module's ``CLAIMS`` with the next free
``number``. To add a claim of a new paper: add a module here with its ``CLAIMS`` tuple, list it in
:data:`PAPERS`, and name the paper once in ``dynkit/_papers.py``. A claim's ``number`` seeds its
instances (``seed + number``), so new claims take the next numbers and every other claim keeps its
instances.
"""

from __future__ import annotations

from types import ModuleType

from .._core import Claim, ClaimTable, check_count, check_seed
from . import csaode, momentum_resnets, momentum_rnn, momentum_transformer, review

__all__ = ["CLAIMS", "PAPERS", "collect", "run_all"]

PAPERS: tuple[ModuleType, ...] = (
    review,
    momentum_transformer,
    momentum_rnn,
    momentum_resnets,
    csaode,
)
"""The paper modules, each with its ``CLAIMS`` tuple."""


def collect(papers: tuple[ModuleType, ...] = PAPERS) -> dict[str, Claim]:
    """The claims of ``papers`` by id, in the order of their numbers.

    Raises ValueError when two rows share an id, or when the numbers are not 0, 1, ... without a
    gap or a repeat (the message names the rows).
    """
    rows = sorted((c for paper in papers for c in paper.CLAIMS), key=lambda c: (c.number, c.id))
    ids = [c.id for c in rows]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"claim ids must be unique across the paper modules; repeated: {twice}")
    numbers = [c.number for c in rows]
    if numbers != list(range(len(rows))):
        off = [f"{c.id}={c.number}" for i, c in enumerate(rows) if c.number != i]
        raise ValueError(
            f"claim numbers must be 0..{len(rows) - 1}, each once (they seed the instances); "
            f"out of place: {', '.join(off)}"
        )
    return {c.id: c for c in rows}


CLAIMS: dict[str, Claim] = collect()


def run_all(
    n_instances: int = 1000, seed: int = 0, claims=None, *, progress: bool = False
) -> ClaimTable:
    """Run every claim (or those whose ids are in ``claims``) on up to ``n_instances`` random
    instances each, seeded by ``seed`` (the claim of ``number`` i uses ``seed + i``, so a claim's
    instances do not depend on which others run; the expensive ones cap their count, see each row's
    ``instances``). Returns a :class:`ClaimTable` whose rows carry the verdict about the paper's
    statement as written; ``progress=True`` shows a tqdm bar.

    Raises ValueError for an empty or unknown selection (the message lists the known claim ids).
    """
    n_instances = check_count("n_instances", n_instances)
    seed = check_seed("seed", seed)
    if claims is None:
        selected = list(CLAIMS)
    else:
        if isinstance(claims, str):
            claims = [claims]
        try:
            selected = list(claims)
        except TypeError:
            raise TypeError(
                f"claims must be a claim id or a list of ids from dk.theory.CLAIMS; got "
                f"{type(claims).__name__} {claims!r}"
            ) from None
        if not selected:
            raise ValueError(
                f"claims must name at least one claim (or be None for all); known claims: "
                f"{', '.join(CLAIMS)}"
            )
        unknown = [c for c in selected if not isinstance(c, str) or c not in CLAIMS]
        if unknown:
            raise ValueError(
                f"claims must be ids from dk.theory.CLAIMS; got unknown {unknown}; known claims: "
                f"{', '.join(CLAIMS)}"
            )
    todo = [claim for claim in CLAIMS.values() if claim.id in selected]
    if progress:
        from tqdm.auto import tqdm

        todo = tqdm(todo, desc="dk.theory claims", unit="claim")
    rows = [claim.run(n_instances, seed + claim.number) for claim in todo]
    return ClaimTable(rows, n_instances, seed)
