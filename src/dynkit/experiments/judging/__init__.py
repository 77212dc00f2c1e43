"""Judging the results: the ledger's comparisons and their outcome rule, the committed plans of the
runs, the evidence each row stands on, the inventory of what was not run, the trivial predictors'
machinery and the papers' own runs.

* :mod:`.ledger`: a :class:`~.ledger.Comparison` per empirical claim of the papers, validity checks,
  the outcome of each row from the committed results, rendered as Markdown, CSV or JSON;
* :mod:`.inference`: the outcome rule (paired effects, intervals, sequential looks, Holm);
* :mod:`.plans` and :mod:`.planned`: the plan of a run written before it, and the looks it runs;
* :mod:`.evidence`, :mod:`.inventory`, :mod:`.paper_runs`, :mod:`.baselines`, :mod:`.papers`.

The families (``dynkit.experiments.<family>``) import this package to declare their rows; it
imports no family (the import-linter contract in ``pyproject.toml``).
"""
