"""A sysid bag (``so101 sysid record``, or any rosbag2 bag with the same topics) as a
:class:`~so101_core.sysid.recording.Recording`.

Topics are found by name, in any namespace (one namespace per bag): ``joint_states`` (header stamps, positions,
velocities, efforts by joint name), ``arm_controller/controller_state`` (header stamps, ``output`` positions),
``sysid/segments`` (the marks) and ``/diagnostics`` (per-servo ``temperature_c``). Times become seconds from
the first ``joint_states`` stamp.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from nodegraph.bag.errors import BagError
from nodegraph.bag.reader import info, read_messages
from nodegraph.interfaces.messages import deserialize
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sysid.arm_sim import Commands
from so101_core.sysid.errors import RecordingError
from so101_core.sysid.recording import CONTROLLER_STATE, JOINT_STATES, SEGMENTS, Mark, Recording

from so101_nodes.sysid_recorder import DIAGNOSTICS


def _by_name(names: list[str], values: object) -> np.ndarray:
    row = np.full(len(JOINT_NAMES), np.nan)
    arr = np.asarray(values, dtype=np.float64)
    for name, v in zip(names, arr, strict=False):
        if name in JOINT_NAMES:
            row[JOINT_NAMES.index(name)] = v
    return row


def _seconds(stamps_ns: np.ndarray, t0: int) -> F64:
    return np.asarray((stamps_ns - t0) * 1e-9, dtype=np.float64)


def _topic(available: set[str], suffix: str, source: str) -> str | None:
    found = sorted(t for t in available if t == "/" + suffix or t.endswith("/" + suffix))
    if len(found) > 1:
        raise RecordingError(f"{source}: several {suffix} topics {found}; record one arm per bag")
    return found[0] if found else None


def load_recording(path: str | Path) -> Recording:
    """Read the bag at ``path``; raises :class:`RecordingError` when it cannot be read or has no joint_states."""
    source = str(path)
    try:
        topics = {t.name for t in info(path).topics}
    except (BagError, OSError) as exc:
        raise RecordingError(f"{source}: cannot read the bag: {exc}") from exc
    states_topic = _topic(topics, JOINT_STATES, source)
    control_topic = _topic(topics, CONTROLLER_STATE, source)
    marks_topic = _topic(topics, SEGMENTS, source)
    if states_topic is None:
        raise RecordingError(f"{source}: no {JOINT_STATES} topic: the measured positions are missing")
    wanted = {t for t in (states_topic, control_topic, marks_topic, DIAGNOSTICS) if t is not None}
    stamps, pos, vel, eff = [], [], [], []
    cmd_t, cmd_u = [], []
    temp_t, temps = [], []
    raw_marks = []
    try:
        for m in read_messages(path, wanted):
            msg = deserialize(m.cdr, m.type_name)
            if m.topic == states_topic:
                names = list(msg.name)
                stamps.append(to_ns(msg.header.stamp))
                pos.append(_by_name(names, msg.position))
                vel.append(_by_name(names, msg.velocity) if len(msg.velocity) else np.full(len(JOINT_NAMES), np.nan))
                eff.append(_by_name(names, msg.effort) if len(msg.effort) else np.zeros(len(JOINT_NAMES)))
            elif m.topic == control_topic:
                cmd_t.append(to_ns(msg.header.stamp))
                cmd_u.append(_by_name(list(msg.joint_names), msg.output.positions))
            elif m.topic == marks_topic:
                raw_marks.append(json.loads(msg.data))
            elif m.topic == DIAGNOSTICS:
                row = np.full(len(JOINT_NAMES), np.nan)
                for status in msg.status:
                    joint = str(status.name).rsplit(": ", 1)[-1]
                    values = {kv.key: kv.value for kv in status.values}
                    if joint in JOINT_NAMES and "temperature_c" in values:
                        row[JOINT_NAMES.index(joint)] = float(values["temperature_c"])
                if np.any(np.isfinite(row)):
                    temp_t.append(to_ns(msg.header.stamp))
                    temps.append(row)
    except (BagError, OSError, ValueError) as exc:
        raise RecordingError(f"{source}: cannot read the bag: {exc}") from exc
    if not stamps:
        raise RecordingError(f"{source}: no {JOINT_STATES} messages: the measured positions are missing")
    order = np.argsort(stamps, kind="stable")
    t0 = stamps[int(order[0])]
    times = _seconds(np.asarray(stamps, dtype=np.int64)[order], t0)
    c_order = np.argsort(cmd_t, kind="stable") if cmd_t else np.zeros(0, dtype=int)
    commands = Commands(
        _seconds(np.asarray(cmd_t, dtype=np.int64)[c_order], t0),
        np.asarray(cmd_u)[c_order] if cmd_u else np.zeros((0, len(JOINT_NAMES))),
    )
    marks = tuple(
        Mark(
            str(d.get("joint", "")),
            str(d.get("kind", "")),
            (int(d["start_ns"]) - t0) * 1e-9,
            (int(d["end_ns"]) - t0) * 1e-9,
            str(d.get("status", "SUCCEEDED")) == "SUCCEEDED",
        )
        for d in raw_marks
        if d.get("joint")
    )
    robot_ids = {str(d.get("robot_id", "")) for d in raw_marks} - {""}
    return Recording(
        times=times,
        positions=np.asarray(pos)[order],
        velocities=np.asarray(vel)[order],
        efforts=np.asarray(eff)[order],
        commands=commands,
        marks=marks,
        temperature_times=_seconds(np.asarray(temp_t, dtype=np.int64), t0),
        temperatures=np.asarray(temps) if temps else np.zeros((0, len(JOINT_NAMES))),
        source=source,
        robot_id=robot_ids.pop() if len(robot_ids) == 1 else "",
    )
