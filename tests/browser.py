"""A real headless browser for the tests: Debian's Chromium, with the network off.

`make test` installs Chromium when it is absent (Makefile, target `browser`); without one, the tests
that need it fail loudly (they never skip). ``DYNKIT_CHROMIUM`` names another binary.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    """Path of the browser binary; fails the calling test (never skips) when there is none."""
    found = os.environ.get("DYNKIT_CHROMIUM") or next(filter(None, map(shutil.which, CANDIDATES)), None)
    if not found:
        pytest.fail("no Chromium found: the browser tests need one. `make test` installs it "
                    "(apt-get install chromium); or set DYNKIT_CHROMIUM=/path/to/chrome")
    return found


@lru_cache(maxsize=1)
def _isolation() -> list[str]:
    """``unshare -n`` (a new network namespace with no interfaces) where this user may create one."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


# Offline even without a network namespace: every host name fails to resolve, every proxy is refused.
OFFLINE_FLAGS = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                 "--proxy-bypass-list=<-loopback>"]


def _run(page: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [*_isolation(), chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", *OFFLINE_FLAGS, "--virtual-time-budget=60000", *args,
           Path(page).resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc


def rendered_dom(page: Path) -> str:
    """The page's DOM after its scripts ran (MathJax, on the docs' pages), loaded offline."""
    return _run(page, "--dump-dom").stdout


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 2000) -> Path:
    _run(page, f"--window-size={width},{height}", f"--screenshot={Path(png).resolve()}")
    return Path(png)


def _visible_text(dom: str) -> str:
    """Text outside <pre>, <script>, <style> and MathJax's own assistive copies."""
    dom = re.sub(r"<(pre|script|style|mjx-assistive-mml)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return re.sub(r"<[^>]+>", " ", dom)


def typeset_problems(dom: str, expected_min: int) -> list[str]:
    """What is wrong with the typesetting of ``dom`` (empty list: every equation is typeset).

    Typeset math is a ``<mjx-container>``; raw TeX left in the visible text (``\\[``, ``\\begin{``,
    ``$$``), a MathJax error box or an undefined macro (shown in red) means an equation was not typeset.
    """
    problems = []
    n = len(re.findall(r"<mjx-container\b", dom))
    if n < expected_min:
        problems.append(f"{n} typeset equations (<mjx-container>), expected at least {expected_min}")
    text = _visible_text(dom)
    for raw in (r"\[", r"\begin{aligned}", "$$", r"\frac{"):
        if raw in text:
            i = text.index(raw)
            problems.append(f"raw TeX {raw!r} in the page text: ...{text[max(0, i - 60):i + 80]!r}")
    inline = re.search(r"\$[^$\s][^$]*?\\[A-Za-z]+[^$]*?\$", text)  # $...\macro...$ left as text
    if inline:
        problems.append(f"raw inline TeX in the page text: {inline.group(0)[:120]!r}")
    markup = re.sub(r"<script\b.*?</script>", " ", dom, flags=re.S | re.I)  # MathJax's own source names them too
    # A TeX error is an <merror> box with data-mjx-error; an undefined macro (noundefined) is red mtext.
    for mark, what in (("data-mjx-error", "TeX error"), ('data-mml-node="mtext" fill="red"', "undefined macro")):
        if mark in markup:
            i = markup.index(mark)
            problems.append(f"MathJax {what}: {markup[i:i + 160]!r}")
    return problems


# Run in the page after it loaded (appended to a copy of it): where the first figure sits, then, with
# every <details> opened so nothing is hidden, how each <math> element was laid out. The answer is
# written into the DOM as JSON, read back from --dump-dom.
PROBE = """<script>
addEventListener("load", () => {
  const fig = document.querySelector("figure");
  const out = {viewport: innerHeight, first_figure_top: fig ? fig.getBoundingClientRect().top + scrollY : null};
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const maths = [...document.querySelectorAll("math")];
  out.math = maths.length;
  out.native = maths.filter(m => m instanceof MathMLElement).length;
  out.drawn = maths.filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length;
  out.errors = [...document.querySelectorAll("merror")].map(e => e.textContent.slice(0, 160));
  // where the verdict / outcome column of each table ends (visible without scrolling at this width?)
  out.width = document.documentElement.clientWidth;
  out.verdict_columns = [...document.querySelectorAll("th")].filter(th => /^(verdict|outcome)$/.test(th.textContent.trim()))
    .map(th => ({header: th.textContent.trim(), right: th.getBoundingClientRect().right}));
  // each stretchy fence beside a table (a matrix's bracket): its height over the table's
  out.fence_ratios = [...document.querySelectorAll('mo[stretchy="true"]')].flatMap(mo => {
    const table = [...mo.parentElement.children].find(c => c.localName === "mtable");
    const h = table ? table.getBoundingClientRect().height : 0;
    return h > 0 ? [mo.getBoundingClientRect().height / h] : [];
  });
  const probe = document.createElement("pre");
  probe.id = "dynkit-probe";
  probe.textContent = JSON.stringify(out);
  document.body.appendChild(probe);
});
</script>"""


def probe(page: Path, workdir: Path, width: int = 1280, height: int = 800) -> tuple[dict, str]:
    """Load a copy of ``page`` with :data:`PROBE` in a ``width`` x ``height`` window: (its findings, the DOM)."""
    import json

    copy = Path(workdir) / f"probed_{Path(page).name}"
    html = Path(page).read_text()
    copy.write_text(html.replace("</body>", PROBE + "</body>") if "</body>" in html else html + PROBE)
    dom = _run(copy, f"--window-size={width},{height}", "--dump-dom").stdout
    found = re.search(r'<pre id="dynkit-probe">(.*?)</pre>', dom, flags=re.S)
    assert found, "the probe did not run"
    import html as html_module

    return json.loads(html_module.unescape(found.group(1))), dom


def mathml_problems(found: dict, dom: str, expected_min: int) -> list[str]:
    """What is wrong with the typesetting of a MathML page (empty list: every equation is drawn).

    Every equation must be a ``<math>`` element that Chromium took as MathML and laid out with a
    nonzero size; no ``<merror>`` (what dynkit.report.mathml makes of TeX it cannot typeset); no raw
    TeX left in the visible text (``\\[``, ``\\begin{`` ...) and no ``\\macro`` inside an equation.
    """
    problems = []
    if found["math"] < expected_min:
        problems.append(f"{found['math']} <math> elements, expected at least {expected_min}")
    if found["native"] != found["math"]:
        problems.append(f"{found['math'] - found['native']} <math> elements are not MathML elements")
    if found["drawn"] != found["math"]:
        problems.append(f"{found['math'] - found['drawn']} <math> elements have no size (not rendered)")
    problems += [f"<merror>: {e!r}" for e in found["errors"]]
    text = _visible_text(re.sub(r'<pre id="dynkit-probe">.*?</pre>', " ", dom, flags=re.S))
    for raw in (r"\[", r"\begin{", "$$", r"\frac{", r"\left"):
        if raw in text:
            i = text.index(raw)
            problems.append(f"raw TeX {raw!r} in the page text: ...{text[max(0, i - 60):i + 80]!r}")
    inline = re.search(r"\$[^$\s][^$]*?\\[A-Za-z]+[^$]*?\$", text)
    if inline:
        problems.append(f"raw inline TeX in the page text: {inline.group(0)[:120]!r}")
    for math in re.finditer(r"<math\b.*?</math>", dom, flags=re.S):
        command = re.search(r"\\[A-Za-z]+", re.sub(r"<[^>]+>", "", math.group(0)))
        if command and "<merror" not in math.group(0):
            problems.append(f"TeX command {command.group(0)!r} left inside an equation: {math.group(0)[:160]!r}")
    return problems


def remote_references(html: str) -> list[str]:
    """``src``/``href`` attributes of scripts, styles, images and fonts that point off the machine."""
    refs = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    links = re.findall(r"""<a\b[^>]*href\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    return [r for r in refs if r not in links]  # a hyperlink is not loaded when the page is viewed
