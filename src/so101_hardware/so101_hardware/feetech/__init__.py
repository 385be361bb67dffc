"""Feetech STS servo bus: protocol facts, SDK transport, bus, pty emulator and benchmark."""

from .bus import BusConfig, FeetechBus, ServoTelemetry
from .emulator import FeetechEmulator
from .transport import Comm, PacketTransport, ScservoTransport

__all__ = [
    "BusConfig",
    "Comm",
    "FeetechBus",
    "FeetechEmulator",
    "PacketTransport",
    "ScservoTransport",
    "ServoTelemetry",
]
