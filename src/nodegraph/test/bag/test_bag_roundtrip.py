"""A bag written by BagWriter decodes, message for message, with independent readers (mcap_ros2, rosbags)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from _bagdata import FB, IMG, JOINTS, JS, feedback, image, joint_state
from mcap.reader import make_reader
from nodegraph.bag import BagWriter, format_info, info, qos_profile_yaml, read_messages
from nodegraph.interfaces import interface_info, typestore
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

T0 = 1_700_000_000_000_000_000
N_JS, N_IMG, N_FB = 40, 6, 5
FB_TOPIC = "/skillgen/generate/_action/feedback"


def _expected() -> list[tuple[str, str, int, bytes]]:
    msgs = [("/joint_states", JS, T0 + i * 10_000_000, joint_state(i)) for i in range(N_JS)]
    msgs += [("/cameras/ego/image_raw", IMG, T0 + i * 66_000_000 + 1, image(i)) for i in range(N_IMG)]
    msgs += [("/skillgen/generate/_action/feedback", FB, T0 + i * 70_000_000 + 2, feedback(i)) for i in range(N_FB)]
    return msgs


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str, int, bytes]]]:
    path = tmp_path_factory.mktemp("bags") / "demo"
    expected = _expected()
    with BagWriter(path, chunk_size=2 * 1024 * 1024, compression="zstd", custom_data={"task": "vial"}) as writer:
        writer.add_topic("/joint_states", JS, qos_profile_yaml(depth=100))
        writer.add_topic("/cameras/ego/image_raw", IMG, qos_profile_yaml(reliability="best_effort"))
        writer.add_topic("/skillgen/generate/_action/feedback", FB)
        for topic, _, stamp, data in sorted(expected, key=lambda m: (m[2] % 7, m[2])):  # out of time order
            assert writer.write(topic, stamp, data)
    assert writer.written == len(expected) and writer.dropped == 0
    return path, sorted(expected, key=lambda m: m[2])


def test_layout_and_metadata_yaml(bag: tuple[Path, list]) -> None:
    path, expected = bag
    assert sorted(p.name for p in path.iterdir()) == ["demo_0.mcap", "metadata.yaml"]
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == "mcap" and meta["ros_distro"] == "jazzy"
    assert meta["relative_file_paths"] == ["demo_0.mcap"]
    assert meta["message_count"] == len(expected)
    assert meta["starting_time"]["nanoseconds_since_epoch"] == expected[0][2]
    assert meta["duration"]["nanoseconds"] == expected[-1][2] - expected[0][2]
    assert meta["custom_data"] == {"task": "vial"}
    topics = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    js = topics["/joint_states"]
    assert js["message_count"] == N_JS
    assert js["topic_metadata"]["type_description_hash"] == interface_info(JS).type_hash
    assert js["topic_metadata"]["offered_qos_profiles"][0]["depth"] == 100
    assert js["topic_metadata"]["offered_qos_profiles"][0]["history"] == "keep_last"
    assert topics["/skillgen/generate/_action/feedback"]["topic_metadata"]["offered_qos_profiles"] == []


def test_mcap_records_follow_ros2_profile(bag: tuple[Path, list]) -> None:
    path, _ = bag
    with (path / "demo_0.mcap").open("rb") as stream:
        reader = make_reader(stream)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        assert {s.encoding for s in summary.schemas.values()} == {"ros2msg"}
        by_name = {s.name: s for s in summary.schemas.values()}
        assert by_name[JS].data.decode() == typestore().generate_msgdef(JS, ros_version=2)[0]
        assert "MSG: std_msgs/Header" in by_name[IMG].data.decode()
        for channel in summary.channels.values():
            assert channel.message_encoding == "cdr"
            assert set(channel.metadata) == {"offered_qos_profiles", "topic_type_hash"}
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        rosbag2_meta = [m for m in reader.iter_metadata() if m.name == "rosbag2"]
        assert rosbag2_meta and "serialized_metadata" in rosbag2_meta[0].metadata


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_mcap_ros2_decodes_standard_types(bag: tuple[Path, list]) -> None:
    path, expected = bag
    from mcap_ros2.reader import read_ros2_messages  # deprecated module, but the reference decoder

    want = [m for m in expected if m[1] in (JS, IMG)]
    got = list(read_ros2_messages(str(path / "demo_0.mcap"), topics=["/joint_states", "/cameras/ego/image_raw"]))
    assert [(m.channel.topic, m.log_time_ns) for m in got] == [(t, s) for t, _, s, _ in want]
    for msg, (_, type_name, stamp, _) in zip(got, want, strict=True):
        assert msg.schema.name == type_name
        if type_name == IMG:
            assert (msg.ros_msg.width, msg.ros_msg.height, msg.ros_msg.encoding) == (640, 480, "rgb8")
            assert bytes(msg.ros_msg.data[:3]) == b"\x01\x02\x03" and len(msg.ros_msg.data) == 640 * 480 * 3
        else:
            i = (stamp - T0) // 10_000_000
            assert list(msg.ros_msg.position) == pytest.approx([i + 0.1 * k for k in range(6)])
            assert msg.ros_msg.name == JOINTS


def test_so101_type_decodes_from_the_bags_own_schema_text(bag: tuple[Path, list]) -> None:
    """mcap_ros2 (rosidl's .msg grammar) rejects underscores in names like GenerateDemos_FeedbackMessage, so
    this type is decoded by a fresh, empty rosbags typestore fed only the schema text stored in the bag."""
    path, expected = bag
    with (path / "demo_0.mcap").open("rb") as stream:
        schema = next(s for s in make_reader(stream).get_summary().schemas.values() if s.name == FB)  # type: ignore[union-attr]
    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg(schema.data.decode(), FB))
    got = [m for m in read_messages(path, ["/skillgen/generate/_action/feedback"])]
    want = [m for m in expected if m[1] == FB]
    assert [m.cdr for m in got] == [m[3] for m in want]
    for i, message in enumerate(got):
        decoded: Any = store.deserialize_cdr(message.cdr, FB)
        assert (decoded.feedback.stage, decoded.feedback.attempted, decoded.feedback.eta_s) == (
            f"stage-{i}",
            i,
            1.5,
        )


def test_rosbags_readers(bag: tuple[Path, list]) -> None:
    path, expected = bag
    with Reader(path) as reader:
        assert reader.message_count == len(expected)
        counts = {c.topic: c.msgcount for c in reader.connections}
        assert counts == {"/joint_states": N_JS, "/cameras/ego/image_raw": N_IMG, FB_TOPIC: N_FB}
        raw = [(c.topic, stamp, bytes(data)) for c, stamp, data in reader.messages()]
        assert sorted(raw, key=lambda m: m[1]) == [(t, s, d) for t, _, s, d in expected]
        qos = next(c for c in reader.connections if c.topic == "/cameras/ego/image_raw").ext.offered_qos_profiles  # type: ignore[union-attr]
        assert qos[0].reliability.name == "BEST_EFFORT"
    with AnyReader([path], default_typestore=typestore()) as reader:
        count = 0
        for connection, _, data in reader.messages():
            msg = reader.deserialize(data, connection.msgtype)
            assert connection.digest == interface_info(connection.msgtype).type_hash
            count += msg is not None
        assert count == len(expected)


def test_reader_info_and_order(bag: tuple[Path, list]) -> None:
    path, expected = bag
    assert [tuple(m) for m in read_messages(path)] == [tuple(m) for m in expected]
    only = list(read_messages(path / "demo_0.mcap", ["/cameras/ego/image_raw"], start_ns=T0 + 100_000_000))
    assert [m.timestamp_ns for m in only] == [s for t, _, s, _ in expected if t.startswith("/cam") and s >= T0 + 1e8]
    bag_info = info(path)
    assert not bag_info.truncated and bag_info.message_count == len(expected)
    assert bag_info.start_ns == expected[0][2] and bag_info.end_ns == expected[-1][2]
    assert bag_info.topic("/joint_states").message_count == N_JS and bag_info.compression == "zstd"
    text = format_info(bag_info)
    assert "Files:             demo_0.mcap" in text and "Storage id:        mcap" in text
    assert f"Messages:          {len(expected)}" in text
    assert "Topic: /joint_states | Type: sensor_msgs/msg/JointState | Count: 40 | Serialization Format: cdr" in text
