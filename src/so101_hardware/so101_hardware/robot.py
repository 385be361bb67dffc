"""Robot abstraction in LeRobot's style, and the SO-101 follower and leader arms on a Feetech bus.

``read()`` returns joint positions in rad (canonical order, gripper index 5, the twin's convention, see
``calibration``) plus per-servo health and torque state; ``write()`` sync-writes goal counts. Everything is
read in one sync read per cycle (registers 40..70 of the six servos: Torque_Enable, Goal_Position and the
telemetry). A silent servo does not stop the read of the others: it is reported in ``ArmState.missing``
(its position NaN) and probed again every ``SILENT_PROBE_S``.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType

import numpy as np
import numpy.typing as npt
from so101_core.joints import JointRanges, twin_ranges
from so101_core.robot_spec import JOINT_NAMES

from .calibration import ArmCalibration, ArmConverter
from .errors import NoAnswerError, NotConnectedError, SafetyError, ServoFault
from .feetech import protocol as p
from .feetech.bus import BusConfig, FeetechBus
from .feetech.transport import PacketTransport

SILENT_PROBE_S = 0.25  # a silent servo is left out of the cycle's read and tried again this often, s


@dataclass(frozen=True)
class ServoHealth:
    """Health of one servo at one read.

    Attributes:
        joint: canonical joint name.
        servo_id: bus id.
        temperature_c: °C.
        voltage_v: V.
        load: signed fraction of maximum torque (-1..1).
        current_ma: mA.
        faults: error bits from the Status register.
        moving: the servo reports it is moving.
        torque_enabled: Torque_Enable read back (``None`` when not read).
    """

    joint: str
    servo_id: int
    temperature_c: int
    voltage_v: float
    load: float
    current_ma: float
    faults: ServoFault
    moving: bool
    torque_enabled: bool | None = None

    @property
    def ok(self) -> bool:
        return self.faults == ServoFault.NONE


@dataclass(frozen=True)
class ArmState:
    """One read of the arm.

    Attributes:
        positions: (6,) joint positions, rad (gripper: twin gripper angle, rad).
        velocities: (6,) joint velocities, rad/s.
        counts: (6,) raw Present_Position, counts.
        health: per-servo health of the servos that answered, canonical order.
        stamp: ``time.monotonic()`` at the end of the read, s.
        missing: joints whose servo did not answer (their positions / velocities / efforts are NaN).
        efforts: (6,) joint torques from Present_Load, N·m (``ArmConfig.max_torque_nm`` at 100 %).
        sampled: ``time.monotonic()`` half-way through the read (when the servos were sampled), s.
    """

    positions: npt.NDArray[np.float64]
    velocities: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    health: tuple[ServoHealth, ...]
    stamp: float
    names: tuple[str, ...] = field(default=JOINT_NAMES)
    missing: tuple[str, ...] = ()
    efforts: npt.NDArray[np.float64] = field(default_factory=lambda: np.full(len(JOINT_NAMES), np.nan))
    sampled: float = math.nan

    def faults(self) -> dict[str, ServoFault]:
        """``{joint: faults}`` of the servos reporting error bits (empty when all are healthy)."""
        return {h.joint: h.faults for h in self.health if not h.ok}

    def limp(self) -> tuple[str, ...]:
        """Joints whose servo reads back Torque_Enable 0."""
        return tuple(h.joint for h in self.health if h.torque_enabled is False)

    @property
    def valid(self) -> npt.NDArray[np.bool_]:
        """(6,) True for the joints read this time."""
        return np.array([n not in self.missing for n in self.names])


@dataclass(frozen=True)
class ArmConfig:
    """Arm-level parameters.

    Attributes:
        bus: serial bus parameters.
        torque_on_connect: follower: enable torque after connecting (goal first set to the present pose).
        disable_torque_on_disconnect: switch torque off when disconnecting.
        sync_calibration: on connect, write homing offsets and position limits from the calibration file
            to servos whose EEPROM differs (as LeRobot does when a calibration file is used).
        signs / offsets_rad: per-joint direction and zero hooks of the count ↔ rad conversion.
        max_torque_nm: torque at the horn when Present_Load reads 100 %, N·m (joint_states effort).
    """

    bus: BusConfig
    torque_on_connect: bool = True
    disable_torque_on_disconnect: bool = True
    sync_calibration: bool = True
    signs: Mapping[str, float] = field(default_factory=dict)
    offsets_rad: Mapping[str, float] = field(default_factory=dict)
    max_torque_nm: float = 3.35


class Robot(abc.ABC):
    """A robot behind ``connect / disconnect / is_connected / read / write``, usable as a context manager."""

    @property
    @abc.abstractmethod
    def is_connected(self) -> bool: ...

    @abc.abstractmethod
    def connect(self) -> None: ...

    @abc.abstractmethod
    def disconnect(self) -> None: ...

    @abc.abstractmethod
    def read(self) -> ArmState: ...

    @abc.abstractmethod
    def write(self, positions: npt.ArrayLike) -> npt.NDArray[np.int64]: ...

    def __enter__(self) -> Robot:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.disconnect()


class SO101Arm(Robot):
    """SO-101 follower: six STS3215 on one bus, calibrated with a LeRobot calibration file.

    Args:
        config: arm configuration.
        calibration: the arm's calibration (see :func:`calibration.load_calibration`).
        ranges: the twin's joint ranges (default: from the installed MJCF).
        transport: packet client for the bus (default: the Feetech SDK).
    """

    leader = False

    def __init__(
        self,
        config: ArmConfig,
        calibration: ArmCalibration,
        *,
        ranges: JointRanges | None = None,
        transport: PacketTransport | None = None,
    ) -> None:
        self.config = config
        self.calibration = calibration
        self.converter = ArmConverter.build(
            calibration, ranges if ranges is not None else twin_ranges(), config.signs, config.offsets_rad
        )
        self.ids = self.converter.ids
        self.bus = FeetechBus(config.bus, self.ids, transport)
        self._silent: dict[int, float] = {}  # servo id -> monotonic time of its next probe
        self.torque_refused: dict[str, str] = {}  # joint -> why torque was not switched on at connect

    @property
    def is_connected(self) -> bool:
        return self.bus.is_connected

    def connect(self) -> None:
        """Open the bus, check the six servos, sync calibration, then set torque as configured."""
        if self.is_connected:
            return
        self.bus.connect(handshake=True)
        self._silent.clear()
        try:
            if self.config.sync_calibration:
                self._sync_calibration()
            self._configure_torque()
        except BaseException:
            self.bus.disconnect()
            raise

    def disconnect(self) -> None:
        """Close the bus (torque off first when configured). Idempotent."""
        self.bus.disconnect(disable_torque=self.config.disable_torque_on_disconnect)

    def read(self) -> ArmState:
        """One sync read of the six servos -> positions (rad), velocities (rad/s), raw counts, health, torque.

        Raises:
            NoAnswerError: no servo answered at all; a single silent servo is reported in ``missing``.
        """
        self._require_connected()
        now = time.monotonic()
        ids = [sid for sid in self.ids if self._silent.get(sid, 0.0) <= now]
        started = time.monotonic()
        telemetry, silent = self.bus.read_state(ids) if ids else ({}, ())
        ended = time.monotonic()
        for sid in self.ids:
            if sid in telemetry:
                self._silent.pop(sid, None)
            elif sid in silent or sid not in self._silent:
                self._silent[sid] = now + SILENT_PROBE_S
        if not telemetry:
            raise NoAnswerError(
                f"servos {sorted(self._silent)} on {self.config.bus.port} are not answering",
                servo_id=None,
                operation="read state",
            )
        counts = np.array([telemetry[sid].position if sid in telemetry else 0 for sid in self.ids], dtype=np.int64)
        speeds = [telemetry[sid].speed if sid in telemetry else 0 for sid in self.ids]
        loads = [telemetry[sid].load if sid in telemetry else 0.0 for sid in self.ids]
        missing = tuple(name for name, sid in zip(JOINT_NAMES, self.ids, strict=True) if sid not in telemetry)
        valid = np.array([sid in telemetry for sid in self.ids])
        health = tuple(
            ServoHealth(
                joint=name,
                servo_id=sid,
                temperature_c=t.temperature_c,
                voltage_v=round(t.voltage_v, 2),
                load=t.load,
                current_ma=t.current_ma,
                faults=t.faults,
                moving=t.moving,
                torque_enabled=t.torque_enabled,
            )
            for name, sid in zip(JOINT_NAMES, self.ids, strict=True)
            if (t := telemetry.get(sid)) is not None
        )
        return ArmState(
            positions=np.where(valid, self.converter.to_radians(counts.tolist()), np.nan),
            velocities=np.where(valid, self.converter.speed_to_rad_s(speeds), np.nan),
            counts=counts,
            health=health,
            stamp=ended,
            missing=missing,
            efforts=np.where(valid, self.converter.load_to_nm(loads, self.config.max_torque_nm), np.nan),
            sampled=0.5 * (started + ended),
        )

    def silent_servos(self) -> tuple[int, ...]:
        """Ids left out of the cycle's read because they stopped answering."""
        return tuple(sorted(self._silent))

    def write(self, positions: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Sync-write goal positions given in rad ((6,), canonical order); returns the counts sent.

        Counts are clamped to each joint's calibrated range. Apply :mod:`safety` limits before calling.
        """
        self._require_connected()
        counts = self.converter.to_counts(positions)
        self.bus.write_goal_positions({sid: int(c) for sid, c in zip(self.ids, counts, strict=True)})
        return counts

    def max_step_counts(self, max_step_rad: float) -> npt.NDArray[np.int64]:
        """(6,) the step limit in whole counts per joint, rounded **down** (0.05 rad = 32 counts, never 33;
        at least 1)."""
        per_count = np.array(
            [abs(j.to_radians(j.motor.mid + 0.5) - j.to_radians(j.motor.mid - 0.5)) for j in self.converter.joints]
        )
        return np.maximum(1, np.floor(max_step_rad / per_count + 1e-9)).astype(np.int64)

    def hold(self) -> npt.NDArray[np.int64]:
        """Set every goal to the present position (stop where it is); returns the counts sent."""
        self._require_connected()
        present = self.bus.sync_read(p.PRESENT_POSITION, self.ids)
        self.bus.write_goal_positions(present)
        return np.array([present[sid] for sid in self.ids], dtype=np.int64)

    def set_torque(self, enabled: bool) -> None:
        """Torque on/off on all six servos (torque on first sets goals to the present pose).

        A servo whose present position is outside its calibrated range stays off: the servo would drive itself
        to the range's end at full speed. :attr:`torque_refused` names those joints and why.
        """
        self._require_connected()
        if not enabled:
            self.torque_refused = {}
            self.bus.set_torque(False, self.ids)
            return
        present = self.hold()
        self.torque_refused = self._outside_range(dict(zip(JOINT_NAMES, present.tolist(), strict=True)))
        refused = {self.ids[JOINT_NAMES.index(j)] for j in self.torque_refused}
        self.bus.set_torque(False, sorted(refused))
        self.bus.set_torque(True, [sid for sid in self.ids if sid not in refused])

    def enable_torque(self, joints: tuple[str, ...]) -> None:
        """Torque back on for ``joints``, each first given its present position as goal (no motion).

        Raises:
            SafetyError: a joint is outside its calibrated range (torque there would jump to the range's end).
        """
        self._require_connected()
        ids = [self.ids[JOINT_NAMES.index(j)] for j in joints]
        present = self.bus.sync_read(p.PRESENT_POSITION, ids)
        outside = self._outside_range({j: present[sid] for j, sid in zip(joints, ids, strict=True)})
        if outside:
            raise SafetyError("; ".join(outside.values()) + ": move it into range by hand (or recalibrate) first")
        self.bus.write_goal_positions(present)
        self.bus.set_torque(True, ids)
        for joint in joints:
            self.torque_refused.pop(joint, None)

    def _outside_range(self, counts: Mapping[str, int]) -> dict[str, str]:
        """``{joint: reason}`` of the joints whose counts lie outside the calibrated range."""
        out = {}
        for joint, c in counts.items():
            m = self.calibration[joint]
            if not m.range_min <= c <= m.range_max:
                out[joint] = f"{joint} at {c} counts, outside its calibrated range [{m.range_min}, {m.range_max}]"
        return out

    def limits(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(lower, upper) (6,) rad reachable within the calibrated ranges."""
        return self.converter.limits()

    # -- internals ----------------------------------------------------------------------------------
    def _require_connected(self) -> None:
        if not self.is_connected:
            raise NotConnectedError(f"{type(self).__name__} on {self.config.bus.port} is not connected")

    def _configure_torque(self) -> None:
        if self.config.torque_on_connect:
            self.set_torque(True)
        else:
            self.bus.set_torque(False, self.ids)

    def _sync_calibration(self) -> None:
        """Write homing offset and position limits where the servo's EEPROM differs from the file."""
        stale = []
        for name, sid in zip(JOINT_NAMES, self.ids, strict=True):
            m = self.calibration[name]
            current = (
                self.bus.read(sid, p.HOMING_OFFSET, check_faults=False),
                self.bus.read(sid, p.MIN_POSITION_LIMIT, check_faults=False),
                self.bus.read(sid, p.MAX_POSITION_LIMIT, check_faults=False),
            )
            if current != (m.homing_offset, m.range_min, m.range_max):
                stale.append((sid, m))
        if not stale:
            return
        self.bus.set_torque(False, [sid for sid, _ in stale])
        for sid, m in stale:
            self.bus.write(sid, p.HOMING_OFFSET, m.homing_offset, check_faults=False)
            self.bus.write(sid, p.MIN_POSITION_LIMIT, m.range_min, check_faults=False)
            self.bus.write(sid, p.MAX_POSITION_LIMIT, m.range_max, check_faults=False)


class SO101Leader(SO101Arm):
    """SO-101 leader arm: same bus and calibration, torque always off, read only."""

    leader = True

    def __init__(
        self,
        config: ArmConfig,
        calibration: ArmCalibration,
        *,
        ranges: JointRanges | None = None,
        transport: PacketTransport | None = None,
    ) -> None:
        leader_config = ArmConfig(
            bus=config.bus,
            torque_on_connect=False,
            disable_torque_on_disconnect=False,
            sync_calibration=config.sync_calibration,
            signs=config.signs,
            offsets_rad=config.offsets_rad,
            max_torque_nm=config.max_torque_nm,
        )
        super().__init__(leader_config, calibration, ranges=ranges, transport=transport)

    def write(self, positions: npt.ArrayLike) -> npt.NDArray[np.int64]:
        raise SafetyError("the leader arm is read-only (torque off); write to the follower instead")

    def set_torque(self, enabled: bool) -> None:
        if enabled:
            raise SafetyError("the leader arm is moved by hand; its torque stays off")
        super().set_torque(False)
