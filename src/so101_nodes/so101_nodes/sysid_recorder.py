"""The recording side of system identification: drive excitation segments through the arm's trajectory action
and record what identification needs into a rosbag2 (MCAP) bag.

:class:`SysidRecorder` wraps the bag :class:`~so101_nodes.recorder_node.Recorder` (``joint_states``: positions,
velocities, efforts; ``arm_controller/controller_state``: the goals written to the servos; ``/diagnostics``:
temperature, current) and sends each :class:`~so101_core.sysid.excitation.Segment` as one
``arm_controller/follow_joint_trajectory`` goal, the same path every other command takes (so the command filter,
the limits and the watchdog apply). It writes a mark per segment on ``sysid/segments`` (std_msgs/String, JSON:
joint, kind, start_ns, end_ns on the ``joint_states`` header clock, robot_id), which tells the fit which samples
excite which joint. The driver (real arm) and the sim node (twin) both answer, so the same recording runs on
either.

Parameters of the node it is given: those of the bag recorder (``topics`` and ``output`` are set by
:func:`recorder_parameters`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from nodegraph.bag.metadata import offered_qos_yaml
from nodegraph.diagnostics import DIAGNOSTICS_TOPIC
from nodegraph.graph.api import GoalStatus, Message, Node
from nodegraph.interfaces.messages import serialize
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sysid.excitation import Segment, transit_segment
from so101_core.sysid.recording import CONTROLLER_STATE, JOINT_STATES, SEGMENTS

from so101_nodes.joint_messages import joint_vector
from so101_nodes.recorder_node import Recorder
from so101_nodes.trajectory import ACTION_NAME, FJT, duration_msg

DIAGNOSTICS = DIAGNOSTICS_TOPIC
STRING = "std_msgs/msg/String"
# A segment only has to be driven, not to end precisely: an arm softer than the nominal twin (the reason to
# identify it) may settle short of the last point, and a loaded host may run its cycles late.
GOAL_TOLERANCE_RAD = 0.15
GOAL_TIME_TOLERANCE_S = 3.0


class SysidRecordError(RuntimeError):
    """The excitation could not be driven (no arm on the graph, a goal refused or aborted): the message says
    which and why."""


def recorder_parameters(output: str) -> dict[str, Any]:
    """Node parameters for the bag recorder of a sysid recording into ``output``."""
    return {"topics": [JOINT_STATES, CONTROLLER_STATE, DIAGNOSTICS], "output": output, "all": False,
            "exclude": [""], "chunk_compression": "zstd"}  # fmt: skip


@dataclass(frozen=True)
class SegmentResult:
    """One driven segment: what it was, when it ran (ns, ``joint_states`` clock) and how it ended."""

    segment: Segment
    start_ns: int
    end_ns: int
    status: GoalStatus
    error: str


class SysidRecorder:
    """Records while it drives segments (see the module docstring); ``robot_id`` is written into every mark."""

    def __init__(self, node: Node, robot_id: str = "") -> None:
        self.node = node
        self.robot_id = robot_id
        self.recorder = Recorder(node)
        self.segments_topic = node.resolve(SEGMENTS)
        self.recorder.writer.add_topic(self.segments_topic, STRING, offered_qos_yaml([]))
        self._lock = threading.Lock()
        self._latest: tuple[int, F64] | None = None  # (header stamp ns, positions rad) of the last joint_states
        node.create_subscription("sensor_msgs/msg/JointState", JOINT_STATES, self._on_state)
        self.action = node.create_action_client(FJT, ACTION_NAME)
        self.results: list[SegmentResult] = []

    def _on_state(self, msg: Any) -> None:
        stamp = to_ns(msg.header.stamp)
        with self._lock:
            base = self._latest[1] if self._latest is not None else np.full(len(JOINT_NAMES), np.nan)
            with contextlib.suppress(ValueError):
                self._latest = (stamp, joint_vector(msg, base))

    def present(self) -> F64 | None:
        """The last measured pose (6,) rad (None before the first complete joint_states)."""
        with self._lock:
            if self._latest is None or not np.all(np.isfinite(self._latest[1])):
                return None
            return self._latest[1].copy()

    def _stamp_ns(self) -> int:
        with self._lock:
            return self._latest[0] if self._latest is not None else 0

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Until the arm's action server, its joint_states and the recorder's subscriptions are there."""
        deadline = time.monotonic() + timeout_s
        wanted = {self.node.resolve(JOINT_STATES), self.node.resolve(CONTROLLER_STATE)}
        if not self.action.wait_for_server(timeout_s):
            raise SysidRecordError(
                f"no {self.node.resolve(ACTION_NAME)} action server on the graph: start the arm "
                "(`so101 launch real` or `so101 launch sim`)"
            )
        while time.monotonic() < deadline:
            if self.present() is not None and wanted <= set(self.recorder.subscriptions):
                return
            time.sleep(0.05)
        missing = sorted(wanted - set(self.recorder.subscriptions))
        what = f"no publisher of {missing}" if missing else f"no complete {self.node.resolve(JOINT_STATES)}"
        raise SysidRecordError(f"the arm is not ready after {timeout_s:g} s: {what}")

    def goal(self, segment: Segment) -> Message:
        """The FollowJointTrajectory goal of ``segment`` (all six joints; the point at t = 0 is where it
        starts, so it is left out: the tracker starts from the present target)."""
        node = self.node
        points = [
            node.message(
                "trajectory_msgs/msg/JointTrajectoryPoint",
                positions=row.astype(np.float64),
                time_from_start=duration_msg(node, float(t)),
            )
            for t, row in zip(segment.times[1:], segment.positions[1:], strict=True)
        ]
        trajectory = node.message("trajectory_msgs/msg/JointTrajectory", joint_names=list(JOINT_NAMES), points=points)
        tolerance = [node.message("control_msgs/msg/JointTolerance", name=n, position=GOAL_TOLERANCE_RAD)
                     for n in JOINT_NAMES]  # fmt: skip
        return node.message(f"{FJT}_Goal", trajectory=trajectory, goal_tolerance=tolerance,
                            goal_time_tolerance=duration_msg(node, GOAL_TIME_TOLERANCE_S))  # fmt: skip

    def drive(self, segment: Segment, attempts: int = 3, transit_speed: float = 0.5) -> SegmentResult:
        """Drive ``segment``; when the arm aborts it (a transient bus fault holds the arm, say), wait for the hold
        to clear, move back to the segment's start and try again, up to ``attempts`` times in all. Each attempt's
        mark records how it ended (the fit uses the succeeded ones). Raises :class:`SysidRecordError` when no
        attempt succeeded."""
        for attempt in range(1, attempts + 1):
            try:
                return self.drive_once(segment)
            except SysidRecordError as exc:
                if attempt == attempts:
                    raise
                self.node.logger.warning(f"{exc}; trying again ({attempt + 1} of {attempts})")
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:  # the driver refuses goals while it holds on a fault
                time.sleep(0.5)
                present = self.present()
                if present is None:
                    continue
                try:
                    self.drive_once(transit_segment(present, segment.positions[0], transit_speed))
                    break
                except SysidRecordError:
                    continue
        raise AssertionError("unreachable")

    def drive_once(self, segment: Segment, timeout_margin_s: float = 15.0) -> SegmentResult:
        """Send ``segment``, wait for its result, write its mark; raises :class:`SysidRecordError` unless it
        succeeded."""
        start = self._stamp_ns()
        handle = self.action.send_goal(self.goal(segment))
        if not handle.accepted:
            raise SysidRecordError(f"the arm refused the {segment.kind} goal of {segment.joint or 'the arm'}")
        code, result = handle.result(segment.duration_s + timeout_margin_s)
        status = GoalStatus(int(code))
        end = self._stamp_ns()
        outcome = SegmentResult(segment, start, end, status, str(result.error_string))
        self.results.append(outcome)
        self._mark(outcome)
        if status != GoalStatus.SUCCEEDED:
            raise SysidRecordError(
                f"{segment.kind} of {segment.joint or 'the arm'} ended {status.name}: {result.error_string or '-'}"
            )
        return outcome

    def _mark(self, result: SegmentResult) -> None:
        data = {"joint": result.segment.joint, "kind": result.segment.kind, "start_ns": result.start_ns,
                "end_ns": result.end_ns, "robot_id": self.robot_id, "status": result.status.name}  # fmt: skip
        msg = self.node.message(STRING, data=json.dumps(data))
        self.recorder.writer.write(self.segments_topic, self.node.now_ns(), serialize(msg, STRING))

    def close(self) -> None:
        """Flush and close the bag."""
        self.recorder.close()
