"""Real-arm hardware layer (no ROS): Feetech bus, LeRobot calibration, SO-101 arm, safety helpers."""

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
from .safety import CommandFilter, EStop, JointLimits, Watchdog, clamp_to_limits, limit_step

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
    "CommandFilter",
    "ConfigError",
    "EStop",
    "HardwareError",
    "JointLimits",
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
    "Watchdog",
    "clamp_to_limits",
    "find_calibration",
    "limit_step",
    "load_calibration",
    "save_calibration",
]
