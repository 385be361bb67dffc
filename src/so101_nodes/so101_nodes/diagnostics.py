"""diagnostic_msgs helpers: status levels, per-servo status, stamped arrays."""

from __future__ import annotations

from nodegraph.graph.api import Message, Node
from nodegraph.graph.qos import QoS
from so101_hardware.config import SafetyConfig
from so101_hardware.errors import ServoFault
from so101_hardware.robot import ServoHealth

DIAGNOSTICS_QOS = QoS(depth=10)


# diagnostic_msgs/msg/DiagnosticStatus levels
OK, WARN, ERROR, STALE = 0, 1, 2, 3


def servo_status(node: Node, health: ServoHealth, hardware_id: str, safety: SafetyConfig, stale: bool) -> Message:
    """One DiagnosticStatus for one servo: ERROR on error bits, WARN over the safety thresholds."""
    level, problems = OK, []
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
