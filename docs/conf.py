"""Sphinx configuration for dynkit. Build with `make docs` (warnings are errors)."""
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
# A build from the source tree works without installing dynkit (the generated pages import it).
sys.path.insert(0, str(HERE.parent))

import dynkit  # noqa: E402

project = "dynkit"
author = "the dynkit developers"
copyright = "2026, the dynkit developers"
release = version = dynkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "dynkit_pages",  # writes generated/ (derivations, propositions, methods, CLI) at build time
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # autodoc :members: lists them; avoids autosummary stubs
numpydoc_validation_checks = set()

html_theme = "furo"
html_title = f"dynkit {release}"
html_static_path = []
