"""Is a stored LeRobot calibration still true of the arm? (``so101 calibrate --check``, the driver's startup WARN)

A calibration says where each joint's range lies in Present_Position counts (``range_min``/``range_max``, with
the servo's ``homing_offset``). It goes stale when a horn slips a tooth, a servo is swapped, or someone
recalibrates with another file. Three things the arm reports now are compared with the file:

1. **EEPROM**: each servo's Homing_Offset and Min/Max_Position_Limit against the file (what the driver would
   rewrite with ``sync_calibration``: a difference means the servo and the file disagree about the zero).
2. **Where the joints read**: a joint at rest reading outside its calibrated range by more than a margin
   (:func:`range_excursions`; the driver also reports it on ``/diagnostics`` at startup).
3. **Range ends under a torque limit** (``probe``, opt-in, moves the arm): each joint in turn is driven slowly
   toward each calibrated end with its Torque_Limit lowered, one joint at a time, the others holding. A
   mechanical stop met well inside the calibrated range (the joint stalls short of the end), or the
   gripper's closed stop not reading ``range_min``, means the range or the zero moved. ``wrist_roll`` turns
   fully and has no stop; it is not probed.

:func:`check_calibration` runs them on a connected bus and returns a :class:`CalibrationCheck` whose
``recalibrate`` says what to do. Units: counts and rad as named; times s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from so101_core.robot_spec import GRIPPER, JOINT_NAMES

from .calibration import ArmCalibration, ArmConverter
from .feetech import protocol as p
from .feetech.bus import FeetechBus

FULL_TURN = ("wrist_roll",)


def range_excursions(calibration: ArmCalibration, counts: Mapping[str, float]) -> dict[str, int]:
    """``{joint: counts outside its calibrated range}`` (negative below ``range_min``, positive above
    ``range_max``) of the joints in ``counts`` (Present_Position) that read outside it."""
    out: dict[str, int] = {}
    for joint, value in counts.items():
        m = calibration[joint]
        if value < m.range_min:
            out[joint] = round(value - m.range_min)
        elif value > m.range_max:
            out[joint] = round(value - m.range_max)
    return out


def drifted_joints(
    converter: ArmConverter, counts: npt.ArrayLike, margin_rad: float, valid: npt.ArrayLike | None = None
) -> dict[str, float]:
    """``{joint: rad outside its calibrated range}`` for the joints read further out than ``margin_rad``
    (counts (6,) Present_Position, canonical order; ``valid`` (6,) masks joints not read)."""
    cal = ArmCalibration({j.name: j.motor for j in converter.joints})
    values = np.asarray(counts, dtype=np.float64)
    ok = np.ones(len(JOINT_NAMES), dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    outside = range_excursions(cal, {n: float(values[i]) for i, n in enumerate(JOINT_NAMES) if ok[i]})
    out = {}
    for joint, excess in outside.items():
        rad = excess * abs(converter.joints[JOINT_NAMES.index(joint)].rad_per_count)
        if abs(rad) > margin_rad:
            out[joint] = float(np.copysign(abs(rad), excess))
    return out


def describe_drift(drift: Mapping[str, float]) -> str:
    """One sentence naming each drifted joint and by how much (from :func:`drifted_joints`)."""
    parts = [f"{j} {abs(r):.3f} rad {'below' if r < 0 else 'above'}" for j, r in drift.items()]
    return ", ".join(parts) + " its calibrated range"


@dataclass(frozen=True)
class Finding:
    """One observation of the check: ``joint``, ``what`` was compared, ``ok``, and a sentence ``detail``."""

    joint: str
    what: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class CalibrationCheck:
    """The findings; ``recalibrate`` is true when any of them says the file no longer fits the arm."""

    findings: tuple[Finding, ...]
    probed: bool

    @property
    def recalibrate(self) -> bool:
        return any(not f.ok for f in self.findings)

    def verdict(self) -> str:
        if not self.recalibrate:
            how = " (range ends probed under a torque limit)" if self.probed else " (not probed: add --probe)"
            return "the calibration matches the arm" + how
        bad = sorted({f.joint for f in self.findings if not f.ok}, key=JOINT_NAMES.index)
        return f"recalibrate: {', '.join(bad)} no longer match the calibration file (so101 calibrate --id ...)"


@dataclass(frozen=True)
class ProbeSettings:
    """How range ends are probed: ``torque_limit`` (fraction of the servo's maximum), ``speed_counts_s`` of
    the moving goal, ``stall_counts`` (the goal leads the joint by this much while the joint has stopped
    moving for ``stall_s``), ``tolerance_counts`` (a stop this close to the calibrated end is that end)."""

    torque_limit: float = 0.5
    speed_counts_s: float = 400.0
    stall_counts: int = 25
    stall_s: float = 0.3
    tolerance_counts: int = 40
    period_s: float = 0.02
    joints: tuple[str, ...] = field(default=tuple(n for n in JOINT_NAMES if n not in FULL_TURN))


def check_eeprom(bus: FeetechBus, calibration: ArmCalibration) -> list[Finding]:
    """Homing_Offset and the position limits of each servo against the file."""
    out = []
    for joint in JOINT_NAMES:
        m = calibration[joint]
        regs = {
            "homing_offset": bus.read(m.id, p.HOMING_OFFSET, check_faults=False),
            "range_min": bus.read(m.id, p.MIN_POSITION_LIMIT, check_faults=False),
            "range_max": bus.read(m.id, p.MAX_POSITION_LIMIT, check_faults=False),
        }
        diff = {k: v for k, v in regs.items() if v != getattr(m, k)}
        detail = (
            "; ".join(f"{k}: file {getattr(m, k)}, servo {v}" for k, v in diff.items())
            if diff
            else "homing offset and limits as in the file"
        )
        out.append(Finding(joint, "eeprom", not diff, detail))
    return out


def check_positions(bus: FeetechBus, calibration: ArmCalibration, margin_counts: int) -> list[Finding]:
    """Each joint's present reading against its calibrated range (``margin_counts`` allowed outside)."""
    ids = [calibration[j].id for j in JOINT_NAMES]
    present = bus.sync_read(p.PRESENT_POSITION, ids)
    counts = {j: float(present[calibration[j].id]) for j in JOINT_NAMES}
    outside = range_excursions(calibration, counts)
    out = []
    for joint in JOINT_NAMES:
        excess = outside.get(joint, 0)
        m = calibration[joint]
        ok = abs(excess) <= margin_counts
        where = f"reads {int(counts[joint])} in [{m.range_min}, {m.range_max}]"
        if excess:
            where = f"reads {int(counts[joint])}, {abs(excess)} counts {'below' if excess < 0 else 'above'} " \
                    f"[{m.range_min}, {m.range_max}]"  # fmt: skip
        out.append(Finding(joint, "position", ok, where))
    return out


def probe_end(
    bus: FeetechBus,
    servo_id: int,
    start: int,
    end: int,
    settings: ProbeSettings,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, bool]:
    """Move servo ``servo_id``'s goal from ``start`` toward ``end`` (counts) at the probe speed; returns
    (where the joint stopped, whether it stalled before ``end``). Its goal is left at where it stopped; a joint
    still moving after the ramp's time plus 5 s counts as stalled where it is."""
    direction = 1 if end >= start else -1
    goal = float(start)
    t = clock()
    deadline = t + abs(end - start) / settings.speed_counts_s + 5.0
    last_move_t, last_pos = t, int(bus.read(servo_id, p.PRESENT_POSITION))
    while True:
        sleep(settings.period_s)
        now = clock()
        goal = min(goal + settings.speed_counts_s * (now - t), end) if direction > 0 else max(
            goal - settings.speed_counts_s * (now - t), end)  # fmt: skip
        t = now
        bus.write(servo_id, p.GOAL_POSITION, round(goal))
        pos = int(bus.read(servo_id, p.PRESENT_POSITION))
        if abs(pos - last_pos) > 2:
            last_move_t, last_pos = now, pos
        lead = (goal - pos) * direction
        if lead > settings.stall_counts and now - last_move_t > settings.stall_s:
            bus.write(servo_id, p.GOAL_POSITION, pos)
            return pos, True
        if goal == end and abs(end - pos) <= settings.stall_counts and now - last_move_t > settings.stall_s:
            return pos, False
        if now > deadline:
            bus.write(servo_id, p.GOAL_POSITION, pos)
            return pos, True


def probe_ranges(bus: FeetechBus, calibration: ArmCalibration, settings: ProbeSettings) -> list[Finding]:
    """Drive each of ``settings.joints`` toward both calibrated ends (the gripper: toward closed) under the
    torque limit; a stall more than ``tolerance_counts`` inside an end is a finding. Each joint returns to
    where it started, its torque limit restored."""
    out = []
    for joint in settings.joints:
        m = calibration[joint]
        sid = m.id
        start = int(bus.read(sid, p.PRESENT_POSITION))
        limit = int(bus.read(sid, p.TORQUE_LIMIT, check_faults=False))
        ends: Sequence[tuple[str, int]] = (
            (("closed", m.range_min),) if joint == GRIPPER else (("min", m.range_min), ("max", m.range_max))
        )
        try:
            bus.write(sid, p.TORQUE_LIMIT, round(limit * settings.torque_limit), check_faults=False)
            for label, end in ends:
                here = int(bus.read(sid, p.PRESENT_POSITION))
                stop, stalled = probe_end(bus, sid, here, end, settings)
                inside = abs(end - stop)
                ok = not stalled or inside <= settings.tolerance_counts
                if stalled:
                    detail = f"{label} end: a stop at {stop}, {inside} counts inside the calibrated {end}"
                else:
                    detail = f"{label} end: reached {stop} (calibrated {end}) without meeting a stop"
                out.append(Finding(joint, f"probe {label}", ok, detail))
            here = int(bus.read(sid, p.PRESENT_POSITION))
            probe_end(bus, sid, here, start, settings)
        finally:
            bus.write(sid, p.TORQUE_LIMIT, limit, check_faults=False)
    return out


def check_calibration(
    bus: FeetechBus,
    calibration: ArmCalibration,
    *,
    margin_counts: int = 33,
    probe: bool = False,
    settings: ProbeSettings | None = None,
) -> CalibrationCheck:
    """EEPROM and readings against ``calibration``; with ``probe`` also the range ends: every servo then holds
    torque where it is (goal = present first) during the probe and gets back the torque state it had.
    ``margin_counts``: readings allowed outside a range (33 ≈ 0.05 rad)."""
    findings = check_eeprom(bus, calibration) + check_positions(bus, calibration, margin_counts)
    if probe:
        ids = list(calibration.ids.values())
        torque = {sid: bus.read(sid, p.TORQUE_ENABLE, check_faults=False) for sid in ids}
        try:
            bus.write_goal_positions(bus.sync_read(p.PRESENT_POSITION, ids))
            bus.set_torque(True, ids)
            findings += probe_ranges(bus, calibration, settings or ProbeSettings())
        finally:
            off = [sid for sid, on in torque.items() if not on]
            if off:
                bus.set_torque(False, off)
    return CalibrationCheck(tuple(findings), probe)
