"""sim: the MuJoCo digital twin as a node, with the driver's interface so that consumers cannot tell sim from real.

A stepping thread advances the :class:`~so101_core.sim.twin.Twin` one control period (``physics.control_hz``
of sim.yaml, 30 Hz) at a time, paced at ``real_time_factor`` × real time (0 = as fast as possible). Every
message is stamped with the sim clock (ns since the node started; it keeps running across resets), which is
published on ``/clock`` for ``use_sim_time`` consumers. Cameras render on a second thread
(:mod:`~so101_nodes.sim_rendering`), so rendering never delays ``joint_states``.

The twin is the nominal one (sim.yaml and the robot MJCF), or, when ``robot_id`` names an arm, that arm's
identified twin (``config/arms/<robot_id>.yaml`` of ``so101 sysid fit``: its servo gains, joint friction and
armature, dead band and latency where they differ from the nominal).

Commands pass the driver's :class:`~so101_core.control.safety.CommandFilter` with robot.yaml's
``robot.safety`` (step limit as a speed, ``max_step_rad`` x ``rate_hz``, applied per sim step; clamps to the
twin's ctrlrange that only shrink motion; the command watchdog in wall-clock seconds, as the commander sees
it), so the twin answers a command the way the real arm does.

Topics (relative names; ``cameras`` lists which cameras render):
  - ``joint_states`` (sensor_msgs/JointState): canonical names, position rad, velocity rad/s, effort N·m;
    every step, or at ``joint_state_rate_hz`` when that is higher (the latest state, stamps advancing).
  - ``arm_controller/controller_state`` (control_msgs/JointTrajectoryControllerState): every step, as the
    driver (reference = the target followed, feedback = the state after the step, output = the goal applied).
  - ``joint_commands`` (sensor_msgs/JointState, subscribed): targets in rad, by name (others keep their
    target) or all six in canonical order; preempts a running trajectory.
  - ``/clock`` (rosgraph_msgs/Clock): the sim time, every step.
  - ``/diagnostics`` (diagnostic_msgs/DiagnosticArray): one status ``<node>: twin`` every
    ``diagnostics_period_s`` (achieved real-time factor, sim time, seed, ...).
  - ``cameras/<name>/image_raw`` (sensor_msgs/Image, rgb8) and ``cameras/<name>/camera_info``
    (sensor_msgs/CameraInfo: K and P = [K|0] from the MuJoCo fovy, plumb_bob with zero distortion), at
    ``camera_rate_hz`` of sim time; with ``depth`` also ``cameras/<name>/depth/image_raw`` (16UC1, mm,
    0 = no hit) and ``cameras/<name>/depth/camera_info``. Frame id ``<name>_camera_optical_frame``.
  - ``sim/objects/<object>/pose`` (geometry_msgs/PoseStamped, frame ``world``, every step) for ``vial``, the
    standing vials ``standing_vial_<k>`` (task.yaml ``standing_vials``; those the
    episode does not stand in a pre-filled slot wait parked 0.5 m under the mat) and ``rack`` (the rack
    origin is its base-plate bottom centre; ``rack`` comes last, closing the step). ``world`` is the robot
    base on the mat.
  - ``sim/target_slot`` (std_msgs/Int32, every step): the episode's target slot (index into the rack's
    slots, row-major as ``RackConfig.slot_offsets()``): the first free slot of task.yaml ``fill_order``, after
    the pre-filled ones (``standing_vial_<k>`` stands in ``fill_order[k]`` for k below the target's
    position in the order), which the scripted expert follows and the success rules judge.

Action: ``arm_controller/follow_joint_trajectory`` (control_msgs/FollowJointTrajectory), followed by the
driver's :class:`~so101_nodes.trajectory.TrajectoryTracker`, timed in sim time,
cancel checked on every step, error codes INVALID_JOINTS / INVALID_GOAL / OLD_HEADER_TIMESTAMP /
PATH_TOLERANCE_VIOLATED / GOAL_TOLERANCE_VIOLATED; a nonzero ``header.stamp`` is read as sim time.

Services: ``sim/reset`` (so101_msgs/ResetSim: same seed → same episode; seed < 0 draws one) and
``sim/set_object_pose`` (so101_msgs/SetObjectPose, world frame).

Parameters: ``sim_config`` / ``dr_config`` (YAML paths, "" = the config directory's sim.yaml / dr.yaml),
``randomize`` (true: domain randomization from dr.yaml; false: nominal scene), ``dr_profile`` (a dr.yaml
profile, e.g. ``wide``; "" = the base ranges), ``seed`` (int, 0; < 0 =
random), ``real_time_factor`` (1.0; 0 = as fast as possible), ``joint_state_rate_hz`` (Hz, 0 = every
step), ``cameras`` (list, default ``[ego, side, top]``; ``[]`` = no rendering), ``camera_rate_hz``
(Hz of sim time, 10.0), ``width`` / ``height`` (px, 0 = sim.yaml's), ``depth`` (false),
``diagnostics_period_s`` (s, 1.0), ``goal_tolerance_rad`` (rad, 0.05), ``goal_time_tolerance_s`` (s, 1.0),
``robot_config`` (robot.yaml for the safety section; "" = the config directory's), ``robot_id`` (the arm whose
identified twin to load; "" = the nominal twin), ``arm_file`` (its per-arm YAML; "" = ``config/arms/<robot_id>.yaml``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.diagnostics import ERROR, OK, WARN, diagnostic_array, diagnostics_publisher, status_message
from nodegraph.graph.api import Message, Node, ServerGoalHandle
from nodegraph.graph.declared_params import check_bounds, declare_params
from nodegraph.graph.qos import QoS
from so101_core.arrays import F64
from so101_core.config_paths import config_dir
from so101_core.control.safety import CommandFilter, EStop, JointLimits, SafetyConfig, Watchdog, load_safety_config
from so101_core.sim import CAMERA_NAMES, JOINT_NAMES
from so101_core.sim.config import load_sim_config
from so101_core.sim.dynamics import arm_dynamics
from so101_core.sim.errors import SimError
from so101_core.sim.randomization import DRConfig, load_dr_config
from so101_core.sim.twin import Twin

from so101_nodes import camera_messages
from so101_nodes.joint_messages import joint_vector
from so101_nodes.sim_rendering import SimCameras
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

WORLD_FRAME = "world"
FEEDBACK_PERIOD_S = 0.05
MAX_STAMP_AHEAD_S = 3600.0  # a trajectory stamp further ahead of sim time is wall-clock time, not sim time
RELIABLE_LATEST = QoS(depth=1)


@dataclass(frozen=True)
class SimParams:
    """Sim node parameters (units in the module docstring); read once at start."""

    sim_config: str = ""
    dr_config: str = ""
    dr_profile: str = ""
    randomize: bool = True
    seed: int = 0
    real_time_factor: float = 1.0
    joint_state_rate_hz: float = 0.0
    cameras: tuple[str, ...] = CAMERA_NAMES
    camera_rate_hz: float = 10.0
    width: int = 0
    height: int = 0
    depth: bool = False
    diagnostics_period_s: float = 1.0
    goal_tolerance_rad: float = 0.05
    goal_time_tolerance_s: float = 1.0
    robot_config: str = ""
    robot_id: str = ""
    arm_file: str = ""

    @classmethod
    def declare(cls, node: Node) -> SimParams:
        params = declare_params(node, cls, read_only=False)  # settable, as ROS users have used them
        params.validate()
        return params

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        check_bounds(
            "sim", self, positive=("camera_rate_hz", "diagnostics_period_s", "goal_tolerance_rad"),
            non_negative=("real_time_factor", "joint_state_rate_hz", "goal_time_tolerance_s"),
        )  # fmt: skip
        for name in ("width", "height"):
            value = getattr(self, name)
            if value != 0 and not 8 <= value <= 4096:
                raise ValueError(f"sim: parameter {name!r} must be 0 (sim.yaml's) or 8..4096 px, got {value}")
        unknown = [c for c in self.cameras if c not in CAMERA_NAMES]
        if unknown:
            raise ValueError(
                f"sim: parameter 'cameras': unknown camera {unknown[0]!r} (known: {', '.join(CAMERA_NAMES)})"
            )
        if len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"sim: parameter 'cameras' lists a camera twice: {list(self.cameras)}")


@dataclass(frozen=True)
class _Snapshot:
    """The twin's state after a step (stamp ns of sim clock; rad, rad/s, N·m; poses wxyz)."""

    stamp_ns: int
    positions: F64
    velocities: F64
    efforts: F64
    objects: dict[str, tuple[F64, F64]]
    target_slot: int = 0


def safety_config(robot_config: str) -> SafetyConfig:
    """``robot.safety`` of ``robot_config`` (the config directory's robot.yaml when empty; defaults if absent)."""
    path = Path(robot_config) if robot_config else config_dir() / "robot.yaml"
    if not robot_config and not path.is_file():
        return SafetyConfig()
    return load_safety_config(path)


class SimNode:
    """The twin behind the driver's interface (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = p = SimParams.declare(node)
        self.safety = safety_config(p.robot_config)
        sim_cfg = load_sim_config(p.sim_config or None)
        dr = load_dr_config(p.dr_config or None, p.dr_profile or None) if p.randomize else DRConfig.disabled()
        self.twin = Twin(sim_cfg, dr, dynamics=arm_dynamics(p.robot_id, sim_cfg, p.arm_file))
        try:
            self._check_resolution()
            self.seed = p.seed if p.seed >= 0 else self._random_seed()
            self.twin.reset(self.seed)
        except Exception:
            self.twin.close()
            raise
        self.width = p.width or sim_cfg.width
        self.height = p.height or sim_cfg.height
        self.period_s = self.twin.control_period
        ranges = self.twin.model.actuator_ctrlrange[self.twin.index.actuator_ids]
        self.limits = JointLimits.from_arrays(ranges[:, 0], ranges[:, 1])
        # the driver's filter: the same speed (max_step_rad per driver cycle), applied per sim step
        self.filter = CommandFilter(
            self.limits,
            self.safety.max_speed_rad_s * self.period_s,
            Watchdog(self.safety.watchdog_timeout_s),
            EStop(),
            self.period_s,
        )

        self._lock = threading.Lock()  # twin, filter, active goal, snapshot, clock
        self._stop = threading.Event()
        self._clock_base_ns = 0  # sim clock at the last reset
        self._goal = self.twin.joint_targets()
        self.filter.reset(self.twin.joint_positions(), self._sim_s())
        self._active: TrajectoryTracker | None = None
        self._snapshot = self._take_snapshot()
        self._snapshot_wall = time.monotonic()
        self._next_camera_ns = 0
        self._camera_period_ns = round(1e9 / p.camera_rate_hz)
        self.steps = 0
        self.rejected_commands = 0
        self.resets = 0
        self._rtf_mark = (time.monotonic(), 0)

        self.joint_states = node.create_publisher("sensor_msgs/msg/JointState", "joint_states")
        self.controller_state = node.create_publisher(CONTROLLER_STATE, "arm_controller/controller_state")
        self.clock = node.create_publisher("rosgraph_msgs/msg/Clock", "/clock", RELIABLE_LATEST)
        self.diagnostics = diagnostics_publisher(node)
        self.object_poses = {
            name: node.create_publisher("geometry_msgs/msg/PoseStamped", f"sim/objects/{name}/pose")
            for name in self.twin.object_names
        }
        self.target_slot = node.create_publisher("std_msgs/msg/Int32", "sim/target_slot")
        self.cameras = (
            SimCameras(
                node,
                self.twin,
                self._lock,
                self.sim_time_ns,
                p.cameras,
                self.width,
                self.height,
                p.depth,
                self._stop,
                lambda: bool(getattr(node, "is_shutdown", False)),
            )
            if p.cameras
            else None
        )
        node.create_subscription("sensor_msgs/msg/JointState", "joint_commands", self.on_command)
        node.create_service("so101_msgs/srv/ResetSim", "sim/reset", self.on_reset)
        node.create_service("so101_msgs/srv/SetObjectPose", "sim/set_object_pose", self.on_set_object_pose)
        self.action_server = node.create_action_server(
            FJT, ACTION_NAME, self.execute_trajectory, goal_callback=lambda goal: True
        )
        self._fast_joint_states = p.joint_state_rate_hz > 1.0 / self.period_s and p.real_time_factor > 0
        self._timers = [node.create_timer(p.diagnostics_period_s, self.publish_diagnostics)]
        if self._fast_joint_states:
            self._timers.append(node.create_timer(1.0 / p.joint_state_rate_hz, self._republish_joint_states))
        self._threads = [threading.Thread(target=self._run, name="sim-stepping", daemon=True)]
        if self.cameras is not None:
            self._threads.append(self.cameras.thread)
        self._threads[0].start()
        if self.cameras is not None:
            self.cameras.start()
        pace = "as fast as possible" if p.real_time_factor == 0 else f"{p.real_time_factor:g}x real time"
        arm = f"identified twin of {p.robot_id or p.arm_file}" if self.twin.dynamics is not None else "nominal twin"
        node.logger.info(
            f"{arm} stepping at {1.0 / self.period_s:g} Hz ({pace}), seed {self.seed}, cameras "
            f"{list(p.cameras) or 'off'}"
            + (f" {self.width}x{self.height} at {p.camera_rate_hz:g} Hz" if p.cameras else "")
        )

    # ------------------------------------------------------------------ setup helpers
    @staticmethod
    def _random_seed() -> int:
        return int(np.random.default_rng().integers(0, 2**31 - 1))

    def _check_resolution(self) -> None:
        vis = self.twin.model.vis.global_
        for name, value, most in (
            ("width", self.params.width, vis.offwidth),
            ("height", self.params.height, vis.offheight),
        ):
            if value > most:
                raise ValueError(f"sim: parameter {name!r} = {value} px exceeds the offscreen buffer ({most} px)")

    # ------------------------------------------------------------------ clock and state
    def sim_time_ns(self) -> int:
        """The sim clock (ns): time since the node started, summed over episodes."""
        return self._clock_base_ns + round(self.twin.time * 1e9)

    def _sim_s(self) -> float:
        return self.sim_time_ns() * 1e-9

    def _take_snapshot(self) -> _Snapshot:
        t = self.twin
        objects = {name: (pose.position, pose.quaternion) for name, pose in t.object_poses().items()}
        slot = t.episode.target_slot if t.episode is not None else 0
        return _Snapshot(
            self.sim_time_ns(), t.joint_positions(), t.joint_velocities(), t.joint_efforts(), objects, slot
        )

    # ------------------------------------------------------------------ stepping thread
    def _run(self) -> None:
        """Step, publish, pace; ends on close() or when the node can no longer publish (shut down)."""
        rtf = self.params.real_time_factor
        next_wall = time.monotonic()
        try:
            while not self._stop.is_set():
                try:
                    self.tick()
                except SimError as exc:
                    self.node.logger.error(f"sim step failed: {exc}")
                if rtf > 0:
                    next_wall += self.period_s / rtf
                    delay = next_wall - time.monotonic()
                    if delay > 0:
                        self._stop.wait(delay)
                    elif delay < -0.5:  # far behind (rendering, a slow machine): do not try to catch up
                        self.node.logger.warning(f"sim runs {-delay:.2f} s behind real time", throttle_duration_sec=5.0)
                        next_wall = time.monotonic()
        except Exception as exc:  # normally: publishing after the node was shut down
            expected = self._stop.is_set() or getattr(self.node, "is_shutdown", False)
            (self.node.logger.debug if expected else self.node.logger.error)(
                f"stepping thread ends: {type(exc).__name__}: {exc}"
            )
        finally:
            with self._lock:
                self._finish_active(Outcome("abort", INVALID_GOAL, "aborted: sim shutting down"))
                self.twin.close()  # the GL contexts belong to this thread

    def tick(self) -> None:
        """One control period: trajectory setpoint → command filter → Twin.step → goal checks → publish state;
        asks for images when due."""
        with self._lock:
            active = self._active
            t_next = self._sim_s() + self.period_s  # the goal is reached at the end of this period
            if active is not None:
                if active.cancel_requested:
                    self.filter.drop_target()  # stop where it is
                    self._finish_active(Outcome("canceled", 0, "canceled"))
                    active = None
                else:
                    self.filter.command(active.setpoint(t_next), time.monotonic())
            self._goal = self.filter.step(self.twin.joint_positions(), t_next).goal
            reference = self.filter.active_target()
            before = self._snapshot  # the state the goal is applied from, as the driver reads then writes
            state = controller_state_message(
                self.node, self.node.stamp(self.sim_time_ns()), reference if reference is not None else self._goal,
                before.positions, before.velocities, before.efforts, self._goal,
            )  # fmt: skip
            self.twin.step(self._goal)
            self.steps += 1
            snap = self._snapshot = self._take_snapshot()
            self._snapshot_wall = time.monotonic()
            if active is not None:
                active.check(snap.stamp_ns * 1e-9, snap.positions)
                if active.outcome is not None:
                    if active.outcome.status != "succeed":
                        self.filter.drop_target()
                    self._active = None
            if self.cameras is not None and snap.stamp_ns >= self._next_camera_ns:
                self._next_camera_ns = max(self._next_camera_ns + self._camera_period_ns, snap.stamp_ns)
                self.cameras.request()
        self._publish_state(snap)
        self.controller_state.publish(state)

    def _finish_active(self, outcome: Outcome) -> None:
        """Finish the active goal (caller holds the lock)."""
        if self._active is not None:
            self._active.finish(outcome.status, outcome.code, outcome.text)
            self._active = None

    # ------------------------------------------------------------------ publishing
    def _header(self, stamp_ns: int, frame_id: str = "") -> Message:
        return camera_messages.header(self.node, stamp_ns, frame_id)

    def _joint_state(self, snap: _Snapshot, stamp_ns: int) -> Message:
        return self.node.message(
            "sensor_msgs/msg/JointState",
            header=self._header(stamp_ns),
            name=list(JOINT_NAMES),
            position=snap.positions,
            velocity=snap.velocities,
            effort=snap.efforts,
        )

    def _publish_state(self, snap: _Snapshot) -> None:
        node = self.node
        self.clock.publish(node.message("rosgraph_msgs/msg/Clock", clock=node.stamp(snap.stamp_ns)))
        if not self._fast_joint_states:
            self.joint_states.publish(self._joint_state(snap, snap.stamp_ns))
        for name, (pos, quat) in snap.objects.items():
            pose = node.message(
                "geometry_msgs/msg/Pose",
                position=node.message("geometry_msgs/msg/Point", x=pos[0], y=pos[1], z=pos[2]),
                orientation=node.message("geometry_msgs/msg/Quaternion", x=quat[1], y=quat[2], z=quat[3], w=quat[0]),
            )
            msg = node.message(
                "geometry_msgs/msg/PoseStamped", header=self._header(snap.stamp_ns, WORLD_FRAME), pose=pose
            )
            self.object_poses[name].publish(msg)
        self.target_slot.publish(node.message("std_msgs/msg/Int32", data=snap.target_slot))

    def _republish_joint_states(self) -> None:
        """Timer (``joint_state_rate_hz`` above the control rate): the latest state, the stamp advanced by the
        sim time elapsed since it was taken (at most one period: sample-and-hold between steps)."""
        with self._lock:
            snap, wall = self._snapshot, self._snapshot_wall
        ahead = min((time.monotonic() - wall) * self.params.real_time_factor, 0.999 * self.period_s)
        self.joint_states.publish(self._joint_state(snap, snap.stamp_ns + round(ahead * 1e9)))

    def camera_info(self, stamp_ns: int, frame_id: str, camera: str) -> Message:
        """CameraInfo of ``camera`` at the published resolution: K from the fovy, P = [K | 0], no distortion."""
        k = self.twin.camera_intrinsics(camera, self.width, self.height)
        return camera_messages.camera_info(self.node, self._header(stamp_ns, frame_id), self.width, self.height, k)

    def publish_diagnostics(self) -> None:
        """``/diagnostics``: the twin's health (WARN when the achieved real-time factor lags the requested)."""
        with self._lock:
            sim_ns, steps, active = self.sim_time_ns(), self.steps, self._active is not None
            hold = self.filter.hold_reason
        wall0, steps0 = self._rtf_mark
        now = time.monotonic()
        self._rtf_mark = (now, steps)
        achieved = (steps - steps0) * self.period_s / (now - wall0) if now > wall0 else 0.0
        wanted = self.params.real_time_factor
        level, message = OK, "ok" if hold is None else f"holding ({hold})"
        if not all(thread.is_alive() for thread in self._threads):
            level, message = ERROR, "stepping or rendering thread stopped"
        elif wanted > 0 and achieved < 0.9 * wanted:
            level, message = WARN, f"running at {achieved:.2f}x real time (requested {wanted:g}x)"
        values = {
            "sim_time_s": f"{sim_ns * 1e-9:.3f}",
            "real_time_factor": f"{achieved:.3f}",
            "target_real_time_factor": f"{wanted:g}",
            "control_rate_hz": f"{1.0 / self.period_s:g}",
            "steps": str(steps),
            "seed": str(self.seed),
            "resets": str(self.resets),
            "trajectory_active": str(active).lower(),
            "rejected_commands": str(self.rejected_commands),
            "holding": hold or "",
            "max_speed_rad_s": f"{self.safety.max_speed_rad_s:g}",
            "cameras": ",".join(self.params.cameras),
        }
        status = status_message(self.node, "twin", level, message, "mujoco", values)
        self.diagnostics.publish(diagnostic_array(self.node, [status], self._header(sim_ns)))

    # ------------------------------------------------------------------ commands and services
    def on_command(self, msg: Any) -> None:
        """``joint_commands``: a new target (rad) through the command filter; preempts a running trajectory."""
        with self._lock:
            try:
                base = self.filter.active_target()
                target = joint_vector(msg, base if base is not None else self._goal)
                refusal = self.filter.command(target, time.monotonic())
                if refusal is not None:
                    raise ValueError(refusal)
            except ValueError as exc:
                self.rejected_commands += 1
                self.node.logger.warning(f"rejected command on {self.node.resolve('joint_commands')}: {exc}",
                                         throttle_duration_sec=5.0)  # fmt: skip
                return
            self._finish_active(Outcome("abort", INVALID_GOAL, "aborted: preempted by a joint_commands message"))

    def on_reset(self, request: Any, response: Any) -> Any:
        """``sim/reset``: a new episode from ``request.seed`` (< 0: a random seed); the sim clock keeps running."""
        seed = int(request.seed) if int(request.seed) >= 0 else self._random_seed()
        with self._lock:
            try:
                self._finish_active(Outcome("abort", INVALID_GOAL, "aborted: sim reset"))
                self._clock_base_ns = self.sim_time_ns()
                sample = self.twin.reset(seed)
                self._goal = self.twin.joint_targets()
                self.filter.reset(self.twin.joint_positions(), self._sim_s())
                self._snapshot = self._take_snapshot()
            except (SimError, ValueError) as exc:
                response.success, response.message = False, f"reset failed: {exc}"
                self.node.logger.error(response.message)
                return response
            self.seed = seed
            self.resets += 1
        response.success = True
        response.message = f"reset with seed {seed}" + (" (partly done: vial in hand)" if sample.partly_done else "")
        self.node.logger.info(response.message)
        return response

    def on_set_object_pose(self, request: Any, response: Any) -> Any:
        """``sim/set_object_pose``: teleport ``request.name`` to ``request.pose`` (world frame, m)."""
        pose = request.pose
        position = (pose.position.x, pose.position.y, pose.position.z)
        quat = (pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z)
        with self._lock:
            try:
                self.twin.set_object_pose(str(request.name), (position, quat))
            except (SimError, ValueError, KeyError) as exc:
                response.success, response.message = False, str(exc)
                return response
        response.success, response.message = True, ""
        return response

    # ------------------------------------------------------------------ trajectories
    def execute_trajectory(self, handle: ServerGoalHandle) -> Message:
        """FollowJointTrajectory execute callback (goal thread): the stepping thread follows it."""
        with self._lock:
            try:
                start = self.filter.active_target()
                tracker = TrajectoryTracker.accept(
                    handle,
                    start if start is not None else self._goal.copy(),
                    self.limits,
                    self._sim_s(),
                    self.sim_time_ns(),
                    self.params.goal_tolerance_rad,
                    self.params.goal_time_tolerance_s,
                    MAX_STAMP_AHEAD_S,
                )
            except TrajectoryError as exc:
                self.node.logger.warning(f"trajectory rejected: {exc}")
                return finish_handle(self.node, handle, Outcome("abort", exc.code, str(exc)))
            self._finish_active(Outcome("abort", INVALID_GOAL, "aborted: preempted by a new goal"))
            if self._stop.is_set():
                tracker.abort("sim shutting down")
            else:
                self._active = tracker
        return tracker.serve(self.node, self._lock, lambda: self._header(self.sim_time_ns()), FEEDBACK_PERIOD_S)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop stepping (the stepping thread aborts a running goal and frees the renderers)."""
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=10.0)


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(SimNode, "sim", args)


if __name__ == "__main__":
    raise SystemExit(main())
