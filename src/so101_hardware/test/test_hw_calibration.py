"""LeRobot calibration files: lookup, validation, writer, count <-> rad maths, calibration procedure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from so101_core.joints import twin_ranges
from so101_core.robot_spec import GRIPPER_INDEX, JOINT_NAMES
from so101_hardware.calibration import (
    ArmCalibration,
    ArmConverter,
    calibration_path,
    calibration_root,
    find_calibration,
    load_calibration,
    save_calibration,
)
from so101_hardware.calibration_procedure import (
    RangeRecorder,
    build_calibration,
    half_turn_homing_offsets,
)
from so101_hardware.errors import CalibrationError

STEP = 2 * math.pi / 4095  # rad per count, LeRobot degrees scale


def test_twin_ranges_come_from_the_mjcf() -> None:
    ranges = twin_ranges()
    assert ranges.of("gripper") == pytest.approx((-0.17453, 1.74533))
    assert ranges.of("shoulder_pan") == pytest.approx((-1.91986, 1.91986))


def test_calibration_root_follows_lerobot_env_rules(tmp_path: Path) -> None:
    assert calibration_root({"HF_LEROBOT_CALIBRATION": str(tmp_path)}) == tmp_path
    assert calibration_root({"HF_LEROBOT_HOME": "/x"}) == Path("/x/calibration")
    assert calibration_root({"HF_HOME": "/h"}) == Path("/h/lerobot/calibration")
    assert calibration_root({}).parts[-4:] == (".cache", "huggingface", "lerobot", "calibration")


def test_find_calibration_current_then_legacy_folder(tmp_path: Path, calibration_file: Path) -> None:
    env = {"HF_LEROBOT_CALIBRATION": str(calibration_file.parents[2])}
    assert find_calibration("lab_arm", "follower", env) == calibration_file
    legacy = tmp_path / "calibration" / "teleoperators" / "so101_leader" / "lead.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(calibration_file.read_text())
    assert find_calibration("lead", "leader", env) == legacy
    assert calibration_path("lead", "leader", env).parent.name == "so_leader"
    with pytest.raises(CalibrationError, match="so_follower"):
        find_calibration("nobody", "follower", env)
    with pytest.raises(CalibrationError):
        find_calibration("../etc", "follower", env)


def test_load_and_write_round_trip(tmp_path: Path, calibration: ArmCalibration) -> None:
    assert calibration["elbow_flex"].homing_offset == 1106
    assert calibration.ids == {n: i + 1 for i, n in enumerate(JOINT_NAMES)}
    out = save_calibration(calibration, tmp_path / "out" / "arm.json")
    assert load_calibration(out) == calibration
    assert list(json.loads(out.read_text())) == list(JOINT_NAMES)


def test_arm_joint_maths_match_lerobot_degrees(calibration: ArmCalibration) -> None:
    conv = ArmConverter.build(calibration, twin_ranges())
    mids = [calibration[n].mid for n in JOINT_NAMES]
    q = conv.to_radians(mids)
    assert q[:5] == pytest.approx(np.zeros(5))  # range middle == twin zero ("new calibration")
    pan = calibration["shoulder_pan"]
    counts = [pan.mid + 1000, *mids[1:]]
    lerobot_degrees = (counts[0] - pan.mid) * 360 / 4095
    assert conv.to_radians(counts)[0] == pytest.approx(math.radians(lerobot_degrees))
    target = np.array([0.3, -0.5, 1.0, -1.2, 2.0, 0.4])
    back = conv.to_radians(conv.to_counts(target).tolist())
    assert back[:5] == pytest.approx(target[:5], abs=STEP)


def test_gripper_maps_onto_the_twin_ctrlrange(calibration: ArmCalibration) -> None:
    conv = ArmConverter.build(calibration, twin_ranges())
    g = calibration["gripper"]
    base = [calibration[n].mid for n in JOINT_NAMES]
    closed = conv.to_radians([*base[:5], g.range_min])[GRIPPER_INDEX]
    opened = conv.to_radians([*base[:5], g.range_max])[GRIPPER_INDEX]
    assert (closed, opened) == pytest.approx((-0.17453, 1.74533))
    assert conv.to_radians([*base[:5], g.range_max + 300])[GRIPPER_INDEX] == pytest.approx(1.74533)
    assert conv.to_counts([0, 0, 0, 0, 0, 5.0])[GRIPPER_INDEX] == g.range_max
    half = (-0.17453 + 1.74533) / 2
    assert conv.to_counts([0, 0, 0, 0, 0, half])[GRIPPER_INDEX] == round((g.range_min + g.range_max) / 2)


def test_commands_are_clamped_to_the_calibrated_range(calibration: ArmCalibration) -> None:
    conv = ArmConverter.build(calibration, twin_ranges())
    counts = conv.to_counts([10.0, -10.0, 0, 0, 0, 0])
    assert counts[0] == calibration["shoulder_pan"].range_max
    assert counts[1] == calibration["shoulder_lift"].range_min
    with pytest.raises(ValueError, match="finite"):
        conv.to_counts([math.nan, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="expected 6"):
        conv.to_counts([0.0] * 5)


def test_sign_hook_and_unknown_joint(calibration: ArmCalibration) -> None:
    conv = ArmConverter.build(calibration, twin_ranges(), signs={"wrist_roll": -1})
    counts = [calibration[n].mid for n in JOINT_NAMES]
    counts[4] += 100
    assert conv.to_radians(counts)[4] == pytest.approx(-100 * STEP)
    with pytest.raises(CalibrationError) as exc:
        ArmConverter.build(calibration, twin_ranges(), signs={"elbow": -1})
    assert exc.value.field == "sign.elbow"


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda d: d.__setitem__("elbow", d.pop("elbow_flex")), "elbow", "unknown motor name 'elbow'"),
        (lambda d: d.pop("gripper"), "gripper", "'gripper' is missing"),
        (lambda d: d["wrist_flex"].pop("range_min"), "wrist_flex.range_min", "is missing"),
        (lambda d: d["wrist_flex"].__setitem__("range_max", "3205"), "wrist_flex.range_max", "integer"),
        (lambda d: d["shoulder_lift"].__setitem__("drive_mode", True), "shoulder_lift.drive_mode", "integer"),
        (lambda d: d["shoulder_lift"].__setitem__("range_max", 500), "shoulder_lift.range_max", "greater"),
        (lambda d: d["gripper"].__setitem__("range_max", 5000), "gripper.range_max", "0..4095"),
        (lambda d: d["gripper"].__setitem__("homing_offset", 2048), "gripper.homing_offset", "2047"),
        (lambda d: d["gripper"].__setitem__("id", 1), "gripper.id", "already used"),
        (lambda d: d["gripper"].__setitem__("torque", 1), "gripper.torque", "unknown field"),
    ],
)
def test_malformed_calibration_names_the_field(
    tmp_path: Path, lerobot_calibration: dict, mutate: object, field: str, message: str
) -> None:
    mutate(lerobot_calibration)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(lerobot_calibration))
    with pytest.raises(CalibrationError, match=message) as exc:
        load_calibration(path)
    assert exc.value.field == field
    assert str(path) in str(exc.value)


def test_unreadable_or_non_object_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationError, match="not valid JSON"):
        load_calibration(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(CalibrationError, match="JSON object"):
        load_calibration(bad)
    with pytest.raises(CalibrationError, match="cannot read"):
        load_calibration(tmp_path / "missing.json")


def test_calibration_procedure_pure_logic(lerobot_calibration: dict) -> None:
    middle = {n: 2047 + lerobot_calibration[n]["homing_offset"] for n in JOINT_NAMES}
    offsets = half_turn_homing_offsets(middle)
    assert offsets == {n: lerobot_calibration[n]["homing_offset"] for n in JOINT_NAMES}
    rec = RangeRecorder()
    assert "wrist_roll" not in rec.names
    for n in JOINT_NAMES:
        rec.update({m: 2047 for m in JOINT_NAMES})
        low = {m: lerobot_calibration[m]["range_min"] for m in JOINT_NAMES}
        high = {m: lerobot_calibration[m]["range_max"] for m in JOINT_NAMES}
        rec.update(low if n != "gripper" else high)
        rec.update(high)
    mins, maxes = rec.result()
    assert (mins["wrist_roll"], maxes["wrist_roll"]) == (0, 4095)
    cal = build_calibration({n: i + 1 for i, n in enumerate(JOINT_NAMES)}, offsets, mins, maxes)
    assert cal == ArmCalibration.from_dict(lerobot_calibration)


def test_range_recorder_rejects_a_joint_that_never_moved() -> None:
    rec = RangeRecorder()
    rec.update(dict.fromkeys(JOINT_NAMES, 2000))
    with pytest.raises(CalibrationError, match="did not move") as exc:
        rec.result()
    assert exc.value.field == "shoulder_pan"
    with pytest.raises(CalibrationError, match="unknown motor name"):
        half_turn_homing_offsets({"elbow": 100})
