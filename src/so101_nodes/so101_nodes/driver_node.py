"""driver: the real SO-101 follower arm on its Feetech bus.

A control-loop timer (``rate_hz``) does one sync read per cycle (Torque_Enable, Goal_Position, position, speed
and health of the six servos), publishes ``joint_states`` (rad, rad/s, N·m from Present_Load; canonical names),
writes one sync write of goal positions and publishes ``arm_controller/controller_state``
(control_msgs/JointTrajectoryControllerState, as ros2_control's trajectory controller: ``reference`` = the
target being followed, ``feedback`` = the read, ``output`` = the goal written, rad). Targets come from
``joint_commands`` (JointState positions, by name or in full canonical order; the goal is written as soon as a
command arrives, not only on the next cycle) or from the
``arm_controller/follow_joint_trajectory`` action (:class:`~so101_nodes.trajectory.TrajectoryTracker`,
shared with the sim node). Every goal passes the one
:class:`~so101_core.control.safety.CommandFilter` (also run by the sim node): the goal moves at most
``robot.safety.max_step_rad`` from the previous goal per cycle, the hold pose is the present position,
commands older than the watchdog or sent during a fault are dropped, and limit clamps only shrink motion.

Startup and every reconnect: the first read re-syncs the filter to the present position (the arm holds where
it is; it eases into the limits at the step limit only when it is outside them); nothing from before the
disconnect is replayed. A joint reading further than ``robot.safety.calibration_margin_rad`` outside its
calibrated range then is reported as a WARN (``<node>: calibration`` on ``/diagnostics``, and in the log): its
calibration may have drifted (``so101 calibrate --check``).

Faults: a servo reporting error bits, a servo whose Torque_Enable reads 0 without being asked (its own
overload / overheat protection), or a silent servo puts the arm in a fault hold (``hold_on_servo_fault``):
commands are refused, trajectories aborted, ``/diagnostics`` says ERROR with the cause. When the fault clears
the arm re-syncs and holds; only a command sent after that moves it. A servo that lost torque stays limp and
reported (its goal follows its present position) until ``~/enable_torque`` is called, or, with
``robot.safety.torque_recovery: when_clear``, until its error bits clear; trajectory goals naming it are
rejected. A silent servo leaves only its own joint out of ``joint_states`` (a JointState with fewer names);
the others are still read and published. A failed read writes nothing; a failed port is reopened every
``reconnect_period_s``. The loop rate is graded: WARN below ``rate_warn_fraction`` x the rate, ERROR below
``min_rate_hz``. Nothing here exits the process on a hardware error.

Services: ``~/estop`` (std_srvs/srv/SetBool: true engages the latched e-stop, the arm holds; false releases
it, after which a fresh command is needed), ``~/enable_torque`` (std_srvs/srv/Trigger: torque back on for
the servos that lost it, each holding its present position).

Shutdown (``robot.follower.shutdown`` of robot.yaml, overridden by the ``shutdown`` parameter): ``hold``,
``torque_off`` or ``rest_then_torque_off`` (ease to ``robot.follower.rest_pose`` over ``rest_ease_s`` at the
step limit, then torque off).

Parameters: ``robot_config`` (path of robot.yaml; "" = the config directory's), ``port`` ("" = from the
config), ``calibration`` (LeRobot calibration JSON; "" = from the config), ``rate_hz`` (Hz; 0 = robot.yaml's
``robot.safety.rate_hz``), ``diagnostics_period_s`` (s, 1.0), ``max_consecutive_failures`` (5),
``reconnect_period_s`` (s, 1.0), ``hold_on_servo_fault`` (true), ``goal_tolerance_rad`` (rad, 0.05; a goal's
``goal_tolerance`` overrides it per joint), ``goal_time_tolerance_s`` (s, 1.0; used when the goal's is 0),
``shutdown`` ("" = robot.yaml's), ``check_command_stamp`` (true: a command whose header stamp is older than
the watchdog is refused).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.diagnostics import (
    ERROR,
    OK,
    WARN,
    LoopRateMonitor,
    diagnostic_array,
    diagnostics_publisher,
    status_message,
)
from nodegraph.graph.api import Message, Node, ServerGoalHandle
from nodegraph.graph.declared_params import check_bounds, declare_params
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.control.safety import CommandFilter, EStop, JointLimits, Watchdog
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration_check import describe_drift, drifted_joints
from so101_hardware.config import SHUTDOWN_BEHAVIORS, ShutdownConfig
from so101_hardware.errors import HardwareError
from so101_hardware.robot import ArmState, SO101Arm

from so101_nodes.arm_link import ArmLink, load_arm
from so101_nodes.joint_messages import joint_state_message, joint_vector
from so101_nodes.trajectory import (
    ACTION_NAME,
    CONTROLLER_STATE,
    FJT,
    INVALID_GOAL,
    Outcome,
    TrajectoryError,
    TrajectoryTracker,
    controller_state_message,
    finish_handle,
)


@dataclass(frozen=True)
class DriverParams:
    """Driver parameters (units in the names); read once at start."""

    robot_config: str = ""
    port: str = ""
    calibration: str = ""
    rate_hz: float = 0.0
    diagnostics_period_s: float = 1.0
    max_consecutive_failures: int = 5
    reconnect_period_s: float = 1.0
    hold_on_servo_fault: bool = True
    goal_tolerance_rad: float = 0.05
    goal_time_tolerance_s: float = 1.0
    shutdown: str = ""
    check_command_stamp: bool = True

    @classmethod
    def declare(cls, node: Node) -> DriverParams:
        params = declare_params(node, cls)
        params.validate()
        return params

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        check_bounds(
            "driver", self, positive=("diagnostics_period_s", "reconnect_period_s", "goal_tolerance_rad"),
            non_negative=("goal_time_tolerance_s", "rate_hz"),
        )  # fmt: skip
        if self.max_consecutive_failures < 1:
            raise ValueError(f"driver: max_consecutive_failures must be >= 1, got {self.max_consecutive_failures}")
        if self.shutdown and self.shutdown not in SHUTDOWN_BEHAVIORS:
            raise ValueError(f"driver: shutdown must be '' or one of {SHUTDOWN_BEHAVIORS}, got {self.shutdown!r}")


class Driver:
    """The follower-arm driver node (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = DriverParams.declare(node)
        entry, calibration, config = load_arm(self.params.robot_config, self.params.port, self.params.calibration)
        self.safety = safety = config.safety
        shutdown = config.shutdown
        self.shutdown_config: ShutdownConfig = replace(shutdown, behavior=self.params.shutdown or shutdown.behavior)
        self.arm = SO101Arm(entry.arm, calibration)
        self.link = ArmLink(node, self.arm, self.params.reconnect_period_s, self.params.max_consecutive_failures)
        self.port = self.link.port
        self.rate_hz = self.params.rate_hz or safety.rate_hz
        self.period_s = 1.0 / self.rate_hz
        ranges = twin_ranges()
        self.limits = JointLimits.from_arrays(*self.arm.limits()).intersect(JointLimits(ranges.lower, ranges.upper))
        self.estop = EStop()
        self.filter = CommandFilter(
            self.limits, safety.max_step_rad, Watchdog(safety.watchdog_timeout_s), self.estop, self.period_s
        )
        self.rate = LoopRateMonitor(self.rate_hz, safety.rate_warn_fraction, safety.min_rate_hz)
        self._lock = threading.RLock()  # filter, goal counts, active goal, fault state, link state
        self._active: TrajectoryTracker | None = None
        self._synced_connect = -1  # link.connects value the filter was last re-synced at
        self._counts: npt.NDArray[np.int64] | None = None  # the goal counts last written
        self._present: F64 | None = None  # last present pose (rad), gaps filled with the goal
        self._present_counts: npt.NDArray[np.int64] | None = None  # the same in counts
        self._limp: npt.NDArray[np.bool_] = np.zeros(len(JOINT_NAMES), dtype=bool)
        self.torque_lost: dict[str, str] = {}  # joint -> cause, until torque is enabled again
        self._fault: str | None = None
        self.calibration_drift: dict[str, float] = {}  # joint -> rad outside its range at the last (re)sync
        self._had_command = False
        self._closed = False
        self.rejected_commands = 0
        self.goal_writes = 0

        self.joint_states = node.create_publisher("sensor_msgs/msg/JointState", "joint_states")
        self.controller_state = node.create_publisher(CONTROLLER_STATE, "arm_controller/controller_state")
        self.diagnostics = diagnostics_publisher(node)
        node.create_subscription("sensor_msgs/msg/JointState", "joint_commands", self.on_command)
        node.create_service("std_srvs/srv/SetBool", "~/estop", self.on_estop)
        node.create_service("std_srvs/srv/Trigger", "~/enable_torque", self.on_enable_torque)
        node.create_action_server(FJT, ACTION_NAME, self.execute_trajectory)
        with self._lock:
            self.link.ensure_connected()
        self._timers = [
            node.create_timer(self.period_s, self.on_cycle),
            node.create_timer(self.params.diagnostics_period_s, self.publish_diagnostics),
        ]
        node.logger.info(
            f"driving the arm on {self.port} at {self.rate_hz:g} Hz; commands on {node.resolve('joint_commands')}, "
            f"trajectories on {node.resolve(ACTION_NAME)}; shutdown: {self.shutdown_config.behavior}"
        )

    def latest_state(self) -> ArmState | None:
        """The last successful read (``None`` before the first)."""
        with self._lock:
            return self.link.last_state

    # ------------------------------------------------------------------ control loop
    def on_cycle(self) -> None:
        """One control cycle: sync read -> joint_states -> faults -> safety filter -> sync write.

        The read and the publish hold only the bus / the transport, so that a command arriving meanwhile is
        written without waiting for them.
        """
        now = time.monotonic()
        with self._lock:
            if self._closed:
                return
            self.rate.tick(now)
            if not self.link.ensure_connected():
                return
        state = self.link.read()
        if state is None:  # nothing written: the servos keep the last goal
            return
        self.joint_states.publish(joint_state_message(self.node, state))  # outside the lock: commands go first
        now = time.monotonic()
        written: Message | None = None
        with self._lock:
            if self._closed:
                return
            if self._synced_connect != self.link.connects:
                if state.missing:
                    return  # re-sync needs every joint's present position
                self._resync(state, now)
            present = self._fill(state)
            self._present = present
            self._present_counts = np.where(state.valid, state.counts, self._counts if self._counts is not None else 0)
            self._supervise(state, present, now)
            active = self._active
            if active is not None and active.outcome is None:
                self._feed_trajectory(active, present, now)
            if self._write(present, now):
                written = self._controller_state(state, present)
            if active is not None:
                active.check(now, present)
                if active.outcome is not None and active.outcome.status != "succeed":
                    self.filter.drop_target()  # a failed goal stops where the arm is
                if active.outcome is not None and self._active is active:
                    self._active = None
        if written is not None:
            self.controller_state.publish(written)

    def _controller_state(self, state: ArmState, present: F64) -> Message:
        """This cycle's controller state (under the lock, right after the write): reference = the target followed
        (the goal while holding), feedback = the read, output = the goal written (rad)."""
        assert self._counts is not None
        output = self.arm.converter.to_radians(self._counts.tolist())
        reference = self.filter.active_target()
        velocity = np.where(state.valid, state.velocities, 0.0)
        effort = np.where(state.valid, state.efforts, 0.0)
        return controller_state_message(
            self.node, self.node.stamp(), reference if reference is not None else output, present, velocity, effort,
            output,
        )  # fmt: skip

    def _resync(self, state: ArmState, now: float) -> None:
        """After (re)connecting: hold at the present position; nothing from before is replayed."""
        self._synced_connect = self.link.connects
        self.filter.reset(state.positions, now)
        self._counts = state.counts.copy()
        self._fault = None
        self.torque_lost = {}
        self._limp = np.zeros(len(JOINT_NAMES), dtype=bool)
        if self._active is not None:
            self._active.abort("arm reconnected")
        outside = [
            JOINT_NAMES[j]
            for j in range(len(JOINT_NAMES))
            if not self.limits.lower[j] <= state.positions[j] <= self.limits.upper[j]
        ]
        where = f"; easing {outside} into the limits at the step limit" if outside else ""
        self.node.logger.info(f"synced with the arm at its present pose, holding{where}")
        self.calibration_drift = drifted_joints(
            self.arm.converter, state.counts, self.safety.calibration_margin_rad, state.valid
        )
        if self.calibration_drift:
            self.node.logger.warning(
                f"at startup {describe_drift(self.calibration_drift)}: the calibration may have drifted; "
                "check it with `so101 calibrate --check`"
            )

    def _fill(self, state: ArmState) -> F64:
        """Present positions (6,) rad, joints not read this cycle filled with the previous goal."""
        goal = self.filter.goal
        if goal is None or not state.missing:
            return state.positions.copy()
        return np.where(state.valid, state.positions, goal)

    def _supervise(self, state: ArmState, present: F64, now: float) -> None:
        """Error bits, lost torque, silent servos -> fault hold / limp joints; clearing re-syncs."""
        faults = state.faults()
        for joint in state.limp():
            if joint not in self.torque_lost:
                cause = faults[joint].describe() if joint in faults else "no error bits"
                if joint in self.arm.torque_refused:
                    cause = f"not switched on: {self.arm.torque_refused[joint]}"
                elif not self.arm.config.torque_on_connect:
                    cause = "torque_on_connect is false"
                self.torque_lost[joint] = cause
                self.node.logger.error(f"{joint}: torque lost ({cause}); it stays off until ~/enable_torque")
        if self.safety.torque_recovery == "when_clear":
            clear = [j for j in self.torque_lost if j not in faults and j not in state.missing]
            if clear:
                try:
                    self._enable_torque(clear, "error bits cleared (torque_recovery: when_clear)")
                except HardwareError as exc:  # e.g. outside its calibrated range: stays limp, reported
                    self.node.logger.warning(f"torque not restored for {clear}: {exc}", throttle_duration_sec=5.0)
        self._limp = np.array([j in self.torque_lost for j in JOINT_NAMES])
        reasons = [f"{j} {f.describe()}" for j, f in faults.items()]
        reasons += [f"{j} not answering" for j in state.missing]
        reason = "servo fault: " + ", ".join(reasons) if reasons else None
        if reason is not None and self.params.hold_on_servo_fault:
            if self._fault is None:
                self.node.logger.error(f"{reason}; holding position, commands refused")
            self._fault = reason
            self.filter.set_fault(reason, present)
            if self._active is not None:
                self._active.abort(reason)
        elif self._fault is not None:
            self._fault = None
            self.filter.clear_fault(present, now)
            self.node.logger.info("servo faults cleared; holding where the arm is until a fresh command")

    def _feed_trajectory(self, active: TrajectoryTracker, present: F64, now: float) -> None:
        if active.cancel_requested:
            active.finish("canceled", 0, "canceled")
            return
        limp = [JOINT_NAMES[j] for j in active.joints if JOINT_NAMES[j] in self.torque_lost]
        if limp:
            active.abort(f"torque off on {limp}")
            return
        refusal = self.filter.command(active.setpoint(now), now)
        if refusal is not None:
            active.abort(refusal)

    def _write(self, present: F64, now: float) -> bool:
        """Filter -> counts capped at the step limit in whole counts -> sync write (under the lock); True when
        written."""
        decision = self.filter.step(present, now, self._limp)
        previous = self._counts
        counts = self.arm.converter.to_counts(decision.goal)
        if previous is not None:
            most = self.arm.max_step_counts(self.safety.max_step_rad)
            counts = previous + np.clip(counts - previous, -most, most)
        if self._present_counts is not None:  # a limp servo's goal is where it is, unconverted and unclamped
            counts = np.where(self._limp, self._present_counts, counts)
        if self.link.write_counts(counts):
            self._counts = counts
            self.goal_writes += 1
            return True
        return False

    # ------------------------------------------------------------------ commands
    def on_command(self, msg: Any) -> None:
        """``joint_commands``: a new target (rad), written at once; preempts a running trajectory."""
        now = time.monotonic()
        published: Message | None = None
        with self._lock:
            try:
                base = self.filter.active_target(now)
                if base is None:
                    base = self.filter.goal
                if base is None:
                    raise ValueError("not synced with the arm yet")
                target = joint_vector(msg, base)
                age_s = self._age_s(msg) if self.params.check_command_stamp else 0.0
                refusal = self.filter.command(target, now, age_s)
                if refusal is not None:
                    raise ValueError(refusal)
            except ValueError as exc:
                self.rejected_commands += 1
                self.node.logger.warning(f"rejected command on {self.node.resolve('joint_commands')}: {exc}",
                                         throttle_duration_sec=5.0)  # fmt: skip
                return
            self._had_command = True
            if self._active is not None:
                self._active.abort("preempted by a joint_commands message")
                self._active = None
            state, present = self.link.last_state, self._present
            ready = present is not None and state is not None and self.link.connected and not self._closed
            if ready and present is not None and state is not None and self._write(present, now):
                published = self._controller_state(state, present)
        if published is not None:
            self.controller_state.publish(published)

    def _age_s(self, msg: Any) -> float:
        stamp = msg.header.stamp
        stamp_ns = to_ns(stamp)
        return (self.node.now_ns() - stamp_ns) * 1e-9 if stamp_ns else 0.0

    def on_estop(self, request: Any, response: Any) -> Any:
        """``~/estop``: true engages (latched, the arm holds), false releases (a new command is needed)."""
        with self._lock:
            if request.data:
                self.estop.engage("requested on ~/estop")
                if self._active is not None:
                    self._active.abort("e-stop engaged")
                response.message = "e-stop engaged; holding position"
                self.node.logger.warning(response.message)
            else:
                was = self.estop.engaged
                self.estop.release()
                self.filter.drop_target()
                response.message = "e-stop released; waiting for a new command" if was else "e-stop was not engaged"
                self.node.logger.info(response.message)
        response.success = True
        return response

    def on_enable_torque(self, request: Any, response: Any) -> Any:
        """``~/enable_torque``: torque back on for the servos that lost it, each holding its present position."""
        with self._lock:
            joints = list(self.torque_lost)
            if not joints:
                response.success, response.message = True, "torque is on for every servo"
            elif not self.link.connected:
                response.success, response.message = False, f"arm not connected on {self.port}"
            else:
                try:
                    self._enable_torque(joints, "requested on ~/enable_torque")
                    response.success, response.message = True, f"torque on again for {joints}; holding"
                except HardwareError as exc:
                    response.success, response.message = False, f"enable torque failed: {exc}"
        return response

    def _enable_torque(self, joints: list[str], why: str) -> None:
        self.arm.enable_torque(tuple(joints))
        for joint in joints:
            self.torque_lost.pop(joint, None)
        self.filter.drop_target()  # torque back never moves the arm toward an old target
        self.node.logger.info(f"torque on again for {joints} ({why}); holding where they are")

    # ------------------------------------------------------------------ trajectories
    def _refusal(self, joints: list[int]) -> str | None:
        if self.estop.engaged:
            return f"e-stop engaged ({self.estop.reason})"
        if not self.link.connected or self.link.last_state is None or self.filter.goal is None:
            return f"arm not connected on {self.port}"
        if self.link.failing:
            return f"bus failing: {self.link.last_error}"
        if self._fault is not None:
            return f"{self._fault}: holding"
        limp = {JOINT_NAMES[j]: self.torque_lost[JOINT_NAMES[j]] for j in joints if JOINT_NAMES[j] in self.torque_lost}
        if limp:
            return "torque off on " + ", ".join(f"{j} ({c})" for j, c in limp.items()) + "; call ~/enable_torque"
        return None

    def execute_trajectory(self, handle: ServerGoalHandle) -> Message:
        """FollowJointTrajectory execute callback (goal thread): followed by the control loop until done."""
        with self._lock:
            try:
                start = self.filter.active_target()
                start = start if start is not None else self.filter.goal
                if start is None:
                    raise TrajectoryError(f"cannot execute: arm not connected on {self.port}", INVALID_GOAL)
                tracker = TrajectoryTracker.accept(
                    handle,
                    start,
                    self.limits,
                    time.monotonic(),
                    self.node.now_ns(),
                    self.params.goal_tolerance_rad,
                    self.params.goal_time_tolerance_s,
                )
                refusal = self._refusal(tracker.joints)
                if refusal is not None:
                    raise TrajectoryError(f"cannot execute: {refusal}", INVALID_GOAL)
            except TrajectoryError as exc:
                self.node.logger.warning(f"trajectory rejected: {exc}")
                return finish_handle(self.node, handle, Outcome("abort", exc.code, str(exc)))
            if self._active is not None:
                self._active.abort("preempted by a new goal")
            self._active = tracker
            if self._closed:
                tracker.abort("driver shutting down")
        header = lambda: self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")  # noqa: E731
        return tracker.serve(self.node, self._lock, header)

    # ------------------------------------------------------------------ diagnostics
    def diagnostics_message(self) -> Message:
        """The DiagnosticArray: one status for the arm (link, faults, torque, e-stop, holds, loop rate), one per
        servo."""
        now = time.monotonic()
        with self._lock:
            state = self.link.last_state
            hold = self.filter.hold_reason if self.filter.synced else None
            level, message = self.link.problem() or (OK, "ok")
            rate_problem = self.rate.grade(now) if self.link.connected else None
            if level == OK and self._fault is not None:
                level, message = ERROR, f"{self._fault}; holding, commands refused"
            elif level == OK and self.torque_lost:
                lost = ", ".join(f"{j} ({c})" for j, c in self.torque_lost.items())
                level, message = ERROR, f"torque lost on {lost}; limp until ~/enable_torque"
            elif level == OK and state is not None and state.faults():
                desc = ", ".join(f"{j} {f.describe()}" for j, f in state.faults().items())
                level, message = ERROR, f"servo fault: {desc}"
            elif level == OK and self.estop.engaged:
                level, message = WARN, f"e-stop engaged ({self.estop.reason}); holding"
            elif level == OK and hold is not None:
                level = WARN if hold.startswith("watchdog") and self._had_command else OK
                message = f"holding ({hold})"
            if rate_problem is not None and rate_problem[0] >= level:
                level, message = rate_problem[0], rate_problem[1] + ("" if message == "ok" else f"; {message}")
            values = {
                **self.link.values(),
                "rate_hz": f"{self.rate.rate(now):.1f}",
                "target_rate_hz": f"{self.rate_hz:g}",
                "estop": str(self.estop.engaged).lower(),
                "holding": hold or "",
                "torque_lost": ",".join(self.torque_lost),
                "trajectory_active": str(self._active is not None).lower(),
                "rejected_commands": str(self.rejected_commands),
                "refused_commands": str(self.filter.refused),
                "goal_writes": str(self.goal_writes),
            }
            statuses = [
                status_message(self.node, "arm", level, message, f"feetech:{self.port}", values),
                self._calibration_status(),
            ]
            statuses += self.link.servo_statuses(self.safety, self.torque_lost)
        return diagnostic_array(self.node, statuses)

    def _calibration_status(self) -> Message:
        """WARN while the last (re)sync found joints outside their calibrated ranges (beyond the margin)."""
        drift = self.calibration_drift
        if drift:
            level, message = WARN, f"at startup {describe_drift(drift)}: run `so101 calibrate --check`"
        else:
            level, message = OK, "joints inside their calibrated ranges at startup"
        values = {j: f"{drift.get(j, 0.0):+.4f}" for j in JOINT_NAMES}
        values["margin_rad"] = f"{self.safety.calibration_margin_rad:g}"
        return status_message(self.node, "calibration", level, message, f"feetech:{self.port}", values)

    def publish_diagnostics(self) -> None:
        self.diagnostics.publish(self.diagnostics_message())

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop the loop, then hold, torque off, or ease to the rest pose and torque off (robot.yaml's
        ``robot.follower.shutdown``); close the bus."""
        behavior = self.shutdown_config.behavior
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for timer in self._timers:
                with contextlib.suppress(Exception):  # the node may already be destroyed
                    timer.cancel()
            if self._active is not None:
                self._active.abort("driver shutting down")
            if not self.link.connected:
                return
            try:
                if behavior == "rest_then_torque_off" and self._fault is None and not self.estop.engaged:
                    self._ease_to_rest()
                if self.shutdown_config.torque_off:
                    self.arm.set_torque(False)
            except HardwareError as exc:
                self.node.logger.error(f"shutdown: {exc}")
            finally:
                self.link.close(disable_torque=self.shutdown_config.torque_off)
        self.node.logger.info(f"arm released ({behavior})")

    def _ease_to_rest(self) -> None:
        """Move to the rest pose over ``rest_ease_s`` through the command filter (clamped, step-limited)."""
        start = self.filter.goal
        if start is None:
            return
        rest = np.array(self.shutdown_config.rest_pose)
        steps = max(1, round(self.shutdown_config.rest_ease_s * self.rate_hz))
        for k in range(1, steps + round(0.5 * self.rate_hz) + 1):
            now = time.monotonic()
            self.filter.command(start + (rest - start) * min(1.0, k / steps), now)
            present = self._present if self._present is not None else start
            self._write(present, now)
            time.sleep(self.period_s)
        self.node.logger.info("eased to the rest pose")


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(Driver, "driver", args)


if __name__ == "__main__":
    raise SystemExit(main())
