"""Debian's Chromium, driven by Playwright: where it is, how it starts here, and the marks of a
test that needs it (nothing is downloaded; without the browser the test skips and says why)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root on a closed network: no sandbox, and nothing that phones home (without the
# background-networking flags, connections are refused).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 60_000

NEEDS_CHROMIUM = [
    pytest.mark.slow,
    pytest.mark.exclusive,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install "
                                                 "chromium); .ci/run installs it as root"),
]
"""A browser test's marks: slow, run alone, skipped without Chromium."""


@contextmanager
def chromium_page(profile: Path, **context: Any) -> Iterator[Page]:
    """A page of a headless Chromium with its profile in `profile`; `context` as Playwright's
    persistent context takes it (viewport, is_mobile...). The browser is closed after."""
    assert CHROMIUM is not None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            **context)
        try:
            yield browser.new_page()
        finally:
            browser.close()
