"""The compact seed file: round trip, and malformed files rejected with errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from so101_core.robot_spec import JOINT_NAMES
from so101_core.seeds import SeedDemo, SeedFormatError, load_seed, load_seeds, save_seed

STEPS = 12


def make_demo(**overrides: Any) -> SeedDemo:
    rng = np.random.default_rng(7)
    fields: dict[str, Any] = {
        "t": np.arange(STEPS) / 30.0,
        "joint_positions": rng.normal(size=(STEPS, 6)),
        "actions": rng.normal(size=(STEPS, 6)),
        "object_poses": {"vial": rng.normal(size=(STEPS, 7)), "rack": rng.normal(size=(STEPS, 7))},
        "success": True,
        "source": "scripted",
        "seed": 3,
        "extra": {"episode": 3, "end_reason": "success"},
    }
    fields.update(overrides)
    return SeedDemo(**fields)


def write_npz(path: Path, **arrays: Any) -> Path:
    np.savez(path, **arrays)
    return path


def valid_arrays() -> dict[str, Any]:
    meta = {
        "format_version": 1,
        "success": True,
        "task": "vial_to_rack",
        "source": "teleop",
        "seed": None,
        "control_hz": 30.0,
        "joint_names": list(JOINT_NAMES),
        "extra": {},
    }
    return {
        "t": np.arange(4) / 30.0,
        "joint_positions": np.zeros((4, 6)),
        "actions": np.zeros((4, 6)),
        "meta": np.array(json.dumps(meta)),
    }


def test_round_trip(tmp_path: Path) -> None:
    demo = make_demo()
    path = save_seed(demo, tmp_path / "seed_003")
    assert path == tmp_path / "seed_003.npz"
    back = load_seed(path)
    np.testing.assert_array_equal(back.t, demo.t)
    np.testing.assert_array_equal(back.joint_positions, demo.joint_positions)
    np.testing.assert_array_equal(back.actions, demo.actions)
    assert set(back.object_poses) == {"vial", "rack"}
    for name, poses in demo.object_poses.items():
        np.testing.assert_array_equal(back.object_poses[name], poses)
    assert (back.success, back.source, back.seed, back.task, back.control_hz) == (
        True,
        "scripted",
        3,
        "vial_to_rack",
        30.0,
    )
    assert dict(back.extra) == {"episode": 3, "end_reason": "success"}
    np.testing.assert_array_equal(back.gripper, demo.joint_positions[:, 5])
    assert not list(tmp_path.glob("*.tmp.npz"))


def test_minimal_file_without_poses_loads(tmp_path: Path) -> None:
    demo = load_seed(write_npz(tmp_path / "a.npz", **valid_arrays()))
    assert demo.steps == 4 and demo.seed is None and dict(demo.object_poses) == {}


def test_load_seeds_sorted_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(SeedFormatError, match="no seed files"):
        load_seeds(tmp_path)
    save_seed(make_demo(seed=1), tmp_path / "seed_001")
    save_seed(make_demo(seed=0), tmp_path / "seed_000")
    assert [d.seed for d in load_seeds(tmp_path)] == [0, 1]


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"t": np.zeros((0,))}, "t"),
        ({"t": np.array([0.0, 0.1, 0.1, *np.arange(3, STEPS) / 30.0])}, "t"),
        ({"joint_positions": np.zeros((STEPS, 5))}, "joint_positions"),
        ({"actions": np.zeros((STEPS - 1, 6))}, "actions"),
        ({"object_poses": {"vial": np.zeros((STEPS, 3))}}, "object_poses.vial"),
        ({"control_hz": 0.0}, "control_hz"),
    ],
)
def test_invalid_demo_names_the_field(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(SeedFormatError, match=f"^{field}:"):
        make_demo(**overrides)


def _meta(**changes: Any) -> np.ndarray:
    meta = json.loads(str(valid_arrays()["meta"]))
    meta.update(changes)
    for key in [k for k, v in changes.items() if v is ...]:
        del meta[key]
    return np.array(json.dumps(meta))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"joint_positions": None}, "'joint_positions'"),
        ({"actions": None}, "'actions'"),
        ({"meta": None}, "'meta'"),
        ({"meta": np.array("{not json")}, "'meta' is not JSON"),
        ({"meta": np.array("[1, 2]")}, "'meta' must be a JSON object"),
        ({"meta": _meta(success=...)}, "meta.success"),
        ({"meta": _meta(source=3)}, "meta.source"),
        ({"meta": _meta(control_hz="fast")}, "meta.control_hz"),
        ({"meta": _meta(seed=1.5)}, "meta.seed"),
        ({"meta": _meta(format_version=99)}, "format_version"),
        ({"meta": _meta(joint_names=["a", "b"])}, "joint_names"),
        ({"actions": np.array(["x"] * 24).reshape(4, 6)}, "'actions' must be numeric"),
        ({"joint_positions": np.zeros((4, 7))}, "joint_positions: expected shape"),
        ({"t": np.array([0.0, 0.2, 0.1, 0.3])}, "t: timestamps must increase"),
        ({"object_pose/vial": np.zeros((3, 7))}, "object_poses.vial"),
    ],
)
def test_malformed_file_error_names_the_field(tmp_path: Path, changes: dict[str, Any], field: str) -> None:
    arrays = valid_arrays()
    for key, value in changes.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    path = write_npz(tmp_path / "bad.npz", **arrays)
    with pytest.raises(SeedFormatError) as info:
        load_seed(path)
    message = str(info.value)
    assert str(path) in message
    assert field in message


def test_not_a_seed_file(tmp_path: Path) -> None:
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(SeedFormatError, match="not a seed file"):
        load_seed(tmp_path / "junk.npz")
    with pytest.raises(SeedFormatError, match="no such seed file"):
        load_seed(tmp_path / "missing.npz")


def test_pickled_arrays_are_refused(tmp_path: Path) -> None:
    arrays = valid_arrays()
    arrays["actions"] = np.array([{"evil": 1}], dtype=object)
    path = write_npz(tmp_path / "pickle.npz", **arrays)
    with pytest.raises(SeedFormatError, match="not a seed file"):
        load_seed(path)
