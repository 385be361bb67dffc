"""Real-arm safety of the driver, one test per defect of issue 13, over the Feetech emulator on a pty through a
real zenoh router. Every goal the driver puts on the bus is taken from the emulator's Goal_Position log."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend, graph_backend_for
from nodegraph.transport.zenoh.actions import ABORTED, SUCCEEDED
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.testing import RAD_PER_COUNT, move_by_hand
from so101_nodes.trajectory import INVALID_GOAL, SUCCESSFUL
from test_driver_node import MAX_STEP_RAD, Rig, RigFactory, rig_factory  # noqa: F401


@pytest.fixture
def rig_backend() -> Iterator[GraphBackend]:
    """The driver's safety logic, on zenoh (the rig on both backends: test_driver_node.py)."""
    with graph_backend_for("zenoh") as backend:
        yield backend


STEP_COUNTS = math.floor(MAX_STEP_RAD / RAD_PER_COUNT)  # the step limit in whole counts, rounded down
ERROR, WARN = 2, 1


def goal_deltas(rig: Rig, servo_id: int, since: float = 0.0) -> np.ndarray:
    """|change| of Goal_Position between consecutive writes to ``servo_id`` after ``since``, counts."""
    goals = [g for t, _, g in rig.emu.goal_history(servo_id) if t >= since]
    return np.abs(np.diff(goals)) if len(goals) > 1 else np.zeros(0)


def first_state(rig: Rig) -> Rig:
    wait_until(lambda: rig.latest() is not None, 10.0, "first joint state")
    return rig


def test_startup_far_from_the_limits_never_jumps(rig_factory: RigFactory) -> None:  # noqa: F811
    """Defect 1: servos at raw 2048 with offsets 0; after the offset sync shoulder_pan reads 3518, beyond its
    calibrated range (the servo itself would run to the range's end): its torque stays off, told on
    /diagnostics; wrist_flex (inside its calibrated range, outside the twin's) eases in at the step limit."""
    rig = rig_factory(park=False)  # goals recorded from the driver's first write
    first_state(rig)
    lower, upper = rig.driver.limits.lower, rig.driver.limits.upper
    inside = lambda j: lower[j] - 2 * RAD_PER_COUNT <= rig.latest().position[j] <= upper[j] + 2 * RAD_PER_COUNT  # noqa: E731
    wait_until(lambda: all(inside(j) for j in range(1, 6)), 20.0, "every powered joint eased into its limits")
    for sid in range(1, 7):
        deltas = goal_deltas(rig, sid)
        assert deltas.size == 0 or deltas.max() <= STEP_COUNTS, f"servo {sid}: goal jumped {deltas.max()} counts"
    assert rig.emu.read_register(1, p.TORQUE_ENABLE) == 0
    pan = rig.wait_status("shoulder_pan", lambda s: s.level == ERROR)
    assert "outside its calibrated range" in pan.message
    assert "torque lost on shoulder_pan" in rig.wait_status("arm", lambda s: s.level == ERROR).message
    rig.wait_cycles(20)
    assert all(inside(j) for j in range(1, 6))  # every powered joint stays inside the shared limits
    enable = rig.client.create_client("std_srvs/srv/Trigger", "/driver/enable_torque")
    assert enable.wait_for_service(10.0)
    reply = enable.call(rig.client.message("std_srvs/srv/Trigger_Request"), 5.0)
    assert not reply.success and "outside its calibrated range" in reply.message  # refused, no jump


def test_startup_inside_the_limits_does_not_move(rig_factory: RigFactory) -> None:  # noqa: F811
    rig = rig_factory()
    move_by_hand(rig.emu, rig.cal, "wrist_flex", 0.7)  # inside every limit: hold exactly there
    rig.emu.record_goals()
    first_state(rig)
    rig.wait_cycles(50)
    before = [rig.emu.present_position(sid) for sid in range(1, 7)]
    assert all(g == before[sid - 1] for _, sid, g in rig.emu.goal_history())


def test_replug_after_a_command_never_drives_back_to_the_stale_pose(
    rig_factory: RigFactory,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Defect 2: after unplug / replug the arm holds where it is, with no new command."""
    link = tmp_path / "ttyACM0"
    rig = first_state(rig_factory(port_link=link, reconnect_period_s=0.2))
    rig.command([-0.4, -0.4, -0.4], ["shoulder_pan", "elbow_flex", "wrist_flex"], seconds=0.6)
    wait_until(lambda: abs(rig.position("shoulder_pan") + 0.4) < 3 * RAD_PER_COUNT, 5.0, "pan at -0.4")
    rig.emu.stop()  # unplugged, power lost: the servos come back limp with their goal at the present position
    rig.wait_status("arm", lambda s: s.level == ERROR and "not connected" in s.message)
    for sid in range(1, 7):
        rig.emu.write_register(sid, p.TORQUE_ENABLE, 0)
    for joint in ("shoulder_pan", "elbow_flex", "wrist_flex"):
        move_by_hand(rig.emu, rig.cal, joint, 0.0)  # someone moves the limp arm meanwhile
    for sid in range(1, 7):
        rig.emu.write_register(sid, p.GOAL_POSITION, rig.emu.present_position(sid))
    rig.emu.start()
    link.unlink()
    link.symlink_to(rig.emu.port)
    rig.emu.record_goals()
    rig.wait_status("arm", lambda s: "not connected" not in s.message)  # reconnected
    rig.wait_cycles(60)
    for joint in ("shoulder_pan", "elbow_flex", "wrist_flex"):
        assert abs(rig.position(joint)) < 3 * RAD_PER_COUNT, f"{joint} moved after the replug"
    for sid in range(1, 7):
        assert goal_deltas(rig, sid).max(initial=0) <= STEP_COUNTS
    assert "holding" in rig.wait_status("arm", lambda s: s.level == 0).message


@pytest.mark.parametrize(("bits", "cause"), [(0x20, "overload"), (0x04, "overheat")])
def test_torque_cut_by_the_servo_is_reported_and_only_restored_on_request(
    rig_factory: RigFactory,  # noqa: F811
    bits: int,
    cause: str,
) -> None:
    """Defect 3: the servo's own protection cuts torque: ERROR with the cause, goals on it rejected, torque back
    only through ~/enable_torque, holding where it is."""
    rig = first_state(rig_factory())
    assert rig.action.wait_for_server(10.0)
    rig.emu.trip_protection(6, bits)
    gripper = rig.wait_status("gripper", lambda s: s.level == ERROR and "torque off" in s.message)
    assert cause in gripper.message
    assert cause in rig.wait_status("arm", lambda s: s.level == ERROR).message
    status, result = rig.action.send_goal(rig.trajectory(["gripper"], [(0.5, [0.6])])).result(timeout_s=5.0)
    assert (status, result.error_code) == (ABORTED, INVALID_GOAL)
    rig.emu.clear_faults(6)  # the servo cooled down; its torque stays off until asked
    arm = rig.wait_status("arm", lambda s: "torque lost" in s.message)
    assert arm.level == ERROR and cause in arm.message
    rig.wait_cycles(30)
    assert rig.emu.read_register(6, p.TORQUE_ENABLE) == 0
    status, result = rig.action.send_goal(rig.trajectory(["gripper"], [(0.5, [0.6])])).result(timeout_s=5.0)
    assert (status, result.error_code) == (ABORTED, INVALID_GOAL) and "torque off on gripper" in result.error_string
    rig.emu.set_present_position(6, rig.emu.present_position(6) + 40)  # the limp gripper is pushed by hand
    pushed = rig.emu.present_position(6)
    enable = rig.client.create_client("std_srvs/srv/Trigger", "/driver/enable_torque")
    assert enable.wait_for_service(10.0)
    reply = enable.call(rig.client.message("std_srvs/srv/Trigger_Request"), 5.0)
    assert reply.success, reply.message
    assert rig.emu.read_register(6, p.TORQUE_ENABLE) == 1
    rig.wait_cycles(30)
    assert abs(rig.emu.present_position(6) - pushed) <= 1  # torque back where it is: no motion
    rig.wait_status("arm", lambda s: s.level == 0)
    status, result = rig.action.send_goal(rig.trajectory(["gripper"], [(0.5, [0.6])])).result(timeout_s=10.0)
    assert (status, result.error_code) == (SUCCEEDED, SUCCESSFUL), result.error_string


def test_torque_recovery_when_clear_restores_torque_holding_in_place(rig_factory: RigFactory) -> None:  # noqa: F811
    """The configured policy: torque back by itself once the servo reports no error bits, without motion."""
    rig = first_state(rig_factory(safety={"torque_recovery": "when_clear"}))
    rig.emu.trip_protection(6, 0x20)
    rig.wait_status("gripper", lambda s: s.level == ERROR and "torque off" in s.message)
    rig.emu.set_present_position(6, rig.emu.present_position(6) - 30)  # it sagged while limp
    sagged = rig.emu.present_position(6)
    rig.emu.clear_faults(6)
    wait_until(lambda: rig.emu.read_register(6, p.TORQUE_ENABLE) == 1, 5.0, "torque back on")
    rig.wait_cycles(30)
    assert abs(rig.emu.present_position(6) - sagged) <= 1
    rig.wait_status("arm", lambda s: s.level == 0)


def test_commands_sent_during_a_fault_never_run_after_it_clears(rig_factory: RigFactory) -> None:  # noqa: F811
    """Defect 4."""
    rig = first_state(rig_factory())
    rig.emu.set_error_bits(6, 0x04)
    rig.wait_status("arm", lambda s: s.level == ERROR)
    msg = rig.client.message("sensor_msgs/msg/JointState", name=["shoulder_pan"], position=[0.4])
    refused = rig.driver.filter.refused
    for sent in range(1, 16):  # commands stream during the fault, each one delivered (and refused) before the next
        rig.commands.publish(msg)
        wait_until(lambda n=sent: rig.driver.filter.refused >= refused + n, 10.0, "a command refused in the fault")
    rig.emu.clear_faults()  # cleared right after the last command: it is fresh for the watchdog
    rig.wait_status("arm", lambda s: s.level < ERROR)  # the driver has seen the fault clear
    rig.wait_cycles(60)  # a command kept from the fault would move the arm from the first cycle on
    assert abs(rig.position("shoulder_pan")) < 3 * RAD_PER_COUNT
    assert rig.driver.filter.refused > 0
    rig.command([0.3], ["shoulder_pan"], seconds=0.5)  # a fresh command moves it
    wait_until(lambda: abs(rig.position("shoulder_pan") - 0.3) < 3 * RAD_PER_COUNT, 5.0, "pan at 0.3")


def test_alternating_commands_keep_goal_changes_within_the_step_limit(rig_factory: RigFactory) -> None:  # noqa: F811
    """Defects 5 and 12: the step is taken from the previous goal, in whole counts rounded down. Slow servos
    (600 counts/s: 6 counts per cycle, below the 13-count step) lag behind their goals, as loaded servos do."""
    rig = first_state(rig_factory(servo_speed=600.0))
    rig.emu.record_goals()
    for k in range(40):
        target = 0.5 if k % 2 else -0.5
        rig.commands.publish(rig.client.message("sensor_msgs/msg/JointState", name=["shoulder_pan"], position=[target]))
        time.sleep(0.007)
    rig.wait_cycles(10)  # the last commands reach the bus
    history = rig.emu.goal_history(1)
    assert len(history) > 20
    goals = np.array([g for _, _, g in history])
    assert np.abs(np.diff(goals)).max() <= STEP_COUNTS
    # and over time one step per control period (writes on command arrival share the cycle's token bucket):
    # any 5 periods move at most the bucket (1 step) + 5 steps, +2 counts of rounding and delivery jitter
    times = np.array([t for t, _, _ in history])
    for i in range(len(goals)):
        window = goals[(times >= times[i]) & (times < times[i] + 5 * rig.driver.period_s)]
        assert np.ptp(window) <= 6 * STEP_COUNTS + 2
    assert rig.driver.arm.max_step_counts(0.05)[0] == 32  # 0.05 rad = 32.6 counts -> 32, never 33


@pytest.mark.parametrize(
    ("config", "parameter", "torque", "rest"),
    [
        ("hold", "", 1, False),
        ("torque_off", "", 0, False),
        ("rest_then_torque_off", "", 0, True),
        ("torque_off", "hold", 1, False),  # the launch (node parameter) overrides the file
    ],
)
def test_shutdown_follows_robot_yaml(
    rig_factory: RigFactory,  # noqa: F811
    config: str,
    parameter: str,
    torque: int,
    rest: bool,
) -> None:
    """Defect 6: one place for the shutdown behaviour (robot.yaml), settable from the launch."""
    extra = f"    shutdown: {config}\n    rest_pose: [0.3, -0.2, 0.0, 0.0, 0.0, 0.5]\n    rest_ease_s: 0.4\n"
    rig = first_state(rig_factory(config_extra=extra, shutdown=parameter))
    rig.driver.node.shutdown()
    rig.driver.close()
    assert all(rig.emu.read_register(sid, p.TORQUE_ENABLE) == torque for sid in range(1, 7))
    pan = rig.position("shoulder_pan")
    assert pan == (pytest.approx(0.3, abs=0.03) if rest else pytest.approx(0.0, abs=3 * RAD_PER_COUNT))


def test_a_slow_bus_is_reported(rig_factory: RigFactory) -> None:  # noqa: F811
    """Defect 7: every reply 30 ms late -> the loop falls below its configured rate -> WARN on /diagnostics."""
    rig = first_state(rig_factory(safety={"rate_warn_fraction": 0.8}))
    rig.emu.set_reply_delay(0.03)
    arm = rig.wait_status("arm", lambda s: s.level >= WARN and "loop at" in s.message)
    values = {kv.key: kv.value for kv in arm.values}
    assert float(values["rate_hz"]) < 80.0
    rig.emu.set_reply_delay(0.0)
    rig.wait_status("arm", lambda s: s.level == 0, timeout_s=10.0)


def test_watchdog_hold_after_commands_stop_is_a_warning(rig_factory: RigFactory) -> None:  # noqa: F811
    """Defect 12: the command source went silent -> WARN (not OK); before any command the idle hold is OK."""
    rig = first_state(rig_factory())
    assert rig.wait_status("arm", lambda s: "no command yet" in s.message).level == 0
    rig.command([0.1], ["shoulder_pan"], seconds=0.2)
    arm = rig.wait_status("arm", lambda s: "watchdog" in s.message)
    assert arm.level == WARN


def test_old_commands_are_refused(rig_factory: RigFactory) -> None:  # noqa: F811
    """A command whose stamp is older than the watchdog (delayed delivery) is never executed."""
    rig = first_state(rig_factory())
    old = rig.client.stamp(rig.client.now_ns() - 2_000_000_000)
    header = rig.client.message("std_msgs/msg/Header", stamp=old, frame_id="")
    msg = rig.client.message("sensor_msgs/msg/JointState", header=header, name=["shoulder_pan"], position=[0.5])
    for n in range(1, 11):  # each one delivered (and refused) before the next
        rig.commands.publish(msg)
        wait_until(lambda n=n: rig.driver.filter.refused >= n, 10.0, "an old command refused")
    rig.wait_cycles(30)
    assert abs(rig.position("shoulder_pan")) < 3 * RAD_PER_COUNT
