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
    found = os.environ.get("DYNKIT_CHROMIUM") or next(
        filter(None, map(shutil.which, CANDIDATES)), None
    )
    if not found:
        pytest.fail(
            "no Chromium found: the browser tests need one. `make test` installs it "
            "(apt-get install chromium); or set DYNKIT_CHROMIUM=/path/to/chrome"
        )
    return found


@lru_cache(maxsize=1)
def _isolation() -> list[str]:
    """``unshare -n`` (a new network namespace with no interfaces) where this user may create
    one."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


# Offline even without a network namespace: every host name fails to resolve, every proxy is
# refused.
OFFLINE_FLAGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]


# How the page draws its scrollbars: not at all (screenshots, the report's checks), or as overlays
# that show only while one scrolls and take no room (macOS, phones, some Linux desktops): the reader
# for whom content past a box's edge looks cut off unless the page styles a scrollbar that stays.
SCROLLBARS = {"hidden": ["--hide-scrollbars"], "overlay": ["--enable-features=OverlayScrollbar"]}


def _run(
    page: Path, *args: str, timeout: float = 120, scrollbars: str = "hidden"
) -> subprocess.CompletedProcess:
    cmd = [
        *_isolation(),
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        *SCROLLBARS[scrollbars],
        "--no-first-run",
        "--disable-extensions",
        *OFFLINE_FLAGS,
        "--virtual-time-budget=60000",
        *args,
        Path(page).resolve().as_uri(),
    ]
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
    ``$$``), a MathJax error box or an undefined macro (shown in red) means an equation was not
    typeset.
    """
    problems = []
    n = len(re.findall(r"<mjx-container\b", dom))
    if n < expected_min:
        problems.append(
            f"{n} typeset equations (<mjx-container>), expected at least {expected_min}"
        )
    text = _visible_text(dom)
    for raw in (r"\[", r"\begin{aligned}", "$$", r"\frac{"):
        if raw in text:
            i = text.index(raw)
            problems.append(
                f"raw TeX {raw!r} in the page text: ...{text[max(0, i - 60) : i + 80]!r}"
            )
    inline = re.search(r"\$[^$\s][^$]*?\\[A-Za-z]+[^$]*?\$", text)  # $...\macro...$ left as text
    if inline:
        problems.append(f"raw inline TeX in the page text: {inline.group(0)[:120]!r}")
    markup = re.sub(
        r"<script\b.*?</script>", " ", dom, flags=re.S | re.I
    )  # MathJax's own source names them too
    # A TeX error is an <merror> box with data-mjx-error; an undefined macro (noundefined) is red
    # mtext.
    for mark, what in (
        ("data-mjx-error", "TeX error"),
        ('data-mml-node="mtext" fill="red"', "undefined macro"),
    ):
        if mark in markup:
            i = markup.index(mark)
            problems.append(f"MathJax {what}: {markup[i : i + 160]!r}")
    return problems


# Run in the page after it loaded (appended to a copy of it): where the first figure sits, then,
# with every <details> opened so nothing is hidden, how each <math> element was laid out. The answer
# is written into the DOM as JSON, read back from --dump-dom.
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


def probe(
    page: Path,
    workdir: Path,
    width: int = 1280,
    height: int = 800,
    script: str = PROBE,
    scrollbars: str = "hidden",
) -> tuple[dict, str]:
    """Load a copy of ``page`` with ``script`` (default :data:`PROBE`) in a ``width`` x ``height``
    window.

    ``script`` is a ``<script>`` element that writes its findings as JSON into
    ``<pre id="dynkit-probe">``; returns (those findings, the DOM). ``scrollbars`` is a key of
    :data:`SCROLLBARS`.
    """
    import json

    copy = Path(workdir) / f"probed_{Path(page).name}"
    html = Path(page).read_text()
    copy.write_text(
        html.replace("</body>", script + "</body>") if "</body>" in html else html + script
    )
    dom = _run(copy, f"--window-size={width},{height}", "--dump-dom", scrollbars=scrollbars).stdout
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
        problems.append(
            f"{found['math'] - found['native']} <math> elements are not MathML elements"
        )
    if found["drawn"] != found["math"]:
        problems.append(
            f"{found['math'] - found['drawn']} <math> elements have no size (not rendered)"
        )
    problems += [f"<merror>: {e!r}" for e in found["errors"]]
    text = _visible_text(re.sub(r'<pre id="dynkit-probe">.*?</pre>', " ", dom, flags=re.S))
    for raw in (r"\[", r"\begin{", "$$", r"\frac{", r"\left"):
        if raw in text:
            i = text.index(raw)
            problems.append(
                f"raw TeX {raw!r} in the page text: ...{text[max(0, i - 60) : i + 80]!r}"
            )
    inline = re.search(r"\$[^$\s][^$]*?\\[A-Za-z]+[^$]*?\$", text)
    if inline:
        problems.append(f"raw inline TeX in the page text: {inline.group(0)[:120]!r}")
    for math in re.finditer(r"<math\b.*?</math>", dom, flags=re.S):
        command = re.search(r"\\[A-Za-z]+", re.sub(r"<[^>]+>", "", math.group(0)))
        if command and "<merror" not in math.group(0):
            problems.append(
                f"TeX command {command.group(0)!r} left inside an equation: {math.group(0)[:160]!r}"
            )
    return problems


def remote_references(html: str) -> list[str]:
    """``src``/``href`` attributes of scripts, styles, images and fonts that point off the
    machine."""
    refs = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    links = re.findall(r"""<a\b[^>]*href\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    return [r for r in refs if r not in links]  # a hyperlink is not loaded when the page is viewed


# The layout of a docs page (Sphinx, furo) as a reader sees it: run after the page loaded and
# MathJax typeset it, with the <details> left as the page has them (collapsed code stays collapsed).
#   first_figure_top: where the article's first image starts (px from the top of the page);
#   boxes: each display equation, table and code block the reader can see, with the box that clips
#     it (itself or the nearest ancestor whose overflow-x is not visible) and how it is laid out:
#     "fits"       nothing sticks out of that box;
#     "scrolls" it sticks out, the box scrolls (overflow-x auto/scroll) and its scrollbar takes room
#                  and is one a reader sees: styled by the page to stay (the browser's own may be an
#                  overlay);
#     "hidden scrollbar"  it scrolls but the scrollbar takes no room (hidden, or an overlay one that
#                  only shows while scrolling): to the reader the content is cut off;
#     "clipped"    it sticks out of a box with overflow-x hidden or clip;
#     "beyond the article" nothing clips it inside the article and it runs past the article's right
#     edge; "beyond the window" what it shows of itself ends past the window's right edge (the page
#     grew wider than
#                  the window: furo's <html> has overflow-x hidden, so the rest cannot be scrolled
#                  to).
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise
                                                                               : Promise.resolve();
  typeset.then(() => new Promise(done => setTimeout(done, 100))).then(() => {  // a layout pass after typesetting
    const article = document.querySelector("article[role=main]") || document.querySelector("article") || document.body;
    const articleRight = article.getBoundingClientRect().right;
    const img = article.querySelector("img");
    const out = {viewport: innerHeight, width: document.documentElement.clientWidth, article_right: articleRight,
                 first_figure_top: img ? img.getBoundingClientRect().top + scrollY : null, boxes: []};
    const px = v => parseFloat(v) || 0;
    for (const el of article.querySelectorAll('mjx-container[display="true"], table, pre')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || el.closest("mjx-assistive-mml")) continue;  // not shown
      let box = el;
      while (box !== article && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
      const style = getComputedStyle(box);
      const kind = el.localName === "mjx-container" ? "equation" : el.localName === "table" ? "table" : "code";
      const item = {kind, text: el.textContent.trim().slice(0, 60), right: r.left + el.scrollWidth,
                    box_class: box.className && box.className.baseVal === undefined ? box.className : box.localName,
                    overflow_x: style.overflowX, scroll_width: box.scrollWidth, client_width: box.clientWidth};
      // A scrollbar every reader sees is one the page styles (::-webkit-scrollbar: Chromium draws it classic even
      // where the system's scrollbars are overlays that show only while scrolling), not overridden by the standard
      // properties (Chromium ignores the ::-webkit-scrollbar styling where scrollbar-width or -color is set), and
      // that takes room. The browser's own scrollbar counts for nothing: whether this Chromium draws it classic or
      // as an overlay depends on its version (Chromium 156 ignores --enable-features=OverlayScrollbar), not on
      // the page, and on a reader's overlay system it hides.
      const styled = getComputedStyle(box, "::-webkit-scrollbar").height !== "auto"
                     && style.scrollbarWidth === "auto" && style.scrollbarColor === "auto";
      const gap = box.offsetHeight - box.clientHeight - px(style.borderTopWidth) - px(style.borderBottomWidth);
      const scrollbar = styled ? gap : 0;
      item.scrollbar = scrollbar;
      const shownRight = box === article ? item.right : Math.min(item.right, box.getBoundingClientRect().right);
      if (shownRight > out.width + 1) {
        item.layout = "beyond the window";  // the page is wider than the window, which furo does not scroll
      } else if (box === article) {
        item.layout = item.right > articleRight + 1 ? "beyond the article" : "fits";
      } else if (box.scrollWidth <= box.clientWidth + 1) {
        item.layout = "fits";
      } else if (style.overflowX === "auto" || style.overflowX === "scroll") {
        item.layout = scrollbar > 0 ? "scrolls" : "hidden scrollbar";
      } else {
        item.layout = "clipped";
      }
      out.boxes.push(item);
    }
    const probe = document.createElement("pre");
    probe.id = "dynkit-probe";
    probe.textContent = JSON.stringify(out);
    document.body.appendChild(probe);
  });
});
</script>"""

# What a reader cannot see whole at 1280 px: content cut off at the edge of its box.
CUT_OFF = ("clipped", "hidden scrollbar", "beyond the article", "beyond the window")


def layout(page: Path, width: int = 1280, height: int = 800) -> dict:
    """:data:`LAYOUT_PROBE`'s findings on a docs ``page`` (probed beside it, so its links resolve).

    Scrollbars are taken as overlays, as on a reader's macOS, phone or some Linux desktops: a
    scrollbar counts only where the page styles it to stay, whatever this Chromium draws by itself
    (the probe reads the styling; the overlay flag, ``SCROLLBARS["overlay"]``, is not honoured by
    every version).
    """
    try:
        found, _ = probe(
            page, Path(page).parent, width, height, script=LAYOUT_PROBE, scrollbars="overlay"
        )
    finally:
        (Path(page).parent / f"probed_{Path(page).name}").unlink(
            missing_ok=True
        )  # leave the build as it was
    return found


def layout_problems(found: dict, must_fit: tuple[str, ...] = ()) -> list[str]:
    """What a reader of the probed page cannot see whole (empty list: nothing is cut off).

    Every equation, table and code block must fit its column or scroll with a visible scrollbar; the
    kinds named in ``must_fit`` (``"table"``, ``"code"``, ``"equation"``) must fit without
    scrolling.
    """
    problems = []
    for item in found["boxes"]:
        if item["layout"] in CUT_OFF or (item["kind"] in must_fit and item["layout"] != "fits"):
            problems.append(
                f"{item['kind']} {item['layout']} ({item['scroll_width']} px in a box of "
                f"{item['client_width']} px, overflow-x {item['overflow_x']}, "
                f"scrollbar {item['scrollbar']} px): {item['text']!r}"
            )
    return problems


def main(argv: list[str]) -> None:
    """``python tests/browser.py HTML_DIR PAGE...``: each built page's layout at 1280 x 800, as the
    tests see it.

    Prints, per page, the first figure's top (and the window's height) and how many equations,
    tables and code blocks fit, scroll visibly or are cut off (then each problem).
    """
    from collections import Counter

    root, pages = Path(argv[0]), argv[1:]
    for name in pages:
        found = layout(root / f"{name}.html")
        counts = Counter(f"{item['kind']} {item['layout']}" for item in found["boxes"])
        print(
            f"{name}: first figure top {found['first_figure_top']} px (window "
            f"{found['viewport']} px high); "
            + ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
        )
        for problem in layout_problems(found):
            print(f"    {problem}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
