"""Open HTML pages in headless Chromium (Debian's ``chromium``) through the DevTools protocol: load a page,
wait until every image and video on it has loaded (or failed), report each, and take a full-page screenshot.

Used by the report tests; also a script that regenerates the README's screenshot of a report:
``python src/so101_cli/test/browser_check.py PAGE.html OUT.png [WIDTH]``.

The protocol is spoken over the page target's WebSocket (``websockets``' sync client); Chromium runs as in CI, as
root, offline: ``--headless --no-sandbox --disable-gpu`` and nothing that reaches the network, with a fresh
profile directory that is removed afterwards.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
)

PROBE = """
(async () => {
  const settle = (el, ok, events) => new Promise(resolve => {
    if (ok()) { resolve(); return; }
    for (const e of events) el.addEventListener(e, () => resolve(), {once: true});
    setTimeout(resolve, %(timeout_ms)d);
  });
  const images = [...document.images];
  const videos = [...document.querySelectorAll('video')];
  await Promise.all(images.map(i => settle(i, () => i.complete, ['load', 'error'])));
  await Promise.all(videos.map(v => {
    const done = settle(v, () => v.readyState >= 2 || v.error !== null, ['loadeddata', 'error']);
    if (v.readyState < 2 && v.error === null) { v.preload = 'auto'; v.load(); }  // decode a first frame
    return done;
  }));
  return {
    title: document.title,
    height: document.documentElement.scrollHeight,
    images: images.map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0,
                              width: i.naturalWidth, height: i.naturalHeight})),
    videos: videos.map(v => ({src: v.currentSrc || v.src, ok: v.readyState >= 2 && v.error === null,
                              width: v.videoWidth, height: v.videoHeight, duration: v.duration,
                              error: v.error ? v.error.code : null})),
  };
})()
"""


@dataclass(frozen=True)
class PageCheck:
    """What a page showed: its title and content height (CSS px), each image and video with ``ok`` (loaded and
    decoded: an image with a natural size, a video with a decoded first frame) and its pixel size, and the
    screenshot's path."""

    title: str
    height: int
    images: list[dict[str, Any]]
    videos: list[dict[str, Any]]
    screenshot: Path

    def broken(self) -> list[str]:
        """The sources of images and videos that did not load."""
        return [m["src"] for m in self.images + self.videos if not m["ok"]]


class Chromium:
    """A headless Chromium process and one page of it (use as a context manager)."""

    def __init__(self, binary: str = CHROMIUM, width: int = 1200, start_timeout_s: float = 60.0) -> None:
        self.binary, self.width, self.start_timeout_s = binary, width, start_timeout_s
        self.profile = Path(tempfile.mkdtemp(prefix="so101-chromium-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.ws: Any = None
        self._stack = contextlib.ExitStack()
        self._ids = itertools.count(1)

    def __enter__(self) -> Chromium:
        from websockets.sync.client import connect

        args = [self.binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                f"--window-size={self.width},900", "about:blank"]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout_s
        while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"chromium exited with {self.process.returncode}: {err[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not open its DevTools port within {self.start_timeout_s} s")
            time.sleep(0.05)
        port = int(port_file.read_text().split("\n")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            targets = json.loads(answer.read())
        page = next(t for t in targets if t["type"] == "page")
        self.ws = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=2**28, open_timeout=30))
        self.call("Page.enable")
        self.call("Runtime.enable")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stderr:
                self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method: str, timeout_s: float = 120.0, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events that arrive meanwhile are dropped)."""
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    def _wait_event(self, method: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("method") == method:
                return

    def check(self, page: Path, screenshot: Path, timeout_s: float = 60.0) -> PageCheck:
        """Load ``page`` (a file), wait for its media, take a full-page PNG screenshot into ``screenshot``."""
        url = Path(page).resolve().as_uri()
        self.call("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired", timeout_s)
        probe = PROBE % {"timeout_ms": int(timeout_s * 1000)}
        answer = self.call("Runtime.evaluate", timeout_s + 30, expression=probe, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"the probe failed on {page}: {answer['exceptionDetails']}")
        value = answer["result"]["value"]
        height = int(value["height"])
        self.call(
            "Emulation.setDeviceMetricsOverride", width=self.width, height=height, deviceScaleFactor=1, mobile=False
        )
        try:
            shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        finally:
            self.call("Emulation.clearDeviceMetricsOverride")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        return PageCheck(value["title"], height, value["images"], value["videos"], screenshot)


def main(argv: list[str]) -> int:
    page, out = Path(argv[1]), Path(argv[2])
    width = int(argv[3]) if len(argv) > 3 else 1200
    with Chromium(width=width) as browser:
        result = browser.check(page, out)
    print(json.dumps({"title": result.title, "height": result.height, "broken": result.broken()}))
    return 1 if result.broken() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
