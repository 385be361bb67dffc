"""config/robot.yaml loads; bad values give errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from so101_hardware.config import load_robot_config, parse_robot_config
from so101_hardware.errors import ConfigError

REPO_CONFIG = Path(__file__).resolve().parents[3] / "config" / "robot.yaml"


def test_shipped_robot_yaml_is_valid() -> None:
    cfg = load_robot_config(REPO_CONFIG)
    assert cfg.follower.arm.bus.baudrate == 1_000_000
    assert cfg.follower.role == "follower" and cfg.leader is not None
    assert not cfg.leader.arm.torque_on_connect
    assert cfg.safety.watchdog_timeout_s > 0


def test_explicit_calibration_path(tmp_path: Path, calibration_file: Path) -> None:
    data = yaml.safe_load(REPO_CONFIG.read_text())
    data["robot"]["follower"]["calibration"] = str(calibration_file)
    cfg = parse_robot_config(data)
    assert cfg.follower.load_calibration()["gripper"].range_max == 3486


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("follower", "bus", "baudrate"), 123, "robot.follower.bus.baudrate"),
        (("follower", "bus", "port"), 5, "robot.follower.bus.port"),
        (("follower", "torque_on_connect"), "yes", "robot.follower.torque_on_connect"),
        (("joint_sign",), {"elbow": -1}, "robot.joint_sign.elbow"),
        (("joint_sign",), {"elbow_flex": 2}, "robot.joint_sign.elbow_flex"),
        (("safety", "max_step_rad"), -1, "robot.safety.max_step_rad"),
        (("safety", "max_speed"), 1, "robot.safety.max_speed"),
        (("safety", "torque_recovery"), "always", "robot.safety.torque_recovery"),
        (("safety", "rate_warn_fraction"), 1.5, "robot.safety.rate_warn_fraction"),
        (("follower", "shutdown"), "drop", "robot.follower.shutdown"),
        (("follower", "rest_pose"), [0.0, 0.0], "robot.follower.rest_pose"),
        (("follower", "disable_torque_on_disconnect"), True, "robot.follower.disable_torque_on_disconnect"),
    ],
)
def test_bad_values_name_the_field(path: tuple[str, ...], value: object, field: str) -> None:
    data = yaml.safe_load(REPO_CONFIG.read_text())
    node = data["robot"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as exc:
        parse_robot_config(data)
    assert exc.value.field == field


def test_shutdown_has_one_place_in_robot_yaml() -> None:
    cfg = load_robot_config(REPO_CONFIG)
    assert cfg.shutdown.behavior == "torque_off" and cfg.follower.arm.disable_torque_on_disconnect
    data = yaml.safe_load(REPO_CONFIG.read_text())
    data["robot"]["follower"]["shutdown"] = "hold"
    held = parse_robot_config(data)
    assert held.shutdown.behavior == "hold" and not held.follower.arm.disable_torque_on_disconnect
    data["robot"]["follower"]["disable_torque_on_disconnect"] = True  # the old second source of truth
    with pytest.raises(ConfigError, match=r"replaced by robot\.follower\.shutdown"):
        parse_robot_config(data)
