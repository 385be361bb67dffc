"""The calibration procedure on a live bus (LeRobot's SO-101 procedure; the pure steps are in
``calibration_procedure``): torque off, homing offsets and position limits reset, homing offsets from the
middle pose, ranges while the user moves each joint, then the result written to the servos (Homing_Offset,
Min_Position_Limit, Max_Position_Limit, as LeRobot's ``write_calibration`` does) and returned as an
:class:`ArmCalibration` to save in LeRobot's JSON format.

The caller supplies the user interaction as two callables, so a terminal prompt, a GUI or a test can drive it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from .calibration import ArmCalibration
from .calibration_procedure import RangeRecorder, build_calibration, half_turn_homing_offsets
from .feetech import protocol as p
from .feetech.bus import FeetechBus

POLL_S = 0.02


def calibrate_arm(
    bus: FeetechBus,
    ids: Mapping[str, int],
    *,
    wait_for_middle_pose: Callable[[], None],
    range_done: Callable[[], bool],
    on_positions: Callable[[dict[str, int]], None] | None = None,
    poll_s: float = POLL_S,
) -> ArmCalibration:
    """Run the procedure on a connected ``bus``; ``ids`` maps joint names to servo ids.

    ``wait_for_middle_pose`` returns once every joint is in the middle of its range; positions are then polled
    every ``poll_s`` s (and passed to ``on_positions``) until ``range_done()`` is true.
    """
    by_id = {servo_id: name for name, servo_id in ids.items()}
    bus.set_torque(False, list(by_id))
    for servo_id in by_id:  # old limits would clip the ranges recorded below
        bus.write(servo_id, p.HOMING_OFFSET, 0, check_faults=False)
        bus.write(servo_id, p.MIN_POSITION_LIMIT, 0, check_faults=False)
        bus.write(servo_id, p.MAX_POSITION_LIMIT, p.MAX_POSITION, check_faults=False)
    wait_for_middle_pose()
    present = bus.sync_read(p.PRESENT_POSITION, list(by_id))
    offsets = half_turn_homing_offsets({by_id[i]: v for i, v in present.items()})
    for name, offset in offsets.items():
        bus.write(ids[name], p.HOMING_OFFSET, offset, check_faults=False)
    recorder = RangeRecorder()
    while True:
        positions = {by_id[i]: v for i, v in bus.sync_read(p.PRESENT_POSITION, list(by_id)).items()}
        recorder.update(positions)
        if on_positions is not None:
            on_positions(positions)
        if range_done():
            break
        time.sleep(poll_s)
    mins, maxes = recorder.result()
    calibration = build_calibration(ids, offsets, mins, maxes)
    for name, motor in calibration.motors.items():
        bus.write(ids[name], p.MIN_POSITION_LIMIT, motor.range_min, check_faults=False)
        bus.write(ids[name], p.MAX_POSITION_LIMIT, motor.range_max, check_faults=False)
    return calibration
