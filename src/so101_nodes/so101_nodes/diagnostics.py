"""diagnostic_msgs helpers: status levels, per-servo status, stamped arrays, loop-rate grading."""

from __future__ import annotations

from collections import deque

from nodegraph.graph.api import Message, Node
from nodegraph.graph.qos import QoS
from so101_hardware.config import SafetyConfig
from so101_hardware.errors import ServoFault
from so101_hardware.robot import ServoHealth

DIAGNOSTICS_QOS = QoS(depth=10)


# diagnostic_msgs/msg/DiagnosticStatus levels
OK, WARN, ERROR, STALE = 0, 1, 2, 3


def servo_status(
    node: Node,
    health: ServoHealth,
    hardware_id: str,
    safety: SafetyConfig,
    stale: bool,
    torque_lost: str | None = None,
) -> Message:
    """One DiagnosticStatus for one servo: ERROR on error bits or lost torque (``torque_lost``: its cause),
    WARN over the safety thresholds."""
    level, problems = OK, []
    if torque_lost is not None:
        level = ERROR
        problems.append(f"torque off ({torque_lost}); call ~/enable_torque")
    if health.faults != ServoFault.NONE:
        level = ERROR
        problems.append(health.faults.describe())
    if health.temperature_c > safety.max_temperature_c:
        level = max(level, WARN)
        problems.append(f"hot ({health.temperature_c} °C)")
    if health.voltage_v < safety.min_voltage_v:
        level = max(level, WARN)
        problems.append(f"low voltage ({health.voltage_v:.1f} V)")
    if abs(health.load) > safety.max_load:
        level = max(level, WARN)
        problems.append(f"high load ({health.load:+.2f})")
    if stale:
        level, problems = STALE, ["no fresh data", *problems]
    values = {
        "servo_id": str(health.servo_id),
        "temperature_c": str(health.temperature_c),
        "voltage_v": f"{health.voltage_v:.1f}",
        "load": f"{health.load:+.3f}",
        "current_ma": f"{health.current_ma:.0f}",
        "error_bits": f"0x{int(health.faults):02x}",
        "faults": health.faults.describe(),
        "moving": str(health.moving).lower(),
        "torque": {True: "on", False: "off", None: "unknown"}[health.torque_enabled],
    }
    return status_message(node, health.joint, level, "; ".join(problems) if problems else "ok", hardware_id, values)


def diagnostic_array(node: Node, statuses: list[Message]) -> Message:
    """A stamped DiagnosticArray of ``statuses``."""
    header = node.message("std_msgs/msg/Header", stamp=node.stamp(), frame_id="")
    return node.message("diagnostic_msgs/msg/DiagnosticArray", header=header, status=statuses)


def status_message(
    node: Node, name: str, level: int, message: str, hardware_id: str, values: dict[str, str]
) -> Message:
    """One DiagnosticStatus named ``<node>: <name>``."""
    return node.message(
        "diagnostic_msgs/msg/DiagnosticStatus",
        level=level,
        name=f"{node.name}: {name}",
        message=message,
        hardware_id=hardware_id,
        values=[node.message("diagnostic_msgs/msg/KeyValue", key=k, value=v) for k, v in values.items()],
    )


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
