"""scripted_expert: the sim's scripted expert driving the arm through the graph, like a teleoperator would.

Event-driven at the control rate: on each ``joint_states`` message (at most one per control period of its
stamps, so a faster joint-state stream is thinned to ``control_hz``) the
:class:`~so101_core.sim.scripted_expert.ScriptedExpert` maps the measured joints and the latest object
poses to 6 joint targets, published on ``joint_commands``. The expert's kinematic model is built from
sim.yaml (nominal scene; only kinematics are used).

Topics (relative names):
  - ``joint_states`` (sensor_msgs/JointState, subscribed): measured joints, rad, by name.
  - ``sim/objects/vial/pose``, ``sim/objects/rack/pose`` (geometry_msgs/PoseStamped, subscribed): world
    frame (= robot base), m; the rack origin is its base-plate bottom centre. Also the standing vials'
    ``sim/objects/standing_vial_<k>/pose`` when published: the carry clears their tops.
  - ``sim/target_slot`` (std_msgs/Int32, subscribed): the sim episode's target slot; the expert places the
    vial there, as the library's :func:`~so101_core.sim.rollout.run_scripted_episode` does with the episode's
    slot (the ``target_slot`` parameter overrides it; with neither, the centre slot).
  - ``joint_commands`` (sensor_msgs/JointState): the 6 targets, rad, canonical names; ``header.stamp`` is
    the stamp of the ``joint_states`` message answered (so consumers can pair state and action exactly).
  - ``~/done`` (std_msgs/Bool): after each answered state once started: false while the expert runs,
    true once it has finished (placed and retreated, or given up). When done it stops commanding (the
    arm holds its last target).

Services:
  - ``~/start`` (std_srvs/Trigger): (re)start from the next ``joint_states`` message, e.g. right after a
    ``sim/reset``; the expert plans from that state and the latest poses.
  - ``~/stop`` (std_srvs/Trigger): stop commanding (idle) until the next ``~/start``.

Parameters: ``autostart`` (bool, true: start on the first state with both poses known), ``sim_config``
(YAML path, "" = the config directory's sim.yaml), ``control_hz`` (Hz, 0 = sim.yaml's control rate),
``target_slot`` (int, -1 = the sim's ``sim/target_slot``; 0…slots²-1 = always that slot).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.graph.api import Message, Node
from nodegraph.graph.declared_params import declare_params
from nodegraph.graph.qos import QoS
from nodegraph.time import to_ns
from so101_core.sim import JOINT_NAMES
from so101_core.sim.config import load_sim_config
from so101_core.sim.errors import PlanningError
from so101_core.sim.randomization import DRConfig
from so101_core.sim.scene import OBJECT_NAMES
from so101_core.sim.scripted_expert import ScriptedExpert
from so101_core.sim.twin import Pose, Twin

from so101_nodes.driver_node import joint_vector

STATE_QOS = QoS(depth=1)  # keep-last 1: always answer the newest state, never a backlog


def pose_from_msg(msg: Any) -> Pose:
    """World pose (position m, quaternion wxyz) of a geometry_msgs/PoseStamped."""
    p, q = msg.pose.position, msg.pose.orientation
    return Pose(np.array([p.x, p.y, p.z], dtype=np.float64), np.array([q.w, q.x, q.y, q.z], dtype=np.float64))


class ExpertState(Enum):
    IDLE = "idle"  # not commanding
    ARMED = "armed"  # starts on the next joint_states message
    RUNNING = "running"
    DONE = "done"  # finished: not commanding, reports done


@dataclass(frozen=True)
class ScriptedExpertParams:
    """Parameters (units in the module docstring); read once at start."""

    autostart: bool = True
    sim_config: str = ""
    control_hz: float = 0.0
    target_slot: int = -1

    @classmethod
    def declare(cls, node: Node) -> ScriptedExpertParams:
        params = declare_params(node, cls)
        if not (math.isfinite(params.control_hz) and params.control_hz >= 0):
            raise ValueError(f"scripted_expert: parameter 'control_hz' must be >= 0, got {params.control_hz}")
        if params.target_slot < -1:
            raise ValueError(f"scripted_expert: parameter 'target_slot' must be -1 or a slot, got {params.target_slot}")
        return params


class ScriptedExpertNode:
    """The scripted expert behind ``joint_states`` → ``joint_commands`` (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = p = ScriptedExpertParams.declare(node)
        sim_cfg = load_sim_config(p.sim_config or None)
        twin = Twin(sim_cfg, DRConfig.disabled())  # kinematics only; the graph's sim owns the physics
        self._twin = twin
        slots = sim_cfg.rack.slots**2
        if p.target_slot >= slots:
            twin.close()
            raise ValueError(
                f"scripted_expert: parameter 'target_slot' {p.target_slot} is not one of the {slots} slots"
            )
        self.expert = ScriptedExpert.for_twin(twin)
        self._slots = slots
        self.sim_slot: int | None = None  # latest sim/target_slot
        self.slot: int | None = None  # the slot of the running episode (None: centre)
        control_hz = p.control_hz or sim_cfg.physics.control_hz
        self.period_ns = round(1e9 / control_hz)
        self._lock = threading.Lock()
        self.state = ExpertState.ARMED if p.autostart else ExpertState.IDLE
        self.poses: dict[str, Pose] = {}
        self._q: npt.NDArray[np.float64] = np.zeros(len(JOINT_NAMES))
        self._last_ns: int | None = None
        self.commands = 0  # in total
        self.episode_commands = 0
        self.episodes = 0
        self.publisher = node.create_publisher("sensor_msgs/msg/JointState", "joint_commands")
        self.done_publisher = node.create_publisher("std_msgs/msg/Bool", "~/done")
        node.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_joint_states, STATE_QOS)
        for name in twin.object_names:
            node.create_subscription(
                "geometry_msgs/msg/PoseStamped", f"sim/objects/{name}/pose", self._pose_callback(name), STATE_QOS
            )
        node.create_subscription("std_msgs/msg/Int32", "sim/target_slot", self._on_target_slot, STATE_QOS)
        node.create_service("std_srvs/srv/Trigger", "~/start", self.on_start)
        node.create_service("std_srvs/srv/Trigger", "~/stop", self.on_stop)
        node.logger.info(
            f"scripted expert at {control_hz:g} Hz on {node.resolve('joint_states')} -> "
            f"{node.resolve('joint_commands')} ({'autostart' if p.autostart else 'waiting for ~/start'})"
        )

    def _pose_callback(self, name: str) -> Any:
        def callback(msg: Any) -> None:
            pose = pose_from_msg(msg)
            with self._lock:
                self.poses[name] = pose

        return callback

    def _on_target_slot(self, msg: Any) -> None:
        slot = int(msg.data)
        if not 0 <= slot < self._slots:
            self.node.logger.warning(f"ignored sim/target_slot {slot}: not one of the {self._slots} slots")
            return
        with self._lock:
            self.sim_slot = slot

    def episode_slot(self) -> int | None:
        """The slot an episode starting now goes to: the parameter, else the sim's, else None (centre)."""
        return self.params.target_slot if self.params.target_slot >= 0 else self.sim_slot

    # ------------------------------------------------------------------ services
    def on_start(self, request: Any, response: Any) -> Any:
        """``~/start``: plan from the next joint_states message."""
        with self._lock:
            self.state = ExpertState.ARMED
        response.success, response.message = True, "expert starts on the next joint_states message"
        return response

    def on_stop(self, request: Any, response: Any) -> Any:
        """``~/stop``: stop commanding."""
        with self._lock:
            self.state = ExpertState.IDLE
        response.success, response.message = True, "expert idle"
        return response

    # ------------------------------------------------------------------ control step
    def on_joint_states(self, msg: Any) -> None:
        """One control step: answer ``msg`` with targets on ``joint_commands`` (and ``~/done``)."""
        stamp = to_ns(msg.header.stamp)
        try:
            q = joint_vector(msg, self._q)
        except ValueError as exc:
            self.node.logger.warning(f"ignored joint_states: {exc}")
            return
        self._q = q
        with self._lock:
            if self.state is ExpertState.IDLE:
                return
            too_soon = self._last_ns is not None and 0 <= stamp - self._last_ns < self.period_ns * 0.9
            if too_soon and self.state is not ExpertState.ARMED:
                return  # faster than the control rate: answer one state per period
            if not all(name in self.poses for name in OBJECT_NAMES):
                return  # no scene yet
            poses = dict(self.poses)
            self._last_ns = stamp
            if self.state is ExpertState.ARMED:
                self.state = ExpertState.RUNNING
                self.episodes += 1
                self.episode_commands = 0
                self.slot = self.episode_slot()
                try:
                    self.expert.reset(q, poses, self.slot)
                    if self.expert.failure is not None:
                        self.node.logger.error(f"expert cannot plan this episode: {self.expert.failure}")
                except PlanningError as exc:
                    self.node.logger.error(f"expert cannot plan this episode: {exc}")
                    self.state = ExpertState.DONE
            target = None
            if self.state is ExpertState.RUNNING:
                target = self.expert.act(q, poses)
                if self.expert.done:
                    self.state = ExpertState.DONE
                    self.node.logger.info(
                        f"episode {self.episodes}: expert done after {self.episode_commands + 1} commands"
                    )
            done = self.state is ExpertState.DONE
        if target is not None:
            self.publisher.publish(self._command(msg.header.stamp, target))
            self.commands += 1
            self.episode_commands += 1
        self.done_publisher.publish(self.node.message("std_msgs/msg/Bool", data=done))

    def _command(self, stamp: Message, target: np.ndarray) -> Message:
        node = self.node
        return node.message(
            "sensor_msgs/msg/JointState",
            header=node.message("std_msgs/msg/Header", stamp=stamp, frame_id=""),
            name=list(JOINT_NAMES),
            position=np.asarray(target, dtype=np.float64),
        )

    def close(self) -> None:
        self._twin.close()


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(ScriptedExpertNode, "scripted_expert", args)


if __name__ == "__main__":
    raise SystemExit(main())
