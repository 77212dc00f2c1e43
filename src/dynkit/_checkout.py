"""Where the files beside the package live: the checkout dynkit runs from, and its neighbours.

The package sits in ``src/dynkit/`` of a clone; the results of record (``analysis/results/``) and
the committed plans (``analysis/plans/``) are the clone's, and the papers' data (``shared/``) stands
beside the clone. An installed wheel has no checkout: these paths then name folders that do not
exist, and the modules that read them say so (or look in the working directory).
"""

from pathlib import Path

__all__ = ["CHECKOUT", "RESULTS", "PLANS", "BESIDE"]

CHECKOUT = Path(__file__).resolve().parents[2]
"""The clone's root folder (``src/dynkit/_checkout.py`` → the clone)."""
RESULTS = CHECKOUT / "analysis" / "results"
"""The results of record (``analysis/results/<experiment>/results.json``)."""
PLANS = CHECKOUT / "analysis" / "plans"
"""The committed plans (``analysis/plans/<experiment>.json``)."""
BESIDE = CHECKOUT.parent
"""The folder holding the clone, where ``shared/`` stands."""
