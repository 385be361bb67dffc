"""Wire conventions of rmw_zenoh_cpp (Jazzy): keys, liveliness tokens, QoS strings, attachment, GIDs, CDR."""

from __future__ import annotations

import threading
from typing import Any

import xxhash
import zenoh
import zenoh.ext
from nodegraph.graph.qos import QoS
from nodegraph.interfaces import interface_info
from nodegraph.interfaces.messages import make, serialize
from nodegraph.transport.zenoh.attachment import Attachment
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.keyexpr import (
    EndpointToken,
    NodeToken,
    data_key,
    gid,
    keyexpr_to_qos,
    parse_token,
    qos_to_keyexpr,
)
from nodegraph.transport.zenoh.node import ZenohNode

STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"


def test_tokens_match_rmw_zenoh_design_examples() -> None:
    node = NodeToken(2, "8b20917502ee955ac4476e0266340d5c", 0, "/", "talker")
    publisher = EndpointToken(node, 10, "MP", "/chatter", "std_msgs::msg::dds_::String_", STRING_HASH, QoS(7))
    assert publisher.key() == (
        "@ros2_lv/2/8b20917502ee955ac4476e0266340d5c/0/10/MP/%/%/talker/%chatter/"
        f"std_msgs::msg::dds_::String_/{STRING_HASH}/::,7:,:,:,,"
    )
    assert node.key() == "@ros2_lv/2/8b20917502ee955ac4476e0266340d5c/0/0/NN/%/%/talker"
    assert data_key(0, "/robot1/chatter", "std_msgs::msg::dds_::String_", STRING_HASH) == (
        f"0/robot1/chatter/std_msgs::msg::dds_::String_/{STRING_HASH}"
    )
    parsed = parse_token(publisher.key())
    assert parsed is not None and (parsed.name, parsed.kind, parsed.qos) == ("/chatter", "MP", QoS(7))


def test_qos_strings_round_trip() -> None:
    assert qos_to_keyexpr(QoS(10)) == "::,10:,:,:,,"
    assert qos_to_keyexpr(QoS(42)) == "::,:,:,:,,"
    status = QoS(1, "reliable", "transient_local")
    assert qos_to_keyexpr(status) == ":1:,1:,:,:,,"
    rosout = QoS(1000, "reliable", "transient_local", lifespan_ns=10_000_000_000)
    assert qos_to_keyexpr(rosout) == ":1:,1000:,:10,0:,,"  # a Jazzy talker's /rosout token
    for qos in (QoS(5, "best_effort"), status, QoS(3, history="keep_all"), rosout, QoS(lifespan_ns=1_500)):
        assert keyexpr_to_qos(qos_to_keyexpr(qos)) == qos


def test_attachment_is_zenoh_ext_serialization() -> None:
    gid_bytes = bytes(range(16))
    expected = zenoh.ext.z_serialize((zenoh.ext.Int64(7), zenoh.ext.Int64(1_700_000_000_000_000_000), gid_bytes))
    encoded = Attachment(7, 1_700_000_000_000_000_000, gid_bytes).encode()
    assert encoded == expected.to_bytes()
    assert len(encoded) == 33
    assert Attachment.decode(encoded) == Attachment(7, 1_700_000_000_000_000_000, gid_bytes)


def test_gid_is_xxh3_of_the_token() -> None:
    key = "@ros2_lv/0/abc/0/1/MP/%/%/n/%t/std_msgs::msg::dds_::String_/h/::,10:,:,:,,"
    assert gid(key) == xxhash.xxh3_128_intdigest(key.encode()).to_bytes(16, "little")


def test_cdr_header_and_empty_struct() -> None:
    data = serialize(make("std_msgs/msg/String", data="hi"), "std_msgs/msg/String")
    assert data[:4] == b"\x00\x01\x00\x00"
    assert serialize(make("std_srvs/srv/Trigger_Request"), "std_srvs/srv/Trigger_Request") == b"\x00\x01\x00\x00\x00"


def test_a_sample_on_the_wire_is_what_rmw_zenoh_expects(context: Context) -> None:
    """A raw zenoh subscriber on the rmw key sees our CDR payload and a 33-byte attachment with our GID."""
    info = interface_info("std_msgs/msg/String")
    key = data_key(context.domain_id, "/chatter", info.dds_name, info.type_hash)
    got: list[Any] = []
    seen = threading.Event()

    def on_sample(sample: zenoh.Sample) -> None:
        got.append(sample)
        seen.set()

    raw_subscriber = context.session.declare_subscriber(key, on_sample)
    node = ZenohNode("talker", args=[], context=context)
    publisher = node.create_publisher("std_msgs/msg/String", "chatter")
    for _ in range(50):
        publisher.publish(make("std_msgs/msg/String", data="hello"))
        if seen.wait(0.1):
            break
    raw_subscriber.undeclare()
    assert got, "no sample on the rmw_zenoh key"
    sample = got[0]
    assert sample.payload.to_bytes() == serialize(make("std_msgs/msg/String", data="hello"), "std_msgs/msg/String")
    attachment = Attachment.decode(sample.attachment.to_bytes())
    assert attachment.gid == publisher.gid
    assert attachment.sequence_number >= 1
