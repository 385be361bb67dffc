"""The node logger's rclpy keywords: ``throttle_duration_sec`` per call site, ``once``, ``skip_first``."""

from __future__ import annotations

import logging
import time

from nodegraph.transport.log import NodeLogger


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}:{record.getMessage()}:{record.funcName}")


def _logger(name: str) -> tuple[NodeLogger, _Lines]:
    base = logging.getLogger(f"test_node_logger.{name}")
    base.setLevel(logging.DEBUG)
    base.propagate = False
    lines = _Lines()
    base.handlers = [lines]
    return NodeLogger(base), lines


def test_throttle_is_per_call_site_and_lets_a_line_through_after_the_period() -> None:
    logger, out = _logger("throttle")
    for i in range(5):
        logger.warning(f"a{i}", throttle_duration_sec=0.3)  # one site
        logger.warning(f"b{i}", throttle_duration_sec=0.3)  # another site, throttled on its own
    assert out.lines == [
        "WARNING:a0:test_throttle_is_per_call_site_and_lets_a_line_through_after_the_period",
        "WARNING:b0:test_throttle_is_per_call_site_and_lets_a_line_through_after_the_period",
    ]  # the records name the caller, not the logger wrapper
    time.sleep(0.35)
    for i in range(3):
        logger.warning(f"a{i}", throttle_duration_sec=0.3)
    assert [line.split(":")[1] for line in out.lines] == ["a0", "b0", "a0"]


def test_once_and_skip_first() -> None:
    logger, out = _logger("once")
    for i in range(3):
        logger.info(f"o{i}", once=True)
        logger.error(f"s{i}", skip_first=True)
    assert [line.split(":")[1] for line in out.lines] == ["o0", "s1", "s2"]
    logger.debug("plain")
    logger.fatal("end")
    assert out.lines[-2:] == ["DEBUG:plain:test_once_and_skip_first", "CRITICAL:end:test_once_and_skip_first"]
