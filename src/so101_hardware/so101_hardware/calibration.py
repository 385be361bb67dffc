"""LeRobot-compatible SO-101 calibration files and the raw-count ↔ radian conversion.

File format (LeRobot ``MotorCalibration`` dumped as JSON, one file per robot id)::

    {"shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758, "range_max": 3292},
     ..., "gripper": {...}}

Where LeRobot keeps them (``lerobot.utils.constants``): ``$HF_LEROBOT_CALIBRATION``, else
``$HF_LEROBOT_HOME/calibration``, else ``$HF_HOME/lerobot/calibration`` (``~/.cache/huggingface/...``).
Since LeRobot PR #2780 (Jan 2026, so in 0.5/0.6) SO-100/SO-101 arms share one class and one folder:
``robots/so_follower/<id>.json`` and ``teleoperators/so_leader/<id>.json``; earlier releases used
``robots/so101_follower/`` and ``teleoperators/so101_leader/``. :func:`find_calibration` looks in the
current folder first, then the legacy one.

Conversion (see :class:`JointConverter`): arm joints follow LeRobot's ``MotorNormMode.DEGREES``,
``deg = (raw - mid) * 360 / 4095`` with ``mid = (range_min + range_max) / 2``, and the twin
(``so101_new_calib.xml``, "new calibration": each joint's zero is the middle of its range of motion)
uses the same zero, so ``rad = (raw - mid) * 2π / 4095``. We keep LeRobot's 4095 (not the physical 4096
counts/rev) so that our radians are exactly LeRobot degrees × π/180 and LeRobot datasets convert without
drift; the scale difference is 0.024 % (0.04° at 180°). As in LeRobot's degrees mode, ``drive_mode`` is not
applied to arm joints. ``range_m100_100`` (LeRobot's other arm mode) maps the recorded range ends to ±100,
which is not a physical unit, so it is not used. The gripper follows LeRobot's ``RANGE_0_100``
(0 = range_min = closed, 100 = open, ``drive_mode`` inverts), mapped linearly onto the twin's gripper
ctrlrange (closed at the low end, as ``lerobot_env_so101.gripper`` does), so 0.0 rad means the same
opening in sim and on the real arm. Per-joint ``sign`` and ``offset_rad`` hooks (default +1 / 0, from
``config/robot.yaml``) absorb a servo mounted the other way without editing the calibration file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from so101_core.joints import JointRanges
from so101_core.robot_spec import GRIPPER, JOINT_NAMES

from .errors import CalibrationError
from .feetech import protocol as p

Role = Literal["follower", "leader"]

_FIELDS = ("id", "drive_mode", "homing_offset", "range_min", "range_max")
_FOLDERS: dict[str, tuple[str, ...]] = {
    "follower": ("robots/so_follower", "robots/so101_follower"),
    "leader": ("teleoperators/so_leader", "teleoperators/so101_leader"),
}
#: LeRobot's degrees scale: counts per 360° (``model_resolution - 1``).
COUNTS_PER_TURN = p.RESOLUTION - 1
HOMING_OFFSET_LIMIT = (1 << p.HOMING_OFFSET.sign_bit) - 1 if p.HOMING_OFFSET.sign_bit else 2047


@dataclass(frozen=True)
class MotorCalibration:
    """LeRobot's per-motor calibration: servo ``id``, ``drive_mode`` (0/1), ``homing_offset`` (counts,
    written to register 31), ``range_min``/``range_max`` (Present_Position counts, 0..4095)."""

    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int

    @property
    def mid(self) -> float:
        """Middle of the recorded range, counts (the joint's zero)."""
        return (self.range_min + self.range_max) / 2.0


@dataclass(frozen=True)
class ArmCalibration:
    """Calibration of the six SO-101 motors, keyed by canonical joint name."""

    motors: Mapping[str, MotorCalibration]

    def __post_init__(self) -> None:
        names = list(self.motors)
        for name in names:
            if name not in JOINT_NAMES:
                raise CalibrationError(f"unknown motor name {name!r}; expected {list(JOINT_NAMES)}", field=name)
        for name in JOINT_NAMES:
            if name not in self.motors:
                raise CalibrationError(f"motor {name!r} is missing", field=name)
        seen: dict[int, str] = {}
        for name in JOINT_NAMES:
            m = self.motors[name]
            _check_motor(name, m)
            if m.id in seen:
                raise CalibrationError(f"{name}.id {m.id} is already used by {seen[m.id]}", field=f"{name}.id")
            seen[m.id] = name

    def __getitem__(self, name: str) -> MotorCalibration:
        return self.motors[name]

    @property
    def ids(self) -> dict[str, int]:
        """``{joint: servo id}`` in canonical order."""
        return {n: self.motors[n].id for n in JOINT_NAMES}

    @classmethod
    def from_dict(cls, data: Any, source: str = "calibration") -> ArmCalibration:
        """Validate a decoded LeRobot calibration JSON object; errors name ``source`` and the field."""
        if not isinstance(data, dict):
            raise CalibrationError(f"{source}: top level must be a JSON object keyed by motor name")
        motors: dict[str, MotorCalibration] = {}
        for name, entry in data.items():
            if name not in JOINT_NAMES:
                raise CalibrationError(
                    f"{source}: unknown motor name {name!r}; expected {list(JOINT_NAMES)}", field=str(name)
                )
            if not isinstance(entry, dict):
                raise CalibrationError(f"{source}: {name} must be an object with {_FIELDS}", field=name)
            values: dict[str, int] = {}
            for key in _FIELDS:
                if key not in entry:
                    raise CalibrationError(f"{source}: field {name}.{key} is missing", field=f"{name}.{key}")
                value = entry[key]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise CalibrationError(
                        f"{source}: field {name}.{key} must be an integer, got {value!r}",
                        field=f"{name}.{key}",
                    )
                values[key] = value
            extra = sorted(set(entry) - set(_FIELDS))
            if extra:
                raise CalibrationError(f"{source}: unknown field {name}.{extra[0]}", field=f"{name}.{extra[0]}")
            motors[name] = MotorCalibration(**values)
        try:
            return cls(motors)
        except CalibrationError as exc:
            raise CalibrationError(f"{source}: {exc}", field=exc.field) from None

    def to_dict(self) -> dict[str, dict[str, int]]:
        """The LeRobot JSON object, in canonical joint order."""
        return {n: {k: int(getattr(self.motors[n], k)) for k in _FIELDS} for n in JOINT_NAMES}


def _check_motor(name: str, m: MotorCalibration) -> None:
    def bad(key: str, why: str) -> CalibrationError:
        return CalibrationError(f"field {name}.{key} {why}", field=f"{name}.{key}")

    if not 0 <= m.id <= p.MAX_ID:
        raise bad("id", f"must be in 0..{p.MAX_ID}, got {m.id}")
    if m.drive_mode not in (0, 1):
        raise bad("drive_mode", f"must be 0 or 1, got {m.drive_mode}")
    if abs(m.homing_offset) > HOMING_OFFSET_LIMIT:
        raise bad(
            "homing_offset",
            f"must be within ±{HOMING_OFFSET_LIMIT} (11-bit sign-magnitude), got {m.homing_offset}",
        )
    for key in ("range_min", "range_max"):
        value = getattr(m, key)
        if not 0 <= value <= p.MAX_POSITION:
            raise bad(key, f"must be in 0..{p.MAX_POSITION}, got {value}")
    if m.range_min >= m.range_max:
        raise bad("range_max", f"({m.range_max}) must be greater than range_min ({m.range_min})")


# ---------------------------------------------------------------------------------------------- files
def load_calibration(path: str | os.PathLike[str]) -> ArmCalibration:
    """Read and validate a LeRobot calibration JSON file."""
    fpath = Path(path)
    try:
        text = fpath.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalibrationError(f"cannot read calibration file {fpath}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{fpath}: not valid JSON ({exc})") from exc
    return ArmCalibration.from_dict(data, source=str(fpath))


def save_calibration(calibration: ArmCalibration, path: str | os.PathLike[str]) -> Path:
    """Write ``calibration`` in LeRobot's format (indent 4), atomically; returns the path."""
    fpath = Path(path)
    fpath.parent.mkdir(parents=True, exist_ok=True)
    tmp = fpath.with_name(fpath.name + ".tmp")
    tmp.write_text(json.dumps(calibration.to_dict(), indent=4) + "\n", encoding="utf-8")
    os.replace(tmp, fpath)
    return fpath


def calibration_root(env: Mapping[str, str] | None = None) -> Path:
    """LeRobot's ``HF_LEROBOT_CALIBRATION`` directory, resolved as LeRobot does."""
    env = os.environ if env is None else env
    if env.get("HF_LEROBOT_CALIBRATION"):
        return Path(env["HF_LEROBOT_CALIBRATION"]).expanduser()
    if env.get("HF_LEROBOT_HOME"):
        return Path(env["HF_LEROBOT_HOME"]).expanduser() / "calibration"
    hf_home = Path(env["HF_HOME"]).expanduser() if env.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    return hf_home / "lerobot" / "calibration"


def calibration_path(robot_id: str, role: Role = "follower", env: Mapping[str, str] | None = None) -> Path:
    """Where current LeRobot writes the calibration of ``robot_id`` (the path a writer should use)."""
    _check_robot_id(robot_id)
    return calibration_root(env) / _FOLDERS[role][0] / f"{robot_id}.json"


def find_calibration(robot_id: str, role: Role = "follower", env: Mapping[str, str] | None = None) -> Path:
    """Existing calibration file of ``robot_id``: current LeRobot folder first, then the legacy one."""
    _check_robot_id(robot_id)
    root = calibration_root(env)
    candidates = [root / folder / f"{robot_id}.json" for folder in _FOLDERS[role]]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise CalibrationError(
        f"no calibration for {role} {robot_id!r}; looked in " + ", ".join(str(c) for c in candidates),
        field="robot_id",
    )


def _check_robot_id(robot_id: str) -> None:
    if not robot_id or "/" in robot_id or "\\" in robot_id or robot_id in (".", ".."):
        raise CalibrationError(f"invalid robot id {robot_id!r}", field="robot_id")


# ---------------------------------------------------------------------------------------------- units
@dataclass(frozen=True)
class JointConverter:
    """Raw Present/Goal_Position counts ↔ joint angle in the twin's convention (rad).

    Attributes:
        name: canonical joint name.
        motor: its calibration.
        ctrl_range: the twin's ctrlrange for this joint, rad (used for the gripper mapping).
        sign: +1 or -1, direction of the joint relative to increasing counts.
        offset_rad: added to the angle after scaling, rad.
    """

    name: str
    motor: MotorCalibration
    ctrl_range: tuple[float, float]
    sign: float = 1.0
    offset_rad: float = 0.0

    def __post_init__(self) -> None:
        if self.sign not in (1.0, -1.0):
            raise CalibrationError(f"{self.name}.sign must be +1 or -1, got {self.sign}", field=f"{self.name}.sign")

    @property
    def is_gripper(self) -> bool:
        return self.name == GRIPPER

    def to_radians(self, raw: float) -> float:
        """Counts -> rad (arm joints unclamped; the gripper clamped to its range, as LeRobot does)."""
        m = self.motor
        if self.is_gripper:
            frac = (min(max(raw, m.range_min), m.range_max) - m.range_min) / (m.range_max - m.range_min)
            if m.drive_mode:
                frac = 1.0 - frac
            lo, hi = self.ctrl_range
            return self.sign * (lo + frac * (hi - lo)) + self.offset_rad
        return self.sign * (raw - m.mid) * (2.0 * math.pi / COUNTS_PER_TURN) + self.offset_rad

    def to_counts(self, radians: float) -> int:
        """rad -> counts, rounded and clamped to the calibrated ``[range_min, range_max]``."""
        m = self.motor
        value = (radians - self.offset_rad) * self.sign
        if self.is_gripper:
            lo, hi = self.ctrl_range
            frac = min(max((value - lo) / (hi - lo), 0.0), 1.0)
            if m.drive_mode:
                frac = 1.0 - frac
            raw = m.range_min + frac * (m.range_max - m.range_min)
        else:
            raw = m.mid + value * COUNTS_PER_TURN / (2.0 * math.pi)
        return int(min(max(round(raw), m.range_min), m.range_max))

    @property
    def rad_per_count(self) -> float:
        """Slope of the count -> rad map, rad per count (signed; the gripper's inside its range)."""
        m = self.motor
        if self.is_gripper:
            lo, hi = self.ctrl_range
            return self.sign * (-1.0 if m.drive_mode else 1.0) * (hi - lo) / (m.range_max - m.range_min)
        return self.sign * 2.0 * math.pi / COUNTS_PER_TURN

    def linear_radians(self, raw: float) -> float:
        """Counts -> rad on the unclamped straight line of :meth:`to_radians` (a plant's true angle)."""
        return self.to_radians(self.motor.mid) + (raw - self.motor.mid) * self.rad_per_count

    def linear_counts(self, radians: float) -> float:
        """Inverse of :meth:`linear_radians`: rad -> counts, neither rounded nor clamped."""
        return self.motor.mid + (radians - self.to_radians(self.motor.mid)) / self.rad_per_count

    def torque_per_load(self, max_torque_nm: float) -> float:
        """Joint torque (N·m, in this joint's rad) per unit of Present_Load (1 = 100 % of ``max_torque_nm``
        at the horn): virtual work through the count -> rad map, signed like :attr:`rad_per_count`."""
        horn = 2.0 * math.pi / COUNTS_PER_TURN
        return max_torque_nm * horn / self.rad_per_count

    @property
    def limits_rad(self) -> tuple[float, float]:
        """Angles of ``range_min`` and ``range_max``, sorted, rad."""
        a, b = self.to_radians(self.motor.range_min), self.to_radians(self.motor.range_max)
        return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class ArmConverter:
    """Vectorised :class:`JointConverter` over the six joints, canonical order (gripper index 5)."""

    joints: tuple[JointConverter, ...]

    @classmethod
    def build(
        cls,
        calibration: ArmCalibration,
        ranges: JointRanges,
        signs: Mapping[str, float] | None = None,
        offsets_rad: Mapping[str, float] | None = None,
    ) -> ArmConverter:
        """Converters for every joint from a calibration, the twin's ranges and optional sign/offset hooks."""
        for mapping, label in ((signs or {}, "sign"), (offsets_rad or {}, "offset_rad")):
            for name in mapping:
                if name not in JOINT_NAMES:
                    raise CalibrationError(f"unknown joint name {name!r} in {label}", field=f"{label}.{name}")
        return cls(
            tuple(
                JointConverter(
                    name,
                    calibration[name],
                    ranges.of(name),
                    float((signs or {}).get(name, 1.0)),
                    float((offsets_rad or {}).get(name, 0.0)),
                )
                for name in JOINT_NAMES
            )
        )

    @property
    def ids(self) -> tuple[int, ...]:
        """Servo ids, canonical order."""
        return tuple(j.motor.id for j in self.joints)

    def to_radians(self, counts: Sequence[float]) -> npt.NDArray[np.float64]:
        """(6,) counts -> (6,) rad."""
        _check_len(counts)
        return np.array([j.to_radians(float(c)) for j, c in zip(self.joints, counts, strict=True)])

    def to_counts(self, radians: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """(6,) rad -> (6,) counts, clamped to each calibrated range."""
        q = np.asarray(radians, dtype=np.float64).reshape(-1)
        _check_len(q)
        if not np.all(np.isfinite(q)):
            raise ValueError(f"joint positions must be finite, got {q.tolist()}")
        return np.array([j.to_counts(float(v)) for j, v in zip(self.joints, q, strict=True)], dtype=np.int64)

    def load_to_nm(self, loads: Sequence[float], max_torque_nm: float) -> npt.NDArray[np.float64]:
        """(6,) Present_Load fractions (-1..1) -> (6,) joint torques, N·m (see
        :meth:`JointConverter.torque_per_load`)."""
        _check_len(loads)
        return np.array([float(v) * j.torque_per_load(max_torque_nm) for j, v in zip(self.joints, loads, strict=True)])

    def speed_to_rad_s(self, counts_per_s: Sequence[float]) -> npt.NDArray[np.float64]:
        """(6,) Present_Speed (counts/s) -> (6,) rad/s (gripper scaled onto its ctrlrange)."""
        _check_len(counts_per_s)
        out = []
        for j, v in zip(self.joints, counts_per_s, strict=True):
            if j.is_gripper:
                lo, hi = j.ctrl_range
                scale = (hi - lo) / (j.motor.range_max - j.motor.range_min)
                out.append(j.sign * float(v) * scale * (-1.0 if j.motor.drive_mode else 1.0))
            else:
                out.append(j.sign * float(v) * 2.0 * math.pi / COUNTS_PER_TURN)
        return np.array(out)

    def limits(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(lower, upper) (6,) each, rad: the calibrated range of each joint expressed as angles."""
        pairs = [j.limits_rad for j in self.joints]
        return np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])


def _check_len(values: Sequence[float] | npt.NDArray[np.float64]) -> None:
    if len(values) != len(JOINT_NAMES):
        raise ValueError(f"expected {len(JOINT_NAMES)} joint values ({', '.join(JOINT_NAMES)}), got {len(values)}")
