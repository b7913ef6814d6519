"""Headless Chromium as the report tests drive it: the distribution's ``chromium``
(``apt-get install chromium``), spoken to over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages ending in NUL on file descriptors 3 and 4), so
no port is opened and no websocket library is needed.

``Browser`` opens a page from disk at a given viewport (a phone's with ``mobile=True``:
its ``<meta name=viewport>`` is honoured), evaluates expressions in it, clicks, takes
full-page screenshots and lets downloads through to a folder; every Content-Security-
Policy violation the page reports is recorded (a listener installed before the page's own
code, on the ``securitypolicyviolation`` event) with the console's errors. On closing,
``requests`` holds the URLs the page requested, read from Chromium's network log
(``page_requests``).
"""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# The browser is not our code: under tools/sanitize.sh it must not inherit the
# sanitizer's preloaded runtime (with libasan preloaded Chromium spins or aborts).
SANITIZER_VARIABLES = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")

_WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def page_requests(netlog: Path) -> list[str]:
    """The URLs the page requested, from Chromium's net log. The browser's own requests
    (component updates, accounts) have no initiating origin ("not an origin"); the page's
    have its origin (a file:// page's is opaque: "null"). file:, data: and blob: loads do
    not go through the network stack and are not logged."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start
        and "url" in e.get("params", {})  # the event's begin (its end has no URL)
        and e["params"].get("initiator") != "not an origin"
    ]


class Browser:
    """One headless Chromium with one tab; a context manager (closing it reads the net log)."""

    def __init__(self, folder: Path, *, timeout: float = 120.0):
        if CHROMIUM is None:
            raise RuntimeError("chromium is not installed")
        self.folder, self.timeout = Path(folder), timeout
        self.netlog = self.folder / "netlog.json"
        self.downloads = self.folder / "downloads"
        self.downloads.mkdir(parents=True, exist_ok=True)
        self.requests: list[str] = []
        self.console_errors: list[str] = []
        self._events: list[dict] = []
        self._buffer = b""
        self._id = 0
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def descriptors():  # in the child: the protocol's pipes on 3 and 4, inheritable
            # (copied above 9 first, so that placing one cannot close the other)
            read = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            write = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(read, 3)
            os.dup2(write, 4)

        env = {k: v for k, v in os.environ.items() if k not in SANITIZER_VARIABLES}
        self._process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={self.folder / 'profile'}",
                f"--log-net-log={self.netlog}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=descriptors,  # noqa: PLW1509 (no threads started here)
            close_fds=False,
            env=env,
        )
        os.close(to_child)
        os.close(from_child)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Page.addScriptToEvaluateOnNewDocument", source=_WATCH_VIOLATIONS, session=True)
        self.call(
            "Browser.setDownloadBehavior",
            behavior="allow",
            downloadPath=str(self.downloads),
            eventsEnabled=True,
        )

    # ---------------------------------------------------------------- the protocol

    def _send(self, method: str, params: dict, session: bool) -> int:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return self._id

    def _next(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _wait(self, accept) -> dict:
        """The first message ``accept`` takes; the events before it are kept."""
        for k, event in enumerate(self._events):
            if accept(event):
                return self._events.pop(k)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._next(deadline)
            if message.get("method") == "Log.entryAdded":
                entry = message["params"]["entry"]
                if entry["level"] == "error":
                    self.console_errors.append(entry["text"])
            if accept(message):
                return message
            if "method" in message:
                self._events.append(message)

    def call(self, method: str, *, session: bool = False, **params) -> dict:
        number = self._send(method, params, session)
        answer = self._wait(lambda m: m.get("id") == number)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    # ---------------------------------------------------------------- the page

    def open(self, page: Path, width: int, height: int, *, mobile: bool = False) -> None:
        """Load ``page`` (from disk) in a ``width`` × ``height`` CSS-pixel viewport."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
            session=True,
        )
        self._events = [e for e in self._events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=Path(page).resolve().as_uri(), session=True)
        self._wait(lambda m: m.get("method") == "Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-able)."""
        answer = self.call(
            "Runtime.evaluate",
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
            session=True,
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def violations(self) -> list[str]:
        return self.evaluate("window.__violations")

    def screenshot(self) -> np.ndarray:
        """The whole page (not only the viewport) as an RGB array of CSS pixels."""
        import matplotlib.image

        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            clip=clip,
            captureBeyondViewport=True,
            session=True,
        )
        return matplotlib.image.imread(io.BytesIO(base64.b64decode(shot["data"])))[..., :3]

    def download(self, button: str) -> Path:
        """Click the element ``button`` (a CSS selector) and wait for the download it starts."""
        self.evaluate(f"document.querySelector({json.dumps(button)}).click()")
        begun = self._wait(lambda m: m.get("method") == "Browser.downloadWillBegin")
        guid, name = begun["params"]["guid"], begun["params"]["suggestedFilename"]
        done = self._wait(
            lambda m: (
                m.get("method") == "Browser.downloadProgress"
                and m["params"]["guid"] == guid
                and m["params"]["state"] in ("completed", "canceled")
            )
        )
        assert done["params"]["state"] == "completed", done
        return self.downloads / name

    # ---------------------------------------------------------------- closing

    def close(self) -> None:
        try:
            self._send("Browser.close", {}, session=False)
            self._process.wait(timeout=self.timeout)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            os.close(self._write)
            os.close(self._read)
        self.requests = page_requests(self.netlog)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
