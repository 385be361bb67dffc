"""The packet-level client the bus needs, as a ``Protocol``, and its implementation on the Feetech SDK.

:class:`PacketTransport` is the seam: :class:`ScservoTransport` drives the official ``scservo_sdk``
(``feetech-servo-sdk`` wheel); another client (a pure-Python one, a CAN bridge, ...) can replace it.
Results are plain values plus a :class:`Comm` code, never exceptions, so that the bus owns the retry
policy and the error types. Only :class:`PortError` (port cannot be opened / has failed) is raised here.

Two adaptations of the SDK's ``PortHandler``, both at the lowest boundary (the serial port):

- ``setPacketTimeout``: the SDK computes ``tx_time * n + 2 * LATENCY_TIMER + 2`` ms, which leaves no margin on
  a loaded host (LeRobot patches the same method, to 50 ms + tx time). Here the timeout is
  ``max(sdk_value, timeout_ms)`` with ``timeout_ms`` from the bus configuration.
- ``readPort``: the SDK opens the port with ``timeout=0`` and spins on ``read`` until the packet timeout,
  burning a core and, in one process with the emulator thread, starving it of the GIL. Here ``readPort``
  first waits in ``select`` (GIL released) until bytes arrive or the packet deadline passes, then reads
  what is there; the SDK's own parsing and timeout logic are unchanged.

Baud rate: the SDK accepts only its list of standard rates (``getCFlagBaud``); every STS rate is in it.
A pty accepts any termios speed, so ``setBaudRate(1_000_000)`` succeeds on the emulator unchanged; a rate
outside the SDK's list fails with :class:`PortError` before any I/O.
"""

from __future__ import annotations

import contextlib
import select
import termios
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Protocol

from ..errors import PortError


class Comm(Enum):
    """Outcome of one transaction at the packet level."""

    SUCCESS = "success"
    TIMEOUT = "no status packet"
    CORRUPT = "corrupt status packet"
    TX_FAIL = "failed to transmit instruction packet"
    BUSY = "port busy"
    NOT_AVAILABLE = "not available"


class PacketTransport(Protocol):
    """Packet-level client of a Feetech bus (protocol 0). ``error`` values are status-packet error bytes."""

    @property
    def is_open(self) -> bool: ...

    def open(self, port: str, baudrate: int, timeout_ms: float) -> None:
        """Open ``port``; raise :class:`PortError` when it cannot be opened."""
        ...

    def close(self) -> None: ...

    def ping(self, servo_id: int) -> tuple[int, Comm, int]:
        """Ping and read the model number: ``(model, comm, error)``."""
        ...

    def read(self, servo_id: int, address: int, length: int) -> tuple[bytes, Comm, int]:
        """READ ``length`` bytes at ``address``: ``(data, comm, error)``."""
        ...

    def write(self, servo_id: int, address: int, data: bytes) -> tuple[Comm, int]:
        """WRITE with status reply: ``(comm, error)``."""
        ...

    def sync_read(self, ids: Sequence[int], address: int, length: int) -> tuple[dict[int, bytes], Comm, int | None]:
        """SYNC_READ: ``(data per id, comm, first failing id or None)``; ids after a failure are absent."""
        ...

    def sync_write(self, address: int, length: int, data: Mapping[int, bytes]) -> Comm:
        """SYNC_WRITE (broadcast, no reply)."""
        ...


def _make_port_handler(scs: Any, port: str, timeout_ms: float) -> Any:
    """A ``scservo_sdk.PortHandler`` with the two boundary fixes described in the module docstring."""

    class _PortHandler(scs.PortHandler):
        min_timeout_ms = timeout_ms
        packet_timeout: float

        def setPacketTimeout(self, packet_length: int) -> None:  # noqa: N802 (SDK name)
            super().setPacketTimeout(packet_length)
            self.packet_timeout = max(self.packet_timeout, self.min_timeout_ms)

        def readPort(self, length: int) -> bytes:  # noqa: N802 (SDK name)
            if self.ser.in_waiting == 0:
                remaining_ms = self.packet_timeout - self.getTimeSinceStart()
                if remaining_ms > 0:
                    select.select([self.ser.fileno()], [], [], remaining_ms / 1000.0)
            return bytes(self.ser.read(length))

    return _PortHandler(port)


# pyserial's SerialException is an OSError; not importing pyserial here keeps this module (and the twin's nodes,
# which share the safety and config modules) importable where only the SDK's ports need it
_PORT_FAILURES = (OSError, termios.error)

_COMM_CODES = {0: Comm.SUCCESS, -1: Comm.BUSY, -2: Comm.TX_FAIL, -6: Comm.TIMEOUT, -7: Comm.CORRUPT}


class ScservoTransport:
    """:class:`PacketTransport` on the official Feetech SDK (``scservo_sdk``), protocol 0."""

    def __init__(self) -> None:
        import scservo_sdk as scs

        self._scs: Any = scs
        self._port: Any = None
        self._packet: Any = None
        self._readers: dict[tuple[int, int, tuple[int, ...]], Any] = {}

    @property
    def is_open(self) -> bool:
        return bool(self._port is not None and self._port.is_open)

    def open(self, port: str, baudrate: int, timeout_ms: float) -> None:
        handler = _make_port_handler(self._scs, port, timeout_ms)
        handler.baudrate = baudrate
        try:
            ok = handler.setBaudRate(baudrate)
        except _PORT_FAILURES as exc:
            raise PortError(f"cannot open serial port {port!r}: {exc}") from exc
        if not ok:
            raise PortError(f"cannot open serial port {port!r}: baud rate {baudrate} not supported by the SDK")
        self._port = handler
        self._packet = self._scs.PacketHandler(0)
        self._readers.clear()

    def close(self) -> None:
        if self._port is not None and self._port.is_open:
            with contextlib.suppress(*_PORT_FAILURES):
                self._port.closePort()
        self._port = None
        self._readers.clear()

    # -- transactions -----------------------------------------------------------------------------
    def _begin(self) -> Any:
        """Return the port, with stale input (late replies of a timed-out transaction) discarded."""
        if self._port is None:
            raise PortError("port is not open")
        try:
            self._port.ser.reset_input_buffer()
        except _PORT_FAILURES as exc:
            raise PortError(f"serial port {self._port.port_name!r} failed: {exc}") from exc
        self._port.is_using = False
        return self._port

    def _guard(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except _PORT_FAILURES as exc:
            self._port.is_using = False
            raise PortError(f"serial port {self._port.port_name!r} failed: {exc}") from exc

    def ping(self, servo_id: int) -> tuple[int, Comm, int]:
        port = self._begin()
        try:
            model, comm, error = self._guard(self._packet.ping, port, servo_id)
        except IndexError:  # the SDK takes the model number from the read's reply without checking its length
            port.is_using = False
            return 0, Comm.CORRUPT, 0
        return int(model), _COMM_CODES.get(comm, Comm.NOT_AVAILABLE), int(error)

    def read(self, servo_id: int, address: int, length: int) -> tuple[bytes, Comm, int]:
        port = self._begin()
        data, comm, error = self._guard(self._packet.readTxRx, port, servo_id, address, length)
        result = _COMM_CODES.get(comm, Comm.NOT_AVAILABLE)
        if result is Comm.SUCCESS and len(data) != length:
            return b"", Comm.CORRUPT, int(error)
        return bytes(data), result, int(error)

    def write(self, servo_id: int, address: int, data: bytes) -> tuple[Comm, int]:
        port = self._begin()
        comm, error = self._guard(self._packet.writeTxRx, port, servo_id, address, len(data), list(data))
        return _COMM_CODES.get(comm, Comm.NOT_AVAILABLE), int(error)

    def sync_read(self, ids: Sequence[int], address: int, length: int) -> tuple[dict[int, bytes], Comm, int | None]:
        key = (address, length, tuple(ids))
        reader = self._readers.get(key)
        if reader is None:
            reader = self._scs.GroupSyncRead(self._port, self._packet, address, length)
            for sid in ids:
                reader.addParam(sid)
            self._readers[key] = reader
        for sid in ids:  # forget the previous cycle so a failure shows which id is missing
            reader.data_dict[sid] = []
        self._begin()
        comm = _COMM_CODES.get(self._guard(reader.txRxPacket), Comm.NOT_AVAILABLE)
        out: dict[int, bytes] = {}
        failed: int | None = None
        for sid in ids:
            raw = reader.data_dict.get(sid) or []
            if len(raw) != length:
                failed = sid
                break
            out[sid] = bytes(raw)
        if comm is Comm.SUCCESS and failed is not None:
            comm = Comm.CORRUPT
        return out, comm, failed

    def sync_write(self, address: int, length: int, data: Mapping[int, bytes]) -> Comm:
        writer = self._scs.GroupSyncWrite(self._port, self._packet, address, length)
        for sid, payload in data.items():
            writer.addParam(sid, list(payload))
        self._begin()
        return _COMM_CODES.get(self._guard(writer.txPacket), Comm.NOT_AVAILABLE)
