"""so101_ik: the IK and motion-planning services of the SO-101 (the cuRobo-service role of the design).

Services (names relative; ``so101/...`` resolves to ``/so101/...`` at the root namespace):
  - ``so101/solve_ik`` (so101_msgs/srv/SolveIK): ``target`` = gripper frame (URDF ``gripper_frame_link``,
    z along the jaws) in the base frame, m + unit quaternion; ``seed_joints`` 5 (or 6) rad, empty = the
    latest ``joint_states``; ``partial_pose`` frees the approach axis' out-of-plane swing (ik.yaml). Answers
    ``joints`` (5), ``success``, the residual ``position_error`` m / ``rotation_error`` rad and a message;
    an unreachable or malformed target gives ``success: false`` and the reason, never an exception.
  - ``so101/plan_motion`` (so101_msgs/srv/PlanMotion): from ``start_joints`` (empty = current) to
    ``goal_pose`` (partial pose, IK seeded at the start) or ``goal_joints``, a ``trajectory_msgs/
    JointTrajectory`` of the 5 arm joints at ``rate_hz``, every joint under ``max_velocity`` rad/s (0 = the
    parameter's), collision-free against the table (mat), the rack and a held vial (checked on the twin's
    model, kinematically, at the latest object poses): first the straight joint path; if it collides,
    lift the tool ``clearance`` m above the rack top, move there, descend. Ready for
    ``arm_controller/follow_joint_trajectory`` of the sim or the driver unchanged.

Subscriptions: ``joint_states`` (current joints), ``sim/objects/vial/pose`` and ``sim/objects/rack/pose``
(geometry_msgs/PoseStamped, world; without them the nominal scene of sim.yaml is assumed).

Parameters: ``backend`` ("" = ik.yaml's; ``batched`` runs on CUDA when present), ``max_velocity`` (rad/s,
1.0), ``rate_hz`` (trajectory points per s, 30), ``clearance`` (m, 0.04), ``check_step`` (rad between
collision-checked configurations, 0.02).
"""

# ruff: noqa: N803, N806  (math notation: T pose)

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from nodegraph.graph.api import Node
from nodegraph.graph.declared_params import declare_params
from nodegraph.time import s_to_ns, sec_nanosec
from so101_core.arrays import F64
from so101_core.geometry import quat_to_mat
from so101_core.robot_spec import GRIPPER_INDEX, JOINT_NAMES
from so101_core.sim.randomization import DRConfig
from so101_core.sim.scene import RACK, VIAL
from so101_core.sim.twin import Twin

from .errors import SkillGenError
from .frames import pose_to_matrix, rigid_inverse
from .ik import IKSolver, load_ik_config, load_ik_solver
from .kinematics import ArmKinematics
from .transit import CollisionChecker, HeldObject

ARM = tuple(JOINT_NAMES[:GRIPPER_INDEX])


@dataclass(frozen=True)
class IKServiceParams:
    """Parameters (units in the module docstring); read once at start."""

    backend: str = ""
    max_velocity: float = 1.0
    rate_hz: float = 30.0
    clearance: float = 0.04
    check_step: float = 0.02

    @classmethod
    def declare(cls, node: Node) -> IKServiceParams:
        p = declare_params(node, cls, read_only=False)
        for name in ("max_velocity", "rate_hz", "check_step"):
            if not getattr(p, name) > 0:
                raise SkillGenError(f"parameter {name}: must be > 0, got {getattr(p, name)}")
        return p


class PlanningFailed(SkillGenError):  # noqa: N818 - a result, reported in the response
    """No collision-free path (or no IK for the goal); the message says why."""


def pose_msg_to_matrix(pose: Any) -> F64:
    """geometry_msgs/Pose → (4, 4); raises ValueError for non-finite values or a zero quaternion."""
    p, q = pose.position, pose.orientation
    pos = np.array([p.x, p.y, p.z], dtype=np.float64)
    quat = np.array([q.w, q.x, q.y, q.z], dtype=np.float64)
    n = float(np.linalg.norm(quat))
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))) or n < 1e-9:
        raise ValueError(f"target pose must be finite with a nonzero quaternion, got {pos.tolist()} {quat.tolist()}")
    T = np.eye(4)
    T[:3, :3] = quat_to_mat(quat / n)
    T[:3, 3] = pos
    return T


class IKServiceNode:
    """``so101/solve_ik`` and ``so101/plan_motion`` on one solver and one kinematic copy of the scene."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = IKServiceParams.declare(node)
        cfg = load_ik_config()
        backend = self.params.backend or cfg.backend
        device = "cuda" if backend == "batched" and torch.cuda.is_available() else "cpu"
        self.kin = ArmKinematics.from_urdf()
        self.solver: IKSolver = load_ik_solver(cfg, kinematics=self.kin, backend=backend, device=device)
        self.backend = f"{backend} ({device})"
        self.twin = Twin(dr=DRConfig.disabled())  # the scene model; its state is set from the graph, never stepped
        self.twin.reset()
        self.checker = CollisionChecker(self.twin)
        self._lock = threading.Lock()
        self._q = np.asarray(self.twin.config.robot.home, dtype=np.float64)
        self._objects: dict[str, tuple[F64, F64]] = {}
        node.create_subscription("sensor_msgs/msg/JointState", "joint_states", self._on_joints)
        for name in (VIAL, RACK):
            node.create_subscription("geometry_msgs/msg/PoseStamped", f"sim/objects/{name}/pose", self._pose_cb(name))
        node.create_service("so101_msgs/srv/SolveIK", "so101/solve_ik", self._solve_ik)
        node.create_service("so101_msgs/srv/PlanMotion", "so101/plan_motion", self._plan_motion)
        node.logger.info(f"ready: so101/solve_ik, so101/plan_motion on the {self.backend} IK backend")

    # ------------------------------------------------------------------ state from the graph
    def _on_joints(self, msg: Any) -> None:
        names = list(msg.name)
        pos = list(msg.position)
        with self._lock:
            for i, n in enumerate(JOINT_NAMES):
                if n in names and names.index(n) < len(pos):
                    self._q[i] = float(pos[names.index(n)])

    def _pose_cb(self, name: str) -> Callable[[Any], None]:
        return lambda msg: self._on_pose(name, msg)

    def _on_pose(self, name: str, msg: Any) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        with self._lock:
            self._objects[name] = (np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z]))

    def _start(self, joints: Any) -> F64:
        """(6,) start joints: the request's 5 or 6 values, else the latest joint_states."""
        given = np.asarray(list(joints), dtype=np.float64)
        with self._lock:
            q = self._q.copy()
        if len(given) == 0:
            return q
        if len(given) not in (GRIPPER_INDEX, len(JOINT_NAMES)) or not np.all(np.isfinite(given)):
            raise ValueError(
                f"joints must be {GRIPPER_INDEX} or {len(JOINT_NAMES)} finite values, got {given.tolist()}"
            )
        q[: len(given)] = given
        return q

    # ------------------------------------------------------------------ IK
    def _ik(self, T_urdf: F64, seed: F64, partial: bool) -> tuple[F64, bool, float, float]:
        res = self.solver.solve(
            torch.as_tensor(T_urdf[None], dtype=torch.float64),
            torch.as_tensor(seed[None, :GRIPPER_INDEX], dtype=torch.float64),
            partial_pose=partial,
        )
        q = res.q.detach().cpu().numpy()[0].astype(np.float64)
        return q, bool(res.success[0]), float(res.position_error[0]), float(res.rotation_error[0])

    def _solve_ik(self, request: Any, response: Any) -> Any:
        try:
            T = pose_msg_to_matrix(request.target)
            seed = self._start(request.seed_joints)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            response.position_error = response.rotation_error = float("nan")
            return response
        q, ok, pe, re = self._ik(T, seed, bool(request.partial_pose))
        response.joints = np.asarray(q, dtype=np.float64)
        response.success, response.position_error, response.rotation_error = ok, pe, re
        response.message = (
            f"solved ({self.backend})"
            if ok
            else f"unreachable: residual {pe * 1000:.1f} mm / {math.degrees(re):.1f} deg (best effort in joints)"
        )
        return response

    # ------------------------------------------------------------------ planning
    def _sync_scene(self, start: F64) -> HeldObject | None:
        """Put the scene model at the latest object poses and ``start``; the held vial, if the jaws hold it."""
        tw = self.twin
        with self._lock:
            objects = dict(self._objects)
        for name, pose in objects.items():
            tw.set_object_pose(name, pose)
        tw.set_joint_positions(start)
        if not tw.jaw_contacts().both:
            return None
        site = tw.index.ee_site
        ee = np.eye(4)
        ee[:3, :3] = tw.data.site_xmat[site].reshape(3, 3)
        ee[:3, 3] = tw.data.site_xpos[site]
        return HeldObject(VIAL, rigid_inverse(ee) @ pose_to_matrix(np.concatenate(tw.object_poses()[VIAL])))

    def _segment(self, a: F64, b: F64) -> F64:
        n = max(2, math.ceil(float(np.max(np.abs(b - a))) / self.params.check_step) + 1)
        return np.asarray(np.linspace(a, b, n), dtype=np.float64)

    def _lifted(self, q: F64, z: float) -> F64:
        """Arm joints (5,) with the tool point raised to height ``z`` (m), same orientation."""
        T = self.kin.fk(torch.as_tensor(q[None], dtype=torch.float64))[0].numpy()
        T[2, 3] = max(T[2, 3], z)
        sol, ok, pe, _ = self._ik(T, np.array([*q, 0.0]), True)
        if not ok:
            raise PlanningFailed(f"cannot lift the gripper to z={z:.3f} m (IK residual {pe * 1000:.1f} mm)")
        return sol

    def _free(self, path: F64, grip: float, held: HeldObject | None) -> bool:
        return self.checker.first_collision(path, grip, held) is None

    def plan(self, start: F64, goal: F64) -> F64:
        """Collision-free joint path (N, 5) from ``start`` (6,) to arm joints ``goal`` (5,)."""
        held = self._sync_scene(start)
        grip = float(start[GRIPPER_INDEX])
        q0 = start[:GRIPPER_INDEX]
        lo, hi = self.kin.lower.numpy(), self.kin.upper.numpy()
        if np.any(goal < lo - 1e-6) or np.any(goal > hi + 1e-6):
            raise PlanningFailed(f"goal joints {np.round(goal, 3).tolist()} outside the joint limits")
        final = self._segment(goal, goal)
        if not self._free(final, grip, held):
            raise PlanningFailed("the goal configuration itself is in collision")
        direct = self._segment(q0, goal)
        if self._free(direct, grip, held):
            return direct
        rack_top = self.twin.object_poses()[RACK].position[2] + self.twin.config.rack.top_height
        z = rack_top + self.params.clearance + (0.1 if held is not None else 0.0)
        up0, up1 = self._lifted(q0, z), self._lifted(goal, z)
        legs = [self._segment(q0, up0), self._segment(up0, up1), self._segment(up1, goal)]
        for i, leg in enumerate(legs):
            if not self._free(leg, grip, held):
                raise PlanningFailed(f"no collision-free path: the {('lift', 'move', 'descend')[i]} leg collides")
        return np.concatenate([legs[0], legs[1][1:], legs[2][1:]])

    def timed(self, path: F64, vmax: float) -> tuple[list[F64], list[float]]:
        """Points at ``rate_hz`` along ``path`` (N, 5), every joint ≤ ``vmax`` rad/s (linear in arc)."""
        steps = np.max(np.abs(np.diff(path, axis=0)), axis=1)
        t = np.concatenate([[0.0], np.cumsum(steps / vmax)])
        total = float(t[-1])
        n = max(1, math.ceil(total * self.params.rate_hz))
        times = np.linspace(total / n, total, n) if total > 0 else np.array([1.0 / self.params.rate_hz])
        pts = [np.array([np.interp(tt, t, path[:, j]) for j in range(path.shape[1])]) for tt in times]
        return pts, [float(x) for x in times]

    def _plan_motion(self, request: Any, response: Any) -> Any:
        response.trajectory.joint_names = list(ARM)
        try:
            start = self._start(request.start_joints)
            if request.use_goal_pose:
                T = pose_msg_to_matrix(request.goal_pose)
                goal, ok, pe, re = self._ik(T, start, True)
                if not ok:
                    raise PlanningFailed(
                        f"goal pose unreachable: residual {pe * 1000:.1f} mm / {math.degrees(re):.1f} deg"
                    )
            else:
                g = np.asarray(list(request.goal_joints), dtype=np.float64)
                if len(g) not in (GRIPPER_INDEX, len(JOINT_NAMES)) or not np.all(np.isfinite(g)):
                    raise ValueError(f"goal_joints must be 5 or 6 finite values, got {g.tolist()}")
                goal = g[:GRIPPER_INDEX]
            vmax = float(request.max_velocity) or self.params.max_velocity
            if not (math.isfinite(vmax) and vmax > 0):
                raise ValueError(f"max_velocity must be > 0, got {request.max_velocity}")
            path = self.plan(start, goal)
            points, times = self.timed(path, vmax)
        except (ValueError, PlanningFailed) as exc:
            response.success, response.message = False, str(exc)
            return response
        msgs = []
        for p, t in zip(points, times, strict=True):
            sec, nanosec = sec_nanosec(s_to_ns(t))
            msgs.append(
                self.node.message(
                    "trajectory_msgs/msg/JointTrajectoryPoint",
                    positions=np.asarray(p, dtype=np.float64),
                    time_from_start=self.node.message("builtin_interfaces/msg/Duration", sec=sec, nanosec=nanosec),
                )
            )
        response.trajectory.points = msgs
        response.success = True
        response.message = f"{len(msgs)} points over {times[-1]:.2f} s, collision-free ({self.backend} IK)"
        return response


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(IKServiceNode, "so101_ik", args)


if __name__ == "__main__":
    raise SystemExit(main())
