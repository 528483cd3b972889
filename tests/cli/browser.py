"""A headless Chromium for the tests that look at a page: Debian's chromium driven by Playwright.

Playwright's Python package drives the browser the machine has (``executable_path``): nothing
is downloaded. One page per browser; what the tests read of it: console errors and uncaught
exceptions, the URLs it requested, scripts' values, a screenshot.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Playwright, Request, sync_playwright

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def headless(what: str) -> Iterator[Browser]:
    """A browser for a test fixture (closed after it), or the tests skipped saying that
    ``what`` is not rendered when this machine has no Chromium."""
    executable = find_browser()
    if executable is None:
        pytest.skip(
            "no Chromium on this machine: `make browser` installs Debian's chromium package "
            f"(needs apt-get and root); {what} is not rendered"
        )
    browser = Browser(executable)
    try:
        yield browser
    finally:
        browser.close()


class Browser:
    """One headless browser process with one page."""

    def __init__(self, executable: str, *, timeout: float = 60.0) -> None:
        self._playwright: Playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--hide-scrollbars"],
        )
        self.page = self._browser.new_page()
        self.page.set_default_timeout(timeout * 1000)
        self._errors: list[str] = []
        self._requests: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self._errors.append(str(error)))
        self.page.on("request", self._on_request)

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "assert"):
            self._errors.append(message.text)

    def _on_request(self, request: Request) -> None:
        self._requests.append(request.url)

    def open(self, url: str, *, width: int = 1400, height: int = 1000) -> None:
        """Load ``url`` (until its load event); errors and requests are counted from here."""
        self.page.set_viewport_size({"width": width, "height": height})
        self._errors.clear()
        self._requests.clear()
        self.page.goto(url, wait_until="load")

    def evaluate(self, expression: str) -> Any:
        """The value of a script (an async one awaited)."""
        return self.page.evaluate(f"async () => ({expression})")

    def insert_text(self, text: str) -> None:
        """Type ``text`` into the focused element."""
        self.page.keyboard.insert_text(text)

    def screenshot(self, path: Path) -> None:
        self.page.screenshot(path=str(path), full_page=True)

    def console_errors(self) -> list[str]:
        """Console errors and uncaught exceptions seen since ``open``."""
        return list(self._errors)

    def requested_urls(self) -> list[str]:
        return list(self._requests)

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()
