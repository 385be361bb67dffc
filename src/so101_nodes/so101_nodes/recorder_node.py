"""recorder: records topics to a rosbag2 bag (MCAP storage), like ``ros2 bag record -s mcap``.

Messages are written as received (raw CDR; the receive time as MCAP log time, the publisher's source
timestamp as publish time) by the bag's single writer thread. A topic is subscribed once a publisher of it
is seen on the graph (checked every 0.5 s), so the recorder may start before the publishers; as rosbag2
does, it subscribes transient_local when every publisher offers it (``/tf_static``, ``/robot_description``
are then recorded although published before), best_effort when every publisher is, and records each
publisher's offered QoS in the bag (``ros2 bag play`` and ``so101 bag play`` replay with it).

Parameters: ``topics`` (list of names; empty with ``all: true`` records every topic), ``all`` (bool),
``output`` (bag directory; default ``rosbag2_<date>_<time>``), ``exclude`` (list of names never recorded),
``chunk_compression`` (``zstd``, ``lz4`` or ``none``; MCAP chunk compression, zstd as rosbag2's default).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nodegraph.bag.errors import BagClosedError
from nodegraph.bag.metadata import offered_qos_yaml
from nodegraph.bag.writer import BagWriter, Compression
from nodegraph.graph.api import Node
from nodegraph.graph.declared_params import READ_ONLY, declare_params
from nodegraph.graph.qos import QoS, adapted_to

DISCOVERY_PERIOD_S = 0.5
RECORD_QOS = QoS(depth=100)
ACTION_INFIX = "/_action/"
COMPRESSIONS: dict[str, Compression | None] = {"zstd": "zstd", "lz4": "lz4", "none": None}


@dataclass(frozen=True)
class RecorderParams:
    """Recorder parameters (see the module docstring), settable as ever except ``chunk_compression`` (read-only).

    The list defaults are ``[""]`` as ``ros2 launch`` gives for an empty list (read as no name); ``output`` ""
    reads as ``rosbag2_<date>_<time>``."""

    topics: tuple[str, ...] = ("",)
    all: bool = False
    output: str = ""
    exclude: tuple[str, ...] = ("",)
    chunk_compression: str = field(default="zstd", metadata=READ_ONLY)

    @classmethod
    def declare(cls, node: Node) -> RecorderParams:
        """Declare the parameters and validate them (``ValueError`` naming the one at fault)."""
        default_output = dt.datetime.now().strftime("rosbag2_%Y_%m_%d-%H_%M_%S")
        params = declare_params(node, cls, read_only=False)
        if not params.topics and not params.all:
            raise ValueError("recorder: give 'topics' or set 'all: true'")
        if params.chunk_compression not in COMPRESSIONS:
            raise ValueError(f"recorder: chunk_compression must be one of {sorted(COMPRESSIONS)}, "
                             f"got {params.chunk_compression!r}")  # fmt: skip
        return replace(params, output=params.output or default_output)


class Recorder:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = RecorderParams.declare(node)
        self.wanted = {node.resolve(t) for t in self.params.topics}
        self.excluded = {node.resolve(t) for t in self.params.exclude}
        compression = COMPRESSIONS[self.params.chunk_compression]
        self.writer = BagWriter(Path(self.params.output), compression=compression).open()
        self.subscriptions: dict[str, Any] = {}
        self.late = 0  # messages that arrived after close() began (not recorded)
        self.discover()
        node.create_timer(DISCOVERY_PERIOD_S, self.discover)
        what = "all topics" if self.params.all else ", ".join(sorted(self.wanted))
        node.logger.info(f"recording {what} to {self.params.output}")

    def _should_record(self, topic: str) -> bool:
        if topic in self.subscriptions or topic in self.excluded:
            return False
        if self.params.all:
            return ACTION_INFIX not in topic
        return topic in self.wanted

    def discover(self) -> None:
        for topic, types in self.node.topic_names_and_types().items():
            if not self._should_record(topic):
                continue
            publishers = self.node.publishers_info_by_topic(topic)
            if not publishers:  # as rosbag2: only topics someone publishes (their QoS decides ours)
                continue
            type_name = sorted(types)[0]
            if len(types) > 1:
                self.node.logger.warning(f"{topic} has several types {sorted(types)}; recording {type_name}")
            offered = [p.qos for p in publishers if p.topic_type == type_name]
            self.writer.add_topic(topic, type_name, offered_qos_yaml(offered))
            qos = adapted_to(offered, RECORD_QOS.depth)
            self.subscriptions[topic] = self.node.create_subscription(
                type_name, topic, functools.partial(self.on_message, topic), qos, raw=True
            )
            self.node.logger.info(f"subscribed to {topic} [{type_name}] ({qos.reliability}, {qos.durability})")

    def on_message(self, topic: str, raw: tuple[bytes, Any]) -> None:
        attachment = raw[1]
        sent = getattr(attachment, "source_timestamp_ns", None)  # the publisher's send time, both backends
        try:
            self.writer.write(topic, self.node.now_ns(), raw[0], sent)
        except BagClosedError:  # arrived while close() drains the queue: after the end of the recording
            self.late += 1

    def close(self) -> None:
        """Flush and close the bag (every queued message is written)."""
        self.writer.close()
        self.node.logger.info(f"bag closed: {self.params.output}")


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(Recorder, "recorder", args)


if __name__ == "__main__":
    raise SystemExit(main())
