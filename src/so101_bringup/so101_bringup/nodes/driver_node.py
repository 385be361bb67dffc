"""driver: the real SO-101 follower arm on its Feetech bus.

A control-loop timer (``rate_hz``) does one sync read (positions, speeds, health of the six servos) and one
sync write (goal positions) per cycle and publishes ``joint_states`` (rad, canonical names). Targets come
from ``joint_commands`` (JointState positions, by name or in full canonical order) or from the
``arm_controller/follow_joint_trajectory`` action (points interpolated over time, cancel checked every
cycle). Every goal passes the :class:`~so101_bringup.hardware.safety.CommandFilter`: e-stop, command
watchdog (no command for ``robot.safety.watchdog_timeout_s`` -> hold), joint-limit clamp, max step per cycle.

Faults: a failed read (after the bus's retries) writes nothing, so the servos keep the last goal; it is
reported on ``/diagnostics`` (WARN), and ``max_consecutive_failures`` in a row raise it to ERROR until a
read succeeds again. A servo reporting error bits (overheat, overload, ...) makes the arm hold its position
while ``hold_on_servo_fault``. A failed port (unplugged adapter) is closed and reopened every
``reconnect_period_s``. Nothing here exits the process on a hardware error.

Services: ``~/estop`` (std_srvs/srv/SetBool: true engages the latched e-stop, the arm holds; false releases
it, after which a fresh command is needed before the arm moves).

Parameters: ``robot_config`` (path of robot.yaml; "" = the config directory's), ``port`` ("" = from the
config), ``calibration`` (LeRobot calibration JSON; "" = from the config), ``rate_hz`` (Hz, 100),
``diagnostics_period_s`` (s, 1.0), ``max_consecutive_failures`` (5), ``reconnect_period_s`` (s, 1.0),
``hold_on_servo_fault`` (true), ``goal_tolerance_rad`` (rad, 0.05), ``goal_time_tolerance_s`` (s, 1.0),
``shutdown_behavior`` ("hold" | "torque_off"), ``ease_to_rest`` (false: on shutdown, first move to
``rest_pose``, 6 values in rad, default all 0, over ``rest_ease_s`` s, default 2.0).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from so101_bringup.graph.api import Message, Node, ServerGoalHandle
from so101_bringup.graph.qos import QoS
from so101_bringup.hardware.calibration import ArmCalibration, Role, load_calibration
from so101_bringup.hardware.config import ArmEntry, SafetyConfig, load_robot_config
from so101_bringup.hardware.errors import BusError, HardwareError, PortError, ServoFault
from so101_bringup.hardware.joints import JOINT_NAMES, twin_ranges
from so101_bringup.hardware.robot import ArmConfig, ArmState, ServoHealth, SO101Arm
from so101_bringup.hardware.safety import CommandFilter, EStop, JointLimits, Watchdog

FloatArray = npt.NDArray[np.float64]

FJT = "control_msgs/action/FollowJointTrajectory"
ACTION_NAME = "arm_controller/follow_joint_trajectory"
SHUTDOWN_BEHAVIORS = ("hold", "torque_off")
FEEDBACK_EVERY = 5  # action feedback every N control cycles
DIAGNOSTICS_QOS = QoS(depth=10)

# diagnostic_msgs/msg/DiagnosticStatus levels
OK, WARN, ERROR, STALE = 0, 1, 2, 3
# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP = 0, -1, -2, -3
PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = -4, -5


def default_robot_config() -> Path:
    """``robot.yaml`` of the so101 config directory (``$SO101_CONFIG_DIR`` or the checkout's ``config/``)."""
    from so101_bringup.launch.paths import config_dir

    return config_dir() / "robot.yaml"


@dataclass(frozen=True)
class DriverParams:
    """Driver parameters (units in the names); read once at start."""

    robot_config: str = ""
    port: str = ""
    calibration: str = ""
    rate_hz: float = 100.0
    diagnostics_period_s: float = 1.0
    max_consecutive_failures: int = 5
    reconnect_period_s: float = 1.0
    hold_on_servo_fault: bool = True
    goal_tolerance_rad: float = 0.05
    goal_time_tolerance_s: float = 1.0
    shutdown_behavior: str = "hold"
    ease_to_rest: bool = False
    rest_pose: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rest_ease_s: float = 2.0

    @classmethod
    def declare(cls, node: Node) -> DriverParams:
        d = cls()
        params = cls(
            robot_config=node.declare_parameter("robot_config", d.robot_config),
            port=node.declare_parameter("port", d.port),
            calibration=node.declare_parameter("calibration", d.calibration),
            rate_hz=float(node.declare_parameter("rate_hz", d.rate_hz)),
            diagnostics_period_s=float(node.declare_parameter("diagnostics_period_s", d.diagnostics_period_s)),
            max_consecutive_failures=int(
                node.declare_parameter("max_consecutive_failures", d.max_consecutive_failures)
            ),
            reconnect_period_s=float(node.declare_parameter("reconnect_period_s", d.reconnect_period_s)),
            hold_on_servo_fault=bool(node.declare_parameter("hold_on_servo_fault", d.hold_on_servo_fault)),
            goal_tolerance_rad=float(node.declare_parameter("goal_tolerance_rad", d.goal_tolerance_rad)),
            goal_time_tolerance_s=float(node.declare_parameter("goal_time_tolerance_s", d.goal_time_tolerance_s)),
            shutdown_behavior=node.declare_parameter("shutdown_behavior", d.shutdown_behavior),
            ease_to_rest=bool(node.declare_parameter("ease_to_rest", d.ease_to_rest)),
            rest_pose=tuple(float(v) for v in node.declare_parameter("rest_pose", list(d.rest_pose))),
            rest_ease_s=float(node.declare_parameter("rest_ease_s", d.rest_ease_s)),
        )
        params.validate()
        return params

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        for name in ("rate_hz", "diagnostics_period_s", "reconnect_period_s", "goal_tolerance_rad"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"driver: {name} must be > 0, got {value}")
        for name in ("goal_time_tolerance_s", "rest_ease_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"driver: {name} must be >= 0, got {value}")
        if self.max_consecutive_failures < 1:
            raise ValueError(f"driver: max_consecutive_failures must be >= 1, got {self.max_consecutive_failures}")
        if self.shutdown_behavior not in SHUTDOWN_BEHAVIORS:
            raise ValueError(
                f"driver: shutdown_behavior must be one of {SHUTDOWN_BEHAVIORS}, got {self.shutdown_behavior!r}"
            )
        if len(self.rest_pose) != len(JOINT_NAMES) or not all(math.isfinite(v) for v in self.rest_pose):
            raise ValueError(f"driver: rest_pose needs {len(JOINT_NAMES)} finite values (rad), got {self.rest_pose}")


def _duration_s(duration: Any) -> float:
    return float(duration.sec) + float(duration.nanosec) * 1e-9


def _duration_msg(node: Node, seconds: float) -> Message:
    ns = max(0, round(seconds * 1e9))
    return node.message("builtin_interfaces/msg/Duration", sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class TrajectoryError(ValueError):
    """A FollowJointTrajectory goal is invalid; ``code`` is the action's result error code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Trajectory:
    """A joint trajectory over all six joints, canonical order, starting at ``times[0] = 0``.

    Attributes:
        times: (K,) s from the start, strictly increasing.
        positions: (K, 6) rad.
        velocities: (K, 6) rad/s, or ``None`` for linear interpolation (cubic Hermite otherwise).
        joints: indices of the joints the goal named (the others stay at their start value).
    """

    times: FloatArray
    positions: FloatArray
    velocities: FloatArray | None
    joints: tuple[int, ...]

    @property
    def duration_s(self) -> float:
        return float(self.times[-1])

    @property
    def final(self) -> FloatArray:
        return self.positions[-1]

    def sample(self, t_s: float) -> FloatArray:
        """Positions (6,) rad at ``t_s`` seconds from the start (held at the ends)."""
        if t_s <= 0.0:
            return self.positions[0].copy()
        if t_s >= self.duration_s:
            return self.positions[-1].copy()
        k = int(np.searchsorted(self.times, t_s, side="right")) - 1
        t0, t1 = self.times[k], self.times[k + 1]
        h = t1 - t0
        s = (t_s - t0) / h
        p0, p1 = self.positions[k], self.positions[k + 1]
        if self.velocities is None:
            return np.asarray(p0 + s * (p1 - p0), dtype=np.float64)
        v0, v1 = self.velocities[k], self.velocities[k + 1]
        h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
        h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
        return np.asarray(h00 * p0 + h10 * h * v0 + h01 * p1 + h11 * h * v1, dtype=np.float64)

    @classmethod
    def from_goal(cls, goal: Any, start: FloatArray, limits: JointLimits) -> Trajectory:
        """Validate a FollowJointTrajectory goal and build the trajectory from ``start`` (6,) rad.

        Raises:
            TrajectoryError: unknown / duplicate joints (INVALID_JOINTS), no points, wrong lengths,
                non-finite values, times not increasing, positions outside ``limits`` (INVALID_GOAL).
        """
        traj = goal.trajectory
        names = list(traj.joint_names)
        if len(goal.multi_dof_trajectory.points):
            raise TrajectoryError("multi-DOF trajectories are not supported", INVALID_GOAL)
        unknown = [n for n in names if n not in JOINT_NAMES]
        if not names or unknown or len(set(names)) != len(names):
            raise TrajectoryError(
                f"joint_names must be distinct names of {list(JOINT_NAMES)}, got {names}", INVALID_JOINTS
            )
        if not len(traj.points):
            raise TrajectoryError("trajectory has no points", INVALID_GOAL)
        index = tuple(JOINT_NAMES.index(n) for n in names)
        times = [0.0]
        rows = [np.array(start, dtype=np.float64)]
        vel_rows: list[FloatArray] = [np.zeros(len(JOINT_NAMES))]
        with_velocities = all(len(pt.velocities) for pt in traj.points)
        for i, pt in enumerate(traj.points):
            t = _duration_s(pt.time_from_start)
            pos = np.asarray(pt.positions, dtype=np.float64)
            if pos.shape != (len(names),) or not np.all(np.isfinite(pos)):
                raise TrajectoryError(
                    f"point {i}: need {len(names)} finite positions, got {pos.tolist()}", INVALID_GOAL
                )
            if t < times[-1] or (t == times[-1] and i > 0):
                raise TrajectoryError(f"point {i}: time_from_start {t:.3f} s is not increasing", INVALID_GOAL)
            row = rows[-1].copy()
            row[list(index)] = pos
            for j in index:
                if not limits.lower[j] <= row[j] <= limits.upper[j]:
                    raise TrajectoryError(
                        f"point {i}: {JOINT_NAMES[j]}={row[j]:.3f} rad outside "
                        f"[{limits.lower[j]:.3f}, {limits.upper[j]:.3f}]",
                        INVALID_GOAL,
                    )
            vrow = np.zeros(len(JOINT_NAMES))
            if with_velocities:
                vel = np.asarray(pt.velocities, dtype=np.float64)
                if vel.shape != (len(names),) or not np.all(np.isfinite(vel)):
                    raise TrajectoryError(f"point {i}: need {len(names)} finite velocities", INVALID_GOAL)
                vrow[list(index)] = vel
            if t == 0.0:  # a point at t=0 replaces the start
                rows[0], vel_rows[0] = row, vrow
                continue
            times.append(t)
            rows.append(row)
            vel_rows.append(vrow)
        return cls(
            np.array(times),
            np.vstack(rows),
            np.vstack(vel_rows) if with_velocities else None,
            index,
        )


@dataclass
class _ActiveGoal:
    """The trajectory being executed; shared by the goal thread and the control loop (under the lock)."""

    trajectory: Trajectory
    start: float  # time.monotonic() of t = 0
    abort_reason: str | None = None
    done: bool = False


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
    return node.message(
        "diagnostic_msgs/msg/DiagnosticStatus",
        level=level,
        name=f"{node.name}: {health.joint}",
        message="; ".join(problems) if problems else "ok",
        hardware_id=hardware_id,
        values=[node.message("diagnostic_msgs/msg/KeyValue", key=k, value=v) for k, v in values.items()],
    )


def joint_vector(msg: Any, base: FloatArray) -> FloatArray:
    """(6,) rad from a JointState: by name (others keep ``base``) or, without names, in canonical order.

    Raises:
        ValueError: unknown or duplicate names, wrong length, non-finite positions.
    """
    names = list(msg.name)
    pos = np.asarray(msg.position, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"non-finite positions {pos.tolist()}")
    if not names:
        if pos.shape != (len(JOINT_NAMES),):
            raise ValueError(f"without names, need {len(JOINT_NAMES)} positions in canonical order, got {pos.size}")
        return pos.copy()
    if len(names) != pos.size:
        raise ValueError(f"{len(names)} names but {pos.size} positions")
    unknown = [n for n in names if n not in JOINT_NAMES]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"names must be distinct joints of {list(JOINT_NAMES)}, got {names}")
    out = np.array(base, dtype=np.float64)
    for n, v in zip(names, pos, strict=True):
        out[JOINT_NAMES.index(n)] = v
    return out


def load_arm(
    robot_config: str, port: str, calibration: str, role: Role = "follower"
) -> tuple[ArmEntry, ArmCalibration, SafetyConfig]:
    """One arm of ``robot_config`` (robot.yaml; the default one when empty), its calibration (the
    ``calibration`` file when given, else the config's) and the safety section; ``port`` overrides the bus port.

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
    return entry, cal, config.safety


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
        self._next_connect = 0.0
        self._log_times: dict[str, float] = {}

    @property
    def connected(self) -> bool:
        return self.arm.is_connected

    @property
    def failing(self) -> bool:
        """``max_consecutive_failures`` or more transactions failed in a row."""
        return self.consecutive_failures >= self.max_consecutive_failures

    def log_throttled(self, key: str, msg: str, period_s: float = 5.0) -> None:
        """Warn at most once per ``period_s`` per ``key``."""
        now = time.monotonic()
        if now - self._log_times.get(key, -math.inf) >= period_s:
            self._log_times[key] = now
            self.node.logger.warning(msg)

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
            self.log_throttled("connect", f"cannot connect to the arm on {self.port}: {exc}; retrying")
            return False
        self.consecutive_failures, self.failed_servo = 0, None
        self.node.logger.info(f"arm connected on {self.port}")
        return True

    def read(self) -> ArmState | None:
        """One sync read; ``None`` (failure recorded) when it failed after the bus's retries."""
        try:
            state = self.arm.read()
        except HardwareError as exc:
            self._failed(exc)
            return None
        if self.failing:
            self.node.logger.info(f"bus recovered after {self.consecutive_failures} failed transactions")
        self.consecutive_failures, self.failed_servo = 0, None
        self.last_state = state
        return state

    def write(self, goal: FloatArray) -> bool:
        """Sync-write goal positions (rad); False (failure recorded) when it failed."""
        try:
            self.arm.write(goal)
        except HardwareError as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: HardwareError) -> None:
        self.consecutive_failures += 1
        self.total_failures += 1
        self.last_error = str(exc)
        self.failed_servo = exc.servo_id if isinstance(exc, BusError) else None
        self.log_throttled("bus", f"bus error ({self.consecutive_failures} in a row): {exc}")
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

    def servo_statuses(self, safety: SafetyConfig) -> list[Message]:
        """One DiagnosticStatus per servo from the last read: STALE while reads fail, ERROR for a silent servo."""
        state = self.last_state
        if state is None:
            return []
        stale = self.consecutive_failures > 0 or not self.connected
        out = []
        for health in state.health:
            status = servo_status(self.node, health, f"feetech:{self.port}:{health.servo_id}", safety, stale)
            if stale and self.failed_servo == health.servo_id:
                status.level, status.message = ERROR, f"not answering: {self.last_error}"
            out.append(status)
        return out

    def close(self, disable_torque: bool) -> None:
        """Close the bus (optionally torque off first), never raising."""
        with contextlib.suppress(HardwareError, OSError):
            self.arm.bus.disconnect(disable_torque=disable_torque)


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


def joint_state_message(node: Node, state: ArmState) -> Message:
    """sensor_msgs/JointState of one read: canonical names, rad, rad/s, stamped now."""
    header = node.message("std_msgs/msg/Header", stamp=node.stamp(), frame_id="")
    return node.message(
        "sensor_msgs/msg/JointState",
        header=header,
        name=list(JOINT_NAMES),
        position=state.positions.astype(np.float64),
        velocity=state.velocities.astype(np.float64),
    )


class Driver:
    """The follower-arm driver node (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = DriverParams.declare(node)
        entry, calibration, self.safety = load_arm(self.params.robot_config, self.params.port, self.params.calibration)
        self.arm = SO101Arm(entry.arm, calibration)
        self.link = ArmLink(node, self.arm, self.params.reconnect_period_s, self.params.max_consecutive_failures)
        self.port = self.link.port
        ranges = twin_ranges()
        self.limits = JointLimits.from_arrays(*self.arm.limits()).intersect(JointLimits(ranges.lower, ranges.upper))
        self.estop = EStop()
        self.filter = CommandFilter(
            self.limits, self.safety.max_step_rad, Watchdog(self.safety.watchdog_timeout_s), self.estop
        )
        self.period_s = 1.0 / self.params.rate_hz
        self._lock = threading.RLock()  # filter, target, active goal, hold state, link health
        self._active: _ActiveGoal | None = None
        self._target: FloatArray | None = None  # the latest accepted command, rad
        self._last_goal: FloatArray | None = None  # the latest goal written, rad
        self._fault_hold: FloatArray | None = None
        self._hold_reason: str | None = None
        self._cycle_starts: deque[float] = deque(maxlen=max(3, round(2 * self.params.rate_hz)))
        self._closed = False
        self.rejected_commands = 0

        self.joint_states = node.create_publisher("sensor_msgs/msg/JointState", "joint_states")
        self.diagnostics = node.create_publisher("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", DIAGNOSTICS_QOS)
        node.create_subscription("sensor_msgs/msg/JointState", "joint_commands", self.on_command)
        node.create_service("std_srvs/srv/SetBool", "~/estop", self.on_estop)
        node.create_action_server(FJT, ACTION_NAME, self.execute_trajectory)
        with self._lock:
            self.link.ensure_connected()
        self._timers = [
            node.create_timer(self.period_s, self.on_cycle),
            node.create_timer(self.params.diagnostics_period_s, self.publish_diagnostics),
        ]
        node.logger.info(
            f"driving the arm on {self.port} at {self.params.rate_hz:g} Hz; "
            f"commands on {node.resolve('joint_commands')}, trajectories on {node.resolve(ACTION_NAME)}"
        )

    def latest_state(self) -> ArmState | None:
        """The last successful read (``None`` before the first)."""
        with self._lock:
            return self.link.last_state

    # ------------------------------------------------------------------ control loop
    def on_cycle(self) -> None:
        """One control cycle: sync read -> joint_states -> safety filter -> sync write."""
        with self._lock:
            if self._closed:
                return
            now = time.monotonic()
            self._cycle_starts.append(now)
            if not self.link.ensure_connected():
                return
            was_connected_once = self.link.last_state is not None
            state = self.link.read()
            if state is None:  # nothing written: the servos keep the last goal
                return
            if not was_connected_once:
                self.filter.watchdog.reset()
            self.joint_states.publish(joint_state_message(self.node, state))
            goal = self._goal(state, now)
            if self.link.write(goal):
                self._last_goal = goal

    def _goal(self, state: ArmState, now: float) -> FloatArray:
        """The safe goal (6,) rad of this cycle (called under the lock)."""
        faults = state.faults()
        active = self._active
        if faults and self.params.hold_on_servo_fault:
            if self._fault_hold is None:
                self._fault_hold = np.clip(state.positions, self.limits.lower, self.limits.upper)
                desc = ", ".join(f"{j}: {f.describe()}" for j, f in faults.items())
                self.node.logger.error(f"servo fault ({desc}); holding position")
                self.filter.watchdog.reset()  # once cleared, move only on a fresh command
            if active is not None and active.abort_reason is None:
                active.abort_reason = "servo fault"
            self._hold_reason = "servo fault"
            return self._fault_hold.copy()
        if self._fault_hold is not None:
            self.node.logger.info("servo faults cleared")
            self._fault_hold = None
        if active is not None and active.abort_reason is None and not active.done:
            self._command(active.trajectory.sample(now - active.start), now)
        decision = self.filter.apply(state.positions, now)
        self._hold_reason = decision.reason if decision.hold else None
        if active is not None and active.abort_reason is None and self.estop.engaged:
            active.abort_reason = decision.reason
        return decision.goal

    def _command(self, target: FloatArray, now: float | None = None) -> None:
        self.filter.command(target, now)
        self._target = target

    def _base(self) -> FloatArray | None:
        """What joints not named by a command keep: the live target, else the last goal, else the present pose."""
        if self._target is not None and not self.filter.watchdog.expired():
            return self._target
        if self._last_goal is not None:
            return self._last_goal
        state = self.link.last_state
        return state.positions if state is not None else None

    # ------------------------------------------------------------------ commands
    def on_command(self, msg: Any) -> None:
        """``joint_commands``: a new target (rad); preempts a running trajectory."""
        with self._lock:
            try:
                base = self._base()
                if base is None:
                    raise ValueError("no joint state read yet")
                self._command(joint_vector(msg, base))
            except ValueError as exc:
                self.rejected_commands += 1
                self.link.log_throttled("command", f"rejected command on {self.node.resolve('joint_commands')}: {exc}")
                return
            if self._active is not None and self._active.abort_reason is None:
                self._active.abort_reason = "preempted by a joint_commands message"

    def on_estop(self, request: Any, response: Any) -> Any:
        """``~/estop``: true engages (latched, the arm holds), false releases (a new command is needed)."""
        with self._lock:
            if request.data:
                self.estop.engage("requested on ~/estop")
                if self._active is not None:
                    self._active.abort_reason = "e-stop engaged"
                response.message = "e-stop engaged; holding position"
                self.node.logger.warning(response.message)
            else:
                was = self.estop.engaged
                self.estop.release()
                self.filter.watchdog.reset()
                response.message = "e-stop released; waiting for a new command" if was else "e-stop was not engaged"
                self.node.logger.info(response.message)
        response.success = True
        return response

    # ------------------------------------------------------------------ trajectories
    def _refusal(self) -> str | None:
        if self.estop.engaged:
            return f"e-stop engaged ({self.estop.reason})"
        if not self.link.connected or self.link.last_state is None:
            return f"arm not connected on {self.port}"
        if self.link.failing:
            return f"bus failing: {self.link.last_error}"
        if self._fault_hold is not None:
            return "servo fault: holding"
        return None

    def execute_trajectory(self, handle: ServerGoalHandle) -> Message:
        """FollowJointTrajectory execute callback (goal thread): runs until done, cancelled or aborted."""
        result = self.node.message(f"{FJT}_Result")
        goal = handle.request
        with self._lock:
            refusal = self._refusal()
            start = self._base()
            try:
                if refusal is not None or start is None:
                    raise TrajectoryError(f"cannot execute: {refusal}", INVALID_GOAL)
                trajectory = Trajectory.from_goal(goal, start, self.limits)
                stamp_ns = int(goal.trajectory.header.stamp.sec) * 1_000_000_000 + int(
                    goal.trajectory.header.stamp.nanosec
                )
                delay = (stamp_ns - self.node.now_ns()) * 1e-9 if stamp_ns else 0.0
                if stamp_ns and delay + trajectory.duration_s < 0:
                    raise TrajectoryError("trajectory ends before now (old header stamp)", OLD_HEADER_TIMESTAMP)
            except TrajectoryError as exc:
                result.error_code, result.error_string = exc.code, str(exc)
                self.node.logger.warning(f"trajectory rejected: {exc}")
                handle.abort()
                return result
            if self._active is not None and self._active.abort_reason is None:
                self._active.abort_reason = "preempted by a new goal"
            active = _ActiveGoal(trajectory, time.monotonic() + max(0.0, delay))
            self._active = active
        try:
            return self._follow(handle, active, goal, result)
        finally:
            with self._lock:
                active.done = True
                if self._active is active:
                    self._active = None

    def _tolerances(self, entries: Sequence[Any], default: float) -> FloatArray:
        tol = np.full(len(JOINT_NAMES), default)
        for e in entries:
            if e.name in JOINT_NAMES and e.position > 0:
                tol[JOINT_NAMES.index(e.name)] = e.position
            elif e.name in JOINT_NAMES and e.position < 0:
                tol[JOINT_NAMES.index(e.name)] = math.inf
        return tol

    def _follow(self, handle: ServerGoalHandle, active: _ActiveGoal, goal: Any, result: Any) -> Message:
        traj = active.trajectory
        joints = list(traj.joints)
        goal_tol = self._tolerances(goal.goal_tolerance, self.params.goal_tolerance_rad)
        path_tol = self._tolerances(goal.path_tolerance, math.inf)
        time_tol = _duration_s(goal.goal_time_tolerance) or self.params.goal_time_tolerance_s
        names = [JOINT_NAMES[j] for j in joints]
        cycle = 0
        while True:
            if handle.is_cancel_requested:
                with self._lock:
                    state = self.link.last_state
                    if state is not None:
                        self._command(state.positions)  # stop where it is
                    active.done = True
                handle.canceled()
                result.error_code, result.error_string = SUCCESSFUL, "canceled"
                return result
            with self._lock:
                if active.abort_reason is None and self.link.failing:
                    active.abort_reason = f"bus failing: {self.link.last_error}"
                reason = active.abort_reason
                state = self.link.last_state
            if reason is not None:
                handle.abort()
                result.error_code, result.error_string = INVALID_GOAL, f"aborted: {reason}"
                self.node.logger.warning(f"trajectory {result.error_string}")
                return result
            t = time.monotonic() - active.start
            desired = traj.sample(t)
            if state is not None:
                actual = state.positions
                error = actual - desired
                if cycle % FEEDBACK_EVERY == 0:
                    handle.publish_feedback(self._feedback(names, joints, desired, actual, error, t))
                if t <= traj.duration_s and np.any(np.abs(error[joints]) > path_tol[joints]):
                    bad = JOINT_NAMES[joints[int(np.argmax(np.abs(error[joints]) - path_tol[joints]))]]
                    with self._lock:
                        self._command(actual)
                    handle.abort()
                    result.error_code = PATH_TOLERANCE_VIOLATED
                    result.error_string = f"path tolerance violated on {bad} at t={t:.2f} s"
                    return result
                final_err = np.abs(actual - traj.final)
                if t >= traj.duration_s and np.all(final_err[joints] <= goal_tol[joints]):
                    handle.succeed()
                    result.error_code, result.error_string = SUCCESSFUL, ""
                    return result
                if t > traj.duration_s + time_tol:
                    worst = joints[int(np.argmax(final_err[joints] - goal_tol[joints]))]
                    handle.abort()
                    result.error_code = GOAL_TOLERANCE_VIOLATED
                    result.error_string = (
                        f"goal not reached within {time_tol:.2f} s: {JOINT_NAMES[worst]} off by "
                        f"{final_err[worst]:.3f} rad"
                    )
                    return result
            cycle += 1
            time.sleep(self.period_s)

    def _feedback(
        self, names: list[str], joints: list[int], desired: FloatArray, actual: FloatArray, error: FloatArray, t: float
    ) -> Message:
        def point(values: FloatArray) -> Message:
            return self.node.message(
                "trajectory_msgs/msg/JointTrajectoryPoint",
                positions=values[joints].astype(np.float64),
                time_from_start=_duration_msg(self.node, t),
            )

        header = self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")
        return self.node.message(
            f"{FJT}_Feedback",
            header=header,
            joint_names=names,
            desired=point(desired),
            actual=point(actual),
            error=point(error),
        )

    # ------------------------------------------------------------------ diagnostics
    def diagnostics_message(self) -> Message:
        """The DiagnosticArray: one status for the arm (link, e-stop, holds), one per servo."""
        with self._lock:
            starts = list(self._cycle_starts)
            state = self.link.last_state
            level, message = self.link.problem() or (OK, "ok")
            if level == OK and self.estop.engaged:
                level, message = WARN, f"e-stop engaged ({self.estop.reason}); holding"
            elif level == OK and state is not None and state.faults():
                desc = ", ".join(f"{j} {f.describe()}" for j, f in state.faults().items())
                level, message = ERROR, f"servo fault: {desc}" + ("; holding" if self._fault_hold is not None else "")
            elif level == OK and self._hold_reason:
                message = f"holding ({self._hold_reason})"
            rate = (len(starts) - 1) / (starts[-1] - starts[0]) if len(starts) > 2 and starts[-1] > starts[0] else 0.0
            values = {
                **self.link.values(),
                "rate_hz": f"{rate:.1f}",
                "target_rate_hz": f"{self.params.rate_hz:g}",
                "estop": str(self.estop.engaged).lower(),
                "holding": self._hold_reason or "",
                "trajectory_active": str(self._active is not None).lower(),
                "rejected_commands": str(self.rejected_commands),
            }
            statuses = [status_message(self.node, "arm", level, message, f"feetech:{self.port}", values)]
            statuses += self.link.servo_statuses(self.safety)
        return diagnostic_array(self.node, statuses)

    def publish_diagnostics(self) -> None:
        self.diagnostics.publish(self.diagnostics_message())

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop the loop, ease to ``rest_pose`` if asked, then hold or switch torque off; close the bus."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for timer in self._timers:
                timer.cancel()
            if self._active is not None and self._active.abort_reason is None:
                self._active.abort_reason = "driver shutting down"
            if not self.link.connected:
                return
            torque_off = self.params.shutdown_behavior == "torque_off"
            try:
                if self.params.ease_to_rest and self._fault_hold is None and not self.estop.engaged:
                    self._ease_to_rest()
                if torque_off:
                    self.arm.set_torque(False)
            except HardwareError as exc:
                self.node.logger.error(f"shutdown: {exc}")
            finally:
                self.link.close(disable_torque=torque_off)
        self.node.logger.info(f"arm released ({'torque off' if torque_off else 'holding its pose'})")

    def _ease_to_rest(self) -> None:
        """Move to ``rest_pose`` over ``rest_ease_s`` (linear in joint space, clamped, step-limited)."""
        rest = np.clip(np.array(self.params.rest_pose), self.limits.lower, self.limits.upper)
        start = self.arm.read().positions
        steps = max(1, round(self.params.rest_ease_s * self.params.rate_hz))
        goal = start
        for k in range(1, steps + 1):
            target = start + (rest - start) * (k / steps)
            goal = np.clip(target, goal - self.safety.max_step_rad, goal + self.safety.max_step_rad)
            self.arm.write(goal)
            time.sleep(self.period_s)
        self.node.logger.info("eased to the rest pose")


def main(args: list[str] | None = None) -> int:
    from so101_bringup.transport.runtime import run_node

    return run_node(Driver, "driver", args)


if __name__ == "__main__":
    raise SystemExit(main())
