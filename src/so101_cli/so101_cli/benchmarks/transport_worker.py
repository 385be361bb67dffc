"""Processes of the transport benchmark: publishers and a latency probe, over our nodes or raw zenoh.

``python -m so101_cli.benchmarks.transport_worker ROLE ...`` prints one JSON line when done:
- ``image NAME SECONDS [SUBSCRIBERS]`` / ``joints SECONDS [SUBSCRIBERS]``: publish 640×480 rgb8 at 30 Hz /
  JointState at 100 Hz, once the graph shows SUBSCRIBERS subscriptions of the topic (discovery, at most
  :data:`DISCOVERY_TIMEOUT_S`; its time is in the result);
- ``probe TOPIC...``: subscribe until SIGINT; counts and latencies (receive time − the publisher's source
  timestamp: the rmw_zenoh attachment's on zenoh, DDS's on rclpy);
- ``--raw`` before the role: the same load with plain zenoh put/subscribe (the baseline).
Nodes are on ``$SO101_TRANSPORT``'s backend.
"""

from __future__ import annotations

import functools
import json
import struct
import sys
import threading
import time
from typing import Any

import numpy as np
from nodegraph.images import image_fields

IMAGE_SHAPE = (480, 640, 3)
IMAGE_RATE_HZ = 30.0
JOINTS_RATE_HZ = 100.0
RAW_PREFIX = "bench_raw"
DISCOVERY_TIMEOUT_S = 20.0


def _image_msg(node: Any, name: str) -> Any:
    data = np.random.default_rng(0).integers(0, 255, size=IMAGE_SHAPE, dtype=np.uint8)
    header = node.message("std_msgs/msg/Header", frame_id=name)
    return node.message("sensor_msgs/msg/Image", header=header, **image_fields(data, "rgb8"))


def _paced(rate_hz: float, seconds: float, send: Any) -> int:
    period = 1.0 / rate_hz
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        send()
        sent += 1
        time.sleep(max(0.0, start + sent * period - time.monotonic()))
    return sent


def _await_subscribers(node: Any, topic: str, count: int) -> float:
    """Seconds until the graph shows ``count`` subscriptions of ``topic`` (at most DISCOVERY_TIMEOUT_S)."""
    start = time.monotonic()
    while len(node.subscriptions_info_by_topic(topic)) < count:
        if time.monotonic() - start > DISCOVERY_TIMEOUT_S:
            raise RuntimeError(f"{topic}: {count} subscriptions not discovered in {DISCOVERY_TIMEOUT_S:g} s")
        time.sleep(0.05)
    return time.monotonic() - start


def publish(role: str, name: str, seconds: float, raw: bool, subscribers: int = 1) -> dict[str, Any]:
    rate = IMAGE_RATE_HZ if role == "image" else JOINTS_RATE_HZ
    topic = f"/cameras/{name}/image_raw" if role == "image" else "/joint_states"
    if raw:
        from nodegraph.transport.zenoh.context import Context

        ctx = Context()
        size = IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * 3 + 64 if role == "image" else 160
        body = bytearray(size)
        raw_publisher = ctx.session.declare_publisher(f"{RAW_PREFIX}{topic}")
        time.sleep(1.0)

        def send() -> None:
            struct.pack_into("<q", body, 0, time.time_ns())
            raw_publisher.put(bytes(body))

        sent = _paced(rate, seconds, send)
        time.sleep(0.5)
        raw_publisher.undeclare()
        ctx.close()
        return {"topic": topic, "sent": sent}
    from nodegraph.transport.runtime import create_node

    node = create_node(f"bench_{role}_{name}", [])
    type_name = "sensor_msgs/msg/Image" if role == "image" else "sensor_msgs/msg/JointState"
    publisher = node.create_publisher(type_name, topic)
    template = _image_msg(node, name) if role == "image" else None
    discovery_s = _await_subscribers(node, topic, subscribers)
    time.sleep(0.5)  # the writer-reader match may follow the graph's news by a little

    def send_msg() -> None:
        if template is not None:
            template.header.stamp = node.stamp()
            publisher.publish(template)
        else:
            publisher.publish(
                node.message(
                    "sensor_msgs/msg/JointState",
                    header=node.message("std_msgs/msg/Header", stamp=node.stamp()),
                    name=["j"] * 6,
                    position=[0.0] * 6,
                )
            )

    sent = _paced(rate, seconds, send_msg)
    time.sleep(0.5)
    node.shutdown()
    return {"topic": topic, "sent": sent, "discovery_s": round(discovery_s, 3)}


def probe(topics: list[str], raw: bool) -> dict[str, Any]:
    from nodegraph.transport.shutdown import install_signal_handlers

    stop = threading.Event()
    install_signal_handlers(stop)
    latencies: dict[str, list[float]] = {t: [] for t in topics}
    lock = threading.Lock()

    def record(topic: str, sent_ns: int) -> None:
        with lock:
            latencies[topic].append((time.time_ns() - sent_ns) / 1e6)

    def on_raw_sample(topic: str, sample: Any) -> None:
        record(topic, struct.unpack_from("<q", sample.payload.to_bytes())[0])

    def on_graph_sample(topic: str, raw: Any) -> None:
        record(topic, raw[1].source_timestamp_ns)

    if raw:
        from nodegraph.transport.zenoh.context import Context

        ctx = Context()
        subs = [
            ctx.session.declare_subscriber(
                f"{RAW_PREFIX}{t}",
                functools.partial(on_raw_sample, t),
            )
            for t in topics
        ]
        print("READY", flush=True)
        stop.wait()
        for sub in subs:
            sub.undeclare()
        ctx.close()
    else:
        from nodegraph.graph.qos import QoS
        from nodegraph.transport.runtime import create_node

        node = create_node("bench_probe", [])
        for topic in topics:
            type_name = "sensor_msgs/msg/Image" if "image" in topic else "sensor_msgs/msg/JointState"
            node.create_subscription(
                type_name,
                topic,
                functools.partial(on_graph_sample, topic),
                QoS(depth=100),
                raw=True,
            )
        print("READY", flush=True)
        stop.wait()
        node.shutdown()
    return {"received": {t: len(v) for t, v in latencies.items()}, "latencies_ms": latencies}


def main(argv: list[str]) -> int:
    raw = "--raw" in argv
    args = [a for a in argv if a != "--raw"]
    role = args[0]
    if role == "probe":
        result = probe(args[1:], raw)
    elif role == "image":
        result = publish("image", args[1], float(args[2]), raw, int(args[3]) if len(args) > 3 else 1)
    elif role == "joints":
        result = publish("joints", "joints", float(args[1]), raw, int(args[2]) if len(args) > 2 else 1)
    else:
        print(f"unknown role {role!r}", file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
