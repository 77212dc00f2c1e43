"""Seeds until decided: ``dynkit run NAME --until-decided [--max-seeds 10]`` (issue 21 §1).

Runs the experiment on :data:`~dynkit.experiments.ledger.MIN_SEEDS` seeds (finished shards reused), computes
its ledger rows on the results just written, and adds one seed at a time while a row is ``inconclusive``
(``invalid`` rows are not helped by more seeds, ``needs full scale`` rows by definition not on this scale)
and the cap is not reached. Shards are per (seed, config point), so a new seed runs every config point of the
experiment: rows of one experiment share their models.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .ledger import CLAIMS, MAX_SEEDS, MIN_SEEDS, evaluate
from .registry import get
from .runner import run

UNDECIDED = ("inconclusive",)


def run_until_decided(name: str, scale: str = "cpu", out: str | Path | None = None, *,
                      max_seeds: int = MAX_SEEDS, min_seeds: int = MIN_SEEDS,
                      progress: Callable[[str], None] | None = None, **run_kwargs) -> dict:
    """Run ``name`` on seeds 0, 1, ... until every ledger row of it is decided or ``max_seeds`` is reached.

    Parameters
    ----------
    name, scale, out
        As :func:`dynkit.experiments.run` (``out`` default ``runs/experiments/<name>/<scale>``).
    max_seeds : int
        The cap (default :data:`MAX_SEEDS`); must be at least ``min_seeds``.
    min_seeds : int
        Seeds run before the first decision (default :data:`MIN_SEEDS`).
    **run_kwargs
        Passed to :func:`dynkit.experiments.run` (backend, device, address).

    Returns
    -------
    dict
        The last ``results.json``, with ``"until_decided": {"seeds": n, "rows": {id: outcome}}`` added.
    """
    get(name)
    if not isinstance(max_seeds, int) or isinstance(max_seeds, bool) or not isinstance(min_seeds, int):
        raise TypeError(f"max_seeds and min_seeds must be integers, got {max_seeds!r} and {min_seeds!r}")
    if not 2 <= min_seeds <= max_seeds:
        raise ValueError(f"need 2 <= min_seeds <= max_seeds, got min_seeds={min_seeds}, max_seeds={max_seeds}")
    out = Path(out) if out is not None else Path("runs/experiments") / name / scale
    say = progress or (lambda line: None)
    claims = [c for c in CLAIMS.values() if c.experiment == name]  # its rows, judged on this scale's results
    n = min_seeds
    while True:
        results = run(name, scale=scale, seeds=tuple(range(n)), out=out, progress=progress, **run_kwargs)
        rows = {c.id: evaluate(c, results) for c in claims}
        open_rows = [i for i, r in rows.items() if r.outcome in UNDECIDED]
        say(f"{name}: {n} seeds; " + ", ".join(f"{i}: {r.outcome}" for i, r in rows.items()))
        if not open_rows or n >= max_seeds:
            results["until_decided"] = {"seeds": n, "max_seeds": max_seeds,
                                        "rows": {i: r.outcome for i, r in rows.items()}}
            return results
        n += 1
