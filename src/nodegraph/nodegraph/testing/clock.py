"""``SimClock``: a test's own ``/clock``, published by a node of its own, for nodes under ``use_sim_time``."""

from __future__ import annotations

from nodegraph.graph.api import Node
from nodegraph.testing import wait_until


class SimClock:
    """Publishes ROS time on ``/clock`` from ``node`` (a node without ``use_sim_time``), as the twin does."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.ns = 0
        """The last time set (ns)."""
        self._publisher = node.create_publisher("rosgraph_msgs/msg/Clock", "/clock")

    def set(self, ns: int, *observers: Node, timeout_s: float = 10.0) -> None:
        """Publish ROS time ``ns`` (ns) until every node of ``observers`` reads it (``now_ns() == ns``): the
        observer's executor has taken the message, and its timers due then run next on that executor."""
        self.ns = ns
        message = self.node.message("rosgraph_msgs/msg/Clock", clock=self.node.stamp(ns))

        def seen() -> bool:
            if all(o.now_ns() == ns for o in observers):
                return True
            self._publisher.publish(message)  # again: /clock is best effort, and a node may have just subscribed
            return False

        wait_until(seen, timeout_s, f"/clock at {ns} ns seen by {[o.name for o in observers]}")

    def advance(self, ns: int, *observers: Node, timeout_s: float = 10.0) -> None:
        """``set(self.ns + ns, ...)``: ROS time moves on by ``ns`` (ns)."""
        self.set(self.ns + ns, *observers, timeout_s=timeout_s)
