"""driver: the real SO-101 follower arm on its Feetech bus.

A control-loop timer (``rate_hz``) does one sync read (positions, speeds, health of the six servos) and one
sync write (goal positions) per cycle and publishes ``joint_states`` (rad, canonical names). Targets come
from ``joint_commands`` (JointState positions, by name or in full canonical order) or from the
``arm_controller/follow_joint_trajectory`` action (points interpolated over time, cancel checked every
cycle). Every goal passes the :class:`~so101_hardware.safety.CommandFilter`: e-stop, command
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
``hold_on_servo_fault`` (true), ``goal_tolerance_rad`` (rad, 0.05; a goal's ``goal_tolerance`` overrides it per
joint), ``goal_time_tolerance_s`` (s, 1.0; used when the goal's is 0),
``shutdown_behavior`` ("hold" | "torque_off"), ``ease_to_rest`` (false: on shutdown, first move to
``rest_pose``, 6 values in rad, default all 0, over ``rest_ease_s`` s, default 2.0).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.graph.api import Message, Node, ServerGoalHandle
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.errors import HardwareError
from so101_hardware.robot import ArmState, SO101Arm
from so101_hardware.safety import CommandFilter, EStop, JointLimits, Watchdog

from so101_nodes.arm_link import ArmLink, load_arm
from so101_nodes.diagnostics import (
    DIAGNOSTICS_QOS,
    ERROR,
    OK,
    WARN,
    diagnostic_array,
    status_message,
)
from so101_nodes.joint_messages import joint_state_message, joint_vector
from so101_nodes.params import declare_params
from so101_nodes.trajectory import (
    ACTION_NAME,
    FJT,
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    PATH_TOLERANCE_VIOLATED,
    SUCCESSFUL,
    Trajectory,
    TrajectoryError,
    duration_msg,
    duration_s,
    joint_tolerances,
    start_delay_s,
)

FloatArray = npt.NDArray[np.float64]

SHUTDOWN_BEHAVIORS = ("hold", "torque_off")
FEEDBACK_EVERY = 5  # action feedback every N control cycles


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
        params = declare_params(node, cls)
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


@dataclass
class _ActiveGoal:
    """The trajectory being executed; shared by the goal thread and the control loop (under the lock)."""

    trajectory: Trajectory
    start: float  # time.monotonic() of t = 0
    abort_reason: str | None = None
    done: bool = False


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
                self.node.logger.warning(f"rejected command on {self.node.resolve('joint_commands')}: {exc}",
                                         throttle_duration_sec=5.0)  # fmt: skip
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
                delay = start_delay_s(goal, trajectory, self.node.now_ns())
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

    def _follow(self, handle: ServerGoalHandle, active: _ActiveGoal, goal: Any, result: Any) -> Message:
        traj = active.trajectory
        joints = list(traj.joints)
        goal_tol = joint_tolerances(goal.goal_tolerance, self.params.goal_tolerance_rad)
        path_tol = joint_tolerances(goal.path_tolerance, math.inf)
        time_tol = duration_s(goal.goal_time_tolerance) or self.params.goal_time_tolerance_s
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
                error = desired - actual  # the sign control_msgs uses
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
                time_from_start=duration_msg(self.node, t),
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
                with contextlib.suppress(Exception):  # the node may already be destroyed
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
    from nodegraph.transport.runtime import run_node

    return run_node(Driver, "driver", args)


if __name__ == "__main__":
    raise SystemExit(main())
