"""Faults: malformed payloads, missing attachments, unknown types, an absent or restarted router."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from nodegraph.interfaces import InterfaceError, interface_info
from nodegraph.testing import wait_until
from nodegraph.testing.graph import Peer
from nodegraph.transport.zenoh.attachment import Attachment
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.keyexpr import data_key
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess


def test_malformed_payload_is_logged_and_the_subscriber_survives(
    context: Context, caplog: pytest.LogCaptureFixture
) -> None:
    node = ZenohNode("survivor", args=[], context=context)
    node.logger.propagate = True
    good = threading.Event()
    got: list[Any] = []

    def on_message(msg: Any) -> None:
        got.append(msg)
        good.set()

    node.create_subscription("sensor_msgs/msg/JointState", "/joint_states", on_message)
    info = interface_info("sensor_msgs/msg/JointState")
    key = data_key(context.domain_id, "/joint_states", info.dds_name, info.type_hash)
    attachment = Attachment(1, time.time_ns(), bytes(16)).encode()
    with caplog.at_level(logging.WARNING):
        time.sleep(0.3)
        context.session.put(key, b"\x00\x01\x00\x00\xff\xff", attachment=attachment)  # truncated CDR
        context.session.put(key, b"\x00\x01\x00\x00")  # no attachment
        publisher = node.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
        for _ in range(50):
            publisher.publish(node.message("sensor_msgs/msg/JointState", name=["a"], position=[1.5]))
            if good.wait(0.1):
                break
    assert got and got[0].position[0] == 1.5
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "malformed sensor_msgs/msg/JointState payload" in messages
    assert "no attachment" in messages
    node.shutdown()


def test_unknown_type_is_a_clear_error(context: Context) -> None:
    node = ZenohNode("typo", args=[], context=context)
    with pytest.raises(InterfaceError, match="unknown interface type 'sensor_msgs/msg/JointStates'"):
        node.create_publisher("sensor_msgs/msg/JointStates", "/joint_states")
    with pytest.raises(ValueError, match="not a service type"):
        node.create_client("sensor_msgs/msg/JointState", "/x")


def test_router_absent_at_start_then_appears(endpoint: str, peers: list[Peer]) -> None:
    context = Context(endpoint)
    try:
        assert not context.router_connected
        node = ZenohNode("early", args=[], context=context)
        got = threading.Event()
        node.create_subscription("sensor_msgs/msg/JointState", "/joint_states", lambda m: got.set())
        with RouterProcess(endpoint):
            assert context.wait_for_router(15.0)
            peers.append(Peer("joint_states", "30"))
            assert got.wait(30.0), "the early node never received data once the router came up"
    finally:
        context.close()


def test_router_restart_is_reported_and_the_node_reconnects(
    endpoint: str, peers: list[Peer], caplog: pytest.LogCaptureFixture
) -> None:
    router = RouterProcess(endpoint).start()
    context = Context(endpoint)
    try:
        assert context.wait_for_router(10.0)
        node = ZenohNode("steady", args=[], context=context)
        received: list[Any] = []
        node.create_subscription("sensor_msgs/msg/JointState", "/joint_states", received.append)
        with caplog.at_level(logging.WARNING, logger="so101.zenoh"):
            logging.getLogger("so101.zenoh").propagate = True
            router.stop()
            wait_until(lambda: not context.router_connected, 10.0, "the router lost", 0.1)
            router = RouterProcess(endpoint).start()
            assert context.wait_for_router(20.0)
            wait_until(lambda: context.router_connected, 20.0, "the router connected again", 0.1)
        messages = " ".join(r.getMessage() for r in caplog.records)
        assert "lost the zenoh router" in messages
        assert "connected to zenoh router" in messages
        peers.append(Peer("joint_states", "30"))
        wait_until(lambda: received, 30.0, "data after the router came back", 0.1)
    finally:
        logging.getLogger("so101.zenoh").propagate = False
        context.close()
        router.stop()
