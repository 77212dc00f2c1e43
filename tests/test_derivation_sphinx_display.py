"""A Derivation shown in a notebook page of a Sphinx (myst-nb) build is typeset by the obvious calls: the object
itself (its ``_repr_html_``, Sphinx's math markup) and ``Markdown(d.to_markdown())`` (with the
docs' own ``nb_render_markdown_format = "myst"``; myst-nb's default, commonmark, leaves the $$
... $$ as raw text with no warning). A tiny offline project: one MyST notebook, executed, built
to HTML; the HTML is searched for MathJax's containers (``\\[...\\]`` in a ``math`` div,
``\\(...\\)`` in a ``math`` span) and for raw ``$$`` left over."""  # noqa: E501

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISPLAY = re.compile(r'<div class="math notranslate nohighlight">\s*\\\[(.*?)\\\]\s*</div>', re.S)
INLINE = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)

PAGE = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---
# Derivations

```{code-cell} ipython3
import dynkit as dk
d = dk.symbolic.DERIVATIONS["nesterov_limit"]()
d
```

+++

```{code-cell} ipython3
from IPython.display import Markdown
Markdown(d.to_markdown())
```
"""


def raw_latex(html: str) -> list[str]:
    """LaTeX left untypeset in a page: $$ ... $$ (or \\begin{aligned}) outside MathJax's
    containers."""
    outside = INLINE.sub("", DISPLAY.sub("", html))
    return re.findall(r"\$\$.{0,40}|\\begin\{aligned\}.{0,40}", outside)


def test_raw_latex_is_found_where_it_is_left():
    assert raw_latex("<p>$$\\begin{aligned}x &= 1\\end{aligned}$$</p>")
    assert not raw_latex(
        '<div class="math notranslate nohighlight">\\[\\begin{aligned}x\\end{aligned}\\]</div>'
    )


def test_the_docs_render_markdown_outputs_as_myst():
    assert re.search(
        r'^nb_render_markdown_format = "myst"', (ROOT / "docs" / "conf.py").read_text(), re.M
    )


@pytest.mark.slow
def test_a_derivation_is_typeset_in_a_myst_nb_page(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["myst_nb"]\nmyst_enable_extensions = ["dollarmath", "amsmath"]\n'
        'nb_render_markdown_format = "myst"\nnb_execution_mode = "force"\n'
        "nb_execution_raise_on_error = True\n"
    )
    (src / "index.md").write_text(PAGE)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT / "src")
        + os.pathsep
        + str(ROOT)
        + os.pathsep
        + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    html = (tmp_path / "out" / "index.html").read_text()
    import dynkit as dk

    markdown = dk.symbolic.DERIVATIONS["nesterov_limit"]().to_markdown()
    n_display = markdown.count("$$") // 2  # display equations of one rendering
    displays = DISPLAY.findall(html)
    # both cells' displays are typeset: the object's HTML and the Markdown output parsed with
    # dollarmath
    assert len(displays) >= 2 * n_display, (len(displays), n_display)
    assert sum(r"\begin{aligned}" in body for body in displays) >= 2 * n_display
    assert INLINE.search(html)  # the steps' inline $...$ as \( ... \) in a math span
    assert raw_latex(html) == []
