"""Exceptions of the hardware package: one base, specific subclasses that carry the servo id."""

from __future__ import annotations

from enum import IntFlag

from so101_core.config.errors import ConfigError as BaseConfigError


class ServoFault(IntFlag):
    """Feetech STS error bits, as in the status-packet error byte and the Status register (65)."""

    NONE = 0
    VOLTAGE = 1 << 0
    ANGLE = 1 << 1
    OVERHEAT = 1 << 2
    OVERCURRENT = 1 << 3
    OVERLOAD = 1 << 5

    def describe(self) -> str:
        """Comma-separated names of the set bits, or ``"none"``."""
        names = [f.name.lower() for f in ServoFault if f and f in self and f.name]
        unknown = int(self) & ~sum(int(f) for f in ServoFault)
        if unknown:
            names.append(f"unknown(0x{unknown:02x})")
        return ", ".join(names) if names else "none"


class HardwareError(Exception):
    """Base of every error raised by ``so101_hardware``."""


class NotConnectedError(HardwareError):
    """An operation needs an open bus / connected robot."""


class PortError(HardwareError):
    """The serial port could not be opened, or it failed (unplugged adapter, closed pty)."""


class BusError(HardwareError):
    """A bus transaction failed; ``servo_id`` names the servo (``None`` for broadcasts)."""

    def __init__(self, message: str, *, servo_id: int | None, operation: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.servo_id = servo_id
        self.operation = operation
        self.attempts = attempts


class NoAnswerError(BusError):
    """The servo did not answer within the packet timeout, on every attempt."""


class ChecksumError(BusError):
    """The servo's reply was corrupt (bad checksum or truncated), on every attempt."""


class ServoError(BusError):
    """The servo answered with error bits set (overload, overheat, voltage, ...)."""

    def __init__(self, message: str, *, servo_id: int, operation: str, faults: ServoFault, attempts: int = 1) -> None:
        super().__init__(message, servo_id=servo_id, operation=operation, attempts=attempts)
        self.faults = faults


class ModelMismatchError(BusError):
    """A servo answered a ping with an unexpected model number."""


class CalibrationError(HardwareError, ValueError):
    """A calibration file or value is invalid; ``field`` names it (``"elbow_flex.range_max"``)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConfigError(HardwareError, BaseConfigError):
    """A hardware configuration value is invalid (the project's :class:`so101_core.config.ConfigError`, within
    the hardware hierarchy, with its ``(field, message, file=)``): ``field`` names it (``"robot.bus.baudrate"``)."""

    def __init__(self, field: str, message: str, *, file: str | None = None) -> None:
        BaseConfigError.__init__(self, field, message, file=file)


class SafetyError(HardwareError):
    """A command was refused by a safety check (e-stop engaged, write on a read-only leader arm, ...)."""
