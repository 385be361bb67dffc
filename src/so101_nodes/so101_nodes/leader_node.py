"""leader: the SO-101 leader arm (teleoperation), torque off, published on ``leader/joint_states``.

A timer (``rate_hz``) does one sync read of the six servos and publishes their positions (rad, canonical
names, the follower's convention, so teleop can forward them unchanged). A silent servo's joint is left out
(ERROR on ``/diagnostics``); teleop forwards only complete messages, so the follower then holds. A failed
read publishes nothing (consumers see the leader go stale) and is reported on ``/diagnostics``: WARN, then ERROR after
``max_consecutive_failures`` in a row, OK again when reads succeed. A failed port is reopened every
``reconnect_period_s``. The leader is never powered: :class:`SO101Leader` refuses torque and writes.

Parameters: ``robot_config`` (robot.yaml; "" = the config directory's), ``port`` ("" = ``robot.leader.bus.port``),
``calibration`` (LeRobot calibration JSON; "" = from the config), ``rate_hz`` (Hz, 100),
``diagnostics_period_s`` (s, 1.0), ``max_consecutive_failures`` (5), ``reconnect_period_s`` (s, 1.0).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from nodegraph.diagnostics import ERROR, OK, diagnostic_array, diagnostics_publisher, status_message
from nodegraph.graph.api import Message, Node
from nodegraph.graph.declared_params import check_bounds, declare_params
from so101_hardware.robot import SO101Leader

from so101_nodes.arm_link import ArmLink, load_arm
from so101_nodes.joint_messages import joint_state_message


@dataclass(frozen=True)
class LeaderParams:
    """Leader parameters (units in the names); read once at start."""

    robot_config: str = ""
    port: str = ""
    calibration: str = ""
    rate_hz: float = 100.0
    diagnostics_period_s: float = 1.0
    max_consecutive_failures: int = 5
    reconnect_period_s: float = 1.0

    @classmethod
    def declare(cls, node: Node) -> LeaderParams:
        params = declare_params(node, cls)
        check_bounds("leader", params, positive=("rate_hz", "diagnostics_period_s", "reconnect_period_s"))
        if params.max_consecutive_failures < 1:
            raise ValueError(f"leader: max_consecutive_failures must be >= 1, got {params.max_consecutive_failures}")
        return params


class Leader:
    """The leader-arm node (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = LeaderParams.declare(node)
        entry, calibration, config = load_arm(
            self.params.robot_config, self.params.port, self.params.calibration, role="leader"
        )
        self.safety = config.safety
        self.arm = SO101Leader(entry.arm, calibration)
        self.link = ArmLink(node, self.arm, self.params.reconnect_period_s, self.params.max_consecutive_failures)
        self.publisher = node.create_publisher("sensor_msgs/msg/JointState", "leader/joint_states")
        self.diagnostics = diagnostics_publisher(node)
        self.published = 0
        self._closed = False
        self.link.ensure_connected()
        self._timers = [
            node.create_timer(1.0 / self.params.rate_hz, self.on_cycle),
            node.create_timer(self.params.diagnostics_period_s, self.publish_diagnostics),
        ]
        node.logger.info(
            f"reading the leader arm on {self.link.port} at {self.params.rate_hz:g} Hz -> {self.publisher.topic}"
        )

    def on_cycle(self) -> None:
        """One sync read -> ``leader/joint_states`` (nothing when the read failed)."""
        if self._closed or not self.link.ensure_connected():
            return
        state = self.link.read()
        if state is not None:
            self.publisher.publish(joint_state_message(self.node, state))
            self.published += 1

    def diagnostics_message(self) -> Message:
        """One status for the leader arm's link, one per servo."""
        level, message = self.link.problem() or (OK, "ok")
        state = self.link.last_state
        if level == OK and state is not None and state.missing:
            level, message = ERROR, f"{self.link.last_error}; its joints are left out of leader/joint_states"
        elif level == OK and state is not None and state.faults():
            level = ERROR
            message = "servo fault: " + ", ".join(f"{j} {f.describe()}" for j, f in state.faults().items())
        values = {**self.link.values(), "published": str(self.published)}
        statuses = [status_message(self.node, "arm", level, message, f"feetech:{self.link.port}", values)]
        return diagnostic_array(self.node, statuses + self.link.servo_statuses(self.safety))

    def publish_diagnostics(self) -> None:
        self.diagnostics.publish(self.diagnostics_message())

    def close(self) -> None:
        """Close the bus (the leader's torque stays off)."""
        self._closed = True
        for timer in self._timers:
            with contextlib.suppress(Exception):  # the node may already be destroyed
                timer.cancel()
        self.link.close(disable_torque=False)


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(Leader, "leader", args)


if __name__ == "__main__":
    raise SystemExit(main())
