"""Where the tests find the team's offline data (``shared/`` beside the checkout, as on CI).

``DYNKIT_SHARED_DATA`` overrides the location. Without the data the tests that need it are skipped
with the path in the reason, except under CI (``CI`` set), where a missing data folder is an error.
"""

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DYNKIT_SHARED_DATA", _REPO.parent / "shared" / "data"))
SENTENCE_DATA = SHARED_DATA / "sentence-classification"

if os.environ.get("CI") and not SENTENCE_DATA.is_dir():
    raise RuntimeError(f"CI: the shared sentence-classification data is missing at {SENTENCE_DATA}")

needs_sentence_data = pytest.mark.skipif(
    not SENTENCE_DATA.is_dir(), reason=f"shared data not found at {SENTENCE_DATA}"
)
