"""The emulator speaks protocol 0 byte for byte: raw pyserial first, then through the SDK's PortHandler."""

from __future__ import annotations

import time

import scservo_sdk as scs
import serial
from nodegraph.testing import wait_until
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator


def _transact(ser: serial.Serial, packet: bytes, reply_len: int) -> bytes:
    ser.reset_input_buffer()
    ser.write(packet)
    return bytes(ser.read(reply_len))


def test_raw_bytes_ping_read_write(emulator: FeetechEmulator) -> None:
    with serial.Serial(emulator.port, 1_000_000, timeout=2.0) as ser:
        assert _transact(ser, p.build_packet(3, p.INST_PING), 6) == bytes.fromhex("FFFF030200FA")
        reply = _transact(ser, p.build_packet(3, p.INST_READ, bytes([3, 2])), 8)
        assert reply == p.build_packet(3, 0, (777).to_bytes(2, "little"))
        reply = _transact(ser, p.build_packet(3, p.INST_WRITE, bytes([42, 0x10, 0x04])), 6)
        assert reply == p.build_packet(3, 0)
    assert emulator.read_register(3, p.GOAL_POSITION) == 0x410


def test_bad_checksum_and_unknown_id_get_no_answer(emulator: FeetechEmulator) -> None:
    with serial.Serial(emulator.port, 1_000_000, timeout=0.2) as ser:
        bad = bytearray(p.build_packet(1, p.INST_PING))
        bad[-1] ^= 0xFF
        assert _transact(ser, bytes(bad), 6) == b""
        assert _transact(ser, p.build_packet(42, p.INST_PING), 6) == b""
        # garbage before a valid packet is skipped (resynchronisation on FF FF)
        assert _transact(ser, b"\x00\xff\x13" + p.build_packet(2, p.INST_PING), 6) == p.build_packet(2, 0)
    assert emulator.bad_packets_received == 1


def test_sync_write_reg_write_and_action(emulator: FeetechEmulator) -> None:
    with serial.Serial(emulator.port, 1_000_000, timeout=0.5) as ser:
        params = bytes([42, 2, 1, 0x00, 0x08, 2, 0xFF, 0x07])
        ser.write(p.build_packet(p.BROADCAST_ID, p.INST_SYNC_WRITE, params))
        assert _transact(ser, p.build_packet(1, p.INST_REG_WRITE, bytes([46, 100, 0])), 6) == p.build_packet(1, 0)
        assert emulator.read_register(1, p.GOAL_SPEED) == 0
        ser.write(p.build_packet(p.BROADCAST_ID, p.INST_ACTION))
        wait_until(lambda: emulator.read_register(1, p.GOAL_SPEED) == 100)
    assert emulator.read_register(1, p.GOAL_POSITION) == 0x800
    assert emulator.read_register(2, p.GOAL_POSITION) == 0x7FF


def test_sdk_port_handler_opens_the_pty_at_1mbps(emulator: FeetechEmulator) -> None:
    port = scs.PortHandler(emulator.port)
    assert port.openPort()
    assert port.setBaudRate(1_000_000)
    packet = scs.PacketHandler(0)
    for _ in range(5):  # the SDK waits ~34 ms for the answer; a loaded machine may miss that once (so LeRobot retries)
        time.sleep(0.1)
        port.ser.reset_input_buffer()  # a late answer to a timed-out try must not be taken for this try's
        model, comm, error = packet.ping(port, 5)
        if comm != scs.COMM_RX_TIMEOUT:
            break
    assert (model, comm, error) == (777, scs.COMM_SUCCESS, 0)
    port.closePort()


def test_motion_homing_offset_and_limits(emulator: FeetechEmulator) -> None:
    emulator.write_register(1, p.HOMING_OFFSET, -100)
    assert emulator.present_position(1) == 2148  # present = actual - offset
    emulator.write_register(1, p.MAX_POSITION_LIMIT, 2500)
    emulator.write_register(1, p.GOAL_POSITION, 3000)
    assert emulator.present_position(1) == 2148  # torque off: no motion
    emulator.write_register(1, p.TORQUE_ENABLE, 1)
    wait_until(lambda: emulator.present_position(1) == 2500)  # goal clamped to the max limit
    # Torque off first, as a calibration does: with torque on the servo would go on chasing its goal (2500), now
    # read in the new offset's frame, and the next tick would move it off 2048.
    emulator.write_register(1, p.TORQUE_ENABLE, 0)
    emulator.write_register(1, p.TORQUE_ENABLE, 128)  # "calibrate middle"
    assert emulator.present_position(1) == 2048


def test_id_change_moves_the_servo(emulator: FeetechEmulator) -> None:
    emulator.write_register(6, p.ID, 9)
    assert 9 in emulator.ids and 6 not in emulator.ids
