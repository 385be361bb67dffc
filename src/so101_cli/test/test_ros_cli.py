"""The ROS user's verbs against a real router and a real node process: param, service, node info,
topic info -v, /rosout and /parameter_events; every verb ends in its stated time when something is missing,
and on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from nodegraph.bag import BagWriter
from nodegraph.interfaces.messages import make, serialize
from nodegraph.testing import wait_until
from nodegraph.testing.graph import Peer
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode

SO101 = [sys.executable, "-m", "so101_cli.main"]


def run(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SO101, *args], capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())


def read_until(process: subprocess.Popen[str], text: str) -> str:
    """``process``'s stdout up to and including the first line containing ``text`` (all of it, should the
    process end first)."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if text in line:
            break
    return "".join(lines)


@pytest.fixture
def talker(router: object, peers: list[Peer]) -> Peer:
    peers.append(Peer("talker"))
    peers[-1].wait_line("READY")
    return peers[-1]


def test_echo_and_hz_without_a_type_find_it_and_exit(talker: Peer) -> None:
    """Defect 1: without a type, echo/hz used to deadlock in GraphCache.wait_for (only SIGKILL ended them)."""
    echo = run("topic", "echo", "/chatter", "-n", "1", timeout_s=30)
    assert echo.returncode == 0, echo.stderr
    assert "data: hi" in echo.stdout
    hz = run("topic", "hz", "/chatter", "--duration", "2.5", timeout_s=30)
    assert hz.returncode == 0, hz.stderr
    assert "average rate" in hz.stdout


def test_hz_says_no_new_messages_when_the_publisher_stops(talker: Peer) -> None:
    hz = subprocess.Popen([*SO101, "topic", "hz", "/chatter", "--duration", "7"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
    first = read_until(hz, "average rate")  # a rate measured while the talker publishes
    talker.stop()
    out, err = hz.communicate(timeout=30)
    out = first + out
    assert hz.returncode == 0, err
    lines = [line for line in out.splitlines() if line.startswith(("average rate", "no new messages"))]
    assert any(line.startswith("average rate") for line in lines), out
    assert lines[-1] == "no new messages" and lines[-2] == "no new messages", out


def test_param_list_get_set_dump(talker: Peer) -> None:
    listed = run("param", "list", "/peer_talker")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["/peer_talker:", "frame", "gain.max_step", "rate_hz", "use_sim_time"]
    got = run("param", "get", "peer_talker", "rate_hz")
    assert got.returncode == 0 and got.stdout.strip() == "Double value is: 20.0"

    changed = run("param", "set", "/peer_talker", "gain.max_step", "0.25")
    assert changed.returncode == 0 and "Set parameter successful" in changed.stdout
    assert run("param", "get", "/peer_talker", "gain.max_step").stdout.strip() == "Double value is: 0.25"
    refused = run("param", "set", "/peer_talker", "gain.max_step", "--", "-1.0")  # the node's callback says no
    assert refused.returncode == 1 and "must be > 0" in refused.stderr
    read_only = run("param", "set", "/peer_talker", "frame", "tool")
    assert read_only.returncode == 1 and "read-only" in read_only.stderr
    wrong_type = run("param", "set", "/peer_talker", "rate_hz", "fast")
    assert wrong_type.returncode == 1 and "Wrong parameter type" in wrong_type.stderr
    undeclared = run("param", "get", "/peer_talker", "nope")
    assert undeclared.returncode == 1

    dumped = run("param", "dump", "/peer_talker")
    assert dumped.returncode == 0
    assert "ros__parameters" in dumped.stdout and "max_step: 0.25" in dumped.stdout


def test_parameter_events_and_rosout_reach_a_subscriber(context: Context, talker: Peer) -> None:
    node = ZenohNode("watcher", args=[], context=context, enable_rosout=False, start_parameter_services=False)
    events: list[Any] = []
    logs: list[Any] = []
    try:
        node.create_subscription("rcl_interfaces/msg/ParameterEvent", "/parameter_events", events.append)
        node.create_subscription("rcl_interfaces/msg/Log", "/rosout", logs.append,
                                 qos=__import__("nodegraph.graph.qos", fromlist=["LATCHED"]).QoS(
                                     depth=100, durability="transient_local"))  # fmt: skip
        # the latched line proves the router has both subscriptions (a session's declarations keep their order)
        wait_until(lambda: any(log.name == "peer_talker" and log.msg.startswith("talker up") for log in logs), 20.0,
                   "the latched /rosout line")  # fmt: skip
        assert run("param", "set", "/peer_talker", "rate_hz", "5.0").returncode == 0
        assert run("service", "call", "/boom", "std_srvs/srv/Trigger").returncode == 0
        wait_until(lambda: any(e.node == "/peer_talker" and e.changed_parameters for e in events), 20.0,
                   "the parameter event")  # fmt: skip
        wait_until(lambda: any(log.level == 40 and "service callback raised" in log.msg for log in logs), 20.0,
                   "the callback's error on /rosout")  # fmt: skip
    finally:
        node.shutdown()
    changed = [e for e in events if e.node == "/peer_talker" and e.changed_parameters]
    assert [p.name for p in changed[0].changed_parameters] == ["rate_hz"]
    assert changed[0].changed_parameters[0].value.double_value == 5.0
    texts = {(log.name, log.level, log.msg.splitlines()[0]) for log in logs}
    assert ("peer_talker", 20, "talker up") in texts  # latched: logged before we subscribed
    assert any(name == "peer_talker" and level == 40 and "service callback raised" in msg
               for name, level, msg in texts)  # fmt: skip


def test_service_call_and_a_raising_callback_answers(talker: Peer, peers: list[Peer]) -> None:
    peers.append(Peer("add_server"))
    peers[-1].wait_line("READY")
    added = run("service", "call", "/add_two_ints", "example_interfaces/srv/AddTwoInts", "{a: 2, b: 40}")
    assert added.returncode == 0, added.stderr
    assert "sum: 42" in added.stdout
    start = time.monotonic()
    boom = run("service", "call", "/boom", "std_srvs/srv/Trigger", "--timeout", "20")
    assert boom.returncode == 0, boom.stderr  # answered (default response), not left to time out
    assert "success: false" in boom.stdout and time.monotonic() - start < 15


def test_the_other_parameter_services_and_type_description(talker: Peer) -> None:
    srv = "rcl_interfaces/srv/"
    described = run("service", "call", "/peer_talker/describe_parameters", srv + "DescribeParameters",
                    "{names: [frame, rate_hz]}")  # fmt: skip
    assert described.returncode == 0, described.stderr
    response = described.stdout.split("response:")[1]
    frame, rate = response.split("- name: ")[1:]
    assert "read_only: true" in frame and "type: 4" in frame  # STRING
    assert "read_only: false" in rate and "type: 3" in rate  # DOUBLE
    types = run("service", "call", "/peer_talker/get_parameter_types", srv + "GetParameterTypes",
                "{names: [rate_hz, gain.max_step, frame]}")  # fmt: skip
    assert types.stdout.split("response:")[1].split() == ["types:", "-", "3", "-", "3", "-", "4"]
    double = {"type": 3, "double_value": 0.5}
    atomic = run("service", "call", "/peer_talker/set_parameters_atomically", srv + "SetParametersAtomically",
                 str({"parameters": [{"name": "rate_hz", "value": double},
                                     {"name": "frame", "value": {"type": 4, "string_value": "x"}}]}))  # fmt: skip
    assert "successful: false" in atomic.stdout and "read-only" in atomic.stdout
    assert run("param", "get", "/peer_talker", "rate_hz").stdout.strip() == "Double value is: 20.0"  # none applied

    string_hash = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    tdi = "type_description_interfaces/srv/GetTypeDescription"
    described = run("service", "call", "/peer_talker/get_type_description", tdi,
                    f"{{type_name: std_msgs/msg/String, type_hash: {string_hash}}}")  # fmt: skip
    out = described.stdout.split("response:")[1]
    assert "successful: true" in out and "type_name: std_msgs/msg/String" in out and "name: data" in out
    wrong = run("service", "call", "/peer_talker/get_type_description", tdi,
                "{type_name: std_msgs/msg/String, type_hash: RIHS01_00}")  # fmt: skip
    assert "successful: false" in wrong.stdout and "Type hash mismatch" in wrong.stdout
    unused = run("service", "call", "/peer_talker/get_type_description", tdi, "{type_name: sensor_msgs/msg/Image}")
    assert "Type not currently in use" in unused.stdout


def test_node_info_and_topic_info_verbose(talker: Peer) -> None:
    info = run("node", "info", "/peer_talker")
    assert info.returncode == 0, info.stderr
    out = info.stdout
    assert "/chatter: std_msgs/msg/String" in out.split("Publishers:")[1].split("Service Servers:")[0]
    assert "/rosout: rcl_interfaces/msg/Log" in out
    servers = out.split("Service Servers:")[1].split("Service Clients:")[0]
    for name in ("list_parameters", "get_parameters", "set_parameters", "describe_parameters",
                 "get_parameter_types", "set_parameters_atomically", "get_type_description"):  # fmt: skip
        assert f"/peer_talker/{name}:" in servers
    assert "/boom: std_srvs/srv/Trigger" in servers

    topic = run("topic", "info", "/chatter", "-v")
    assert topic.returncode == 0, topic.stderr
    assert "Type: std_msgs/msg/String" in topic.stdout and "Publisher count: 1" in topic.stdout
    assert "Node name: peer_talker" in topic.stdout
    assert "Topic type hash: RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18" in topic.stdout
    assert "Reliability: RELIABLE" in topic.stdout and "Endpoint type: PUBLISHER" in topic.stdout
    rosout = run("topic", "info", "/rosout", "-v")  # rcl's rosout QoS: depth 1000, transient_local, 10 s lifespan
    talker_part = rosout.stdout.split("Node name: peer_talker")[1].split("Node name:")[0]
    assert "KEEP_LAST (1000)" in talker_part and "Durability: TRANSIENT_LOCAL" in talker_part
    assert "Lifespan: 10000000000 nanoseconds" in talker_part


def test_graph_does_not_wrap_when_piped(talker: Peer) -> None:
    graph = run("graph", "--wait", "1.5")
    line = next(line for line in graph.stdout.splitlines() if "/peer_talker/set_parameters_atomically" in line)
    assert "rcl_interfaces/srv/SetParametersAtomically" in line  # one entry per line, however long


MISSING = [
    (("topic", "echo", "/nothing_here", "--wait", "2"), 1),
    (("topic", "hz", "/nothing_here", "--wait", "2"), 2),
    (("topic", "info", "/nothing_here", "--wait", "2"), 1),
    (("service", "call", "/nothing_here", "std_srvs/srv/Trigger", "--wait", "2"), 1),
    (("param", "list", "/no_node", "--wait", "2"), 1),
    (("param", "get", "/no_node", "x", "--wait", "2"), 1),
    (("param", "set", "/no_node", "x", "1", "--wait", "2"), 1),
    (("param", "dump", "/no_node", "--wait", "2"), 1),
    (("node", "info", "/no_node", "--wait", "2"), 1),
    (("action", "send-goal", "/no_action", "so101_msgs/action/GenerateDemos", "{}", "--wait", "2"), 1),
    (("bag", "play", "/no/such/bag"), 1),
    (("bag", "recover", "/no/such/bag"), 1),
    (("calibrate", "--port", "/dev/no-such-port", "--id", "x"), 1),
]


@pytest.mark.parametrize(("args", "code"), MISSING, ids=lambda a: " ".join(a) if isinstance(a, tuple) else None)
@pytest.mark.parametrize("with_router", [True, False], ids=["router", "no-router"])
def test_a_missing_target_is_reported_within_the_wait(
    endpoint: str, args: tuple[str, ...], code: int, with_router: bool, request: pytest.FixtureRequest
) -> None:
    if with_router:
        request.getfixturevalue("router")
    done = run(*args, timeout_s=30)  # a hang fails here (TimeoutExpired), not after minutes
    assert done.returncode != 0, done.stdout
    assert done.stderr.strip(), "the failure is explained on stderr"


def test_a_missing_type_is_a_clear_error(router: object) -> None:
    for args in (("topic", "echo", "/x", "nope_msgs/msg/Nope"), ("service", "call", "/x", "nope_msgs/srv/Nope"),
                 ("topic", "pub", "/x", "nope_msgs/msg/Nope", "--once")):  # fmt: skip
        done = run(*args, timeout_s=30)
        assert done.returncode != 0 and "nope_msgs" in done.stderr, args


BLOCKING = [
    ("topic", "echo", "/nothing_here"),  # waiting for the type
    ("topic", "echo", "/nothing_here", "std_msgs/msg/String"),  # waiting for messages
    ("topic", "hz", "/nothing_here", "std_msgs/msg/String"),
    ("topic", "pub", "/x", "std_msgs/msg/String", "{data: a}"),
    ("topic", "info", "/nothing_here", "--wait", "60"),
    ("service", "call", "/nothing_here", "std_srvs/srv/Trigger", "--wait", "60"),
    ("param", "list", "/no_node", "--wait", "60"),
    ("node", "info", "/no_node", "--wait", "60"),
    ("action", "send-goal", "/no_action", "so101_msgs/action/GenerateDemos", "{}", "--wait", "60"),
    ("bag", "record", "-a"),
    ("graph", "--wait", "60"),
    ("node", "list", "--wait", "60"),
    ("service", "list", "--wait", "60"),
    ("bag", "play", "BAG", "--loop"),
]


@pytest.mark.parametrize("args", BLOCKING, ids=" ".join)
@pytest.mark.parametrize("with_router", [True, False], ids=["router", "no-router"])
def test_ctrl_c_ends_every_waiting_verb(
    endpoint: str, args: tuple[str, ...], with_router: bool, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if with_router:
        request.getfixturevalue("router")
    if "BAG" in args:
        bag = tmp_path / "loop_bag"
        with BagWriter(bag) as writer:
            writer.add_topic("/chatter", "std_msgs/msg/String")
            for i in range(20):
                writer.write("/chatter", 1_000_000_000 + i * 100_000_000, serialize(make("std_msgs/msg/String"),
                                                                                    "std_msgs/msg/String"))  # fmt: skip
        args = tuple(str(bag) if a == "BAG" else a for a in args)
    process = subprocess.Popen([*SO101, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path, env=os.environ.copy())  # fmt: skip
    time.sleep(3.0)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"so101 {' '.join(args)} ignored Ctrl-C")
