"""The node interface's contract, the same on both backends: ``/rosout`` lines with their call sites and rclpy's
log filters, the parameter services with rclpy's semantics and ``/parameter_events``, ``~/get_type_description``
and endpoint type hashes equal to the typestore's (so the interfaces generated for rclpy are Jazzy's),
one-callback-at-a-time with service calls from callbacks, shutdown from a callback, bounded shutdown with a
callback running, and a clear error for an interface that is not installed."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from nodegraph.graph.api import GoalStatus, Node
from nodegraph.graph.parameters import SetParametersResult
from nodegraph.graph.qos import QoS
from nodegraph.interfaces.hashing import rihs01
from nodegraph.interfaces.typestore import typestore
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend

ROSOUT_QOS = QoS(depth=100, durability="transient_local")
INFO, WARN = 20, 30
DOUBLE, INTEGER, STRING = 3, 2, 4  # rcl_interfaces/msg/ParameterType


def type_hash(type_name: str) -> str:
    return rihs01(type_name, typestore().fielddefs)


def collect(node: Node, type_name: str, topic: str, qos: QoS = QoS()) -> list[Any]:
    got: list[Any] = []
    node.create_subscription(type_name, topic, got.append, qos)
    return got


def test_rosout_has_every_line_with_its_call_site_and_rclpy_filters(graph_backend: GraphBackend) -> None:
    observer = graph_backend.node("observer_rosout")
    lines = collect(observer, "rcl_interfaces/msg/Log", "/rosout", ROSOUT_QOS)
    talker = graph_backend.node("talker_rosout")
    assert wait_until(lambda: talker.subscriptions_info_by_topic("/rosout"), 20.0)
    for i in range(3):
        talker.logger.info(f"once {i}", once=True)
        talker.logger.warning(f"skip {i}", skip_first=True)
    talker.logger.info("end")  # a last line: /rosout keeps the order, so every line before it is in once it is
    mine = lambda: [m for m in lines if m.name == "talker_rosout"]  # noqa: E731
    assert wait_until(lambda: any(m.msg == "end" for m in mine()), 20.0), [m.msg for m in lines]
    expected = [("once 0", INFO), ("skip 1", WARN), ("skip 2", WARN), ("end", INFO)]
    assert [(m.msg, m.level) for m in mine()] == expected
    assert {m.function for m in mine()} == {"test_rosout_has_every_line_with_its_call_site_and_rclpy_filters"}
    assert all(m.file.endswith("test_node_contract.py") and m.line > 0 for m in mine())


def set_request(node: Node, name: str, value: dict[str, Any]) -> Any:
    return node.message("rcl_interfaces/srv/SetParameters_Request", parameters=[{"name": name, "value": value}])


def test_parameter_services_have_rclpy_semantics_and_events(graph_backend: GraphBackend) -> None:
    talker = graph_backend.node("talker_params", parameter_overrides={"rate_hz": 30})  # an int for a double
    assert talker.declare_parameter("rate_hz", 20.0) == 30.0
    talker.declare_parameter("frame", "base_link", read_only=True)
    talker.declare_parameter("gain.max_step", 0.1, description="rad per cycle")

    def check(values: dict[str, Any]) -> SetParametersResult:
        step = values.get("gain.max_step", 0.1)
        return SetParametersResult(step > 0, "" if step > 0 else f"gain.max_step must be > 0, got {step}")

    talker.add_on_set_parameters_callback(check)
    observer = graph_backend.node("observer_params")
    events = collect(observer, "rcl_interfaces/msg/ParameterEvent", "/parameter_events")

    names = observer.create_client("rcl_interfaces/srv/ListParameters", "/talker_params/list_parameters")
    assert names.wait_for_service(20.0)
    listed = names.call(observer.message("rcl_interfaces/srv/ListParameters_Request"), 10.0).result.names
    assert {"rate_hz", "frame", "gain.max_step", "use_sim_time"} <= set(listed)
    get = observer.create_client("rcl_interfaces/srv/GetParameters", "/talker_params/get_parameters")
    assert get.wait_for_service(20.0)
    values = get.call(observer.message("rcl_interfaces/srv/GetParameters_Request", names=["rate_hz", "frame"]))
    assert [(v.type, v.double_value, v.string_value) for v in values.values] == [
        (DOUBLE, 30.0, ""), (STRING, 0.0, "base_link")
    ]  # fmt: skip

    setter = observer.create_client("rcl_interfaces/srv/SetParameters", "/talker_params/set_parameters")
    assert setter.wait_for_service(20.0)

    def set_one(name: str, value: dict[str, Any]) -> tuple[bool, str]:
        result = setter.call(set_request(observer, name, value), 10.0).results[0]
        return bool(result.successful), str(result.reason)

    assert set_one("rate_hz", {"type": DOUBLE, "double_value": 5.0}) == (True, "")
    assert talker.get_parameter("rate_hz") == 5.0
    assert set_one("rate_hz", {"type": INTEGER, "integer_value": 7})[0]  # widens, as an override does
    assert talker.get_parameter("rate_hz") == 7.0
    assert set_one("frame", {"type": STRING, "string_value": "tool"}) == (
        False, "Trying to set a read-only parameter: frame.")  # fmt: skip
    assert set_one("gain.max_step", {"type": DOUBLE, "double_value": -1.0}) == (
        False, "gain.max_step must be > 0, got -1.0")  # fmt: skip
    ok, reason = set_one("rate_hz", {"type": STRING, "string_value": "fast"})
    assert not ok and "Wrong parameter type, parameter rate_hz is of type double" in reason
    ok, reason = set_one("nope", {"type": DOUBLE, "double_value": 1.0})
    assert not ok and "Invalid access to undeclared parameter" in reason  # rclpy 7.1 leaves the name list empty
    assert talker.get_parameter("rate_hz") == 7.0 and talker.get_parameter("frame") == "base_link"

    def changed(name: str) -> list[Any]:
        return [p for e in events if e.node == "/talker_params" for p in e.changed_parameters if p.name == name]

    assert wait_until(lambda: len(changed("rate_hz")) >= 2, 10.0)
    assert changed("rate_hz")[0].value.double_value == 5.0 and not changed("frame")


TYPED_TOPICS = {
    "/contract/joint_states": "sensor_msgs/msg/JointState",
    "/contract/tf": "tf2_msgs/msg/TFMessage",
    "/contract/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
}
ACTIONS = {
    "/contract/follow": "control_msgs/action/FollowJointTrajectory",
    "/contract/generate": "so101_msgs/action/GenerateDemos",
}


def test_type_hashes_and_descriptions_are_jazzys(graph_backend: GraphBackend) -> None:
    """The generated interfaces (control_msgs, tf2_msgs, so101_msgs on rclpy) hash as the typestore does."""
    talker = graph_backend.node("talker_types")
    publishers = [talker.create_publisher(t, name) for name, t in TYPED_TOPICS.items()]
    for name, action in ACTIONS.items():
        talker.create_action_server(action, name, lambda goal: None)
    talker.create_service("so101_msgs/srv/ResetSim", "/contract/reset", lambda request, response: response)
    observer = graph_backend.node("observer_types")
    expected = {name: t for name, t in TYPED_TOPICS.items()}
    expected |= {f"{name}/_action/feedback": f"{t}_FeedbackMessage" for name, t in ACTIONS.items()}
    expected |= {f"{name}/_action/status": "action_msgs/msg/GoalStatusArray" for name in ACTIONS}

    def seen() -> dict[str, tuple[str, str]]:
        return {
            name: (info.topic_type, info.topic_type_hash)
            for name in expected
            for info in observer.publishers_info_by_topic(name)
            if info.node_name == "talker_types"
        }

    assert wait_until(lambda: len(seen()) == len(expected), 20.0), seen()
    assert seen() == {name: (t, type_hash(t)) for name, t in expected.items()}
    assert publishers  # kept alive until here

    describe = observer.create_client(
        "type_description_interfaces/srv/GetTypeDescription", "/talker_types/get_type_description"
    )
    assert describe.wait_for_service(20.0)
    used = (
        "so101_msgs/srv/ResetSim",
        "tf2_msgs/msg/TFMessage",
        "control_msgs/action/FollowJointTrajectory_FeedbackMessage",
    )
    for type_name in used:
        request = observer.message(
            "type_description_interfaces/srv/GetTypeDescription_Request",
            type_name=type_name,
            type_hash=type_hash(type_name),
            include_type_sources=False,
        )
        response = describe.call(request, 10.0)
        assert response.successful, (type_name, response.failure_reason)
        assert response.type_description.type_description.type_name == type_name


def test_callbacks_run_one_at_a_time_and_may_call_services(graph_backend: GraphBackend) -> None:
    server = graph_backend.node("contract_adder")

    def add(request: Any, response: Any) -> Any:
        response.sum = request.a + request.b
        return response

    server.create_service("example_interfaces/srv/AddTwoInts", "/contract/add", add)
    node = graph_backend.node("contract_worker")
    client = node.create_client("example_interfaces/srv/AddTwoInts", "/contract/add")
    assert client.wait_for_service(20.0)
    running, overlaps, sums = [0], [], []
    lock = threading.Lock()

    def busy(*_: Any) -> None:
        with lock:
            running[0] += 1
            overlaps.append(running[0])
        request = node.message("example_interfaces/srv/AddTwoInts_Request", a=len(sums), b=1)
        sums.append(client.call(request, 10.0).sum)  # a service call from a callback: answered, no deadlock
        with lock:
            running[0] -= 1

    heard: list[Any] = []

    def on_chatter(msg: Any) -> None:
        heard.append(msg)
        busy()

    node.create_timer(0.01, busy)
    node.create_subscription("std_msgs/msg/String", "/contract/chatter", on_chatter)
    chatter = server.create_publisher("std_msgs/msg/String", "/contract/chatter")
    message = server.message("std_msgs/msg/String", data="x")
    # a message per poll until the subscription's callback has run 10 times, beside the timer's
    assert wait_until(lambda: (chatter.publish(message), len(heard) >= 10)[1], 20.0)
    assert wait_until(lambda: len(sums) >= 20, 20.0)
    assert max(overlaps) == 1  # subscriptions, timers and services of a node: one at a time
    assert sums[:5] == [1, 2, 3, 4, 5]


def test_request_shutdown_from_a_callback_ends_spin(graph_backend: GraphBackend) -> None:
    node = graph_backend.node("contract_quitter")
    node.create_timer(0.05, node.request_shutdown)
    spinner = threading.Thread(target=node.spin)
    spinner.start()
    spinner.join(20.0)
    assert not spinner.is_alive() and node.is_shutdown


def test_shutdown_waits_for_a_running_callback_and_ends_a_running_goal(graph_backend: GraphBackend) -> None:
    node = graph_backend.node("contract_stopper")
    inside, finished, returned, after = threading.Event(), threading.Event(), threading.Event(), []

    def slow(_: Any) -> None:
        if returned.is_set():
            after.append(1)
            return
        inside.set()
        time.sleep(1.0)
        finished.set()

    def execute(goal: Any) -> Any:
        wait_until(lambda: goal.is_cancel_requested, 60.0, "the cancel request")
        goal.canceled()
        return node.message("so101_msgs/action/GenerateDemos_Result", message="stopped")

    node.create_subscription("std_msgs/msg/String", "/contract/slow", slow)
    node.create_action_server("so101_msgs/action/GenerateDemos", "/contract/stopper", execute)
    client_node = graph_backend.node("contract_stopper_client")
    action = client_node.create_action_client("so101_msgs/action/GenerateDemos", "/contract/stopper")
    assert action.wait_for_server(20.0)
    goal = action.send_goal(client_node.message("so101_msgs/action/GenerateDemos_Goal", num_demos=1))
    assert goal.accepted
    publisher = client_node.create_publisher("std_msgs/msg/String", "/contract/slow")
    assert wait_until(lambda: node.subscriptions_info_by_topic("/contract/slow") and publisher, 20.0)
    assert wait_until(lambda: (publisher.publish(client_node.message("std_msgs/msg/String")), inside.is_set())[1],
                      20.0)  # fmt: skip
    node.shutdown()  # returns once the running callback has finished and the goal has ended
    returned.set()
    assert finished.is_set()
    witness = graph_backend.node("contract_stopper_witness")  # a live subscriber: what reaches it is on the wire
    seen = collect(witness, "std_msgs/msg/String", "/contract/slow")
    message = client_node.message("std_msgs/msg/String")
    assert wait_until(lambda: (publisher.publish(message), len(seen) >= 10)[1], 20.0)
    assert not after  # nothing reaches a node that has shut down
    status, _ = goal.result(20.0)
    assert status in (GoalStatus.CANCELED, GoalStatus.ABORTED)


def test_an_interface_that_is_not_installed_is_a_clear_error(graph_backend: GraphBackend) -> None:
    node = graph_backend.node("contract_typo")
    with pytest.raises(LookupError, match="nope_msgs"):
        node.message("nope_msgs/msg/Nope")
    with pytest.raises(LookupError, match="nope_msgs"):
        node.create_publisher("nope_msgs/msg/Nope", "/nope")
