"""Config loading and validation: errors name the offending field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from so101_core.sim.config import load_sim_config, parse_sim_config, parse_task_config
from so101_core.sim.errors import ConfigError, SimError
from so101_core.sim.randomization import parse_dr_config


def test_shipped_configs_load(sim_cfg: Any, task_cfg: Any, dr_cfg: Any) -> None:
    assert sim_cfg.physics.timestep == pytest.approx(0.002)
    assert sim_cfg.physics.control_hz == pytest.approx(30.0)
    assert [c.name for c in sim_cfg.cameras] == ["ego", "side", "top"]
    assert (sim_cfg.width, sim_cfg.height) == (640, 480)
    assert sim_cfg.vial.mass == pytest.approx(0.02) and sim_cfg.rack.mass == pytest.approx(0.2)
    assert sim_cfg.contact.margin <= 1e-3
    assert task_cfg.xy_radius == pytest.approx(0.07)
    assert dr_cfg.rack_yaw == (-0.5, 0.5)


def _set(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return out


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("physics.timestep", -0.002, "sim.physics.timestep"),
        ("physics.control_hz", "fast", "sim.physics.control_hz"),
        ("cameras.fisheye", {"pos": [0, 0, 1], "lookat": [0, 0, 0]}, "sim.cameras.fisheye"),
        ("cameras.side.fovy", 400.0, "sim.cameras.side.fovy"),
        ("cameras.top", _DELETE, "sim.cameras.top"),
        ("vial.mass", 0.0, "sim.vial.mass"),
        ("robot.actuators.gripper.kp", -1.0, "sim.robot.actuators.gripper.kp"),
        ("contact.margin", 0.02, "sim.contact.margin"),
        ("rack.slots", 8, "sim.rack.slots"),
        ("mat.rgba", [1, 1, 1], "sim.mat.rgba"),
        ("vial.colour", [1, 0, 0, 1], "sim.vial.colour"),
    ],
)
def test_bad_sim_config_names_field(raw_yaml: Any, path: str, value: Any, field: str) -> None:
    bad = _set(raw_yaml("sim"), path, value)
    with pytest.raises(ConfigError) as err:
        parse_sim_config(bad)
    assert err.value.field.startswith(field)
    assert field in str(err.value)
    assert isinstance(err.value, SimError)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("objects.rack.yaw", [0.5, -0.5], "dr.objects.rack.yaw"),
        ("objects.vial.x", [-0.5, 0.5], "dr.objects.vial.x"),
        ("objects.vial.roll", "wide", "dr.objects.vial.roll"),
        ("partly_done_prob", 1.5, "dr.partly_done_prob"),
        ("lighting.color_temperature_k", [100.0, 200.0], "dr.lighting.color_temperature_k"),
        ("physics.mass_scale", [0.0, 1.0], "dr.physics.mass_scale"),
        ("cameras.pos_jitter", -0.01, "dr.cameras.pos_jitter"),
        ("colors.sky", 0.1, "dr.colors.sky"),
    ],
)
def test_bad_dr_config_names_field(raw_yaml: Any, path: str, value: Any, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_dr_config(_set(raw_yaml("dr"), path, value))
    assert err.value.field.startswith(field)


def test_bad_task_config_names_field(raw_yaml: Any) -> None:
    with pytest.raises(ConfigError) as err:
        parse_task_config(_set(raw_yaml("task"), "success.z_min", 0.5))
    assert err.value.field == "task.success.z_min"
    with pytest.raises(ConfigError) as err:
        parse_task_config(_set(raw_yaml("task"), "success.hold_steps", 0))
    assert err.value.field == "task.success.hold_steps"


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_sim_config(tmp_path / "nope.yaml")
    p = tmp_path / "sim.yaml"
    p.write_text("physics: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_sim_config(p)
