"""Sphinx configuration for dynkit. Build with `make docs` (warnings are errors).

Equations are typeset by an offline MathJax copy (the sphinx-mathjax-offline package, a docs
dependency: no CDN); the notebooks of notebooks/ are executed at their small size by myst-nb and
rendered with their figures (a notebook whose full run is too slow shows the results of record).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
# A build from the source tree works without installing dynkit (the generated pages import it).
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(1, str(HERE.parent))
# The notebook kernels inherit this environment: the source tree, small sizes, one thread.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(HERE.parent / "src"), str(HERE.parent), os.environ.get("PYTHONPATH")])
)
os.environ.setdefault("DYNKIT_NOTEBOOK_SMALL", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import dynkit  # noqa: E402
import dynkit_pages  # noqa: E402

project = "dynkit"
author = "the dynkit developers"
copyright = "2026, the dynkit developers"
release = version = dynkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",  # MyST Markdown pages and executed notebooks (it brings myst_parser)
    # writes generated/ (derivations, claims, ledger, methods, notebooks, CLI) at build time
    "dynkit_pages",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "generated/_static"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# Notebooks: always executed (their sources carry no outputs), a failing cell fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_execution_show_tb = True
# Markdown outputs (``Markdown(d.to_markdown())``) parsed as MyST, with the dollarmath above: their
# $$ ... $$ is typeset like the pages' own math (myst-nb's default, commonmark, would leave it as
# raw LaTeX, silently)
nb_render_markdown_format = "myst"

# MathJax: the offline bundle of sphinx-mathjax-offline, copied into _static/mathjax by dynkit_pages
# (nothing from a CDN).
dynkit_pages.mathjax_static(HERE / "generated" / "_static")
mathjax_path = "mathjax/tex-svg-full.js"
mathjax3_config = {
    "tex": {"maxBuffer": 64 * 1024}
}  # sympy's adjoint matrices exceed the default 5 KiB

autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # autodoc :members: lists them; avoids autosummary stubs
numpydoc_validation_checks = set()

html_theme = "furo"
html_title = f"dynkit {release}"
html_static_path = ["_static", "generated/_static"]
html_css_files = [
    "dynkit.css"
]  # wide tables, equations and code fit or scroll visibly (tests/test_docs_layout.py)
