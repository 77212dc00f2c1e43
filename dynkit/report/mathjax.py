"""The MathJax bundle the report and the docs typeset their equations with, offline.

MathJax 3 comes from the ``sphinx-mathjax-offline`` package (a dependency: it ships MathJax's
distribution files). We use one file of it, ``tex-svg-full.js``: TeX input, SVG output (glyphs are
drawn as paths, so no font files are fetched) and every TeX extension compiled in (so nothing is
loaded on demand). The report inlines it; the docs copy it into ``_static``. Nothing is fetched
from the network when a page is viewed.
"""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

__all__ = ["MATHJAX_PACKAGE", "MATHJAX_BUNDLE", "mathjax_bundle", "mathjax_script", "inline_safe"]

MATHJAX_PACKAGE = "sphinx-mathjax-offline"
MATHJAX_BUNDLE = "tex-svg-full.js"


def mathjax_bundle() -> Path:
    """Path of the MathJax bundle installed with dynkit.

    Raises
    ------
    FileNotFoundError
        If the ``sphinx-mathjax-offline`` package (or its bundle) is not installed.
    """
    spec = importlib.util.find_spec(MATHJAX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the MathJax bundle needs the package {MATHJAX_PACKAGE!r} "
                                f"(pip install {MATHJAX_PACKAGE}); it is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / MATHJAX_BUNDLE
    if not path.is_file():
        raise FileNotFoundError(f"{MATHJAX_PACKAGE} is installed but has no {path}")
    return path


@lru_cache(maxsize=1)
def mathjax_script() -> str:
    """The bundle's source, safe to inline in a ``<script>`` element."""
    text = mathjax_bundle().read_text(encoding="utf-8")
    if not inline_safe(text):
        raise ValueError(f"{mathjax_bundle()} cannot be inlined in a <script> element (see inline_safe)")
    return text


def inline_safe(script: str) -> bool:
    """Whether ``script`` can sit inside ``<script>...</script>`` unchanged (HTML's script-data rules).

    ``</script`` ends the element early; ``<!--`` followed by ``<script`` before the next ``-->``
    switches the parser into a state where the real ``</script>`` no longer ends it. (A lone
    ``<!-- ... -->``, as in a regular expression of MathJax's, is harmless.)
    """
    lowered = script.lower()
    if "</script" in lowered:
        return False
    start = lowered.find("<!--")
    while start != -1:
        end = lowered.find("-->", start + 4)
        if "<script" in lowered[start:end if end != -1 else len(lowered)]:
            return False
        start = lowered.find("<!--", start + 4)
    return True
