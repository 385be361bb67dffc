"""teleop: the leader arm drives the follower: ``leader/joint_states`` -> ``joint_commands``.

Each leader message is mapped joint by joint, ``command = scale * leader + offset_rad`` (rad, canonical
order), and a timer (``rate_hz``) forwards the latest mapped target while it is fresh. The leader is stale
when its last message arrived more than ``stale_timeout_s`` ago, or when a message's header stamp is that
old (delayed delivery); then nothing is forwarded, so the driver's watchdog holds the follower, and
forwarding resumes on the next fresh message. Messages without all six joints, or with non-finite values,
are dropped.

``/diagnostics`` carries one status ``teleop: leader`` every ``diagnostics_period_s``: OK while forwarding,
WARN while the leader is stale (with how long), ERROR when no leader message ever arrived.

Parameters: ``rate_hz`` (Hz, 100), ``stale_timeout_s`` (s, 0.2), ``scale`` (6 factors, default 1),
``offset_rad`` (6 offsets, rad, default 0), ``check_stamp`` (true: also drop messages with old stamps; set
false when the leader runs on a machine whose clock is not synchronised), ``diagnostics_period_s`` (s, 1.0).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from nodegraph.diagnostics import ERROR, OK, WARN, diagnostic_array, diagnostics_publisher, status_message
from nodegraph.graph.api import Message, Node
from nodegraph.graph.declared_params import check_bounds, declare_params
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES

from so101_nodes.joint_messages import joint_vector


@dataclass(frozen=True)
class TeleopParams:
    """Teleop parameters (units in the names); read once at start."""

    rate_hz: float = 100.0
    stale_timeout_s: float = 0.2
    scale: tuple[float, ...] = (1.0,) * 6
    offset_rad: tuple[float, ...] = (0.0,) * 6
    check_stamp: bool = True
    diagnostics_period_s: float = 1.0

    @classmethod
    def declare(cls, node: Node) -> TeleopParams:
        params = declare_params(node, cls)
        check_bounds("teleop", params, positive=("rate_hz", "stale_timeout_s", "diagnostics_period_s"))
        for name in ("scale", "offset_rad"):
            values = getattr(params, name)
            if len(values) != len(JOINT_NAMES) or not all(math.isfinite(v) for v in values):
                raise ValueError(f"teleop: {name} needs {len(JOINT_NAMES)} finite values, got {list(values)}")
        return params


class Teleop:
    """The teleop node (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = TeleopParams.declare(node)
        self.scale = np.array(self.params.scale)
        self.offset = np.array(self.params.offset_rad)
        self._lock = threading.Lock()
        self._target: F64 | None = None
        self._received_at = -math.inf  # time.monotonic() of the latest accepted leader message
        self._stale = True
        self.forwarded = 0
        self.dropped = 0
        self.publisher = node.create_publisher("sensor_msgs/msg/JointState", "joint_commands")
        node.create_subscription("sensor_msgs/msg/JointState", "leader/joint_states", self.on_leader)
        self.diagnostics = diagnostics_publisher(node)
        node.create_timer(1.0 / self.params.rate_hz, self.on_timer)
        node.create_timer(self.params.diagnostics_period_s, self.publish_diagnostics)
        node.logger.info(
            f"forwarding {node.resolve('leader/joint_states')} -> {self.publisher.topic} at {self.params.rate_hz:g} Hz"
        )

    def map(self, leader: F64) -> F64:
        """Follower target (6,) rad for leader positions (6,) rad."""
        return np.asarray(self.scale * leader + self.offset, dtype=np.float64)

    def on_leader(self, msg: Any) -> None:
        """Keep the mapped target of a complete, finite and (with ``check_stamp``) recent leader message."""
        try:
            leader = joint_vector(msg, np.full(len(JOINT_NAMES), math.nan))
            if not np.all(np.isfinite(leader)):
                raise ValueError("leader message misses joints")
        except ValueError as exc:
            self.dropped += 1
            self.node.logger.debug(f"dropped leader message: {exc}")
            return
        stamp_ns = to_ns(msg.header.stamp)
        age_s = (self.node.now_ns() - stamp_ns) * 1e-9
        if self.params.check_stamp and stamp_ns and age_s > self.params.stale_timeout_s:
            self.dropped += 1
            return
        with self._lock:
            self._target = self.map(leader)
            self._received_at = time.monotonic()

    def on_timer(self) -> None:
        """Forward the latest target while the leader is fresh."""
        with self._lock:
            target = self._target
            stale = target is None or time.monotonic() - self._received_at > self.params.stale_timeout_s
        if stale != self._stale:
            self._stale = stale
            if stale:
                self.node.logger.warning(
                    f"leader stale (nothing for {self.params.stale_timeout_s:g} s): stopped forwarding"
                )
            else:
                self.node.logger.info("leader fresh: forwarding")
        if stale or target is None:
            return
        header = self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")
        self.publisher.publish(
            self.node.message("sensor_msgs/msg/JointState", header=header, name=list(JOINT_NAMES), position=target)
        )
        self.forwarded += 1

    def diagnostics_message(self) -> Message:
        """One status for the leader stream: OK forwarding, WARN stale, ERROR never heard."""
        with self._lock:
            never = self._target is None
            age = time.monotonic() - self._received_at
            stale = self._stale
        if never:
            level, message = ERROR, f"no leader message yet on {self.node.resolve('leader/joint_states')}"
        elif stale:
            level, message = WARN, f"leader stale: nothing for {age:.1f} s; not forwarding (the follower holds)"
        else:
            level, message = OK, "forwarding"
        values = {"forwarded": str(self.forwarded), "dropped": str(self.dropped), "age_s": f"{min(age, 1e9):.3f}"}
        status = status_message(self.node, "leader", level, message, "teleop", values)
        return diagnostic_array(self.node, [status])

    def publish_diagnostics(self) -> None:
        self.diagnostics.publish(self.diagnostics_message())


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(Teleop, "teleop", args)


if __name__ == "__main__":
    raise SystemExit(main())
