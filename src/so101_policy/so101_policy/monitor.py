"""The evaluator's view of the graph during an episode: what the twin did, what the policy commanded, and
whether the task succeeded, judged from the published messages alone.

Per twin step (the sim publishes joint states, then the vial, standing-vial and rack poses with one stamp) it
records sim time, measured joints, the latest command, and the object poses. The success rules
(:class:`~so101_core.sim.success.SuccessRules`: the vial upright in the episode's target slot, every standing
vial still upright in its own) are fed the state of a local copy of the twin (same config and seed → same
geometry, target slot and pre-filled slots): the received joints and object poses are written into it and
MuJoCo's collision detection tells which pads touch the vial. That is exact for our detector and the workshop
rule (both read contacts, not forces).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.diagnostics import DIAGNOSTICS_TOPIC, DIAGNOSTICS_TYPE
from nodegraph.graph.api import Node
from nodegraph.images import ImageError, to_rgb
from nodegraph.time import to_s
from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.scene import RACK, VIAL
from so101_core.sim.success import SuccessRules
from so101_core.sim.task import TaskState
from so101_core.sim.twin import Twin


@dataclass
class EpisodeLog:
    """One episode's per-step record: ``t`` (T,) s of sim time since start, ``q``/``cmd`` (T, 6) rad,
    ``vial``/``rack`` (T, 7) xyz + wxyz, ``standing`` (T, K, 7) the standing vials' poses, ``both_jaws`` (T,)
    bool; success step indices (-1 = none); the episode's ``target_slot`` and ``prefilled`` slots."""

    seed: int
    target_slot: int = -1
    prefilled: tuple[int, ...] = ()
    standing: list[F64] = field(default_factory=list)
    t: list[float] = field(default_factory=list)
    q: list[F64] = field(default_factory=list)
    cmd: list[F64] = field(default_factory=list)
    vial: list[F64] = field(default_factory=list)
    rack: list[F64] = field(default_factory=list)
    both_jaws: list[bool] = field(default_factory=list)
    success_step: int = -1
    workshop_step: int = -1
    frames: list[npt.NDArray[np.uint8]] = field(default_factory=list)
    policy_status: list[str] = field(default_factory=list)

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        return {
            "t": np.asarray(self.t),
            "q": np.asarray(self.q).reshape(-1, 6),
            "cmd": np.asarray(self.cmd).reshape(-1, 6),
            "vial": np.asarray(self.vial).reshape(-1, 7),
            "rack": np.asarray(self.rack).reshape(-1, 7),
            "standing": np.asarray(self.standing).reshape(len(self.standing), -1, 7),
            "both_jaws": np.asarray(self.both_jaws, dtype=bool),
        }


def _pose(msg: Any) -> F64:
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z, o.w, o.x, o.y, o.z], dtype=np.float64)


def _stamp_s(msg: Any) -> float:
    return to_s(msg.header.stamp)


class EpisodeMonitor:
    """Subscribes on ``node`` and fills the current :class:`EpisodeLog` (``begin`` … ``end``)."""

    def __init__(self, node: Node, twin: Twin, video_camera: str | None, policy_node: str = "policy") -> None:
        self.node, self.twin = node, twin
        self.task = twin.task
        self.rules = SuccessRules.of(self.task, twin.config)
        self.workshop = self.rules.workshop
        self._objects = twin.object_names  # the step's parts: these poses and the joints
        self._lock = threading.Lock()
        self._log: EpisodeLog | None = None
        self._record_frames = False
        self._t0: float | None = None
        self._q_stamp = -1.0
        self._cmd: F64 | None = None
        self._pending: dict[int, dict[str, F64]] = {}
        self.policy_prefix = f"{policy_node}: "
        self.steps_seen = 0
        node.create_subscription("sensor_msgs/msg/JointState", "joint_states", self._on_joints)
        node.create_subscription("sensor_msgs/msg/JointState", "joint_commands", self._on_command)
        for name in self._objects:
            node.create_subscription("geometry_msgs/msg/PoseStamped", f"sim/objects/{name}/pose", self._on_pose(name))
        node.create_subscription(DIAGNOSTICS_TYPE, DIAGNOSTICS_TOPIC, self._on_diagnostics)
        if video_camera:
            node.create_subscription("sensor_msgs/msg/Image", f"cameras/{video_camera}/image_raw", self._on_image)

    # ------------------------------------------------------------------ episode control
    def begin(self, seed: int, record_frames: bool) -> None:
        sample = self.twin.reset(seed)
        self.rules.reset()
        with self._lock:
            self._log = EpisodeLog(seed, sample.target_slot, sample.prefilled)
            self._record_frames = record_frames
            self._t0 = None
            self._cmd = None

    def end(self) -> EpisodeLog:
        with self._lock:
            log, self._log = self._log, None
        assert log is not None
        return log

    def progress(self) -> tuple[float, bool, bool]:
        """(sim seconds recorded, our detector succeeded, workshop rule succeeded) of the current episode."""
        with self._lock:
            log = self._log
            if log is None or not log.t:
                return 0.0, False, False
            return log.t[-1], log.success_step >= 0, log.workshop_step >= 0

    def latest_stamp(self) -> float:
        with self._lock:
            return self._q_stamp

    # ------------------------------------------------------------------ callbacks
    def _on_joints(self, msg: Any) -> None:
        names = list(msg.name)
        if not all(n in names for n in JOINT_NAMES):
            return
        pos = np.asarray(msg.position, dtype=np.float64)
        q = np.array([pos[names.index(n)] for n in JOINT_NAMES])
        stamp = _stamp_s(msg)
        with self._lock:
            self._q_stamp = stamp
        self._part(stamp, "q", q)

    def _on_command(self, msg: Any) -> None:
        names = list(msg.name)
        if not all(n in names for n in JOINT_NAMES):
            return
        pos = np.asarray(msg.position, dtype=np.float64)
        with self._lock:
            self._cmd = np.array([pos[names.index(n)] for n in JOINT_NAMES])

    def _on_pose(self, name: str) -> Any:
        def callback(msg: Any) -> None:
            self._part(_stamp_s(msg), name, _pose(msg))

        return callback

    def _part(self, stamp: float, key: str, value: F64) -> None:
        """Collect the parts of one twin step (same stamp); a complete step is recorded, older ones dropped."""
        key_ns = round(stamp * 1e9)
        with self._lock:
            parts = self._pending.setdefault(key_ns, {})
            parts[key] = value
            if len(parts) < len(self._objects) + 1:
                if len(self._pending) > 8:
                    for old in sorted(self._pending)[:-8]:
                        del self._pending[old]
                return
            del self._pending[key_ns]
            for old in [k for k in self._pending if k < key_ns]:
                del self._pending[old]
            log, cmd = self._log, self._cmd
            if log is None:
                return
            if self._t0 is None:
                self._t0 = stamp
            t = stamp - self._t0
        q = parts["q"]
        state = self._state(q, parts)
        both = state.held[0]
        self.steps_seen += 1
        ours, shop = self.rules.update(state)
        with self._lock:
            if self._log is not log:
                return
            log.t.append(t)
            log.q.append(q)
            log.cmd.append(q if cmd is None else cmd)
            log.vial.append(parts[VIAL])
            log.rack.append(parts[RACK])
            log.standing.append(np.asarray([parts[n] for n in self.twin.standing_names]).reshape(-1, 7))
            log.both_jaws.append(both)
            if ours and log.success_step < 0:
                log.success_step = len(log.t) - 1
            if shop and log.workshop_step < 0:
                log.workshop_step = len(log.t) - 1

    def _state(self, q: F64, poses: dict[str, F64]) -> TaskState:
        """The rules' input: the received joints and poses written into the local twin (its episode: the target
        slot and the standing vials' slots), jaw contacts from its collision detection."""
        twin = self.twin
        for name in self._objects:
            twin.set_object_pose(name, (poses[name][:3], poses[name][3:]))
        twin.set_joint_positions(q)
        return twin.task_state()

    def _on_image(self, msg: Any) -> None:
        with self._lock:
            log, record = self._log, self._record_frames
        if log is None or not record:
            return
        try:
            img = to_rgb(msg)
        except ImageError:
            return
        with self._lock:
            if self._log is log and len(log.frames) < 3000:
                log.frames.append(img)

    def _on_diagnostics(self, msg: Any) -> None:
        for status in msg.status:
            name = str(status.name)
            if name.startswith(self.policy_prefix):
                with self._lock:
                    if self._log is not None:
                        self._log.policy_status.append(str(status.message))
