"""The twin with given (hidden) dynamics as the physics behind the Feetech emulator: a "real arm" to record.

:class:`TwinPlant` implements the emulator's :class:`~.emulator.ServoPlant` with an
:class:`~so101_core.sysid.arm_sim.ArmPlant`: raw encoder counts ↔ joint angles through the arm's *true*
calibration (where its zero really is, which a stored calibration file may disagree with), Present_Load from
the actuator force (``max_torque_nm`` = 100 %). A test or benchmark that hands it perturbed dynamics gets an
arm whose parameters the identification does not know, reached through the real driver and bus.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig, load_sim_config
from so101_core.sim.dynamics import ArmDynamics
from so101_core.sysid.arm_sim import ArmPlant

from ..calibration import ArmCalibration, ArmConverter


class TwinPlant:
    """Six servos driving the twin arm with ``dynamics``.

    Args:
        dynamics: the arm's dynamics (hidden from whoever identifies it).
        calibration: the arm's true calibration (servo ids, where each joint's zero lies in raw counts).
        max_torque_nm: torque at Present_Load 100 %, N·m (robot.yaml ``robot.follower.max_torque_nm``).
        q0: (6,) starting pose, rad (default: every joint at 0).
        config: sim.yaml (default: the config directory's).
    """

    def __init__(
        self,
        dynamics: ArmDynamics,
        calibration: ArmCalibration,
        *,
        max_torque_nm: float = 3.35,
        q0: npt.ArrayLike | None = None,
        config: SimConfig | None = None,
    ) -> None:
        self.converter = ArmConverter.build(calibration, twin_ranges())
        self.index = {sid: j for j, sid in enumerate(self.converter.ids)}
        self.max_torque_nm = max_torque_nm
        start = np.zeros(len(JOINT_NAMES)) if q0 is None else np.asarray(q0, dtype=np.float64)
        self.arm = ArmPlant(config or load_sim_config(), dynamics, start)
        self._offsets = np.array([c.motor.homing_offset for c in self.converter.joints], dtype=np.float64)

    def _joint(self, servo_id: int) -> int:
        return self.index[servo_id]

    def advance(self, now: float) -> None:
        self.arm.advance(now)

    def set_goal(self, servo_id: int, raw_goal: float, now: float) -> None:
        j = self._joint(servo_id)
        conv = self.converter.joints[j]
        self.arm.command(now, j, conv.linear_radians(raw_goal - self._offsets[j]))

    def set_torque(self, servo_id: int, enabled: bool, limit: float, now: float) -> None:
        self.arm.advance(now)
        self.arm.set_torque(self._joint(servo_id), enabled, limit)

    def place(self, servo_id: int, raw: float) -> None:
        j = self._joint(servo_id)
        self.arm.place(j, self.converter.joints[j].linear_radians(raw - self._offsets[j]))

    def reading(self, servo_id: int) -> tuple[float, float, float]:
        j = self._joint(servo_id)
        conv = self.converter.joints[j]
        q, qd, force = self.arm.reading(j)
        raw = conv.linear_counts(q) + self._offsets[j]
        return raw, qd / conv.rad_per_count, force / conv.torque_per_load(self.max_torque_nm)

    def positions(self) -> np.ndarray:
        """(6,) the true joint angles now, rad."""
        return np.array([self.arm.reading(j)[0] for j in range(len(JOINT_NAMES))])
