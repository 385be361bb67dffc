"""The driver node against a Feetech emulator on a pty, on both backends (a real zenoh router; rclpy over DDS).

The driver runs in-process on its own zenoh session or DDS participant; the test talks to it from a second one
(topics, service, action) and reads servo registers straight from the emulator.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nodegraph.graph.api import GoalStatus, Node
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend, byte_value
from nodegraph.time import to_ns
from so101_cli.benchmarks.driver import run_driver_benchmark
from so101_core.control.safety import JointLimits
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration import ArmCalibration
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.testing import CALIBRATION, RAD_PER_COUNT, joint_position, park_at_middle, write_calibration
from so101_nodes.arm_link import load_arm
from so101_nodes.driver_node import Driver, DriverParams
from so101_nodes.trajectory import (
    CONTROLLER_STATE,
    FJT,
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    INVALID_JOINTS,
    SUCCESSFUL,
    Trajectory,
    TrajectoryError,
)

SUCCEEDED, CANCELED, ABORTED = GoalStatus.SUCCEEDED, GoalStatus.CANCELED, GoalStatus.ABORTED
MAX_STEP_RAD = 0.02  # per 10 ms cycle: at most 2 rad/s, slow enough to observe holds and cancels
WATCHDOG_S = 0.3


class Rig:
    """Emulator + driver node + a client node (a second session or participant)."""

    def __init__(self, emu: FeetechEmulator, cal: ArmCalibration, driver: Driver, client: Node) -> None:
        self.emu, self.cal, self.driver, self.client = emu, cal, driver, client
        self.lock = threading.Lock()
        self.states: list[Any] = []
        self.diagnostics: list[Any] = []
        client.create_subscription("sensor_msgs/msg/JointState", "/joint_states", self._on_state)
        client.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self._on_diag)
        self.commands = client.create_publisher("sensor_msgs/msg/JointState", "/joint_commands")
        self.action = client.create_action_client(FJT, "/arm_controller/follow_joint_trajectory")

    def _on_state(self, msg: Any) -> None:
        with self.lock:
            self.states.append((time.monotonic(), msg))

    def _on_diag(self, msg: Any) -> None:
        with self.lock:
            self.diagnostics.append(msg)

    def position(self, joint: str) -> float:
        """Present position of ``joint`` read from the emulator's register, rad."""
        return joint_position(self.emu, self.cal, joint)

    def latest(self) -> Any:
        with self.lock:
            return self.states[-1][1] if self.states else None

    def status(self, name: str) -> Any:
        """The latest DiagnosticStatus called ``driver: <name>``."""
        with self.lock:
            msgs = list(self.diagnostics)
        for msg in reversed(msgs):
            for s in msg.status:
                if s.name == f"driver: {name}":
                    return s
        return None

    def wait_cycles(self, count: int) -> None:
        """Let ``count`` of the driver's control cycles pass (``count`` more joint_states): the time a wrong move
        would take to show, however slowly a loaded host runs them."""
        start = len(self.states)
        wait_until(lambda: len(self.states) >= start + count, 30.0, f"{count} control cycles")

    def wait_status(self, name: str, predicate: Callable[[Any], bool], timeout_s: float = 10.0) -> Any:
        wait_until(lambda: (s := self.status(name)) is not None and predicate(s), timeout_s, f"status {name}")
        return self.status(name)

    def command(self, positions: list[float], names: list[str] | None = None, seconds: float = 0.3) -> None:
        """Stream one target at 50 Hz for ``seconds`` (a teleop-like source)."""
        msg = self.client.message("sensor_msgs/msg/JointState", name=names or [], position=positions)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.commands.publish(msg)
            time.sleep(0.02)

    def command_until(
        self, positions: list[float], names: list[str] | None, arrived: Callable[[], bool], what: str
    ) -> None:
        """Stream one target at 50 Hz, as a teleop source does, until ``arrived()`` (within 10 s).

        Streaming until arrival, rather than for a fixed time, keeps the watchdog from holding the arm part-way
        when a loaded machine runs the driver's cycles late.
        """
        msg = self.client.message("sensor_msgs/msg/JointState", name=names or [], position=positions)
        deadline = time.monotonic() + 10.0
        while not arrived():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached within 10 s")
            self.commands.publish(msg)
            time.sleep(0.02)

    def drive(self, joint: str, target: float) -> None:
        """:meth:`command_until` ``joint`` is at ``target`` (rad) within 3 counts."""
        arrived = lambda: abs(self.position(joint) - target) < 3 * RAD_PER_COUNT  # noqa: E731
        self.command_until([target], [joint], arrived, f"{joint} at {target} rad")

    def trajectory(self, names: list[str], points: list[tuple[float, list[float]]]) -> Any:
        pts = [
            self.client.message(
                "trajectory_msgs/msg/JointTrajectoryPoint",
                positions=pos,
                time_from_start=self.client.message(
                    "builtin_interfaces/msg/Duration", sec=int(t), nanosec=round((t % 1) * 1e9)
                ),
            )
            for t, pos in points
        ]
        traj = self.client.message("trajectory_msgs/msg/JointTrajectory", joint_names=names, points=pts)
        return self.client.message(f"{FJT}_Goal", trajectory=traj)


RigFactory = Callable[..., Rig]


@pytest.fixture
def rig_backend(own_graph_backend: GraphBackend) -> GraphBackend:
    """The graph of a rig: each backend in turn (a module that tests the driver's logic, not its transport,
    overrides this with one backend)."""
    return own_graph_backend


@pytest.fixture
def rig_factory(rig_backend: GraphBackend, tmp_path: Path) -> Iterator[RigFactory]:
    """``rig_factory(port=None, config_extra="", park=True, safety=None, port_link=None, servo_speed=3000,
    before_start=None, **parameters)``: a rig whose driver has these parameter overrides; ``config_extra`` lines go
    into robot.yaml's follower section, ``safety`` entries into its safety section; ``park=False`` leaves the
    emulated servos at raw 2048 with zero homing offsets; ``port_link`` is a symlink to the pty the driver opens (to
    replug behind); ``servo_speed`` is the emulated servos' top speed, counts/s; ``before_start(emulator)`` runs
    just before the driver starts."""
    cal_path, cal = write_calibration(tmp_path, "test_arm")
    with contextlib.ExitStack() as stack:

        def make(
            port: str | None = None,
            config_extra: str = "",
            park: bool = True,
            safety: dict[str, Any] | None = None,
            port_link: Path | None = None,
            servo_speed: float = 3000.0,
            before_start: Callable[[FeetechEmulator], None] | None = None,
            **parameters: Any,
        ) -> Rig:
            # loose loop-rate grades by default: 2 shared CI cores
            limits = {"max_step_rad": MAX_STEP_RAD, "watchdog_timeout_s": WATCHDOG_S, "rate_warn_fraction": 0.3}
            limits |= {"min_rate_hz": 10, **(safety or {})}
            config = tmp_path / f"robot{len(list(tmp_path.glob('robot*.yaml')))}.yaml"
            config.write_text(
                "robot:\n"
                "  follower:\n"
                "    id: test_arm\n"
                f"    calibration: {cal_path}\n"
                "    bus: {port: /dev/ttyACM0, timeout_ms: 50, retries: 1}\n"
                f"{config_extra}"
                f"  safety: {{{', '.join(f'{k}: {v}' for k, v in limits.items())}}}\n"
            )
            emu = stack.enter_context(FeetechEmulator(seed=7, max_speed=servo_speed))
            emu.record_goals()  # every Goal_Position the driver writes, from its first
            if park:
                park_at_middle(emu, cal)
            if before_start is not None:
                before_start(emu)
            if port_link is not None:  # a stable path to replug behind (the pty's name changes on restart)
                port_link.symlink_to(emu.port)
                port = str(port_link)
            overrides = {
                "robot_config": str(config),
                "port": port or emu.port,
                "diagnostics_period_s": 0.2,
                "max_consecutive_failures": 3,
                **parameters,
            }
            client = rig_backend.node("client")
            stack.callback(client.shutdown)
            node = rig_backend.node("driver", parameter_overrides=overrides)
            stack.callback(node.shutdown)
            driver = Driver(node)
            stack.callback(driver.close)  # after the node has shut down, as run_node does
            stack.callback(node.shutdown)
            return Rig(emu, cal, driver, client)

        yield make


@pytest.fixture
def rig(rig_factory: RigFactory) -> Rig:
    rig = rig_factory()
    wait_until(lambda: rig.latest() is not None, 10.0, "first joint state")
    return rig


def test_joint_states_names_rate_and_pose(rig: Rig) -> None:
    wait_until(lambda: len(rig.states) >= 10, 10.0, "joint_states streaming")  # streaming; the rate: so101 bench driver
    with rig.lock:
        msgs = [m for _, m in rig.states]
    stamps = [to_ns(m.header.stamp) for m in msgs]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "each state is a new reading"
    msg = rig.latest()
    assert list(msg.name) == list(JOINT_NAMES)
    assert np.allclose(msg.position[:5], 0.0, atol=2 * RAD_PER_COUNT)  # parked at the middle pose
    arm = rig.wait_status("arm", lambda s: byte_value(s.level) == 0)
    assert "no command yet" in arm.message
    servos = [rig.status(j) for j in JOINT_NAMES]
    assert all(s is not None and byte_value(s.level) == 0 for s in servos)
    values = {kv.key: kv.value for kv in servos[0].values}
    assert values["temperature_c"] == "30" and values["voltage_v"] == "12.0"


def test_command_moves_servo_and_is_clamped(rig: Rig) -> None:
    rig.drive("shoulder_pan", 0.5)
    assert abs(rig.position("elbow_flex")) < 3 * RAD_PER_COUNT  # joints not named keep their target
    # Full canonical order, elbow far beyond its limit: clamped to the shared (twin ∩ calibrated) range.
    upper = rig.driver.limits.upper[2]
    at_limit = lambda: abs(rig.position("elbow_flex") - upper) < 3 * RAD_PER_COUNT  # noqa: E731
    rig.command_until([0.5, 0.0, 5.0, 0.0, 0.0, 0.8], None, at_limit, "elbow at its limit")
    assert rig.emu.read_register(3, p.GOAL_POSITION) <= CALIBRATION["elbow_flex"]["range_max"]
    published = lambda: abs(rig.latest().position[2] - upper) < 3 * RAD_PER_COUNT  # noqa: E731
    wait_until(published, 5.0, "joint_states at the elbow's limit")  # the next state message, 10 ms on
    # Malformed commands are rejected and counted, never applied.
    rig.command([math.nan] * 6, seconds=0.1)
    rig.command([1.0], ["no_such_joint"], seconds=0.1)
    wait_until(lambda: rig.driver.rejected_commands >= 2, 5.0, "rejections")
    assert abs(rig.position("shoulder_pan") - 0.5) < 3 * RAD_PER_COUNT


def test_effort_and_controller_state_carry_load_and_the_goal_written(rig: Rig) -> None:
    states: list[Any] = []
    rig.client.create_subscription(CONTROLLER_STATE, "/arm_controller/controller_state", states.append)
    rig.emu.set_load(1, -400)  # shoulder_pan's servo reports 40 % load the negative way
    wait_until(lambda: rig.latest().effort[0] == pytest.approx(-0.4 * 3.35), 5.0, "effort in joint_states")
    assert list(rig.latest().effort[1:5]) == [0.0] * 4  # the others idle
    rig.drive("shoulder_pan", 0.3)
    wait_until(lambda: bool(states) and abs(states[-1].output.positions[0] - 0.3) < RAD_PER_COUNT, 5.0, "state")
    last = states[-1]
    assert list(last.joint_names) == list(JOINT_NAMES)
    goal = rig.emu.read_register(1, p.GOAL_POSITION)
    assert last.output.positions[0] == pytest.approx((goal - rig.cal["shoulder_pan"].mid) * RAD_PER_COUNT)
    assert last.feedback.effort[0] == pytest.approx(-0.4 * 3.35)
    assert last.error.positions[0] == pytest.approx(last.reference.positions[0] - last.feedback.positions[0])


def test_startup_warns_of_a_joint_outside_its_calibrated_range(rig_factory: RigFactory) -> None:
    wrist, elbow = CALIBRATION["wrist_flex"], CALIBRATION["elbow_flex"]

    def out_of_range(emu: FeetechEmulator) -> None:
        emu.set_present_position(wrist["id"], wrist["range_max"] + 100)  # 0.15 rad out: drifted?
        emu.set_present_position(elbow["id"], elbow["range_min"] - 10)  # 0.015 rad: inside the margin

    rig = rig_factory(before_start=out_of_range, safety={"calibration_margin_rad": 0.05})
    status = rig.wait_status("calibration", lambda s: byte_value(s.level) == 1)
    assert "wrist_flex 0.153 rad above its calibrated range" in status.message
    assert "so101 calibrate --check" in status.message and "elbow" not in status.message
    values = {kv.key: kv.value for kv in status.values}
    assert float(values["wrist_flex"]) == pytest.approx(0.1534, abs=1e-3) and float(values["elbow_flex"]) == 0.0


def test_startup_calibration_status_is_ok_inside_the_ranges(rig: Rig) -> None:
    status = rig.wait_status("calibration", lambda s: True)
    assert byte_value(status.level) == 0 and "inside their calibrated ranges" in status.message


def test_watchdog_holds_when_commands_stop(rig: Rig) -> None:
    rig.command([1.5], ["shoulder_pan"], seconds=0.1)  # one short burst toward a far target
    rig.wait_status("arm", lambda s: "watchdog" in s.message)
    rig.wait_cycles(10)  # the servo reaches the held goal
    held = rig.position("shoulder_pan")
    assert 0.05 < held < 1.2, f"pan at {held:.3f} rad: should have moved a little, then held"
    rig.wait_cycles(40)
    assert rig.position("shoulder_pan") == pytest.approx(held, abs=2 * RAD_PER_COUNT)


def test_estop_service_holds_until_released(rig: Rig) -> None:
    estop = rig.client.create_client("std_srvs/srv/SetBool", "/driver/estop")
    assert estop.wait_for_service(10.0)
    assert estop.call(rig.client.message("std_srvs/srv/SetBool_Request", data=True), 5.0).success
    rig.command([0.6], ["shoulder_pan"], seconds=0.5)
    assert abs(rig.position("shoulder_pan")) < 3 * RAD_PER_COUNT
    assert rig.wait_status("arm", lambda s: byte_value(s.level) == 1).message.startswith("e-stop engaged")
    estop.call(rig.client.message("std_srvs/srv/SetBool_Request", data=False), 5.0)
    rig.drive("shoulder_pan", 0.6)


def test_follow_joint_trajectory_succeeds_cancels_and_rejects(rig: Rig) -> None:
    assert rig.action.wait_for_server(10.0)
    feedback: list[Any] = []
    goal = rig.trajectory(["shoulder_pan", "elbow_flex"], [(0.5, [0.2, -0.1]), (1.0, [0.4, -0.3])])
    handle = rig.action.send_goal(goal, feedback_callback=feedback.append)
    status, result = handle.result(timeout_s=10.0)
    assert (status, result.error_code) == (SUCCEEDED, SUCCESSFUL), result.error_string
    assert rig.position("shoulder_pan") == pytest.approx(0.4, abs=0.05)
    assert rig.position("elbow_flex") == pytest.approx(-0.3, abs=0.05)
    assert feedback and list(feedback[-1].joint_names) == ["shoulder_pan", "elbow_flex"]

    handle = rig.action.send_goal(rig.trajectory(["shoulder_pan"], [(4.0, [-1.5])]))
    wait_until(lambda: rig.position("shoulder_pan") < 0.3, 10.0, "pan on its way to -1.5")
    assert handle.cancel()
    status, result = handle.result(timeout_s=5.0)
    assert status == CANCELED
    rig.wait_cycles(20)  # the servo reaches the held goal
    stopped = rig.position("shoulder_pan")
    assert -1.0 < stopped < 0.4, f"pan at {stopped:.3f} rad after cancel"
    rig.wait_cycles(40)
    assert rig.position("shoulder_pan") == pytest.approx(stopped, abs=0.02)

    bad_joint = rig.action.send_goal(rig.trajectory(["elbow"], [(1.0, [0.1])]))
    status, result = bad_joint.result(timeout_s=5.0)
    assert (status, result.error_code) == (ABORTED, INVALID_JOINTS)
    beyond = rig.action.send_goal(rig.trajectory(["elbow_flex"], [(1.0, [3.0])]))
    status, result = beyond.result(timeout_s=5.0)
    assert (status, result.error_code) == (ABORTED, INVALID_GOAL) and "outside" in result.error_string

    rig.emu.set_gone(2)  # the shoulder_lift servo stops answering mid-goal: aborted, not stuck
    goal = rig.trajectory(["shoulder_lift"], [(0.3, [0.2])])
    status, result = rig.action.send_goal(goal).result(timeout_s=10.0)
    assert status == ABORTED and result.error_code in (INVALID_GOAL, GOAL_TOLERANCE_VIOLATED)
    rig.emu.set_gone(2, False)


def test_faults_reported_node_survives_and_recovers(rig: Rig) -> None:
    rig.emu.set_error_bits(6, 0x04)  # gripper overheats
    rig.emu.set_temperature(6, 80)
    gripper = rig.wait_status("gripper", lambda s: byte_value(s.level) == 2)
    assert "overheat" in gripper.message and "hot (80 °C)" in gripper.message
    assert "overheat" in rig.wait_status("arm", lambda s: byte_value(s.level) == 2).message
    rig.command([0.5], ["shoulder_pan"], seconds=0.4)  # held while faulted
    assert abs(rig.position("shoulder_pan")) < 3 * RAD_PER_COUNT
    rig.emu.clear_faults()
    rig.wait_status("gripper", lambda s: byte_value(s.level) == 0)
    rig.wait_status("arm", lambda s: byte_value(s.level) == 0)

    rig.emu.set_gone(4)  # wrist_flex unplugged: the others are still read and published, the arm holds
    wrist = rig.wait_status("wrist_flex", lambda s: byte_value(s.level) == 2)
    assert "not answering" in wrist.message and "servo 4" in wrist.message
    arm = rig.wait_status("arm", lambda s: byte_value(s.level) == 2)
    assert "wrist_flex not answering" in arm.message
    wait_until(lambda: "wrist_flex" not in list(rig.latest().name), 5.0, "joint_states without wrist_flex")
    assert list(rig.latest().name) == [j for j in JOINT_NAMES if j != "wrist_flex"]
    assert byte_value(rig.status("shoulder_pan").level) == 0  # the others: read fresh
    rig.emu.set_gone(4, False)
    rig.wait_status("arm", lambda s: byte_value(s.level) == 0)
    wait_until(lambda: list(rig.latest().name) == list(JOINT_NAMES), 5.0, "all joints again")
    rig.drive("shoulder_pan", 0.3)


def test_missing_port_reports_and_keeps_retrying(rig_factory: RigFactory) -> None:
    rig = rig_factory(port="/dev/so101-no-such-port", reconnect_period_s=0.2)
    arm = rig.wait_status("arm", lambda s: byte_value(s.level) == 2)
    assert "not connected on /dev/so101-no-such-port" in arm.message and "cannot open" in arm.message
    assert rig.latest() is None  # no made-up joint states
    count = len(rig.diagnostics)
    wait_until(lambda: len(rig.diagnostics) > count + 2, 5.0, "diagnostics keep coming")


def test_shutdown_eases_to_rest_then_torque_off(rig_factory: RigFactory) -> None:
    rest = [0.3, -0.2, 0.0, 0.0, 0.0, 0.5]
    rig = rig_factory(shutdown="rest_then_torque_off", config_extra=f"    rest_pose: {rest}\n    rest_ease_s: 0.5\n")
    wait_until(lambda: rig.latest() is not None, 10.0, "first joint state")
    rig.driver.node.shutdown()
    rig.driver.close()
    assert all(rig.emu.read_register(sid, p.TORQUE_ENABLE) == 0 for sid in range(1, 7))
    assert rig.position("shoulder_pan") == pytest.approx(0.3, abs=0.03)
    assert rig.position("shoulder_lift") == pytest.approx(-0.2, abs=0.03)


def test_shutdown_hold_keeps_torque(rig_factory: RigFactory) -> None:
    rig = rig_factory(shutdown="hold")
    wait_until(lambda: rig.latest() is not None, 10.0, "first joint state")
    rig.driver.node.shutdown()
    rig.driver.close()
    assert all(rig.emu.read_register(sid, p.TORQUE_ENABLE) == 1 for sid in range(1, 7))


def _goal(points: list[tuple[float, list[float], list[float] | None]], names: list[str]) -> Any:
    """A FollowJointTrajectory goal built without a graph (interpolation tests)."""
    from nodegraph.interfaces.messages import make

    pts = [
        make(
            "trajectory_msgs/msg/JointTrajectoryPoint",
            positions=pos,
            velocities=vel or [],
            time_from_start=make("builtin_interfaces/msg/Duration", sec=int(t), nanosec=round((t % 1) * 1e9)),
        )
        for t, pos, vel in points
    ]
    traj = make("trajectory_msgs/msg/JointTrajectory", joint_names=names, points=pts)
    return make(f"{FJT}_Goal", trajectory=traj)


def test_trajectory_interpolation_and_validation() -> None:
    limits = JointLimits((-2.0,) * 6, (2.0,) * 6)
    start = np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.5])
    linear = Trajectory.from_goal(_goal([(1.0, [1.0], None), (2.0, [0.0], None)], ["shoulder_pan"]), start, limits)
    assert linear.sample(0.5)[0] == pytest.approx(0.5) and linear.sample(1.5)[0] == pytest.approx(0.5)
    assert linear.sample(5.0)[0] == 0.0 and linear.sample(0.5)[1:].tolist() == start[1:].tolist()
    cubic = Trajectory.from_goal(_goal([(1.0, [1.0], [0.0])], ["shoulder_pan"]), start, limits)
    assert cubic.sample(0.5)[0] == pytest.approx(0.5) and cubic.sample(0.25)[0] == pytest.approx(0.15625)
    cases = [
        (_goal([(1.0, [0.0], None)], ["elbow"]), INVALID_JOINTS),
        (_goal([(1.0, [0.0, 0.0], None)], ["gripper", "gripper"]), INVALID_JOINTS),
        (_goal([], ["gripper"]), INVALID_GOAL),
        (_goal([(1.0, [0.0], None), (1.0, [0.1], None)], ["gripper"]), INVALID_GOAL),
        (_goal([(1.0, [math.nan], None)], ["gripper"]), INVALID_GOAL),
        (_goal([(1.0, [2.5], None)], ["gripper"]), INVALID_GOAL),
    ]
    for goal, code in cases:
        with pytest.raises(TrajectoryError) as exc:
            Trajectory.from_goal(goal, start, limits)
        assert exc.value.code == code


def test_driver_benchmark_reports_loop_and_latency() -> None:
    result = run_driver_benchmark(seconds=0.5, samples=5)
    assert result["joint_states"]["received"] > 20 and result["latency_samples"] == 5
    assert 0 < result["command_to_bus_ms"]["p50"] < 200 and result["bus"]["errors"] == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (DriverParams(shutdown="drop"), "shutdown must be '' or one of"),
        (DriverParams(rate_hz=-1.0), "parameter 'rate_hz' must be >= 0"),
        (DriverParams(max_consecutive_failures=0), "max_consecutive_failures must be >= 1"),
    ],
)
def test_invalid_parameters_are_named(params: DriverParams, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        params.validate()


def test_config_without_leader_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text("robot:\n  follower: {id: f, bus: {port: /dev/ttyACM0}}\n")
    with pytest.raises(ValueError, match=r"no robot\.leader section"):
        load_arm(str(config), "", "", role="leader")


def test_port_failure_reports_and_keeps_running(rig: Rig) -> None:
    rig.emu.stop()  # the USB adapter is unplugged
    arm = rig.wait_status("arm", lambda s: byte_value(s.level) == 2 and "not connected" in s.message)
    assert rig.driver.link.total_failures >= 1 and not rig.driver.link.connected
    count = len(rig.diagnostics)
    wait_until(lambda: len(rig.diagnostics) > count + 2, 5.0, "diagnostics keep coming")
    assert "/dev/pts/" in arm.message
