"""The leader node against a Feetech emulator on a pty, through a real zenoh router."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from nodegraph.testing import wait_until
from nodegraph.testing.graph import endpoint, router  # noqa: F401
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration import ArmCalibration
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.testing import RAD_PER_COUNT, move_by_hand, park_at_middle, write_calibration
from so101_nodes.leader_node import Leader


@dataclass
class LeaderRig:
    emu: FeetechEmulator
    cal: ArmCalibration
    leader: Leader
    states: list[Any] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm_status(self) -> Any:
        with self.lock:
            msgs = list(self.diagnostics)
        return next((s for m in reversed(msgs) for s in m.status if s.name == "leader: arm"), None)


def values(status: Any) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


@pytest.fixture
def rig(router: RouterProcess, tmp_path: Path) -> Iterator[LeaderRig]:  # noqa: F811
    cal_path, cal = write_calibration(tmp_path, "test_leader", "teleoperators/so_leader")
    config = tmp_path / "robot.yaml"
    config.write_text(
        "robot:\n"
        "  follower: {id: f, bus: {port: /dev/ttyACM0}}\n"
        f"  leader: {{id: test_leader, calibration: {cal_path},\n"
        "            bus: {port: /dev/ttyACM1, timeout_ms: 50, retries: 1}}\n"
    )
    with contextlib.ExitStack() as stack:
        emu = stack.enter_context(FeetechEmulator(seed=3))
        park_at_middle(emu, cal)
        for sid in range(1, 7):  # left powered by a previous session: the leader node must switch it off
            emu.write_register(sid, p.TORQUE_ENABLE, 1)
        contexts = [Context(router.endpoint), Context(router.endpoint)]
        for ctx in contexts:
            stack.callback(ctx.close)
        assert all(ctx.wait_for_router(10.0) for ctx in contexts)
        client = ZenohNode("client", context=contexts[1])
        stack.callback(client.shutdown)
        overrides = {
            "robot_config": str(config),
            "port": emu.port,
            "diagnostics_period_s": 0.2,
            "max_consecutive_failures": 2,
        }
        node = ZenohNode("leader", context=contexts[0], parameter_overrides=overrides)
        stack.callback(node.shutdown)
        leader = Leader(node)
        stack.callback(leader.close)
        stack.callback(node.shutdown)
        rig = LeaderRig(emu, cal, leader)

        def keep(into: list[Any]) -> Any:
            def callback(msg: Any) -> None:
                with rig.lock:
                    into.append(msg)

            return callback

        client.create_subscription("sensor_msgs/msg/JointState", "/leader/joint_states", keep(rig.states))
        client.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", keep(rig.diagnostics))
        wait_until(lambda: len(rig.states) > 0, 10.0, "first leader state")
        yield rig


def test_leader_publishes_hand_motion_with_torque_off(rig: LeaderRig) -> None:
    assert all(rig.emu.read_register(sid, p.TORQUE_ENABLE) == 0 for sid in range(1, 7))
    assert list(rig.states[-1].name) == list(JOINT_NAMES)
    move_by_hand(rig.emu, rig.cal, "elbow_flex", -0.7)
    wait_until(lambda: abs(rig.states[-1].position[2] + 0.7) < 2 * RAD_PER_COUNT, 5.0, "elbow at -0.7 rad")
    assert rig.emu.read_register(3, p.TORQUE_ENABLE) == 0  # nothing was powered to get there


def test_leader_servo_gone_reported_then_recovers(rig: LeaderRig) -> None:
    wait_until(lambda: (s := rig.arm_status()) is not None and s.level == 0, 5.0, "leader OK")
    rig.emu.set_gone(5)
    wait_until(lambda: (s := rig.arm_status()) is not None and s.level == 2, 5.0, "leader ERROR")
    assert "servo 5" in rig.arm_status().message
    count = len(rig.states)
    wait_until(lambda: len(rig.states) > count + 5, 5.0, "the other joints still published")
    assert list(rig.states[-1].name) == [j for j in JOINT_NAMES if j != "wrist_roll"]
    rig.emu.set_gone(5, False)
    wait_until(lambda: rig.arm_status().level == 0, 5.0, "leader OK again")
    wait_until(lambda: len(rig.states) > count + 10, 5.0, "leader states again")
