"""FollowJointTrajectory goals as trajectories: validation, result codes, interpolation and the following of
a goal (:class:`TrajectoryTracker`: stamp check, setpoints, path / goal / time tolerances, feedback, the
result), shared by the driver and the sim node so both answer goals the same way."""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from nodegraph.graph.api import Message, Node, ServerGoalHandle
from nodegraph.time import s_to_ns, sec_nanosec, to_ns, to_s
from so101_core.arrays import F64
from so101_core.control.safety import JointLimits
from so101_core.robot_spec import JOINT_NAMES

FJT = "control_msgs/action/FollowJointTrajectory"
ACTION_NAME = "arm_controller/follow_joint_trajectory"
CONTROLLER_STATE = "control_msgs/msg/JointTrajectoryControllerState"


# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP = 0, -1, -2, -3
PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = -4, -5


def duration_msg(node: Node, seconds: float) -> Message:
    sec, nanosec = sec_nanosec(max(0, s_to_ns(seconds)))
    return node.message("builtin_interfaces/msg/Duration", sec=sec, nanosec=nanosec)


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

    times: F64
    positions: F64
    velocities: F64 | None
    joints: tuple[int, ...]

    @property
    def duration_s(self) -> float:
        return float(self.times[-1])

    @property
    def final(self) -> F64:
        return self.positions[-1]

    def sample(self, t_s: float) -> F64:
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
    def from_goal(cls, goal: Any, start: F64, limits: JointLimits) -> Trajectory:
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
        vel_rows: list[F64] = [np.zeros(len(JOINT_NAMES))]
        with_velocities = all(len(pt.velocities) for pt in traj.points)
        for i, pt in enumerate(traj.points):
            t = to_s(pt.time_from_start)
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


def joint_tolerances(entries: Any, default: float) -> F64:
    """Per-joint tolerance (6,) from control_msgs/JointTolerance entries: > 0 sets it, < 0 means none (inf),
    0 keeps ``default``."""
    tol = np.full(len(JOINT_NAMES), default)
    for e in entries:
        if e.name in JOINT_NAMES and e.position > 0:
            tol[JOINT_NAMES.index(e.name)] = e.position
        elif e.name in JOINT_NAMES and e.position < 0:
            tol[JOINT_NAMES.index(e.name)] = math.inf
    return tol


def start_delay_s(goal: Any, trajectory: Trajectory, now_ns: int) -> float:
    """Seconds from ``now_ns`` until the goal's ``header.stamp`` (0 for a zero stamp: start now).

    Raises:
        TrajectoryError: OLD_HEADER_TIMESTAMP when the whole trajectory ends before now.
    """
    stamp = goal.trajectory.header.stamp
    stamp_ns = to_ns(stamp)
    delay = (stamp_ns - now_ns) * 1e-9 if stamp_ns else 0.0
    if delay + trajectory.duration_s < 0:
        raise TrajectoryError("trajectory ends before now (old header stamp)", OLD_HEADER_TIMESTAMP)
    return delay


@dataclass(frozen=True)
class Outcome:
    """How a goal ended: ``status`` ``succeed`` | ``abort`` | ``canceled``, the result code and text."""

    status: str
    code: int
    text: str


@dataclass
class TrajectoryTracker:
    """One accepted goal being followed; the control loop (driver cycle, sim step) calls :meth:`setpoint` and
    :meth:`check` under its lock, the goal thread calls :meth:`serve`. Times are seconds on the loop's clock
    (monotonic for the driver, sim time for the twin).

    Attributes:
        handle: the action goal handle.
        trajectory: the validated trajectory.
        start_s: loop-clock time of ``t = 0``.
        goal_tol / path_tol: (6,) rad; ``inf`` = none.
        time_tol: s allowed after the trajectory's end to reach the goal tolerance.
    """

    handle: ServerGoalHandle
    trajectory: Trajectory
    start_s: float
    goal_tol: F64
    path_tol: F64
    time_tol: float
    outcome: Outcome | None = None
    done: threading.Event = field(default_factory=threading.Event)
    t_s: float = 0.0
    desired: F64 = field(default_factory=lambda: np.zeros(len(JOINT_NAMES)))
    actual: F64 = field(default_factory=lambda: np.zeros(len(JOINT_NAMES)))

    @classmethod
    def accept(
        cls,
        handle: ServerGoalHandle,
        start: F64,
        limits: JointLimits,
        now_s: float,
        now_ns: int,
        goal_tolerance_rad: float,
        goal_time_tolerance_s: float,
        max_stamp_ahead_s: float = math.inf,
    ) -> TrajectoryTracker:
        """Validate ``handle.request`` from ``start`` (6,) rad at ``now_s`` (loop clock) / ``now_ns`` (the clock
        of ``header.stamp``).

        Raises:
            TrajectoryError: invalid goal, old stamp, or a stamp more than ``max_stamp_ahead_s`` ahead.
        """
        goal = handle.request
        trajectory = Trajectory.from_goal(goal, start, limits)
        delay = start_delay_s(goal, trajectory, now_ns)
        if delay > max_stamp_ahead_s:
            raise TrajectoryError(
                f"header.stamp is {delay:.0f} s ahead of the clock: stamp with /clock time (use_sim_time) "
                "or leave it zero",
                INVALID_GOAL,
            )
        return cls(
            handle=handle,
            trajectory=trajectory,
            start_s=now_s + max(0.0, delay),
            goal_tol=joint_tolerances(goal.goal_tolerance, goal_tolerance_rad),
            path_tol=joint_tolerances(goal.path_tolerance, math.inf),
            time_tol=to_s(goal.goal_time_tolerance) or goal_time_tolerance_s,
        )

    @property
    def joints(self) -> list[int]:
        return list(self.trajectory.joints)

    @property
    def cancel_requested(self) -> bool:
        return bool(self.handle.is_cancel_requested)

    def finish(self, status: str, code: int, text: str) -> None:
        """Set the outcome once (later calls are ignored) and wake :meth:`serve`."""
        if self.outcome is None:
            self.outcome = Outcome(status, code, text)
            self.done.set()

    def abort(self, reason: str, code: int = INVALID_GOAL) -> None:
        self.finish("abort", code, f"aborted: {reason}" if code == INVALID_GOAL else reason)

    def setpoint(self, now_s: float) -> F64:
        """Desired positions (6,) rad at loop time ``now_s``."""
        return self.trajectory.sample(now_s - self.start_s)

    def check(self, now_s: float, actual: F64) -> None:
        """Path tolerance while running, goal tolerance at the end, the time tolerance after it; sets the
        outcome when the goal succeeded or failed (the caller then stops the arm where it is on a failure)."""
        if self.outcome is not None:
            return
        traj, joints = self.trajectory, self.joints
        t = now_s - self.start_s
        desired = traj.sample(t)
        self.t_s, self.desired, self.actual = t, desired, np.array(actual, dtype=np.float64)
        error = np.abs(self.actual - desired)[joints]
        if 0 <= t <= traj.duration_s and np.any(error > self.path_tol[joints]):
            bad = JOINT_NAMES[joints[int(np.argmax(error - self.path_tol[joints]))]]
            self.finish("abort", PATH_TOLERANCE_VIOLATED, f"path tolerance violated on {bad} at t={t:.2f} s")
            return
        final_err = np.abs(self.actual - traj.final)[joints]
        if t >= traj.duration_s and np.all(final_err <= self.goal_tol[joints]):
            self.finish("succeed", SUCCESSFUL, "")
        elif t > traj.duration_s + self.time_tol:
            k = int(np.argmax(final_err - self.goal_tol[joints]))
            self.finish(
                "abort",
                GOAL_TOLERANCE_VIOLATED,
                f"goal not reached within {self.time_tol:.2f} s: "
                f"{JOINT_NAMES[joints[k]]} off by {final_err[k]:.3f} rad",
            )

    def serve(self, node: Node, lock: Any, header: Callable[[], Message], feedback_period_s: float = 0.05) -> Message:
        """Goal thread: publish feedback every ``feedback_period_s`` until the outcome, then finish the handle and
        return the result. ``lock`` guards the fields the control loop writes; ``header`` stamps feedback."""
        names = [JOINT_NAMES[j] for j in self.joints]
        while not self.done.wait(feedback_period_s):
            with lock:
                t, desired, actual = self.t_s, self.desired.copy(), self.actual.copy()
            with contextlib.suppress(Exception):  # feedback is best effort
                self.handle.publish_feedback(feedback_message(node, header(), names, self.joints, desired, actual, t))
        assert self.outcome is not None
        return finish_handle(node, self.handle, self.outcome)


def finish_handle(node: Node, handle: ServerGoalHandle, outcome: Outcome) -> Message:
    """Succeed / abort / cancel ``handle`` as ``outcome`` says; the result message (aborts are logged)."""
    result = node.message(f"{FJT}_Result")
    result.error_code, result.error_string = outcome.code, outcome.text
    # The zenoh action server answers a get_result that arrives between the terminal state and the callback's
    # return with an empty result; storing it first closes that window (remove once the server stores it).
    with contextlib.suppress(AttributeError):
        handle.result = result  # type: ignore[attr-defined]
    {"succeed": handle.succeed, "abort": handle.abort, "canceled": handle.canceled}[outcome.status]()
    if outcome.status == "abort":
        node.logger.warning(f"trajectory {outcome.text}")
    return result


def feedback_message(
    node: Node, header: Message, names: list[str], joints: list[int], desired: F64, actual: F64, t: float
) -> Message:
    """FollowJointTrajectory feedback for the goal's joints; ``error = desired - actual`` as control_msgs defines."""
    since = duration_msg(node, t)

    def point(values: F64) -> Message:
        positions = values[joints].astype(np.float64)
        return node.message("trajectory_msgs/msg/JointTrajectoryPoint", positions=positions, time_from_start=since)

    return node.message(
        f"{FJT}_Feedback",
        header=header,
        joint_names=names,
        desired=point(desired),
        actual=point(actual),
        error=point(desired - actual),
    )


def controller_state_message(
    node: Node, stamp: Message, reference: F64, positions: F64, velocities: F64, efforts: F64, output: F64
) -> Message:
    """JointTrajectoryControllerState of one control cycle, all six joints (rad, rad/s, N·m): ``reference``
    the target followed, ``feedback`` the measurement, ``error = reference - feedback``, ``output`` the goal
    sent to the servos."""

    def point(**fields: Any) -> Message:
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in fields.items()}
        return node.message("trajectory_msgs/msg/JointTrajectoryPoint", **arrays)

    return node.message(
        CONTROLLER_STATE,
        header=node.message("std_msgs/msg/Header", stamp=stamp, frame_id=""),
        joint_names=list(JOINT_NAMES),
        reference=point(positions=reference),
        feedback=point(positions=positions, velocities=velocities, effort=efforts),
        error=point(positions=np.asarray(reference) - np.asarray(positions)),
        output=point(positions=output),
        speed_scaling_factor=1.0,
    )
