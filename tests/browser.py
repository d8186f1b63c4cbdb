"""Headless Chromium driven over the Chrome DevTools Protocol, for the report's tests and
``benchmarks/bench_report.py``.

Debian's ``chromium`` is started with ``--remote-debugging-port=0`` and a fresh profile; the
port is read from ``DevToolsActivePort`` in the profile (Chromium writes the port, then the
browser target's path). One page target is attached in flat mode (``Target.attachToTarget``
with ``flatten``), and commands go over one WebSocket (the ``websocket-client`` package). The
events kept are the ones the tests judge a page by: ``Runtime.exceptionThrown``, console
errors (``Runtime.consoleAPICalled`` of type error, ``Log.entryAdded`` of level error) and every
``Network.requestWillBeSent``. Protocol: https://chromedevtools.github.io/devtools-protocol/
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KGTOOL_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio"]


class BrowserMissing(RuntimeError):
    """No Chromium to run: the report's tests fail (never skip) with this message."""


def chromium_path() -> str:
    """The Chromium binary, or :class:`BrowserMissing` saying how to install it."""
    path = CHROMIUM if os.path.isfile(CHROMIUM) else shutil.which("chromium")
    if not path:
        raise BrowserMissing(f"{CHROMIUM} not found: the report is checked in a real browser; install Debian's "
                             "chromium (apt-get install -y chromium; .ci/run does) or set KGTOOL_CHROMIUM")
    return path


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        import websocket  # websocket-client (the test extra)

        self.profile = tempfile.mkdtemp(prefix="kgtool-chromium-")
        self.proc = subprocess.Popen([chromium_path(), *FLAGS, "--remote-debugging-port=0",
                                      f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                                      "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     # the browser never with the sanitizer run's preloaded ASan
                                     # runtime (.ci/sanitize): it does not start under it
                                     env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise BrowserMissing(f"{chromium_path()} did not start (exit status {self.proc.returncode})")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=120, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    # ---- the protocol --------------------------------------------------------------------------
    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """A command; its result (events arriving meanwhile are kept)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page."""
        return self.send(method, params, self.session)

    def wait_for(self, method: str, timeout: float = 120) -> dict[str, Any]:
        """The next event ``method`` of the page (kept with the others)."""
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        for e in self.events[seen:]:
            if e["method"] == method:
                return e
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            reply = json.loads(self.ws.recv())
            if "method" in reply:
                self.events.append(reply)
                if reply["method"] == method:
                    return reply
        raise TimeoutError(f"no {method} within {timeout} s")

    # ---- what the tests use ----------------------------------------------------------------------
    def open(self, path: str | os.PathLike[str]) -> float:
        """Load a local file; the page's load time in seconds (navigation start to the end of its
        load event, from the page's own Navigation Timing)."""
        self.events.clear()
        url = Path(path).resolve().as_uri()
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")
        return self.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception in it is an error here)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """Script exceptions and console errors since the page was opened."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def requests(self, page: str | os.PathLike[str]) -> list[str]:
        """URLs the page asked for, other than itself and ``data:`` URLs."""
        own = Path(page).resolve().as_uri()
        return [u for u in (e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent")
                if u != own and not u.startswith("data:")]

    def screenshot(self, path: str | os.PathLike[str], full_page: bool = True) -> None:
        """A PNG of the page (the whole page when ``full_page``)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1})
        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", params)["data"]))
