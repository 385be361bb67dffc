"""The compact seed file: one ``.npz`` per demonstration (no pickle), beside its rosbag2 bag.

Arrays, per control step (T steps at ``control_hz``):
- ``t`` (T,) s since the first step;
- ``joint_positions`` (T, 6) rad, measured, canonical joint order (gripper at index 5);
- ``actions`` (T, 6) rad, the joint targets commanded at that step (what ``/joint_commands`` carried);
- ``object_poses`` name → (T, 7): position xyz m + quaternion wxyz, in the world (= robot base) frame.
Metadata: ``success``, ``seed`` (scene randomization seed or None), ``task``, ``source``
(``scripted`` | ``teleop`` | ``skillgen``), ``control_hz``, ``extra`` (free-form JSON-able mapping).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES

FORMAT_VERSION = 1
_OBJECT_PREFIX = "object_pose/"


class SeedFormatError(ValueError):
    """A seed file or demo is malformed; the message names the field."""


@dataclass(frozen=True)
class SeedDemo:
    """One demonstration (see the module docstring for shapes and units)."""

    t: F64
    joint_positions: F64
    actions: F64
    object_poses: Mapping[str, F64]
    success: bool
    task: str = "vial_to_rack"
    source: str = "scripted"
    seed: int | None = None
    control_hz: float = 30.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        steps = len(self.t)
        if self.t.ndim != 1 or steps == 0:
            raise SeedFormatError(f"t: expected a non-empty (T,) array, got shape {self.t.shape}")
        if np.any(np.diff(self.t) <= 0):
            raise SeedFormatError("t: timestamps must increase strictly")
        for name in ("joint_positions", "actions"):
            array = getattr(self, name)
            if array.shape != (steps, len(JOINT_NAMES)):
                raise SeedFormatError(f"{name}: expected shape ({steps}, {len(JOINT_NAMES)}), got {array.shape}")
        for name, poses in self.object_poses.items():
            if poses.shape != (steps, 7):
                raise SeedFormatError(f"object_poses.{name}: expected shape ({steps}, 7), got {poses.shape}")
        if self.control_hz <= 0:
            raise SeedFormatError(f"control_hz: must be > 0, got {self.control_hz}")

    @property
    def steps(self) -> int:
        return len(self.t)

    @property
    def gripper(self) -> F64:
        """(T,) measured gripper joint, rad."""
        return self.joint_positions[:, JOINT_NAMES.index("gripper")]


def save_seed(demo: SeedDemo, path: str | Path) -> Path:
    """Write ``demo`` to ``path`` (``.npz`` appended when missing); returns the path written."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    meta = {
        "format_version": FORMAT_VERSION,
        "success": bool(demo.success),
        "task": demo.task,
        "source": demo.source,
        "seed": demo.seed,
        "control_hz": float(demo.control_hz),
        "joint_names": list(JOINT_NAMES),
        "extra": dict(demo.extra),
    }
    arrays: dict[str, Any] = {
        "t": demo.t,
        "joint_positions": demo.joint_positions,
        "actions": demo.actions,
        "meta": np.array(json.dumps(meta)),
    }
    arrays.update({_OBJECT_PREFIX + name: poses for name, poses in demo.object_poses.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)  # a crash never leaves a half-written seed file under the final name
    return path


def load_seed(path: str | Path) -> SeedDemo:
    """Read a seed file; raises SeedFormatError naming what is wrong."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise SeedFormatError(f"{path}: no such seed file") from None
    except (OSError, ValueError) as exc:
        raise SeedFormatError(f"{path}: not a seed file: {exc}") from exc
    for key in ("t", "joint_positions", "actions", "meta"):
        if key not in arrays:
            raise SeedFormatError(f"{path}: missing field {key!r}")
    try:
        meta = json.loads(str(arrays["meta"]))
    except ValueError as exc:
        raise SeedFormatError(f"{path}: field 'meta' is not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise SeedFormatError(f"{path}: field 'meta' must be a JSON object, got {type(meta).__name__}")
    for key, kind, what in (
        ("success", bool, "boolean"),
        ("task", str, "string"),
        ("source", str, "string"),
        ("control_hz", (int, float), "number"),
        ("extra", dict, "JSON object"),
    ):
        if key == "extra" and key not in meta:
            continue
        if not isinstance(meta.get(key), kind):
            raise SeedFormatError(f"{path}: field 'meta.{key}' is missing or not a {what}: {meta.get(key)!r}")
    if meta.get("seed") is not None and not isinstance(meta["seed"], int):
        raise SeedFormatError(f"{path}: field 'meta.seed' must be an integer or null, got {meta['seed']!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise SeedFormatError(f"{path}: format_version {meta.get('format_version')!r} is not {FORMAT_VERSION}")
    if tuple(meta.get("joint_names", ())) != JOINT_NAMES:
        raise SeedFormatError(f"{path}: joint_names {meta.get('joint_names')} differ from {list(JOINT_NAMES)}")
    for key, array in arrays.items():
        if key != "meta" and not np.issubdtype(array.dtype, np.number):
            raise SeedFormatError(f"{path}: field {key!r} must be numeric, got dtype {array.dtype}")
    try:
        return _demo(arrays, meta)
    except SeedFormatError as exc:
        raise SeedFormatError(f"{path}: {exc}") from None


def _demo(arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> SeedDemo:
    return SeedDemo(
        t=arrays["t"].astype(np.float64),
        joint_positions=arrays["joint_positions"].astype(np.float64),
        actions=arrays["actions"].astype(np.float64),
        object_poses={
            k.removeprefix(_OBJECT_PREFIX): v.astype(np.float64)
            for k, v in arrays.items()
            if k.startswith(_OBJECT_PREFIX)
        },
        success=bool(meta["success"]),
        task=str(meta["task"]),
        source=str(meta["source"]),
        seed=meta["seed"],
        control_hz=float(meta["control_hz"]),
        extra=meta.get("extra", {}),
    )


FAILED_DIR = "failed"
"""Folder name under which failed attempts' trajectories are kept; never read as demos."""


def load_seeds(directory: str | Path) -> list[SeedDemo]:
    """Every ``*.npz`` seed under ``directory`` (sorted by name), except failed attempts kept for inspection
    under a ``failed/`` folder (SkillGen's layout); raises when there are none."""
    root = Path(directory)
    files = sorted(f for f in root.glob("**/*.npz") if FAILED_DIR not in f.relative_to(root).parts[:-1])
    if not files:
        raise SeedFormatError(f"{directory}: no seed files (*.npz)")
    return [load_seed(f) for f in files]
