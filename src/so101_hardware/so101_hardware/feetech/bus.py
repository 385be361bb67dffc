"""Feetech STS bus: typed register access, sync read/write, retries and specific exceptions.

Every transaction is retried ``BusConfig.retries`` extra times on a communication failure (no answer,
corrupt reply); after the last attempt the bus raises :class:`NoAnswerError` or :class:`ChecksumError`
carrying the servo id. A reply with error bits set raises :class:`ServoError` (with the decoded
:class:`ServoFault` flags) unless ``check_faults=False``. Sync reads cannot see the status byte (the SDK
drops it), so health is read from the Status register, which :meth:`FeetechBus.read_telemetry` includes.
All methods are thread-safe (one lock per bus: the bus is half-duplex).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TypeVar

from ..errors import (
    BusError,
    ChecksumError,
    ConfigError,
    ModelMismatchError,
    NoAnswerError,
    NotConnectedError,
    ServoError,
    ServoFault,
)
from . import protocol as p
from .transport import Comm, PacketTransport, ScservoTransport

T = TypeVar("T")


@dataclass(frozen=True)
class BusConfig:
    """Serial bus parameters.

    Attributes:
        port: serial device, e.g. ``/dev/ttyACM0`` (or the emulator's ``/dev/pts/N``).
        baudrate: bit/s; one of the STS rates (default 1 Mbit/s).
        timeout_ms: minimum packet timeout per transaction, ms.
        retries: extra attempts after a failed transaction (0 = try once).
    """

    port: str
    baudrate: int = 1_000_000
    timeout_ms: float = 20.0
    retries: int = 2

    def __post_init__(self) -> None:
        if not self.port:
            raise ConfigError("bus.port", "must be a non-empty device path")
        if self.baudrate not in p.SUPPORTED_BAUDRATES:
            raise ConfigError("bus.baudrate", f"{self.baudrate} is not an STS rate {sorted(p.SUPPORTED_BAUDRATES)}")
        if not 0 < self.timeout_ms <= 10_000:
            raise ConfigError("bus.timeout_ms", f"must be in (0, 10000], got {self.timeout_ms}")
        if not 0 <= self.retries <= 20:
            raise ConfigError("bus.retries", f"must be in [0, 20], got {self.retries}")


@dataclass(frozen=True)
class ServoTelemetry:
    """One servo's state from one sync read of registers 56..70.

    Attributes:
        position: Present_Position, counts (0..4095).
        speed: Present_Speed, counts/s (signed).
        load: Present_Load, fraction of maximum torque (signed, -1..1).
        voltage_v: supply voltage, V.
        temperature_c: internal temperature, °C.
        faults: Status register error bits.
        moving: Moving flag.
        current_ma: Present_Current, mA.
        torque_enabled: Torque_Enable read back (``None`` when the read did not include it).
        goal_position: Goal_Position read back, counts (``None`` when not included).
    """

    position: int
    speed: int
    load: float
    voltage_v: float
    temperature_c: int
    faults: ServoFault
    moving: bool
    current_ma: float
    torque_enabled: bool | None = None
    goal_position: int | None = None


def _slice(block: bytes, register: p.Register, start: int = p.TELEMETRY_START) -> int:
    offset = register.address - start
    return p.decode_value(register, block[offset : offset + register.size])


def decode_telemetry(block: bytes) -> ServoTelemetry:
    """Decode the 15-byte block read at address 56 (:data:`protocol.TELEMETRY_LENGTH`)."""
    return ServoTelemetry(
        position=_slice(block, p.PRESENT_POSITION),
        speed=_slice(block, p.PRESENT_SPEED),
        load=_slice(block, p.PRESENT_LOAD) * p.LOAD_UNIT,
        voltage_v=_slice(block, p.PRESENT_VOLTAGE) * p.VOLTAGE_UNIT_V,
        temperature_c=_slice(block, p.PRESENT_TEMPERATURE),
        faults=ServoFault(_slice(block, p.STATUS)),
        moving=bool(_slice(block, p.MOVING)),
        current_ma=_slice(block, p.PRESENT_CURRENT) * p.CURRENT_UNIT_MA,
    )


def decode_state(block: bytes) -> ServoTelemetry:
    """Decode the 31-byte block read at address 40 (:data:`protocol.STATE_LENGTH`): telemetry plus
    Torque_Enable and Goal_Position."""
    tail = p.TELEMETRY_START - p.STATE_START
    return replace(
        decode_telemetry(block[tail:]),
        torque_enabled=bool(_slice(block, p.TORQUE_ENABLE, p.STATE_START)),
        goal_position=_slice(block, p.GOAL_POSITION, p.STATE_START),
    )


class FeetechBus:
    """A chain of Feetech STS servos on one serial port.

    Args:
        config: port, baud rate, timeout and retry count.
        ids: servo ids expected on the bus (used by :meth:`connect`'s handshake and as default targets).
        transport: packet client; defaults to :class:`ScservoTransport` (official SDK).
    """

    def __init__(self, config: BusConfig, ids: Iterable[int], transport: PacketTransport | None = None) -> None:
        self.config = config
        self.ids: tuple[int, ...] = tuple(ids)
        if len(set(self.ids)) != len(self.ids):
            raise ConfigError("ids", f"servo ids must be unique, got {self.ids}")
        for sid in self.ids:
            if not 0 <= sid <= p.MAX_ID:
                raise ConfigError("ids", f"servo id {sid} out of range 0..{p.MAX_ID}")
        self._transport: PacketTransport = transport if transport is not None else ScservoTransport()
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ connection
    @property
    def is_connected(self) -> bool:
        """True while the port is open."""
        return self._transport.is_open

    def connect(self, handshake: bool = True) -> None:
        """Open the port; with ``handshake``, ping every expected id and check it is an STS3215.

        Raises:
            PortError: the port cannot be opened.
            NoAnswerError / ModelMismatchError: a servo is missing or is not an STS3215 (port closed again).
        """
        with self._lock:
            if self.is_connected:
                return
            self._transport.open(self.config.port, self.config.baudrate, self.config.timeout_ms)
            if handshake:
                try:
                    for sid in self.ids:
                        model = self.ping(sid)
                        if model != p.STS3215_MODEL_NUMBER:
                            raise ModelMismatchError(
                                f"servo {sid} on {self.config.port} has model number {model}, "
                                f"expected {p.STS3215_MODEL_NUMBER} (STS3215)",
                                servo_id=sid,
                                operation="ping",
                            )
                except BaseException:
                    self._transport.close()
                    raise

    def disconnect(self, disable_torque: bool = False) -> None:
        """Close the port (optionally switching torque off first, best effort). Idempotent."""
        with self._lock:
            if not self.is_connected:
                return
            if disable_torque:
                with contextlib.suppress(BusError):
                    self.set_torque(False)
            self._transport.close()

    def __enter__(self) -> FeetechBus:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.disconnect()

    # ------------------------------------------------------------------ single-servo access
    def ping(self, servo_id: int) -> int:
        """Ping ``servo_id`` and return its model number (777 for an STS3215)."""
        model, _ = self._transact(servo_id, "ping", lambda: self._transport.ping(servo_id), check_faults=False)
        return model

    def scan(self, ids: Iterable[int] = range(p.MAX_ID + 1)) -> dict[int, int]:
        """Ping each id once (no retries): ``{id: model}`` of those that answered.

        Each silent id costs one packet timeout, so narrow ``ids`` when the bus is known.
        """
        found: dict[int, int] = {}
        with self._lock:
            self._require_connected()
            for sid in ids:
                model, comm, _ = self._transport.ping(sid)
                if comm is Comm.SUCCESS:
                    found[sid] = model
        return found

    def read(self, servo_id: int, register: p.Register, *, check_faults: bool = True) -> int:
        """Read one register of one servo, decoded (sign-magnitude applied)."""
        data, _ = self._transact(
            servo_id,
            f"read {register.name}",
            lambda: self._transport.read(servo_id, register.address, register.size),
            check_faults=check_faults,
        )
        return p.decode_value(register, data)

    def write(self, servo_id: int, register: p.Register, value: int, *, check_faults: bool = True) -> None:
        """Write one register of one servo and wait for its status reply."""
        if register.read_only:
            raise ValueError(f"register {register.name} is read-only")
        payload = p.encode_value(register, value)

        def once() -> tuple[None, Comm, int]:
            comm, error = self._transport.write(servo_id, register.address, payload)
            return None, comm, error

        self._transact(servo_id, f"write {register.name}={value}", once, check_faults=check_faults)

    # ------------------------------------------------------------------ group access
    def sync_read(self, register: p.Register, ids: Sequence[int] | None = None) -> dict[int, int]:
        """One SYNC_READ of ``register`` on ``ids`` (default: all): ``{id: value}``."""
        blocks = self.sync_read_block(register.address, register.size, ids)
        return {sid: p.decode_value(register, data) for sid, data in blocks.items()}

    def sync_read_block(self, address: int, length: int, ids: Sequence[int] | None = None) -> dict[int, bytes]:
        """One SYNC_READ of ``length`` raw bytes at ``address``: ``{id: bytes}``, in id order."""
        targets = tuple(self.ids if ids is None else ids)
        operation = f"sync read {length} bytes at {address}"
        last_comm, last_failed = Comm.TIMEOUT, targets[0] if targets else None
        with self._lock:
            self._require_connected()
            for _ in range(self.config.retries + 1):
                data, comm, failed = self._transport.sync_read(targets, address, length)
                if comm is Comm.SUCCESS:
                    return data
                last_comm, last_failed = comm, failed
        raise self._comm_error(last_comm, last_failed, operation)

    def read_telemetry(self, ids: Sequence[int] | None = None) -> dict[int, ServoTelemetry]:
        """Position, speed, load, voltage, temperature, status, moving, current per servo (one sync read)."""
        blocks = self.sync_read_block(p.TELEMETRY_START, p.TELEMETRY_LENGTH, ids)
        return {sid: decode_telemetry(block) for sid, block in blocks.items()}

    def read_state(self, ids: Sequence[int] | None = None) -> tuple[dict[int, ServoTelemetry], tuple[int, ...]]:
        """One sync read of Torque_Enable..Present_Current that tolerates silent servos.

        Returns ``({id: telemetry}`` of the servos that answered, ``silent ids)``: a servo that fails
        ``retries + 1`` times is left out and the others are read again without it.

        Raises:
            NoAnswerError: no servo answered at all (``servo_id`` None: power, cable or adapter, not one servo).
        """
        targets = list(self.ids if ids is None else ids)
        got: dict[int, bytes] = {}
        silent: list[int] = []
        fails: dict[int | None, int] = {}
        last_comm = Comm.TIMEOUT
        with self._lock:
            self._require_connected()
            pending = list(targets)
            while pending:
                data, comm, failed = self._transport.sync_read(pending, p.STATE_START, p.STATE_LENGTH)
                got.update({sid: block for sid, block in data.items() if sid in pending})
                pending = [sid for sid in pending if sid not in got]
                if comm is Comm.SUCCESS or not pending:
                    break
                last_comm = comm
                culprit = failed if failed in pending else None
                fails[culprit] = fails.get(culprit, 0) + 1
                if fails[culprit] > self.config.retries:
                    if culprit is None:
                        silent += pending
                        break
                    silent.append(culprit)
                    pending.remove(culprit)
        if not got:
            comm_error = self._comm_error(last_comm, None, f"sync read of {len(targets)} servos")
            raise NoAnswerError(
                f"no servo answered on {self.config.port} (ids {targets}): check power, cable and adapter "
                f"({comm_error})",
                servo_id=None,
                operation="sync read state",
                attempts=self.config.retries + 1,
            )
        return {sid: decode_state(got[sid]) for sid in targets if sid in got}, tuple(silent)

    def sync_write(self, register: p.Register, values: Mapping[int, int]) -> None:
        """One SYNC_WRITE of ``register`` (no replies; only transmit failures are detected)."""
        if register.read_only:
            raise ValueError(f"register {register.name} is read-only")
        payload = {sid: p.encode_value(register, int(v)) for sid, v in values.items()}
        with self._lock:
            self._require_connected()
            comm = Comm.TX_FAIL
            for _ in range(self.config.retries + 1):
                comm = self._transport.sync_write(register.address, register.size, payload)
                if comm is Comm.SUCCESS:
                    return
        raise self._comm_error(comm, None, f"sync write {register.name}")

    def write_goal_positions(self, positions: Mapping[int, int]) -> None:
        """Sync write of Goal_Position, counts (0..4095)."""
        self.sync_write(p.GOAL_POSITION, positions)

    def set_torque(self, enabled: bool, ids: Sequence[int] | None = None) -> None:
        """Switch torque on/off on each servo (acknowledged writes; faults do not stop a torque-off).

        Torque on also sets Lock=1 (EEPROM write-protected), torque off sets Lock=0, as LeRobot does. A servo
        that does not answer does not stop the others from being switched; the first error is raised at the end.
        """
        first: BusError | None = None
        for sid in self.ids if ids is None else ids:
            try:
                self.write(sid, p.TORQUE_ENABLE, int(enabled), check_faults=False)
                self.write(sid, p.LOCK, int(enabled), check_faults=False)
            except BusError as exc:
                first = first or exc
        if first is not None:
            raise first

    # ------------------------------------------------------------------ internals
    def _require_connected(self) -> None:
        if not self.is_connected:
            raise NotConnectedError(f"bus on {self.config.port} is not connected; call connect() first")

    def _transact(
        self,
        servo_id: int,
        operation: str,
        once: Callable[[], tuple[T, Comm, int]],
        *,
        check_faults: bool,
    ) -> tuple[T, int]:
        attempts = self.config.retries + 1
        with self._lock:
            self._require_connected()
            comm = Comm.TIMEOUT
            for _ in range(attempts):
                value, comm, error = once()
                if comm is Comm.SUCCESS:
                    if check_faults and error:
                        faults = ServoFault(error)
                        raise ServoError(
                            f"servo {servo_id} reports {faults.describe()} (error byte 0x{error:02x}) on {operation}",
                            servo_id=servo_id,
                            operation=operation,
                            faults=faults,
                        )
                    return value, error
        raise self._comm_error(comm, servo_id, operation, attempts)

    def _comm_error(self, comm: Comm, servo_id: int | None, operation: str, attempts: int | None = None) -> BusError:
        attempts = self.config.retries + 1 if attempts is None else attempts
        who = f"servo {servo_id}" if servo_id is not None else "bus"
        where = f"on {self.config.port} after {attempts} attempt(s)"
        if comm is Comm.TIMEOUT:
            return NoAnswerError(
                f"{who} did not answer {operation} {where}",
                servo_id=servo_id,
                operation=operation,
                attempts=attempts,
            )
        if comm is Comm.CORRUPT:
            return ChecksumError(
                f"{who} sent a corrupt reply (bad checksum or truncated) to {operation} {where}",
                servo_id=servo_id,
                operation=operation,
                attempts=attempts,
            )
        return BusError(
            f"{who}: {operation} failed ({comm.value}) {where}",
            servo_id=servo_id,
            operation=operation,
            attempts=attempts,
        )
