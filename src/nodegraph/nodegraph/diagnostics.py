"""diagnostic_msgs helpers (the role of ROS's diagnostic_updater): status levels, one named status, the stamped
array on ``/diagnostics``, and a loop-rate grade (diagnostic_updater's frequency status)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from nodegraph.graph.api import Message, Node, Publisher
from nodegraph.graph.qos import QoS

DIAGNOSTICS_TOPIC = "/diagnostics"
DIAGNOSTICS_TYPE = "diagnostic_msgs/msg/DiagnosticArray"
DIAGNOSTICS_QOS = QoS(depth=10)
"""QoS of ``/diagnostics`` publishers."""

OK, WARN, ERROR, STALE = 0, 1, 2, 3
"""diagnostic_msgs/msg/DiagnosticStatus levels."""


def diagnostics_publisher(node: Node) -> Publisher:
    """``node``'s publisher of DiagnosticArray on ``/diagnostics`` (every node's, with the one QoS)."""
    return node.create_publisher(DIAGNOSTICS_TYPE, DIAGNOSTICS_TOPIC, DIAGNOSTICS_QOS)


def status_message(
    node: Node, name: str, level: int, message: str, hardware_id: str, values: Mapping[str, str]
) -> Message:
    """One DiagnosticStatus named ``<node>: <name>`` with ``values`` as its key/values."""
    return node.message(
        "diagnostic_msgs/msg/DiagnosticStatus",
        level=level,
        name=f"{node.name}: {name}",
        message=message,
        hardware_id=hardware_id,
        values=[node.message("diagnostic_msgs/msg/KeyValue", key=k, value=v) for k, v in values.items()],
    )


def diagnostic_array(node: Node, statuses: list[Message], header: Message | None = None) -> Message:
    """A DiagnosticArray of ``statuses``; stamped now on the node's clock unless ``header`` is given."""
    if header is None:
        header = node.message("std_msgs/msg/Header", stamp=node.stamp(), frame_id="")
    return node.message("diagnostic_msgs/msg/DiagnosticArray", header=header, status=statuses)


class LoopRateMonitor:
    """Achieved rate of a control loop over the last ``window_s``, graded against the configured rate.

    Args:
        rate_hz: configured rate, Hz.
        warn_fraction: WARN below ``warn_fraction * rate_hz``.
        floor_hz: ERROR below this rate, Hz.
        window_s: averaging window, s (the grade waits until the loop has run this long).
    """

    def __init__(self, rate_hz: float, warn_fraction: float, floor_hz: float, window_s: float = 1.0) -> None:
        self.rate_hz, self.warn_hz, self.floor_hz, self.window_s = rate_hz, warn_fraction * rate_hz, floor_hz, window_s
        self._starts: deque[float] = deque()
        self._first: float | None = None

    def tick(self, now: float) -> None:
        """A cycle started at ``now`` (monotonic s)."""
        if self._first is None:
            self._first = now
        self._starts.append(now)
        while self._starts and self._starts[0] < now - self.window_s:
            self._starts.popleft()

    def rate(self, now: float) -> float:
        """Cycles per second over the last window (0 before the first cycle)."""
        if self._first is None:
            return 0.0
        span = min(self.window_s, now - self._first)
        recent = sum(1 for t in self._starts if t >= now - self.window_s)
        return recent / span if span > 0 else 0.0

    def grade(self, now: float) -> tuple[int, str] | None:
        """(level, message) when the loop is below its rates, ``None`` when on rate or too young to tell."""
        if self._first is None or now - self._first < self.window_s:
            return None
        rate = self.rate(now)
        if rate < self.floor_hz:
            floor = f"below the {self.floor_hz:g} Hz floor (configured {self.rate_hz:g} Hz)"
            return ERROR, f"loop at {rate:.1f} Hz, {floor}"
        if rate < self.warn_hz:
            return WARN, f"loop at {rate:.1f} Hz, below the configured {self.rate_hz:g} Hz"
        return None
