"""``so101 bag record`` / ``play`` against a real router: latched topics, offered QoS, source publish time."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from mcap.reader import make_reader
from nodegraph.graph.qos import LATCHED, QoS
from nodegraph.testing import wait_until
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode

SO101 = [sys.executable, "-m", "so101_cli.main"]
TF = "tf2_msgs/msg/TFMessage"


def _tf(node: ZenohNode) -> Any:
    transform = node.message("geometry_msgs/msg/TransformStamped", child_frame_id="base_link")
    transform.header.frame_id = "world"
    return node.message(TF, transforms=[transform])


def _record(bag: Path, seconds: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SO101, "bag", "record", "-a", "-o", str(bag), "--duration", str(seconds)],
                          capture_output=True, text=True, timeout=60, env=os.environ.copy())  # fmt: skip


def _latched_publishers(context: Context) -> tuple[ZenohNode, int, int]:
    """A node that published /tf_static and /robot_description (latched) before any recorder ran."""
    node = ZenohNode("latcher", args=[], context=context, enable_rosout=False, start_parameter_services=False)
    before = time.time_ns()
    node.create_publisher(TF, "/tf_static", LATCHED).publish(_tf(node))
    node.create_publisher("std_msgs/msg/String", "/robot_description", LATCHED).publish(
        node.message("std_msgs/msg/String", data="<robot name='so101'/>")
    )
    return node, before, time.time_ns()


def _record_latched_and_chatter(context: Context, bag: Path, seconds: float) -> tuple[int, int]:
    """Record ``-a`` while /chatter streams, after /tf_static and /robot_description were latched."""
    node, before, after = _latched_publishers(context)
    chatter = node.create_publisher("std_msgs/msg/String", "/chatter", QoS(depth=7, reliability="best_effort"))
    stop = threading.Event()

    def talk() -> None:
        while not stop.wait(0.05):
            chatter.publish(node.message("std_msgs/msg/String", data="hi"))

    talker = threading.Thread(target=talk, daemon=True)
    talker.start()
    time.sleep(1.0)  # the latched samples are old news by the time the recorder starts
    try:
        done = _record(bag, seconds)
    finally:
        stop.set()
        talker.join()
        node.shutdown()
    assert done.returncode == 0, done.stderr
    return before, after


def test_record_gets_latched_topics_with_qos_and_publish_time(context: Context, tmp_path: Path) -> None:
    bag = tmp_path / "latched"
    before, after = _record_latched_and_chatter(context, bag, 4.0)

    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    topics = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    assert topics["/tf_static"]["message_count"] == 1
    assert topics["/robot_description"]["message_count"] == 1
    assert topics["/chatter"]["message_count"] > 10
    (tf_qos,) = topics["/tf_static"]["topic_metadata"]["offered_qos_profiles"]
    assert tf_qos["durability"] == "transient_local" and tf_qos["depth"] == 1
    (chatter_qos,) = topics["/chatter"]["topic_metadata"]["offered_qos_profiles"]
    assert chatter_qos["reliability"] == "best_effort" and chatter_qos["depth"] == 7

    with (bag / "latched_0.mcap").open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        assert summary is not None
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        channels = {c.topic: c for c in summary.channels.values()}
        assert "transient_local" in channels["/tf_static"].metadata["offered_qos_profiles"]
        stamps = {channels[t].id: None for t in ("/tf_static",)}
        for _, channel, message in reader.iter_messages():
            if channel.id in stamps:
                # the publisher's source timestamp, not the (later) receive time
                assert before <= message.publish_time <= after < message.log_time
                stamps[channel.id] = message.publish_time
    assert all(stamps.values())


def test_play_replays_a_latched_topic_to_a_late_subscriber(context: Context, tmp_path: Path) -> None:
    bag = tmp_path / "to_play"
    _record_latched_and_chatter(context, bag, 4.0)  # playback lasts about as long
    player = subprocess.Popen([*SO101, "bag", "play", str(bag)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    listener = ZenohNode("late", args=[], context=context, enable_rosout=False, start_parameter_services=False)
    got: list[Any] = []
    try:
        wait_until(lambda: listener.publishers_info_by_topic("/tf_static"), 20.0, "the replay's /tf_static", 0.1)
        (offered,) = listener.publishers_info_by_topic("/tf_static")
        assert offered.qos.durability == "transient_local"
        time.sleep(2.0)  # the bag's single /tf_static message went out 1 s after the publishers appeared
        listener.create_subscription(TF, "/tf_static", got.append, LATCHED)
        wait_until(lambda: got, 10.0, "the latched /tf_static for a late subscriber", 0.1)
        assert player.poll() is None, "the replay ended before the late subscriber joined: test timing is off"
    finally:
        listener.shutdown()
        player.terminate()
        player.communicate(timeout=20)
    assert got and got[0].transforms[0].child_frame_id == "base_link"


def test_echo_gets_a_latched_message_published_before_it_started(context: Context) -> None:
    """As ``ros2 topic echo``: the subscription matches the publishers' durability."""
    node, _, _ = _latched_publishers(context)
    try:
        for args in (("/robot_description",), ("/robot_description", "std_msgs/msg/String")):
            echo = subprocess.run([*SO101, "topic", "echo", *args, "-n", "1"], capture_output=True, text=True,
                                  timeout=30, env=os.environ.copy())  # fmt: skip
            assert echo.returncode == 0, echo.stderr
            assert "so101" in echo.stdout
    finally:
        node.shutdown()
