"""The bag recorder node on both backends (a real zenoh router; rclpy over DDS): a latched topic published before
it started (``/tf_static``, transient_local), a live stream (``/joint_states``), each publisher's offered QoS in
the bag, and the bag readable without ROS."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from nodegraph.bag import info, read_messages
from nodegraph.bag.metadata import parse_qos_yaml
from nodegraph.graph.qos import LATCHED
from nodegraph.interfaces.messages import deserialize
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend
from so101_core.robot_spec import JOINT_NAMES
from so101_nodes.recorder_node import Recorder, RecorderParams


def test_recorder_records_a_latched_topic_and_a_stream_with_their_qos(
    own_graph_backend: GraphBackend, tmp_path: Path
) -> None:
    talker = own_graph_backend.node("talker")
    msg = talker.message
    tf_static = talker.create_publisher("tf2_msgs/msg/TFMessage", "/tf_static", LATCHED)
    transform = msg("geometry_msgs/msg/TransformStamped", header=msg("std_msgs/msg/Header", frame_id="world"),
                    child_frame_id="base_link")  # fmt: skip
    tf_static.publish(msg("tf2_msgs/msg/TFMessage", transforms=[transform]))  # before the recorder exists
    states = talker.create_publisher("sensor_msgs/msg/JointState", "/joint_states")

    bag = tmp_path / "bag"
    node = own_graph_backend.node("recorder", parameter_overrides={"topics": ["/tf_static", "/joint_states"],
                                                                   "output": str(bag)})  # fmt: skip
    recorder = Recorder(node)
    wait_until(lambda: len(recorder.subscriptions) == 2, 20.0)
    sent = 0
    for sent in range(1, 201):  # until a few arrived; the first ones may precede the recorder's match
        states.publish(msg("sensor_msgs/msg/JointState", name=list(JOINT_NAMES), position=[0.1 * sent] * 6))
        time.sleep(0.02)
        if recorder.writer.stats().written + recorder.writer.stats().queued >= 6:  # the latched one + five
            break
    node.shutdown()
    recorder.close()

    counts = {t.name: t for t in info(bag).topics}
    assert counts["/tf_static"].message_count == 1 and counts["/joint_states"].message_count >= 5
    assert parse_qos_yaml(counts["/tf_static"].offered_qos_profiles)[0]["durability"] == "transient_local"
    assert parse_qos_yaml(counts["/joint_states"].offered_qos_profiles)[0]["durability"] == "volatile"
    by_topic = {m.topic: m for m in read_messages(bag)}
    latched = deserialize(by_topic["/tf_static"].cdr, "tf2_msgs/msg/TFMessage")
    assert [(t.header.frame_id, t.child_frame_id) for t in latched.transforms] == [("world", "base_link")]
    last = deserialize(by_topic["/joint_states"].cdr, "sensor_msgs/msg/JointState")
    assert list(last.name) == list(JOINT_NAMES) and 0 < last.position[0] <= 0.1 * sent + 1e-9


def test_recorder_parameters_as_launch_gives_them(own_graph_backend: GraphBackend) -> None:
    """``[""]`` lists (``ros2 launch``'s empty list) read as no name, an empty ``output`` as a dated directory;
    the lists, ``all`` and ``output`` stay settable, ``chunk_compression`` is refused."""
    node = own_graph_backend.node("recorder", parameter_overrides={"topics": ["", "/tf"], "all": True})
    params = RecorderParams.declare(node)
    assert (params.topics, params.all, params.exclude, params.chunk_compression) == (("/tf",), True, (), "zstd")
    assert re.fullmatch(r"rosbag2_\d{4}_\d{2}_\d{2}-\d{2}_\d{2}_\d{2}", params.output), params.output
    assert node.get_parameter("exclude") == [""] and node.get_parameter("output") == ""  # the declared defaults
    assert all(r.successful for r in node.set_parameters({"topics": ["/a"], "all": False, "output": "b"}))
    refused = node.set_parameters({"chunk_compression": "lz4"})[0]
    assert not refused.successful and "read-only" in refused.reason, refused
    assert node.get_parameter("chunk_compression") == "zstd"

    for i, (overrides, message) in enumerate((
        ({"topics": [""]}, "recorder: give 'topics' or set 'all: true'"),
        ({"all": True, "chunk_compression": "gzip"},
         "recorder: chunk_compression must be one of ['lz4', 'none', 'zstd'], got 'gzip'"),
    )):  # fmt: skip
        bad = own_graph_backend.node(f"recorder_bad{i}", parameter_overrides=overrides)
        with pytest.raises(ValueError, match=re.escape(message)):
            RecorderParams.declare(bad)
