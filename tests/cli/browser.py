"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

No port and no websocket: Chromium reads NUL-terminated JSON commands on fd 3 and writes replies
and events on fd 4. Enough of the protocol to open a page, wait for it to load, collect console
errors, exceptions and network requests, evaluate JavaScript and take a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
    """One headless browser process with one page (a flattened target session)."""

    def __init__(self, executable: str, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="dbt-hudi-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child must see our pipe ends as fds 3 (its input) and 4 (its output)
        self.process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--hide-scrollbars",
                f"--user-data-dir={self._profile}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=_dup_fds(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    # ---- protocol ------------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any], session: bool) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the browser")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(raw))

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send a command and return its result (events meanwhile are kept in ``events``)."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        for event in self.events:
            if event["method"] == method:
                return event
        while True:
            message = self._receive(deadline)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message

    # ---- page ----------------------------------------------------------------------------------

    def open(self, url: str, *, width: int = 1400, height: int = 1000) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.call(
            "Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(data["data"]))

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen since ``open``."""
        errors = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                errors.append(str(params.get("exceptionDetails", {}).get("text")))
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in (
                "error",
                "assert",
            ):
                errors.append(json.dumps(params.get("args")))
            elif (
                event["method"] == "Log.entryAdded"
                and params.get("entry", {}).get("level") == "error"
            ):
                errors.append(str(params["entry"].get("text")))
        return errors

    def requested_urls(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        try:
            self._send("Browser.close", {}, False)
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            shutil.rmtree(self._profile, ignore_errors=True)


def _dup_fds(read_end: int, write_end: int) -> Any:
    def setup() -> None:
        # move the ends out of the way first: they may already sit on 3 or 4
        r, w = os.dup(read_end), os.dup(write_end)
        os.dup2(r, 3)
        os.dup2(w, 4)
        os.set_inheritable(3, True)
        os.set_inheritable(4, True)

    return setup
