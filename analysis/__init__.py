"""The results of record (``analysis/results/<experiment>/``) and what renders them.

The experiments themselves live in :mod:`dynkit.experiments`
(``dynkit run NAME --scale cpu --out analysis/results/NAME``); ``python -m analysis.ledger`` renders
the claims ledger from the results here.
"""
