"""FollowJointTrajectory goals as trajectories: validation, result codes and interpolation (shared by the
driver and the sim node, so both check goals the same way)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.graph.api import Message, Node
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.safety import JointLimits

FloatArray = npt.NDArray[np.float64]


FJT = "control_msgs/action/FollowJointTrajectory"
ACTION_NAME = "arm_controller/follow_joint_trajectory"


# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP = 0, -1, -2, -3
PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = -4, -5


def duration_s(duration: Any) -> float:
    return float(duration.sec) + float(duration.nanosec) * 1e-9


def duration_msg(node: Node, seconds: float) -> Message:
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
            t = duration_s(pt.time_from_start)
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


def joint_tolerances(entries: Any, default: float) -> FloatArray:
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
    stamp_ns = int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
    delay = (stamp_ns - now_ns) * 1e-9 if stamp_ns else 0.0
    if delay + trajectory.duration_s < 0:
        raise TrajectoryError("trajectory ends before now (old header stamp)", OLD_HEADER_TIMESTAMP)
    return delay
