"""recorder: records topics to a rosbag2 bag (MCAP storage), like ``ros2 bag record -s mcap``.

Messages are written as received (raw CDR, receive time stamps) by the bag's single writer thread.
Topics are subscribed as soon as their type is known on the graph (checked every 0.5 s), so the recorder
may start before the publishers.

Parameters: ``topics`` (list of names; empty with ``all: true`` records every topic), ``all`` (bool),
``output`` (bag directory; default ``rosbag2_<date>_<time>``), ``exclude`` (list of names never recorded).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodegraph.bag.writer import BagWriter
from nodegraph.graph.api import Node
from nodegraph.graph.qos import QoS

DISCOVERY_PERIOD_S = 0.5
RECORD_QOS = QoS(depth=100)
ACTION_INFIX = "/_action/"


@dataclass(frozen=True)
class RecorderParams:
    topics: tuple[str, ...]
    record_all: bool
    output: str
    exclude: tuple[str, ...]

    @classmethod
    def declare(cls, node: Node) -> RecorderParams:
        default_output = dt.datetime.now().strftime("rosbag2_%Y_%m_%d-%H_%M_%S")
        params = cls(
            topics=tuple(node.declare_parameter("topics", [""]) or ()),
            record_all=node.declare_parameter("all", False),
            output=node.declare_parameter("output", "") or default_output,
            exclude=tuple(node.declare_parameter("exclude", [""]) or ()),
        )
        topics = tuple(t for t in params.topics if t)
        if not topics and not params.record_all:
            raise ValueError("recorder: give 'topics' or set 'all: true'")
        return cls(topics, params.record_all, params.output, tuple(t for t in params.exclude if t))


class Recorder:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = RecorderParams.declare(node)
        self.wanted = {node.resolve(t) for t in self.params.topics}
        self.excluded = {node.resolve(t) for t in self.params.exclude}
        self.writer = BagWriter(Path(self.params.output)).open()
        self.subscriptions: dict[str, Any] = {}
        self.discover()
        node.create_timer(DISCOVERY_PERIOD_S, self.discover)
        what = "all topics" if self.params.record_all else ", ".join(sorted(self.wanted))
        node.logger.info(f"recording {what} to {self.params.output}")

    def _should_record(self, topic: str) -> bool:
        if topic in self.subscriptions or topic in self.excluded:
            return False
        if self.params.record_all:
            return ACTION_INFIX not in topic
        return topic in self.wanted

    def discover(self) -> None:
        for topic, types in self.node.topic_names_and_types().items():
            if not self._should_record(topic):
                continue
            type_name = sorted(types)[0]
            if len(types) > 1:
                self.node.logger.warning(f"{topic} has several types {sorted(types)}; recording {type_name}")
            self.writer.add_topic(topic, type_name)
            self.subscriptions[topic] = self.node.create_subscription(
                type_name, topic, functools.partial(self.on_message, topic), RECORD_QOS, raw=True
            )
            self.node.logger.info(f"subscribed to {topic} [{type_name}]")

    def on_message(self, topic: str, raw: tuple[bytes, Any]) -> None:
        self.writer.write(topic, self.node.now_ns(), raw[0])

    def close(self) -> None:
        """Flush and close the bag (every queued message is written)."""
        self.writer.close()
        self.node.logger.info(f"bag closed: {self.params.output}")


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(Recorder, "recorder", args)


if __name__ == "__main__":
    raise SystemExit(main())
