"""Log output as ROS 2 formats it: ``[LEVEL] [seconds.nanos] [node]: message`` on stderr."""

from __future__ import annotations

import logging
import sys

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
