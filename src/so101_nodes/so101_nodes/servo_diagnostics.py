"""The health of one Feetech servo as a DiagnosticStatus (the generic helpers: :mod:`nodegraph.diagnostics`)."""

from __future__ import annotations

from nodegraph.diagnostics import ERROR, OK, STALE, WARN, status_message
from nodegraph.graph.api import Message, Node
from so101_core.control.safety import SafetyConfig
from so101_hardware.errors import ServoFault
from so101_hardware.robot import ServoHealth


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
