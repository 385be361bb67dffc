"""FeetechBus through the real SDK over the emulator's pty: round trips, sync I/O and every injected fault."""

from __future__ import annotations

import os
import threading
import tty
from pathlib import Path

import pytest
from nodegraph.testing import wait_until
from so101_hardware.errors import (
    ChecksumError,
    ConfigError,
    ModelMismatchError,
    NoAnswerError,
    NotConnectedError,
    PortError,
    ServoError,
    ServoFault,
)
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.transport import Comm, ScservoTransport

IDS = (1, 2, 3, 4, 5, 6)


def test_ping_and_scan(bus: FeetechBus) -> None:
    assert bus.ping(4) == p.STS3215_MODEL_NUMBER
    assert bus.scan(range(0, 9)) == dict.fromkeys(IDS, 777)


def test_read_write_round_trip_with_signed_register(bus: FeetechBus, emulator: FeetechEmulator) -> None:
    bus.write(2, p.HOMING_OFFSET, -321)
    assert emulator.read_register(2, p.HOMING_OFFSET) == -321
    assert bus.read(2, p.HOMING_OFFSET) == -321
    bus.write(2, p.GOAL_SPEED, -1500)
    assert bus.read(2, p.GOAL_SPEED) == -1500
    assert bus.read(2, p.MODEL_NUMBER) == 777
    with pytest.raises(ValueError, match="read-only"):
        bus.write(2, p.PRESENT_POSITION, 1)


def test_sync_write_then_sync_read_six_servos(bus: FeetechBus, emulator: FeetechEmulator) -> None:
    goals = {sid: 1000 + 100 * sid for sid in IDS}
    bus.set_torque(True)
    assert all(emulator.read_register(sid, p.LOCK) == 1 for sid in IDS)
    bus.write_goal_positions(goals)
    assert bus.sync_read(p.GOAL_POSITION) == goals
    wait_until(lambda: bus.sync_read(p.PRESENT_POSITION) == goals)
    telemetry = bus.read_telemetry()
    assert list(telemetry) == list(IDS)
    assert telemetry[3].position == 1300
    assert telemetry[3].voltage_v == pytest.approx(12.0)
    assert telemetry[3].temperature_c == 30
    assert telemetry[3].faults == ServoFault.NONE
    bus.set_torque(False)
    assert emulator.read_register(1, p.TORQUE_ENABLE) == 0


def test_no_answer_raises_with_servo_id_then_recovers(bus: FeetechBus, emulator: FeetechEmulator) -> None:
    emulator.set_gone(3)
    with pytest.raises(NoAnswerError) as single:
        bus.read(3, p.PRESENT_POSITION)
    assert single.value.servo_id == 3 and single.value.attempts == 2
    with pytest.raises(NoAnswerError) as group:
        bus.read_telemetry()
    assert group.value.servo_id == 3
    assert bus.read(2, p.PRESENT_POSITION) == 2048  # the others still answer
    emulator.set_gone(3, False)
    assert len(bus.read_telemetry()) == 6


def test_corrupted_checksum_raises_checksum_error_then_recovers(bus: FeetechBus, emulator: FeetechEmulator) -> None:
    emulator.set_corrupt_checksum(5)
    with pytest.raises(ChecksumError) as single:
        bus.read(5, p.PRESENT_POSITION)
    assert single.value.servo_id == 5
    with pytest.raises(ChecksumError) as group:
        bus.sync_read(p.PRESENT_POSITION)
    assert group.value.servo_id == 5
    emulator.clear_faults(5)
    assert bus.sync_read(p.PRESENT_POSITION)[5] == 2048


@pytest.mark.parametrize(
    ("bits", "flag"), [(0x20, ServoFault.OVERLOAD), (0x04, ServoFault.OVERHEAT), (0x01, ServoFault.VOLTAGE)]
)
def test_error_bits_raise_servo_error_and_show_in_telemetry(
    bus: FeetechBus, emulator: FeetechEmulator, bits: int, flag: ServoFault
) -> None:
    emulator.set_error_bits(2, bits)
    emulator.set_temperature(2, 71)
    with pytest.raises(ServoError) as exc:
        bus.read(2, p.PRESENT_POSITION)
    assert exc.value.servo_id == 2 and exc.value.faults == flag
    assert flag.name is not None and flag.name.lower() in str(exc.value)
    assert bus.read(2, p.PRESENT_POSITION, check_faults=False) == 2048
    health = bus.read_telemetry()[2]
    assert health.faults == flag and health.temperature_c == 71
    bus.set_torque(False, [2])  # torque-off goes through despite the fault
    emulator.clear_faults(2)
    assert bus.read(2, p.PRESENT_POSITION) == 2048
    assert bus.read_telemetry()[2].faults == ServoFault.NONE


def test_injected_load_and_voltage_are_reported(bus: FeetechBus, emulator: FeetechEmulator) -> None:
    emulator.set_load(4, -950)
    emulator.set_voltage(4, 6.4)
    t = bus.read_telemetry()[4]
    assert t.load == pytest.approx(-0.95)
    assert t.voltage_v == pytest.approx(6.4)
    assert t.current_ma > 0


def test_dropped_replies_are_retried(emulator: FeetechEmulator) -> None:
    emulator.set_drop_rate(0.2)
    config = BusConfig(emulator.port, timeout_ms=60.0, retries=8)
    with FeetechBus(config, IDS) as bus:
        for _ in range(5):
            assert len(bus.read_telemetry()) == 6
    assert emulator.replies_dropped > 0


def test_a_model_number_reply_without_data_is_corrupt_not_a_crash() -> None:
    """A servo (here: this test on a raw pty) that answers the ping but returns no bytes for the model number."""
    master, slave = os.openpty()
    tty.setraw(slave)

    def read_exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            data += os.read(master, n - len(data))
        return data

    def servo() -> None:
        assert read_exactly(6) == p.build_packet(1, p.INST_PING)
        os.write(master, p.build_packet(1, 0))
        assert read_exactly(8) == p.build_packet(1, p.INST_READ, bytes([p.MODEL_NUMBER.address, 2]))
        os.write(master, p.build_packet(1, 0))  # a status packet with no data

    thread = threading.Thread(target=servo, daemon=True)
    thread.start()
    transport = ScservoTransport()
    transport.open(os.ttyname(slave), 1_000_000, timeout_ms=500.0)
    try:
        assert transport.ping(1) == (0, Comm.CORRUPT, 0)
    finally:
        transport.close()
        os.close(master)
        os.close(slave)
    thread.join(timeout=1.0)


def test_handshake_names_the_missing_servo(emulator: FeetechEmulator, bus_config: BusConfig) -> None:
    emulator.set_gone(6)
    bus = FeetechBus(bus_config, IDS)
    with pytest.raises(NoAnswerError) as exc:
        bus.connect()
    assert exc.value.servo_id == 6
    assert not bus.is_connected


def test_handshake_checks_the_model_number(emulator: FeetechEmulator, bus_config: BusConfig) -> None:
    emulator.write_register(1, p.MODEL_NUMBER, 1)  # read-only: ignored like on the servo
    assert emulator.read_register(1, p.MODEL_NUMBER) == 777
    emulator.set_model_number(1, 1284)  # an SCS0009 answering on id 1
    with pytest.raises(ModelMismatchError) as exc:
        FeetechBus(bus_config, IDS).connect()
    assert exc.value.servo_id == 1


def test_port_errors_and_not_connected(tmp_path: Path, emulator: FeetechEmulator, bus_config: BusConfig) -> None:
    with pytest.raises(PortError, match="cannot open"):
        FeetechBus(BusConfig(str(tmp_path / "ttyNOPE")), IDS).connect()
    bus = FeetechBus(bus_config, IDS)
    with pytest.raises(NotConnectedError):
        bus.read(1, p.PRESENT_POSITION)
    bus.connect()
    emulator.stop()  # adapter unplugged
    with pytest.raises((PortError, NoAnswerError)):
        bus.read(1, p.PRESENT_POSITION)
    bus.disconnect()
    assert not bus.is_connected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"baudrate": 2_000_000}, "bus.baudrate"),
        ({"retries": -1}, "bus.retries"),
        ({"timeout_ms": 0}, "bus.timeout_ms"),
    ],
)
def test_bus_config_validation(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError) as exc:
        BusConfig("/dev/ttyACM0", **kwargs)
    assert exc.value.field == field
