"""A validity condition on one seed's metrics: what an experiment declares a run must satisfy
before its rows are judged (:func:`~dynkit.experiments.judging.ledger.declare_validity`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One validity condition on one seed's metrics, declared by an experiment
    (:func:`declare_validity`).

    Parameters
    ----------
    kind : {"trained", "plateau", "off floor", "bounded"}
        What the check guards against (printed in the reason of an ``invalid`` row).
    subject : str
        The model (metric prefix, e.g. ``"hbnode"`` or ``"digits.LSTM"``) the check is about: it
        applies to a row whose effect reads a metric starting with ``subject + "."``.
    metrics : tuple of str
        The metrics it reads (each must be present: completeness).
    test : callable
        ``test(*values) -> (ok, value)``: whether the seed passes, and the number to report.
    why : str
        The stated criterion, e.g. ``"test accuracy >= 0.5 (chance 0.1)"``.
    when : str, optional
        A regular expression: the check applies only to rows whose effect metrics match it (e.g.
        ``"nfe"``).
    """

    kind: str
    subject: str
    metrics: tuple[str, ...]
    test: Callable[..., tuple[bool, float]]
    why: str
    when: str | None = None

    def applies(self, effect_metrics: Sequence[str]) -> bool:
        about = self.subject == "" or any(m.startswith(self.subject + ".") for m in effect_metrics)
        return about and (self.when is None or any(re.search(self.when, m) for m in effect_metrics))
