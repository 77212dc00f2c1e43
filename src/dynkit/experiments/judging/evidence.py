"""The evidence a ledger row stands on: a replication of the paper's experiment, a pilot, or not
run.

A row is a **replication** only when its run is the paper's experiment: the paper's task and data
(or the authors' generator), the authors' design, at least their optimiser budget and solver
tolerance. That is read from the experiment's recipe (:mod:`dynkit.experiments.recipes`): the
results were run at the ``paper`` scale, or at a scale where every setting holds the paper's value
except those of :data:`NEUTRAL`, whose difference cannot move the outcome (argued there). Anything
else is a **pilot**: its outcome reads in words of its own (:data:`PILOT_WORDS`), never
``reproduced`` or ``opposite``. A claim the paper makes about one task and run here on another
(:data:`OTHER_TASK`, or a recipe whose data set differs) is a pilot of a new question, worded as
ours (:func:`question`)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

__all__ = [
    "EVIDENCE",
    "PILOT_WORDS",
    "PILOT_OUTCOMES",
    "NEUTRAL",
    "OTHER_TASK",
    "other_task",
    "question",
    "evidence_of",
    "label",
    "config_differences",
]

EVIDENCE = ("replication", "pilot", "not run")
PILOT_WORDS = {
    "reproduced": "pilot agrees",
    "smaller effect": "pilot: smaller effect",
    "smaller effect (negligible)": "pilot: no effect",
    "negligible": "pilot: no effect",
    "opposite (negligible)": "pilot: no effect",
    "opposite": "pilot disagrees",
    "inconclusive": "pilot inconclusive",
    "needs full scale": "pilot inconclusive",
    "invalid": "pilot invalid",
}
"""A pilot's outcome from what its interval reads
(:func:`~dynkit.experiments.judging.inference.decide`)."""
PILOT_OUTCOMES = tuple(dict.fromkeys(PILOT_WORDS.values()))
NEUTRAL = {
    "seeds": "we run the seeds our plan fixes, at least the authors' one run: more independent "
    "runs of the same recipe change the interval's width, not what the recipe measures"
}
"""Recipe settings whose difference from the paper cannot move the outcome, and why."""
OTHER_TASK = {
    **{
        f"review.{task}_{model}_adjoint_{kind}": (
            "Walker2D kinematics (Fig. 8)",
            f"the measured {task.replace('_', ' ')} series",
        )
        for task in ("silverbox", "plane_vibration")
        for model in ("hbnode", "ghbnode")
        for kind in ("not_vanishing", "own")
    },
}
"""Claims the paper makes about one task, run here on another: ``{id: (the paper's task, ours)}``
(rows whose recipe's ``data set`` differs from the paper's are found from the recipe)."""


def _data_sets(experiment: str) -> tuple[str, str] | None:
    """``(the paper's data set, ours at the cpu scale)`` where the recipe states one and they
    differ."""
    from ..recipes import RECIPES, setup_table

    if experiment not in RECIPES:
        return None
    for row in setup_table(experiment):
        if row["setting"] == "data set" and not row["as_paper"]["cpu"]:
            return row["paper"], row["cpu"]
    return None


def other_task(claim) -> tuple[str, str] | None:
    """``(the paper's task, ours)`` when ``claim`` is run on another task or data set than the
    paper's."""
    return OTHER_TASK.get(claim.id) or _data_sets(claim.experiment)


def question(claim) -> str:
    """The question a row answers: the paper's claim, or, run on another task, ours in our words."""
    moved = other_task(claim)
    if moved is None:
        return claim.claim
    paper, ours = moved
    text = claim.claim if claim.claim[1:2].isupper() else claim.claim[0].lower() + claim.claim[1:]
    return f"Ours, on {ours}: {text}? (the paper's claim is about {paper})"


def config_differences(recorded: Mapping, config: Any) -> dict[str, list]:
    """``{config key: [recorded, registered]}``, sorted by key, where results recorded with the
    config ``recorded`` were run with another value than the dataclass ``config`` holds; a key the
    record lacks predates the option: it reads as the field's default (the behaviour before the
    option), else ``None``."""
    from ...io import jsonable

    now = json.loads(json.dumps(jsonable(dataclasses.asdict(config))))
    defaults = json.loads(
        json.dumps(
            jsonable(
                {
                    f.name: f.default
                    for f in dataclasses.fields(config)
                    if f.default is not dataclasses.MISSING
                }
            )
        )
    )
    run_with = {**{k: v for k, v in defaults.items() if k not in recorded}, **recorded}
    keys = sorted(k for k in set(now) | set(run_with) if now.get(k) != run_with.get(k))
    return {k: [run_with.get(k), now.get(k)] for k in keys}


def _recorded_differs(experiment: str, results: Mapping) -> list[str]:
    """The config keys the results were run with that differ from the registered config of their
    scale."""
    from ..registry import get

    recorded = results.get("config")
    if not isinstance(recorded, Mapping):
        return ["config (not recorded)"]
    return list(config_differences(recorded, get(experiment).config(results["scale"])))


def evidence_of(claim, results: Mapping | None) -> tuple[str, str]:
    """``(evidence, why)`` of ``claim``'s row from the results it is judged on (see the module
    docstring)."""
    from ..recipes import RECIPES
    from ..registry import EXPERIMENTS, get

    if results is None:
        return "not run", f"no results at scale {claim.scale!r}"
    moved = other_task(claim)
    why = (
        []
        if moved is None
        else [f"the paper's claim is about {moved[0]}; this run is on {moved[1]}"]
    )
    if claim.experiment not in RECIPES or claim.experiment not in EXPERIMENTS:
        why.append(f"{claim.experiment} has no recipe stating the authors' setup against ours")
        return "pilot", "; ".join(why)
    if results.get("scale") == "paper" and not why:
        return "replication", "run at the paper scale (every stated setting of the authors)"
    stale = _recorded_differs(claim.experiment, results)
    if stale:
        why.append(
            f"the results were run with another config than the recipe reads ({', '.join(stale)})"
        )
        return "pilot", "; ".join(why)
    rows = RECIPES[claim.experiment].rows(
        get(claim.experiment).config(results["scale"]), results["scale"]
    )
    differs = [r["setting"] for r in rows if not r["as_paper"] and r["setting"] not in NEUTRAL]
    if differs:  # every difference named, the task's among them
        why.append("differs from the authors' setup in: " + ", ".join(differs))
    if why:
        return "pilot", "; ".join(why)
    kept = [f"{r['setting']} ({NEUTRAL[r['setting']]})" for r in rows if not r["as_paper"]]
    return "replication", "every setting of the recipe as the authors'" + (
        "; except " + "; ".join(kept) if kept else ""
    )


def label(outcome: str, evidence: str) -> str:
    """The outcome a row shows: a replication's own, a pilot's in :data:`PILOT_WORDS`."""
    if evidence == "pilot":
        return PILOT_WORDS.get(outcome, outcome)
    return outcome
