"""Feetech SCServo protocol 0 (STS/SMS series) facts: framing, instructions, the STS3215 control table.

Packets: ``FF FF ID LEN INSTR PARAMS... CHK`` (instruction) and ``FF FF ID LEN ERR PARAMS... CHK`` (status),
``LEN = len(PARAMS) + 2``, ``CHK = ~(ID + LEN + INSTR/ERR + sum(PARAMS)) & 0xFF``. Multi-byte values are
little-endian (protocol 0). Addresses were checked against the Feetech STS/SMS memory table as transcribed
in LeRobot's ``motors/feetech/tables.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

HEADER: Final = b"\xff\xff"
BROADCAST_ID: Final = 0xFE
MAX_ID: Final = 0xFC

INST_PING: Final = 0x01
INST_READ: Final = 0x02
INST_WRITE: Final = 0x03
INST_REG_WRITE: Final = 0x04
INST_ACTION: Final = 0x05
INST_SYNC_READ: Final = 0x82
INST_SYNC_WRITE: Final = 0x83

STS3215_MODEL_NUMBER: Final = 777
RESOLUTION: Final = 4096  # encoder counts per revolution
MAX_POSITION: Final = RESOLUTION - 1

#: STS/SMS Baud_Rate register value -> bit/s.
BAUD_RATE_CODES: Final[dict[int, int]] = {
    0: 1_000_000,
    1: 500_000,
    2: 250_000,
    3: 128_000,
    4: 115_200,
    5: 76_800,
    6: 57_600,
    7: 38_400,
}
SUPPORTED_BAUDRATES: Final = frozenset(BAUD_RATE_CODES.values())

VOLTAGE_UNIT_V: Final = 0.1  # Present_Voltage LSB
CURRENT_UNIT_MA: Final = 6.5  # Present_Current LSB
LOAD_UNIT: Final = 0.001  # Present_Load LSB, fraction of maximum torque


@dataclass(frozen=True)
class Register:
    """One control-table entry: ``address`` and ``size`` in bytes; ``sign_bit`` for sign-magnitude values."""

    name: str
    address: int
    size: int
    sign_bit: int | None = None
    read_only: bool = False

    @property
    def end(self) -> int:
        """One past the last address of the register."""
        return self.address + self.size

    @property
    def eeprom(self) -> bool:
        """True for the EEPROM area (addresses below 40), persisted by the servo."""
        return self.address < 40


MODEL_NUMBER = Register("Model_Number", 3, 2, read_only=True)
ID = Register("ID", 5, 1)
BAUD_RATE = Register("Baud_Rate", 6, 1)
RETURN_DELAY_TIME = Register("Return_Delay_Time", 7, 1)
RESPONSE_STATUS_LEVEL = Register("Response_Status_Level", 8, 1)
MIN_POSITION_LIMIT = Register("Min_Position_Limit", 9, 2)
MAX_POSITION_LIMIT = Register("Max_Position_Limit", 11, 2)
MAX_TEMPERATURE_LIMIT = Register("Max_Temperature_Limit", 13, 1)
MAX_VOLTAGE_LIMIT = Register("Max_Voltage_Limit", 14, 1)
MIN_VOLTAGE_LIMIT = Register("Min_Voltage_Limit", 15, 1)
MAX_TORQUE_LIMIT = Register("Max_Torque_Limit", 16, 2)
P_COEFFICIENT = Register("P_Coefficient", 21, 1)
D_COEFFICIENT = Register("D_Coefficient", 22, 1)
I_COEFFICIENT = Register("I_Coefficient", 23, 1)
PROTECTION_CURRENT = Register("Protection_Current", 28, 2)
HOMING_OFFSET = Register("Homing_Offset", 31, 2, sign_bit=11)
OPERATING_MODE = Register("Operating_Mode", 33, 1)
OVERLOAD_TORQUE = Register("Overload_Torque", 36, 1)
TORQUE_ENABLE = Register("Torque_Enable", 40, 1)
ACCELERATION = Register("Acceleration", 41, 1)
GOAL_POSITION = Register("Goal_Position", 42, 2)
GOAL_TIME = Register("Goal_Time", 44, 2)
GOAL_SPEED = Register("Goal_Speed", 46, 2, sign_bit=15)
TORQUE_LIMIT = Register("Torque_Limit", 48, 2)
LOCK = Register("Lock", 55, 1)
PRESENT_POSITION = Register("Present_Position", 56, 2, read_only=True)
PRESENT_SPEED = Register("Present_Speed", 58, 2, sign_bit=15, read_only=True)
PRESENT_LOAD = Register("Present_Load", 60, 2, sign_bit=10, read_only=True)
PRESENT_VOLTAGE = Register("Present_Voltage", 62, 1, read_only=True)
PRESENT_TEMPERATURE = Register("Present_Temperature", 63, 1, read_only=True)
STATUS = Register("Status", 65, 1, read_only=True)
MOVING = Register("Moving", 66, 1, read_only=True)
PRESENT_CURRENT = Register("Present_Current", 69, 2, read_only=True)

CONTROL_TABLE: Final[dict[str, Register]] = {
    r.name: r
    for r in (
        MODEL_NUMBER,
        ID,
        BAUD_RATE,
        RETURN_DELAY_TIME,
        RESPONSE_STATUS_LEVEL,
        MIN_POSITION_LIMIT,
        MAX_POSITION_LIMIT,
        MAX_TEMPERATURE_LIMIT,
        MAX_VOLTAGE_LIMIT,
        MIN_VOLTAGE_LIMIT,
        MAX_TORQUE_LIMIT,
        P_COEFFICIENT,
        D_COEFFICIENT,
        I_COEFFICIENT,
        PROTECTION_CURRENT,
        HOMING_OFFSET,
        OPERATING_MODE,
        OVERLOAD_TORQUE,
        TORQUE_ENABLE,
        ACCELERATION,
        GOAL_POSITION,
        GOAL_TIME,
        GOAL_SPEED,
        TORQUE_LIMIT,
        LOCK,
        PRESENT_POSITION,
        PRESENT_SPEED,
        PRESENT_LOAD,
        PRESENT_VOLTAGE,
        PRESENT_TEMPERATURE,
        STATUS,
        MOVING,
        PRESENT_CURRENT,
    )
}

#: Contiguous block read once per control cycle: Present_Position (56) .. Present_Current (69..70).
TELEMETRY_START: Final = PRESENT_POSITION.address
TELEMETRY_LENGTH: Final = PRESENT_CURRENT.end - PRESENT_POSITION.address
#: The driver's per-cycle read: Torque_Enable .. Present_Current (torque truth, goal, telemetry), one sync read.
STATE_START: Final = TORQUE_ENABLE.address
STATE_LENGTH: Final = PRESENT_CURRENT.end - TORQUE_ENABLE.address


def encode_sign_magnitude(value: int, sign_bit: int) -> int:
    """Encode a signed int as sign-magnitude: magnitude in bits ``0..sign_bit-1``, sign in ``sign_bit``."""
    magnitude = abs(value)
    limit = (1 << sign_bit) - 1
    if magnitude > limit:
        raise ValueError(f"magnitude {magnitude} does not fit in {sign_bit} bits (max {limit})")
    return magnitude | (1 << sign_bit) if value < 0 else magnitude


def decode_sign_magnitude(raw: int, sign_bit: int) -> int:
    """Inverse of :func:`encode_sign_magnitude`; bits above ``sign_bit`` are ignored."""
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw & (1 << sign_bit) else magnitude


def encode_value(register: Register, value: int) -> bytes:
    """Register value -> little-endian bytes (sign-magnitude applied where the register uses it)."""
    raw = encode_sign_magnitude(value, register.sign_bit) if register.sign_bit is not None else value
    if not 0 <= raw < 1 << (8 * register.size):
        raise ValueError(f"{register.name}: value {value} does not fit in {register.size} byte(s)")
    return raw.to_bytes(register.size, "little")


def decode_value(register: Register, data: bytes) -> int:
    """Little-endian bytes -> register value (sign-magnitude decoded where the register uses it)."""
    if len(data) != register.size:
        raise ValueError(f"{register.name}: expected {register.size} byte(s), got {len(data)}")
    raw = int.from_bytes(data, "little")
    return decode_sign_magnitude(raw, register.sign_bit) if register.sign_bit is not None else raw


def checksum(body: bytes) -> int:
    """Protocol-0 checksum of the bytes between the header and the checksum (ID..last param)."""
    return ~sum(body) & 0xFF


def build_packet(servo_id: int, code: int, params: bytes = b"") -> bytes:
    """Frame an instruction (``code`` = instruction) or status packet (``code`` = error byte)."""
    body = bytes((servo_id, len(params) + 2, code)) + params
    return HEADER + body + bytes((checksum(body),))
