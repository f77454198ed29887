"""Debian's Chromium for the browser tests (driven by Playwright): where it is, the flags
it is started with, and WCAG 2's contrast of a text as the page draws it."""

from __future__ import annotations

import re
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# The element's colour and the background it is drawn on: its own, or the nearest
# ancestor's that is not transparent.
COLOURS_JS = r"""e => {
  const colour = getComputedStyle(e).color;
  for (let at = e; at; at = at.parentElement) {
    const background = getComputedStyle(at).backgroundColor;
    if (!/^rgba\(.*, 0\)$|^transparent$/.test(background)) return [colour, background];
  }
  return [colour, "rgb(255, 255, 255)"];
}"""


def luminance(css: str) -> float:
    """WCAG 2's relative luminance of an opaque ``rgb(r, g, b)``."""
    numbers = [float(n) for n in re.findall(r"[\d.]+", css)]
    assert len(numbers) == 3 or numbers[3] == 1, css  # opaque: no blending to do
    r, g, b = (
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        for c in (n / 255 for n in numbers[:3])
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(page: Any, selector: str) -> float:
    """The contrast ratio of the first element matching ``selector``, text to background."""
    colour, background = page.locator(selector).first.evaluate(COLOURS_JS)
    lighter, darker = sorted([luminance(colour), luminance(background)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)
