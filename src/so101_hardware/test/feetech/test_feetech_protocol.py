from __future__ import annotations

import pytest
from so101_hardware.feetech import protocol as p


def test_ping_packet_bytes_match_the_feetech_manual() -> None:
    # Manual example: ping servo 1 -> FF FF 01 02 01 FB
    assert p.build_packet(1, p.INST_PING) == bytes.fromhex("FFFF010201FB")


def test_checksum_is_inverted_low_byte_of_sum() -> None:
    body = bytes([1, 4, 2, 56, 2])  # read 2 bytes at 56 from id 1
    assert p.checksum(body) == (~sum(body)) & 0xFF


@pytest.mark.parametrize(("value", "bit", "raw"), [(0, 15, 0), (100, 15, 100), (-100, 15, 0x8064), (-5, 11, 0x805)])
def test_sign_magnitude_round_trip(value: int, bit: int, raw: int) -> None:
    assert p.encode_sign_magnitude(value, bit) == raw
    assert p.decode_sign_magnitude(raw, bit) == value


def test_sign_magnitude_overflow_is_rejected() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        p.encode_sign_magnitude(2048, 11)


def test_register_addresses_follow_the_sts_table() -> None:
    table = {name: (r.address, r.size) for name, r in p.CONTROL_TABLE.items()}
    assert table["Model_Number"] == (3, 2)
    assert table["Homing_Offset"] == (31, 2)
    assert table["Goal_Position"] == (42, 2)
    assert table["Present_Position"] == (56, 2)
    assert table["Present_Voltage"] == (62, 1)
    assert table["Present_Current"] == (69, 2)
    assert p.TELEMETRY_LENGTH == 15
    assert p.encode_value(p.HOMING_OFFSET, -1470) == (1470 | 0x800).to_bytes(2, "little")
