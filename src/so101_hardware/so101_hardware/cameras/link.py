"""Supervised connection to one camera: reads that report instead of raising, reconnection after a drop-out,
and the health the camera node puts on ``/diagnostics``.

States: connected (OK) -> a read fails: disconnected, WARN ("dropped out, reconnecting") -> still down
``error_after_s`` later: ERROR -> a connect succeeds: OK again. At start, WARN while connecting, ERROR when
the camera is still not there after ``error_after_s``. While down,
``connect()`` is tried every ``reconnect_period_s``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

from .base import Camera, CameraError, Frame

OK, WARN, ERROR = 0, 1, 2  # the levels of diagnostic_msgs/DiagnosticStatus


class LinkLogger(Protocol):
    def info(self, msg: str) -> None: ...
    def warning(self, msg: str) -> None: ...
    def error(self, msg: str) -> None: ...


class CameraLink:
    """A camera with reconnection; used from one thread (the camera node's capture thread).

    Args:
        camera: the camera, not yet connected.
        logger: where state changes are logged.
        reconnect_period_s: s between connection attempts while down.
        error_after_s: s of outage after which the level goes from WARN to ERROR.
        clock: monotonic clock, s.
    """

    def __init__(
        self,
        camera: Camera,
        logger: LinkLogger,
        reconnect_period_s: float = 1.0,
        error_after_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.camera = camera
        self.logger = logger
        self.reconnect_period_s = reconnect_period_s
        self.error_after_s = error_after_s
        self.clock = clock
        self.frames = 0
        self.dropouts = 0
        self.failed_connects = 0
        self.last_error = ""
        self.ever_connected = False
        self.down_since: float | None = clock()
        self._next_connect = -math.inf
        self._log_times: dict[str, float] = {}

    @property
    def connected(self) -> bool:
        return self.camera.is_connected

    def seconds_to_retry(self) -> float:
        """s until the next connection attempt (0 when connected or due)."""
        return 0.0 if self.connected else max(0.0, self._next_connect - self.clock())

    def _log_throttled(self, key: str, msg: str, period_s: float = 10.0) -> None:
        now = self.clock()
        if now - self._log_times.get(key, -math.inf) >= period_s:
            self._log_times[key] = now
            self.logger.warning(msg)

    def ensure_connected(self) -> bool:
        """True when connected; otherwise try to connect (at most every ``reconnect_period_s``)."""
        if self.connected:
            return True
        now = self.clock()
        if now < self._next_connect:
            return False
        self._next_connect = now + self.reconnect_period_s
        try:
            self.camera.connect()
        except CameraError as exc:
            self.failed_connects += 1
            self.last_error = f"connect: {exc}"
            self._log_throttled("connect", f"cannot connect {self.camera.describe}: {exc}; retrying")
            return False
        verb = "reconnected" if self.ever_connected else "connected"
        self.logger.info(f"camera {verb}: {self.camera.describe}")
        self.ever_connected, self.down_since, self.failed_connects = True, None, 0
        return True

    def poll(self) -> Frame | None:
        """The next frame, or ``None`` (logged, recorded) while the camera is down or when a read failed."""
        if not self.ensure_connected():
            return None
        try:
            frame = self.camera.read()
        except CameraError as exc:
            self.dropouts += 1
            self.last_error = str(exc)
            self.down_since = self.clock()
            self._next_connect = self.down_since + self.reconnect_period_s
            self.camera.disconnect()
            self.logger.error(f"camera dropped out: {exc}; reconnecting every {self.reconnect_period_s:g} s")
            return None
        self.frames += 1
        return frame

    def status(self) -> tuple[int, str]:
        """(level, message): OK while streaming, WARN for the first ``error_after_s`` of an outage (or of
        connecting at start), ERROR after that."""
        if self.connected:
            return OK, "streaming"
        down_s = self.clock() - self.down_since if self.down_since is not None else 0.0
        error = self.last_error or "connecting"
        if down_s < self.error_after_s:
            what = "dropped out" if self.ever_connected else "not connected yet"
            return WARN, f"{what} ({down_s:.1f} s), reconnecting: {error}"
        what = "disconnected" if self.ever_connected else "not connected"
        return ERROR, f"{what} for {down_s:.1f} s: {error}"

    def values(self) -> dict[str, str]:
        """Key/values for a DiagnosticStatus."""
        return {
            "device": self.camera.describe,
            "connected": str(self.connected).lower(),
            "frames": str(self.frames),
            "dropouts": str(self.dropouts),
            "failed_connects": str(self.failed_connects),
            "last_error": self.last_error,
        }

    def close(self) -> None:
        self.camera.disconnect()
