"""Log output as ROS 2 formats it: ``[LEVEL] [seconds.nanos] [node]: message`` on stderr."""

from __future__ import annotations

import logging
import sys
import threading
import time

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "warning": logging.WARNING,
          "error": logging.ERROR, "fatal": logging.CRITICAL}  # fmt: skip


class RosFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(record.levelname, record.levelname)
        text = f"[{level}] [{record.created:.9f}] [{record.name}]: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RosFormatter())
    return handler


def node_logger(name: str, level: str | None = None) -> logging.Logger:
    """The logger of node ``name`` (fully qualified, dots for slashes as ROS does)."""
    logger = logging.getLogger(name.strip("/").replace("/", "."))
    if not logger.handlers:
        logger.addHandler(_handler())
        logger.propagate = False
    if level is not None:
        if level.lower() not in LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {sorted(LEVELS)}")
        logger.setLevel(LEVELS[level.lower()])
    elif logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    return logger


transport_logger = node_logger("so101.zenoh")


class NodeLogger:
    """A node's logger with rclpy's keyword arguments: ``throttle_duration_sec`` (at most one line per call
    site per that many seconds), ``once`` (only the first time) and ``skip_first`` (not the first time)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self._last: dict[tuple[str, int], float] = {}
        self._seen: set[tuple[str, int]] = set()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The logger's name (the node's, dotted)."""
        return self.logger.name

    @property
    def propagate(self) -> bool:
        """Whether records also reach the root logger (off by default; tests turn it on for caplog)."""
        return self.logger.propagate

    @propagate.setter
    def propagate(self, value: bool) -> None:
        self.logger.propagate = value

    def setLevel(self, level: int | str) -> None:  # noqa: N802 (logging's name)
        """Set the threshold of the underlying ``logging.Logger``."""
        self.logger.setLevel(level)

    def _allowed(self, throttle_duration_sec: float | None, once: bool, skip_first: bool) -> bool:
        if throttle_duration_sec is None and not once and not skip_first:
            return True
        frame = sys._getframe(3)  # the node code that called debug/info/...
        site = (frame.f_code.co_filename, frame.f_lineno)
        now = time.monotonic()
        with self._lock:
            first = site not in self._seen
            self._seen.add(site)
            if once:
                return first
            if skip_first and first:
                self._last[site] = now
                return False
            if throttle_duration_sec is not None:
                last = self._last.get(site)
                if last is not None and now - last < throttle_duration_sec:
                    return False
                self._last[site] = now
            return True

    def _log(self, level: int, msg: str, throttle_duration_sec: float | None, once: bool, skip_first: bool) -> None:
        if self.logger.isEnabledFor(level) and self._allowed(throttle_duration_sec, once, skip_first):
            self.logger.log(level, msg, stacklevel=3)

    def debug(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
              skip_first: bool = False) -> None:  # fmt: skip
        """Log ``msg`` at DEBUG."""
        self._log(logging.DEBUG, msg, throttle_duration_sec, once, skip_first)

    def info(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
             skip_first: bool = False) -> None:  # fmt: skip
        """Log ``msg`` at INFO."""
        self._log(logging.INFO, msg, throttle_duration_sec, once, skip_first)

    def warning(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
                skip_first: bool = False) -> None:  # fmt: skip
        """Log ``msg`` at WARN."""
        self._log(logging.WARNING, msg, throttle_duration_sec, once, skip_first)

    def error(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
              skip_first: bool = False) -> None:  # fmt: skip
        """Log ``msg`` at ERROR."""
        self._log(logging.ERROR, msg, throttle_duration_sec, once, skip_first)

    def fatal(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
              skip_first: bool = False) -> None:  # fmt: skip
        """Log ``msg`` at FATAL."""
        self._log(logging.CRITICAL, msg, throttle_duration_sec, once, skip_first)
