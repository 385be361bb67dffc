"""Real-arm hardware layer (no ROS): Feetech bus, LeRobot calibration, SO-101 arm.

The control safety rules shared with the twin live in :mod:`so101_core.control.safety`."""

from so101_core.robot_spec import GRIPPER_INDEX, JOINT_NAMES

from .calibration import (
    ArmCalibration,
    ArmConverter,
    MotorCalibration,
    find_calibration,
    load_calibration,
    save_calibration,
)
from .errors import (
    BusError,
    CalibrationError,
    ChecksumError,
    ConfigError,
    HardwareError,
    ModelMismatchError,
    NoAnswerError,
    NotConnectedError,
    PortError,
    SafetyError,
    ServoError,
    ServoFault,
)
from .robot import ArmConfig, ArmState, Robot, ServoHealth, SO101Arm, SO101Leader

__all__ = [
    "GRIPPER_INDEX",
    "JOINT_NAMES",
    "ArmCalibration",
    "ArmConfig",
    "ArmConverter",
    "ArmState",
    "BusError",
    "CalibrationError",
    "ChecksumError",
    "ConfigError",
    "HardwareError",
    "ModelMismatchError",
    "MotorCalibration",
    "NoAnswerError",
    "NotConnectedError",
    "PortError",
    "Robot",
    "SO101Arm",
    "SO101Leader",
    "SafetyError",
    "ServoError",
    "ServoFault",
    "ServoHealth",
    "find_calibration",
    "load_calibration",
    "save_calibration",
]
