"""joint_state_source: publishes a smooth test motion of the SO-101 joints on ``joint_states``.

A stand-in for the driver or the twin when neither is needed (demo, transport benchmark).

Parameters: ``rate_hz`` (Hz, default 100), ``amplitude_rad`` (rad, default 0.3), ``period_s`` (s, default 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodegraph.graph.api import Node
from nodegraph.graph.declared_params import declare_params
from so101_core.robot_spec import JOINT_NAMES


@dataclass(frozen=True)
class JointStateSourceParams:
    rate_hz: float = 100.0
    amplitude_rad: float = 0.3
    period_s: float = 4.0

    @classmethod
    def declare(cls, node: Node) -> JointStateSourceParams:
        params = declare_params(node, cls)
        if params.rate_hz <= 0 or params.period_s <= 0:
            raise ValueError(f"rate_hz and period_s must be > 0, got {params.rate_hz} and {params.period_s}")
        return params


def joint_positions(t_s: float, amplitude_rad: float, period_s: float) -> list[float]:
    """Positions (rad, canonical order) at time ``t_s``: each joint a sine, phase-shifted by its index."""
    phase = 2.0 * math.pi * t_s / period_s
    return [amplitude_rad * math.sin(phase + i * math.pi / 6.0) for i in range(len(JOINT_NAMES))]


class JointStateSource:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = JointStateSourceParams.declare(node)
        self.publisher = node.create_publisher("sensor_msgs/msg/JointState", "joint_states")
        self.start_ns = node.now_ns()
        self.published = 0
        node.create_timer(1.0 / self.params.rate_hz, self.on_timer)
        node.logger.info(f"publishing {self.publisher.topic} at {self.params.rate_hz:g} Hz")

    def on_timer(self) -> None:
        t_s = (self.node.now_ns() - self.start_ns) * 1e-9
        header = self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")
        msg = self.node.message(
            "sensor_msgs/msg/JointState",
            header=header,
            name=list(JOINT_NAMES),
            position=joint_positions(t_s, self.params.amplitude_rad, self.params.period_s),
        )
        self.publisher.publish(msg)
        self.published += 1


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(JointStateSource, "joint_state_source", args)


if __name__ == "__main__":
    raise SystemExit(main())
