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
    """The page's DOM after its scripts ran (MathJax included), loaded offline."""
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


def remote_references(html: str) -> list[str]:
    """``src``/``href`` attributes of scripts, styles, images and fonts that point off the machine."""
    refs = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    links = re.findall(r"""<a\b[^>]*href\s*=\s*["']((?:https?:)?//[^"']+)""", html, flags=re.I)
    return [r for r in refs if r not in links]  # a hyperlink is not loaded when the page is viewed
