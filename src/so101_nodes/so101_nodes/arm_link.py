"""One arm on its bus for a node: loading it from robot.yaml + calibration, and a supervised link that
(re)connects, reads and writes, reporting failures instead of raising."""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from nodegraph.diagnostics import ERROR, WARN, status_message
from nodegraph.graph.api import Message, Node
from so101_core.arrays import F64
from so101_core.config_paths import config_dir
from so101_core.control.safety import SafetyConfig
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration import ArmCalibration, Role, load_calibration
from so101_hardware.config import ArmEntry, RobotHardwareConfig, load_robot_config
from so101_hardware.errors import BusError, HardwareError, PortError
from so101_hardware.robot import ArmConfig, ArmState, SO101Arm

from so101_nodes.servo_diagnostics import servo_status


def default_robot_config() -> Path:
    """``robot.yaml`` of the so101 config directory (``$SO101_CONFIG_DIR`` or the checkout's ``config/``)."""
    return config_dir() / "robot.yaml"


def load_arm(
    robot_config: str, port: str, calibration: str, role: Role = "follower"
) -> tuple[ArmEntry, ArmCalibration, RobotHardwareConfig]:
    """One arm of ``robot_config`` (robot.yaml; the default one when empty), its calibration (the
    ``calibration`` file when given, else the config's) and the whole config (safety, shutdown); ``port``
    overrides the bus port.

    Raises:
        ConfigError / CalibrationError: invalid config or calibration; ``ValueError`` when a leader is asked
            for and the config has none.
    """
    path = Path(robot_config) if robot_config else default_robot_config()
    config = load_robot_config(path)
    entry = config.follower if role == "follower" else config.leader
    if entry is None:
        raise ValueError(f"{path}: no robot.{role} section")
    entry = replace(entry, arm=with_port(entry.arm, port))
    cal = load_calibration(Path(calibration).expanduser()) if calibration else entry.load_calibration()
    return entry, cal, config


def with_port(arm: ArmConfig, port: str) -> ArmConfig:
    """``arm`` with its bus port replaced (when ``port`` is non-empty)."""
    return replace(arm, bus=replace(arm.bus, port=port)) if port else arm


class ArmLink:
    """Supervised connection to one arm: (re)connect, reads and writes that report instead of raising, and the
    bus health for ``/diagnostics``. Used from one thread at a time (the node's control-loop timer).

    Args:
        node: the owning node (logger, messages).
        arm: the arm (follower or leader), not yet connected.
        reconnect_period_s: s between connection attempts while disconnected.
        max_consecutive_failures: failed transactions in a row that make the link ``failing`` (ERROR).
    """

    def __init__(self, node: Node, arm: SO101Arm, reconnect_period_s: float, max_consecutive_failures: int) -> None:
        self.node = node
        self.arm = arm
        self.port = arm.config.bus.port
        self.reconnect_period_s = reconnect_period_s
        self.max_consecutive_failures = max_consecutive_failures
        self.consecutive_failures = 0
        self.total_failures = 0
        self.last_error = ""
        self.failed_servo: int | None = None
        self.last_state: ArmState | None = None
        self.connects = 0  # successful connections so far (a change means: re-sync with the arm)
        self._next_connect = 0.0

    @property
    def connected(self) -> bool:
        return self.arm.is_connected

    @property
    def failing(self) -> bool:
        """``max_consecutive_failures`` or more transactions failed in a row."""
        return self.consecutive_failures >= self.max_consecutive_failures

    def ensure_connected(self) -> bool:
        """True when connected; otherwise try to connect (at most every ``reconnect_period_s``)."""
        if self.connected:
            return True
        now = time.monotonic()
        if now < self._next_connect:
            return False
        self._next_connect = now + self.reconnect_period_s
        try:
            self.arm.connect()
        except HardwareError as exc:
            self.last_error = f"connect: {exc}"
            self.node.logger.warning(
                f"cannot connect to the arm on {self.port}: {exc}; retrying", throttle_duration_sec=5.0
            )
            return False
        self.consecutive_failures, self.failed_servo = 0, None
        self.last_state = None  # nothing read before the (re)connect describes the arm now
        self.connects += 1
        self.node.logger.info(f"arm connected on {self.port}")
        return True

    def read(self) -> ArmState | None:
        """One sync read; ``None`` (failure recorded) when it failed after the bus's retries."""
        try:
            state = self.arm.read()
        except HardwareError as exc:
            self._failed(exc)
            return None
        if state.missing:
            silent = ", ".join(f"{j} (servo {self.arm.ids[JOINT_NAMES.index(j)]})" for j in state.missing)
            self.last_error = f"not answering: {silent}"
            self.node.logger.warning(
                f"servo not answering on {self.port}: {silent}; the others are read", throttle_duration_sec=5.0
            )
        elif self.failing:
            self.node.logger.info(f"bus recovered after {self.consecutive_failures} failed transactions")
        self.consecutive_failures, self.failed_servo = 0, None
        self.last_state = state
        return state

    def write(self, goal: F64) -> bool:
        """Sync-write goal positions (rad); False (failure recorded) when it failed."""
        return self.write_counts(self.arm.converter.to_counts(goal))

    def write_counts(self, counts: npt.NDArray[np.int64]) -> bool:
        """Sync-write goal positions (6,) in counts; False (failure recorded) when it failed."""
        try:
            self.arm.bus.write_goal_positions({sid: int(c) for sid, c in zip(self.arm.ids, counts, strict=True)})
        except HardwareError as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: HardwareError) -> None:
        self.consecutive_failures += 1
        self.total_failures += 1
        self.last_error = str(exc)
        self.failed_servo = exc.servo_id if isinstance(exc, BusError) else None
        self.node.logger.warning(f"bus error ({self.consecutive_failures} in a row): {exc}", throttle_duration_sec=5.0)
        if isinstance(exc, PortError):  # the adapter is gone: close, reopen later
            self.node.logger.error(f"serial port {self.port} failed; reconnecting every {self.reconnect_period_s:g} s")
            self.close(disable_torque=False)
            self._next_connect = time.monotonic() + self.reconnect_period_s

    def problem(self) -> tuple[int, str] | None:
        """(level, message) of a link problem (not connected, failing, retrying), ``None`` when healthy."""
        if not self.connected:
            return ERROR, f"arm not connected on {self.port}: {self.last_error}"
        if self.failing:
            return ERROR, f"{self.consecutive_failures} consecutive bus failures: {self.last_error}"
        if self.consecutive_failures:
            return WARN, f"bus error, retrying: {self.last_error}"
        return None

    def values(self) -> dict[str, str]:
        """Key/values of the link for a DiagnosticStatus."""
        return {
            "port": self.port,
            "consecutive_failures": str(self.consecutive_failures),
            "total_failures": str(self.total_failures),
            "last_error": self.last_error,
        }

    def servo_statuses(self, safety: SafetyConfig, torque_lost: dict[str, str] | None = None) -> list[Message]:
        """One DiagnosticStatus per servo from the last read: STALE while reads fail, ERROR for a silent servo
        or one whose torque was lost (``torque_lost``: joint -> cause)."""
        state = self.last_state
        if state is None:
            return []
        stale = self.consecutive_failures > 0 or not self.connected
        lost = torque_lost or {}
        out = []
        for health in state.health:
            hwid = f"feetech:{self.port}:{health.servo_id}"
            status = servo_status(self.node, health, hwid, safety, stale, lost.get(health.joint))
            if stale and self.failed_servo == health.servo_id:
                status.level, status.message = ERROR, f"not answering: {self.last_error}"
            out.append(status)
        for joint in state.missing:
            sid = self.arm.ids[JOINT_NAMES.index(joint)]
            out.append(
                status_message(
                    self.node,
                    joint,
                    ERROR,
                    f"not answering: servo {sid} on {self.port} (its joint is left out of joint_states)",
                    f"feetech:{self.port}:{sid}",
                    {"servo_id": str(sid)},
                )
            )
        order = {name: i for i, name in enumerate(JOINT_NAMES)}
        out.sort(key=lambda s: order.get(str(s.name).rsplit(": ", 1)[-1], 99))
        return out

    def close(self, disable_torque: bool) -> None:
        """Close the bus (optionally torque off first), never raising."""
        with contextlib.suppress(HardwareError, OSError):
            self.arm.bus.disconnect(disable_torque=disable_torque)
